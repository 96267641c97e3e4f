"""OBABO in the fused kernel, first-same-as-last: ``O(h/2) B(h/2) A(h)`` before the force,
``B(h/2) O(h/2)`` after it (:mod:`integrators.torch.schemes.obabo`; ``coef = (h, eta_half, noise)``)."""

import triton
import triton.language as tl  # noqa: F401 (the interpreter finds the language through the globals)

from integrators.schemes.obabo import SCHEME as _numba

NAME = _numba.NAME


@triton.jit
def before(x, v, g, h, eta_half, noise, unused3, unused4, dW1, J1, dW2, J2):
    v = eta_half * v + noise * J1 - 0.5 * h * g
    x = x + h * v
    return x, v


@triton.jit
def after(x, v, g, h, eta_half, noise, unused3, unused4, dW1, J1, dW2, J2):
    v = eta_half * (v - 0.5 * h * g) + noise * J2
    return x, v
