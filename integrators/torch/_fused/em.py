"""Euler-Maruyama in the fused kernel: nothing before the force at ``x``, the whole update after it
(:mod:`integrators.torch.schemes.em`; ``coef = (h, gamma, noise)``)."""

import triton
import triton.language as tl  # noqa: F401 (the interpreter finds the language through the globals)

from integrators.schemes.em import SCHEME as _numba

NAME = _numba.NAME


@triton.jit
def before(x, v, g, h, gamma, noise, unused3, unused4, dW1, J1, dW2, J2):
    return x, v


@triton.jit
def after(x, v, g, h, gamma, noise, unused3, unused4, dW1, J1, dW2, J2):
    x_new = x + h * v
    v = v - h * g - h * gamma * v + noise * (dW1 + dW2)
    return x_new, v
