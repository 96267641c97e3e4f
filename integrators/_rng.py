"""Random streams for the kernels: one xoshiro256++ stream per chain, normals by the ziggurat.

Every chain owns its streams (its path, its batches), so a chain's numbers never depend on how
many chains run beside it or in which order the kernel visits them; the kernels can then advance
a block of chains together, step by step, with the arithmetic vectorized over chains.

A stream is a row of four ``uint64`` words (the xoshiro256++ state of Blackman and Vigna);
:func:`chain_states` seeds chain ``c``'s stream of each kind from the seed and ``c`` alone.

Normals use the 256-layer ziggurat with 52-bit mantissas (Marsaglia and Tsang's method in the form
numpy uses): one 64-bit draw gives the layer (8 bits), the sign (1 bit) and the abscissa (52 bits);
about 98.5% of draws are accepted at once (the mean of the layers' thresholds,
``ziggurat_tables``), the rest go to the wedge test or the exact tail
``r + Exp(r)`` sampler.  The hot loops keep a stream's state in registers (``normal_s`` and
``uniform_s`` take and return the four words); ``stream_uniform`` reads and writes a state row
for code off the hot path.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators._disk_cache import njit_cached

STATE_WORDS = 4
# stream kinds: each chain has one stream of each kind (seeded by the run seed, the kind and its index)
PATH_STREAM, PLAN_STREAM, VELOCITY_STREAM, COARSE_PLAN_STREAM = 0, 1, 2, 3
ZIGGURAT_R = 3.6541528853610088  # right edge of the base layer for 256 layers
ZIGGURAT_V = 0.00492867323399    # area of each layer (and of the base strip with the tail)


def ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k, w, f)``: acceptance thresholds (52-bit integers), abscissa scales and densities of
    the 256 layers of the standard normal's ziggurat (unnormalized density ``exp(-x^2 / 2)``)."""
    m52 = 2.0**52
    edge = ZIGGURAT_R
    prev = edge
    k = np.zeros(256, dtype=np.uint64)
    w = np.zeros(256)
    f = np.zeros(256)
    base_width = ZIGGURAT_V / math.exp(-0.5 * edge * edge)  # the base strip, tail included
    k[0] = np.uint64((edge / base_width) * m52)
    w[0] = base_width / m52
    w[255] = edge / m52
    f[0] = 1.0
    f[255] = math.exp(-0.5 * edge * edge)
    for i in range(254, 0, -1):
        edge = math.sqrt(-2.0 * math.log(ZIGGURAT_V / edge + math.exp(-0.5 * edge * edge)))
        k[i + 1] = np.uint64((edge / prev) * m52)
        prev = edge
        f[i] = math.exp(-0.5 * edge * edge)
        w[i] = edge / m52
    return k, w, f


ZIG_K, ZIG_W, ZIG_F = ziggurat_tables()
_ONE, _EIGHT, _NINE, _ELEVEN = np.uint64(1), np.uint64(8), np.uint64(9), np.uint64(11)
_SHIFT_T, _ROT_A, _ROT_B, _WORD = np.uint64(17), np.uint64(23), np.uint64(45), np.uint64(64)
_LAYER, _MANTISSA = np.uint64(0xFF), np.uint64(0x000FFFFFFFFFFFFF)


def chain_states(seed: int, kind: int, first: int, count: int) -> np.ndarray:
    """``(count, 4)`` SplitMix64-seeded stream states of chains ``first ..`` for one stream ``kind``, keyed by
    ``SeedSequence(seed, spawn_key=(kind,))``: a chain's streams depend only on the seed and its index."""
    if first < 0 or count < 0:
        raise ValueError(f"first and count must be >= 0, got {first} and {count}")
    key = np.random.SeedSequence(seed, spawn_key=(kind,)).generate_state(1, np.uint64)[0]
    words = np.empty((count, STATE_WORDS), dtype=np.uint64)
    splitmix64_fill(key, STATE_WORDS * first, words.reshape(-1))
    _no_zero_rows(words)
    return words


def lane_states(seed: int, kind: int, first: int, count: int) -> np.ndarray:
    """:func:`chain_states` word-major, shape ``(4, count)``, as the block-wide draws take them."""
    return np.ascontiguousarray(chain_states(seed, kind, first, count).T)


@njit_cached(nogil=True)
def splitmix64_fill(key, skip, out):
    """Outputs ``skip .. skip + len(out) - 1`` of SplitMix64 started at ``key``."""
    z = key + np.uint64(skip) * np.uint64(0x9E3779B97F4A7C15)
    for i in range(out.shape[0]):
        z += np.uint64(0x9E3779B97F4A7C15)
        r = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        r = (r ^ (r >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out[i] = r ^ (r >> np.uint64(31))


@njit_cached(nogil=True)
def _no_zero_rows(words):
    """The all-zero state is xoshiro's only fixed point: replace it (probability 2^-256)."""
    for c in range(words.shape[0]):
        if words[c, 0] == 0 and words[c, 1] == 0 and words[c, 2] == 0 and words[c, 3] == 0:
            words[c, 0] = 1


@nb.njit(nogil=True, inline="always")
def _rotl(x, k):
    return (x << k) | (x >> (_WORD - k))


@nb.njit(nogil=True, inline="always")
def next_s(s0, s1, s2, s3):
    """One xoshiro256++ output and the advanced state."""
    out = _rotl(s0 + s3, _ROT_A) + s0
    t = s1 << _SHIFT_T
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, _ROT_B)
    return out, s0, s1, s2, s3


@nb.njit(nogil=True, inline="always")
def uniform_s(s0, s1, s2, s3):
    """A uniform double on [0, 1) (53 random bits) and the advanced state."""
    r, s0, s1, s2, s3 = next_s(s0, s1, s2, s3)
    return (r >> _ELEVEN) * (1.0 / 9007199254740992.0), s0, s1, s2, s3


@nb.njit(nogil=True, inline="always")
def _decode(r):
    """The ziggurat's reading of one 64-bit draw: (signed abscissa, layer, mantissa)."""
    layer = r & _LAYER
    mantissa = (r >> _NINE) & _MANTISSA
    x = np.float64(mantissa) * ZIG_W[layer]
    if (r >> _EIGHT) & _ONE:
        x = -x
    return x, layer, mantissa


@nb.njit(nogil=True, inline="always")
def _tail_or_wedge(x, layer, mantissa, s0, s1, s2, s3):
    """The ziggurat's slow path for a draw outside its layer's core rectangle:
    (accepted, value, state); a rejected draw must be replaced by a fresh one."""
    if layer == 0:  # the tail beyond r: r + Exp(r) by Marsaglia's method
        while True:
            u1, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
            u2, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
            xx = -math.log1p(-u1) / ZIGGURAT_R
            yy = -math.log1p(-u2)
            if yy + yy > xx * xx:
                return True, (-(ZIGGURAT_R + xx) if (mantissa >> _EIGHT) & _ONE else ZIGGURAT_R + xx), s0, s1, s2, s3
    # the wedge between the layer's rectangle and the density
    u, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
    accepted = (ZIG_F[layer - 1] - ZIG_F[layer]) * u + ZIG_F[layer] < math.exp(-0.5 * x * x)
    return accepted, x, s0, s1, s2, s3


@nb.njit(nogil=True, inline="always")
def normal_s(s0, s1, s2, s3):
    """A standard normal (ziggurat) and the advanced state."""
    while True:
        r, s0, s1, s2, s3 = next_s(s0, s1, s2, s3)
        x, layer, mantissa = _decode(r)
        if mantissa < ZIG_K[layer]:
            return x, s0, s1, s2, s3
        accepted, x, s0, s1, s2, s3 = _tail_or_wedge(x, layer, mantissa, s0, s1, s2, s3)
        if accepted:
            return x, s0, s1, s2, s3


@njit_cached(nogil=True, _nrt=False)  # not inlined: one compiled copy serves every kernel
def lane_normals(states, z, raw):
    """One standard normal per lane, ``z[c]`` from ``states[:, c]`` (``(4, n)``): exactly :func:`normal_s`,
    via a vectorized pass then the ziggurat's slow path for the ~1.5% of lanes that need it.  ``raw``: scratch."""
    n = z.shape[0]
    for c in range(n):
        s0, s1, s2, s3 = states[0, c], states[1, c], states[2, c], states[3, c]
        r, s0, s1, s2, s3 = next_s(s0, s1, s2, s3)
        states[0, c], states[1, c], states[2, c], states[3, c] = s0, s1, s2, s3
        layer = r & _LAYER
        mantissa = (r >> _NINE) & _MANTISSA
        x = np.float64(mantissa) * ZIG_W[layer]
        z[c] = x - 2.0 * np.float64((r >> _EIGHT) & _ONE) * x  # the sign bit, without a branch
        # keep the draw only where the slow path must finish it (0 never needs it: layer 0, mantissa 0)
        raw[c] = r * np.uint64(mantissa >= ZIG_K[layer])
    for c in range(n):
        if raw[c] == 0:
            continue
        x, layer, mantissa = _decode(raw[c])
        s0, s1, s2, s3 = states[0, c], states[1, c], states[2, c], states[3, c]
        accepted, x, s0, s1, s2, s3 = _tail_or_wedge(x, layer, mantissa, s0, s1, s2, s3)
        if not accepted:
            x, s0, s1, s2, s3 = normal_s(s0, s1, s2, s3)
        z[c] = x
        states[0, c], states[1, c], states[2, c], states[3, c] = s0, s1, s2, s3


@nb.njit(nogil=True, inline="always")
def lane_uniforms(states, u):
    """One uniform on [0, 1) per lane: ``u[c]`` from stream ``states[:, c]`` (word-major, shape
    ``(4, n)``); the same numbers as :func:`uniform_s` lane by lane, in a loop that vectorizes."""
    for c in range(u.shape[0]):
        s0, s1, s2, s3 = states[0, c], states[1, c], states[2, c], states[3, c]
        u[c], s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        states[0, c], states[1, c], states[2, c], states[3, c] = s0, s1, s2, s3


@nb.njit(nogil=True, inline="always")
def stream_uniform(row):
    """A uniform double from the stream whose state is the array ``row`` (updated in place)."""
    u, row[0], row[1], row[2], row[3] = uniform_s(row[0], row[1], row[2], row[3])
    return u


@njit_cached(nogil=True)
def lane_normal_matrix(states, d):
    """``(n, d)`` standard normals, row ``c`` from stream ``states[:, c]`` (coordinates in order)."""
    n = states.shape[1]
    out = np.empty((n, d))
    z = np.empty(n)
    raw = np.empty(n, dtype=np.uint64)
    for a in range(d):
        lane_normals(states, z, raw)
        for c in range(n):
            out[c, a] = z[c]
    return out


@njit_cached(nogil=True)
def fill_normals(row, out):
    """Fill ``out`` with standard normals from one stream (for tests and benchmarks)."""
    s0, s1, s2, s3 = row[0], row[1], row[2], row[3]
    for i in range(out.shape[0]):
        out[i], s0, s1, s2, s3 = normal_s(s0, s1, s2, s3)
    row[0], row[1], row[2], row[3] = s0, s1, s2, s3


@njit_cached(nogil=True)
def fill_uniforms(row, out):
    """Fill ``out`` with uniforms on [0, 1) from one stream (for tests)."""
    for i in range(out.shape[0]):
        out[i] = stream_uniform(row)
