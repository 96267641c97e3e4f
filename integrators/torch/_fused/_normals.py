"""The counter-based normals of :mod:`integrators.torch._rng` inside a Triton kernel.

The same words (SplitMix64 at a counter), the same uniforms (bits written into the mantissa of a
float in ``[1, 2)``) and the same Box-Muller pairs with the angle from the exact quadrant
reduction of :func:`integrators.torch._rng.cos_sin_turns`, so a chain's path here is the torch
backend's to rounding (the log and sqrt of the device's libraries against torch's).
"""

import math

import triton
import triton.language as tl

GOLDEN = tl.constexpr(0x9E3779B97F4A7C15)
_EXP64 = tl.constexpr(0x3FF << 52)        # the exponent bits of 1.0 in float64
_HALF_ULP52 = tl.constexpr(1.0 - 2.0**-53)  # subtracted: (k + 1/2) 2^-52
_HALF_ULP32 = tl.constexpr(1.0 - 2.0**-33)  # (j + 1/2) 2^-32
_HALF_PI = tl.constexpr(0.5 * math.pi)
# the Taylor coefficients of cos_sin_turns, lowest degree first
_S = [tl.constexpr((-1) ** k / math.factorial(2 * k + 1)) for k in range(8)]
_C = [tl.constexpr((-1) ** k / math.factorial(2 * k)) for k in range(9)]
S0, S1, S2, S3, S4, S5, S6, S7 = _S
C0, C1, C2, C3, C4, C5, C6, C7, C8 = _C


@triton.jit
def mix64(z):
    """The SplitMix64 output function on uint64 (arithmetic modulo 2^64)."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    return z ^ (z >> 31)


@triton.jit
def word(key, ctr):
    """The stream's 64-bit word at counter ``ctr`` (uint64)."""
    return mix64(key + ctr * GOLDEN)


@triton.jit
def uniform52(w):
    """``(k + 1/2) 2^-52`` from the top 52 bits of the word ``w`` (float64)."""
    return ((w >> 12) | _EXP64).to(tl.float64, bitcast=True) - _HALF_ULP52


@triton.jit
def uniform32(half):
    """``(j + 1/2) 2^-32`` from a 32-bit half word (held in a uint64)."""
    return ((half << 20) | _EXP64).to(tl.float64, bitcast=True) - _HALF_ULP32


@triton.jit
def _horner(x2, a8, a7, a6, a5, a4, a3, a2, a1, a0):
    """``sum_k a_k x2^k`` by Horner's rule, highest first (as :func:`integrators.torch._rng._horner`)."""
    acc = a8 + 0.0 * x2
    acc = acc * x2 + a7
    acc = acc * x2 + a6
    acc = acc * x2 + a5
    acc = acc * x2 + a4
    acc = acc * x2 + a3
    acc = acc * x2 + a2
    acc = acc * x2 + a1
    return acc * x2 + a0


@triton.jit
def cos_sin_turns(u):
    """``(cos 2 pi u, sin 2 pi u)``: the quadrant reduction and polynomials of the torch step."""
    t = 4.0 * u
    q = tl.floor(t + 0.5)  # round: t = 4u is never half-way for a dyadic u = (j + 1/2) 2^-32
    x = (t - q) * _HALF_PI
    x2 = x * x
    s = x * _horner(x2, 0.0, S7, S6, S5, S4, S3, S2, S1, S0)
    c = _horner(x2, C8, C7, C6, C5, C4, C3, C2, C1, C0)
    quadrant = q.to(tl.int64) & 3
    cos = tl.where(quadrant == 0, c, tl.where(quadrant == 1, -s, tl.where(quadrant == 2, -c, s)))
    sin = tl.where(quadrant == 0, s, tl.where(quadrant == 1, c, tl.where(quadrant == 2, -s, -c)))
    return cos, sin


@triton.jit
def _pair(key, radius_ctr, angle_ctr, odd):
    """One Box-Muller pair: the radius from the word at ``radius_ctr``, the angle from the low
    (even pair) or high (odd pair) half of the word at ``angle_ctr``."""
    r = tl.sqrt(-2.0 * tl.log(uniform52(word(key, radius_ctr))))
    w = word(key, angle_ctr)
    half = tl.where(odd, w >> 32, w & 0xFFFFFFFF)
    cos, sin = cos_sin_turns(uniform32(half))
    return r * cos, r * sin


@triton.jit
def step_normals(key, ctr, col, D: tl.constexpr):
    """The four normals per coordinate of one step, ``z0 .. z3`` (each ``[BLOCK, DP]``), at counter
    ``ctr`` of the streams ``key`` (``[BLOCK, 1]`` uint64): :func:`integrators.torch._rng.counter_normals`
    of ``4 D`` normals, whose pairs ``j`` give ``(z0, z2)`` and pairs ``D + j`` give ``(z1, z3)``."""
    base = ctr.to(tl.uint64)
    j = col.to(tl.uint64)
    pb = j + D
    z0, z2 = _pair(key, base + j, base + 2 * D + j // 2, (j % 2) == 1)
    z1, z3 = _pair(key, base + pb, base + 2 * D + pb // 2, (pb % 2) == 1)
    return z0, z1, z2, z3


@triton.jit
def plan_uniform(key, ctr):
    """The plan stream's uniform at counter ``ctr`` (:func:`integrators.torch._rng.bits_to_uniform`)."""
    return uniform52(word(key, ctr.to(tl.uint64)))
