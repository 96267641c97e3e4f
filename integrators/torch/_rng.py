"""Random numbers on tensors: the path pair ``(dW, J)`` with its exact law, from two kinds of source.

* :class:`CounterNormals` (chains mode): a counter-based generator.  Chain ``c``'s ``t``-th 64-bit
  word of a stream is ``splitmix64(key(seed, stream, c) + t * GOLDEN)`` (the SplitMix64 output
  function evaluated at a counter), so a chain's numbers depend only on ``(seed, stream, c)`` and
  the counter: never on how many chains run beside it, nor on the device (exact integer arithmetic
  modulo 2^64).  A ``torch.Generator`` would need one generator per chain for this.
* :class:`GeneratorNormals` (module mode): a seeded ``torch.Generator`` per chain on the
  parameters' device.

Normals (:func:`counter_normals`, stream version :data:`STREAM_VERSION`) come in Box-Muller pairs
``r cos(2 pi u2)``, ``r sin(2 pi u2)`` with ``r = sqrt(-2 log u1)``: one log and one sqrt per two
normals, and where compiled the cosine and sine from one exact quadrant reduction
(:func:`cos_sin_turns`).  A pair costs one and a half 64-bit words (52 bits for ``u1``, 32 for
``u2``); uniforms are made by writing bits into the mantissa of a float in ``[1, 2)`` (no slow
integer-to-float conversion): ``u1 = (k + 1/2) 2^-52``, ``u2 = (j + 1/2) 2^-32``, in (0, 1) and
exact in float64, so ``|z| <= 8.6``.

Why SplitMix64: the hash's input must be 64 bits (chain and counter) so streams cannot overlap;
it costs two 64x64 products per word where Philox2x32-10 costs ten 32-bit ones
(``benchmarks/bench_torch.py`` measures the previous stream beside this one).

The pair over an interval ``tau`` is ``dW = L11 z1``, ``J = L21 z1 + L22 z2`` with the Cholesky
factor of :func:`integrators._brownian.pair_cholesky`, as the Numba kernel draws it.
"""

from __future__ import annotations

import math

import torch

from integrators._brownian import pair_cholesky

_MASK64 = (1 << 64) - 1


def _signed(u: int) -> int:
    """An unsigned 64-bit constant as the int64 with the same bits."""
    u &= _MASK64
    return u - (1 << 64) if u >= 1 << 63 else u


GOLDEN = _signed(0x9E3779B97F4A7C15)
_M1 = _signed(0xBF58476D1CE4E5B9)
_M2 = _signed(0x94D049BB133111EB)
_STREAM_SALT = _signed(0xD1B54A32D192ED03)


def _srl(z: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def mix64(z: torch.Tensor) -> torch.Tensor:
    """The SplitMix64 output function on int64 tensors (arithmetic modulo 2^64)."""
    z = (z ^ _srl(z, 30)) * _M1
    z = (z ^ _srl(z, 27)) * _M2
    return z ^ _srl(z, 31)


def mix64_reference(z: int) -> int:
    """The same function on Python integers (the tests' referee for the tensor version)."""
    z &= _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def chain_keys(seed: int, stream: int, chains: torch.Tensor) -> torch.Tensor:
    """Key of each chain's stream: ``mix64(mix64(seed, stream) + c * GOLDEN)``."""
    base = mix64_reference(mix64_reference(seed) ^ ((stream * 0xD1B54A32D192ED03) & _MASK64))
    return mix64(chains.to(torch.int64) * GOLDEN + _signed(base))


STREAM_VERSION = 2  # 1: one word per uniform, integer-to-float conversion (benchmarks/bench_torch.py)
_EXP64 = 0x3FF << 52  # the exponent bits of 1.0 in float64
_EXP32 = 0x7F << 23   # ... in float32


def mantissa_uniform(bits: torch.Tensor, n_bits: int, dtype: torch.dtype) -> torch.Tensor:
    """``(k + 1/2) 2^-n_bits`` for the non-negative int64 ``k < 2^n_bits`` (``n_bits`` <= 52 in
    float64, the top 23 of them in float32): ``k`` written into the mantissa of a float in ``[1, 2)``
    (a bit cast), then an exact subtraction (Sterbenz) of ``1 - 2^-(n_bits + 1)``."""
    if dtype == torch.float64:
        one_plus = (bits << (52 - n_bits)) | _EXP64
        return one_plus.view(torch.float64) - (1.0 - 2.0 ** -(n_bits + 1))
    top = _srl(bits, n_bits - 23) if n_bits > 23 else bits << (23 - n_bits)
    one_plus = (top | _EXP32).to(torch.int32)
    return one_plus.view(torch.float32) - (1.0 - 2.0**-24)


def bits_to_uniform(z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Uniforms in the open interval (0, 1) from 64-bit patterns: ``(k + 1/2) 2^-52`` with ``k``
    the top 52 bits (float64; the top 23 in float32)."""
    return mantissa_uniform(_srl(z, 12), 52, dtype)


def box_muller(u1: torch.Tensor, u2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both normals of a Box-Muller pair: ``(r cos 2 pi u2, r sin 2 pi u2)``, ``r = sqrt(-2 log u1)``."""
    r = torch.sqrt(-2.0 * torch.log(u1))
    angle = (2.0 * math.pi) * u2
    return r * torch.cos(angle), r * torch.sin(angle)


# Taylor coefficients of sin x / x and cos x in x^2, highest first: on |x| <= pi/4 the first terms
# left out (x^17/17!, x^18/18!) are below half an ulp of float64
_SIN = [(-1) ** k / math.factorial(2 * k + 1) for k in range(7, -1, -1)]
_COS = [(-1) ** k / math.factorial(2 * k) for k in range(8, -1, -1)]


def _horner(coefs, x2):
    acc = coefs[0] + 0.0 * x2
    for c in coefs[1:]:
        acc = acc * x2 + c
    return acc


def cos_sin_turns(u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos 2 pi u, sin 2 pi u)`` for dyadic ``u`` in ``[0, 1)``: an exact quadrant reduction then one Taylor
    polynomial each (about twenty multiply-adds instead of two library calls), within a few ulp of torch's."""
    t = 4.0 * u
    q = torch.round(t)
    x = (t - q) * (0.5 * math.pi)
    x2 = x * x
    s = x * _horner(_SIN, x2)
    c = _horner(_COS, x2)
    quadrant = q.to(torch.int64) & 3
    cos = torch.where(quadrant == 0, c, torch.where(quadrant == 1, -s, torch.where(quadrant == 2, -c, s)))
    sin = torch.where(quadrant == 0, s, torch.where(quadrant == 1, c, torch.where(quadrant == 2, -s, -c)))
    return cos, sin


def box_muller_turns(u1: torch.Tensor, u2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`box_muller` with the angle from :func:`cos_sin_turns` (cheaper when fused in a compiled graph;
    eager code calls the library, which agrees to a few ulp)."""
    if not torch.compiler.is_compiling():
        return box_muller(u1, u2)
    r = torch.sqrt(-2.0 * torch.log(u1))
    cos, sin = cos_sin_turns(u2)
    return r * cos, r * sin


def words(keys: torch.Tensor, ctr: torch.Tensor) -> torch.Tensor:
    """The 64-bit words ``(len(ctr), n)`` at counters ``ctr`` of the streams ``keys``."""
    return mix64(keys[None, :] + ctr[:, None] * GOLDEN)


def counters_per_normals(m: int) -> int:
    """Counters that :func:`counter_normals` consumes for ``m`` normals: a word per pair for the
    radius, a word per two pairs for the angles."""
    pairs = (m + 1) // 2
    return pairs + (pairs + 1) // 2


def normal_pairs(keys: torch.Tensor, start: torch.Tensor, pairs: int, dtype: torch.dtype):
    """Box-Muller pairs ``(cos part, sin part)``, each ``(pairs, n)``, at counters ``start ..`` of streams
    ``keys`` ``(n,)``: radius from word ``start + p``, angle from half of word ``start + pairs + p // 2``.
    Pure (``start`` a 0-d int64 tensor), so it compiles into the step."""
    dev = keys.device
    radius = words(keys, start + torch.arange(pairs, device=dev, dtype=torch.int64))
    angle_words = words(keys, start + pairs + torch.arange((pairs + 1) // 2, device=dev, dtype=torch.int64))
    p = torch.arange(pairs, device=dev, dtype=torch.int64)
    w = angle_words[p // 2]
    angle = torch.where((p % 2 == 0)[:, None], w & 0xFFFFFFFF, _srl(w, 32))  # low half for even p, high for odd
    return box_muller_turns(mantissa_uniform(_srl(radius, 12), 52, dtype), mantissa_uniform(angle, 32, dtype))


def counter_normals(keys: torch.Tensor, start: torch.Tensor, m: int, dtype: torch.dtype) -> torch.Tensor:
    """Normals ``(m, n)`` at counters ``start .. start + counters_per_normals(m)`` of the streams
    ``keys`` (shape ``(n,)``): rows ``0 .. ceil(m/2)`` the pairs' cos parts, then their sin parts."""
    zc, zs = normal_pairs(keys, start, (m + 1) // 2, dtype)
    return torch.cat([zc, zs])[:m]


class CounterNormals:
    """Per-chain counter-based normals: ``normals(m)`` returns shape ``(m, n_chains)``, chain
    ``c``'s column a function of ``(seed, stream, c)`` and the stream's counter only."""

    def __init__(self, seed: int, stream: int, chains: torch.Tensor, dtype: torch.dtype):
        self.keys = chain_keys(seed, stream, chains)
        self.dtype = dtype
        self.counter = 0

    def uniforms(self, m: int) -> torch.Tensor:
        """The next ``m`` uniforms of every chain, ``(m, n_chains)`` (no host-to-device copy)."""
        ctr = torch.arange(self.counter, self.counter + m, device=self.keys.device, dtype=torch.int64)
        self.counter += m
        return bits_to_uniform(words(self.keys, ctr), self.dtype)

    def normals(self, m: int) -> torch.Tensor:
        """The next ``m`` normals of every chain, ``(m, n_chains)``."""
        start = torch.full((), self.counter, device=self.keys.device, dtype=torch.int64)
        self.counter += counters_per_normals(m)
        return counter_normals(self.keys, start, m, self.dtype)


class GeneratorNormals:
    """Normals from a seeded ``torch.Generator`` on ``device``: ``normals(shape)``."""

    def __init__(self, seed: int | None, device, dtype: torch.dtype, generator: torch.Generator | None = None):
        if generator is None:
            generator = torch.Generator(device=device)
            generator.manual_seed(int(seed))
        self.generator = generator
        self.device = device
        self.dtype = dtype

    def normals(self, shape) -> torch.Tensor:
        return torch.randn(shape, generator=self.generator, device=self.device, dtype=self.dtype)


def pair_factors(gamma: float, h: float) -> tuple[float, float, float]:
    """``(L11, L21, L22)`` of the pair over a half step ``h / 2`` (the Numba kernel's law)."""
    return tuple(float(c) for c in pair_cholesky(float(gamma), 0.5 * float(h)))


def pairs_from_normals(z: torch.Tensor, factors) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dW, J)``, each of shape ``(2, ...)``, from normals ``z`` of shape ``(4, ...)``:
    ``z[0], z[1]`` drive the first half step, ``z[2], z[3]`` the second."""
    l11, l21, l22 = factors
    z = z.view(2, 2, *z.shape[1:])
    dW = l11 * z[:, 0]
    J = l21 * z[:, 0] + l22 * z[:, 1]
    return dW, J
