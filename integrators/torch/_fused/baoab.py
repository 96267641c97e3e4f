"""BAOAB in the fused kernel, first-same-as-last: ``B(h/2) A(h/2) O(h) A(h/2)`` before the force,
``B(h/2)`` after it (the update of :mod:`integrators.torch.schemes.baoab`; ``coef = (h, eta, noise,
eta_half)``, the O step's ``J`` over the whole step composed from its halves)."""

import triton
import triton.language as tl  # noqa: F401 (the interpreter finds the language through the globals)

from integrators.schemes.baoab import SCHEME as _numba

NAME = _numba.NAME


@triton.jit
def before(x, v, g, h, eta, noise, eta_half, unused, dW1, J1, dW2, J2):
    v = v - 0.5 * h * g
    x = x + 0.5 * h * v
    v = eta * v + noise * (eta_half * J1 + J2)
    x = x + 0.5 * h * v
    return x, v


@triton.jit
def after(x, v, g, h, eta, noise, eta_half, unused, dW1, J1, dW2, J2):
    v = v - 0.5 * h * g
    return x, v
