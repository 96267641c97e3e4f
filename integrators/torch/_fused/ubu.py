"""UBU in the fused kernel: ``U(h/2)`` before the force, ``B(h) U(h/2)`` after it (the update of
:mod:`integrators.torch.schemes.ubu`, in its order of operations; ``coef = (h, eta, x_from_v,
v_noise, x_noise)``)."""

import triton
import triton.language as tl  # noqa: F401 (the interpreter finds the language through the globals)

from integrators.schemes.ubu import SCHEME as _numba

NAME = _numba.NAME


@triton.jit
def before(x, v, g, h, eta, x_from_v, v_noise, x_noise, dW1, J1, dW2, J2):
    x = x + (x_from_v * v + x_noise * (dW1 - J1))
    v = eta * v + v_noise * J1
    return x, v


@triton.jit
def after(x, v, g, h, eta, x_from_v, v_noise, x_noise, dW1, J1, dW2, J2):
    kicked = v - h * g
    x = x + (x_from_v * kicked + x_noise * (dW2 - J2))
    v = eta * kicked + v_noise * J2
    return x, v
