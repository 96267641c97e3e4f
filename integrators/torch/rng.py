"""Random numbers on tensors: the path pair ``(dW, J)`` with its exact law, from two kinds of source.

* :class:`CounterNormals` (chains mode): a counter-based generator.  Chain ``c``'s ``t``-th number
  of a stream is ``splitmix64(key(seed, stream, c) + t * GOLDEN)`` (the SplitMix64 output function
  of Steele, Lea and Flood, evaluated at a counter instead of a running state), turned into
  normals by Box-Muller.  A chain's numbers depend only on ``(seed, stream, c)`` and the counter:
  never on how many chains run beside it, and not on the device either (the integer arithmetic is
  exact and wraps modulo 2^64 on CPU and CUDA alike).  A ``torch.Generator`` cannot give this
  without one generator per chain: its stream is cut into chains by the tensor's shape.
* :class:`GeneratorNormals` (module mode): a seeded ``torch.Generator`` on the parameters' device;
  one generator per chain, so an ensemble's chain does not depend on the others either.

The pair over an interval of length ``tau`` is ``dW = L11 z1``, ``J = L21 z1 + L22 z2`` with the
Cholesky factor of :func:`integrators.brownian.pair_cholesky` (the series form where ``gamma tau``
is small), the same as the Numba kernel draws.
"""

from __future__ import annotations

import math

import torch

from integrators.brownian import pair_cholesky

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


def bits_to_uniform(z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Uniforms in the open interval (0, 1) from 64-bit patterns (53 bits for float64, 24 for float32)."""
    bits = 53 if dtype == torch.float64 else 24
    top = _srl(z, 64 - bits)
    return (top.to(dtype) + 0.5) * (2.0**-bits)


def box_muller(u1: torch.Tensor, u2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r = torch.sqrt(-2.0 * torch.log(u1))
    angle = (2.0 * math.pi) * u2
    return r * torch.cos(angle), r * torch.sin(angle)


def counter_normals(keys: torch.Tensor, start: torch.Tensor, m: int, dtype: torch.dtype) -> torch.Tensor:
    """Normals ``(m, n)`` at counters ``start .. start + m'`` of the streams ``keys`` (shape ``(n,)``);
    a pure function of its arguments (``start`` a 0-d int64 tensor), so it compiles."""
    half = (m + 1) // 2
    ctr = start + torch.arange(2 * half, device=keys.device, dtype=torch.int64)
    u = bits_to_uniform(mix64(keys[None, :] + ctr[:, None] * GOLDEN), dtype)
    z1, z2 = box_muller(u[:half], u[half:])
    return torch.cat([z1, z2])[:m]


class CounterNormals:
    """Per-chain counter-based normals: ``normals(m)`` returns shape ``(m, n_chains)``, chain
    ``c``'s column a function of ``(seed, stream, c)`` and the stream's counter only."""

    def __init__(self, seed: int, stream: int, chains: torch.Tensor, dtype: torch.dtype):
        self.keys = chain_keys(seed, stream, chains)
        self.dtype = dtype
        self.counter = 0

    def uniforms(self, m: int) -> torch.Tensor:
        ctr = torch.arange(self.counter, self.counter + m, device=self.keys.device, dtype=torch.int64)
        self.counter += m
        return bits_to_uniform(mix64(self.keys[None, :] + ctr[:, None] * GOLDEN), self.dtype)

    def normals(self, m: int) -> torch.Tensor:
        start = torch.tensor(self.counter, device=self.keys.device, dtype=torch.int64)
        self.counter += 2 * ((m + 1) // 2)
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
