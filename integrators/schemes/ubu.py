"""UBU: ``U(h/2) B(h) U(h/2)`` (Sanz-Serna and Zygalakis; the paper's Algorithm SG-UBU).

U(tau) is the exact Ornstein-Uhlenbeck flow of ``dX = V dt, dV = -gamma V dt + sqrt(2 gamma) dW``
over ``tau = h/2``, written with the path pair ``(dW, J)`` of that half step:

    v' = e^{-gamma tau} v + sqrt(2 gamma) J
    x' = x + (1 - e^{-gamma tau}) / gamma * v + sqrt(2 gamma) / gamma * (dW - J)

B(h) is the kick ``v' = v - h G(x, w_k)`` with the step's minibatch.  One force per step.
"""

import math

import numba as nb
import numpy as np

from integrators._bounce import reflect
from integrators.schemes import FORCE, REFLECT, Scheme

ORDER = 3  # its place in tables and figures (integrators.registry.discover)


def coefficients(h: float, gamma: float) -> np.ndarray:
    """The coefficients the UBU step reads, at step size ``h`` and friction ``gamma``."""
    eta = math.exp(-0.5 * gamma * h)
    return np.array([h, eta, -math.expm1(-0.5 * gamma * h) / gamma,
                     math.sqrt(2.0 * gamma), math.sqrt(2.0 * gamma) / gamma])


def affine_ops(h: float, gamma: float) -> list:
    """The step as operations for the exact oracle."""
    return [("u", 0), ("kick", h), ("u", 1)]


def half_u(x, v, g, h, eta, x_from_v, v_noise, x_noise, dW1, J1, dW2, J2):
    """U(h/2) over the first half step (a move of :data:`SCHEME`'s ``UPDATE``)."""
    x += x_from_v * v + x_noise * (dW1 - J1)
    v *= eta
    v += v_noise * J1
    return x, v


def kick_half_u(x, v, g, h, eta, x_from_v, v_noise, x_noise, dW1, J1, dW2, J2):
    """B(h), then U(h/2) over the second half step."""
    v -= h * g
    x += x_from_v * v + x_noise * (dW2 - J2)
    v *= eta
    v += v_noise * J2
    return x, v


@nb.njit(nogil=True, inline="always")
def _half_u(x, v, coef, dW, J, half):
    eta, x_from_v, v_noise, x_noise = coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[half, a, c] - J[half, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[half, a, c]


@nb.njit(nogil=True, inline="always")
def _kick_then_half_u(x, v, g, coef, dW, J):
    """B(h) followed by the second U(h/2), in one pass over the block."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            kicked = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * kicked + v_noise * J[1, a, c]


@nb.njit(nogil=True)
def step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """One UBU step of size ``h`` of a block of ``n`` chains, in place (Numba)."""
    _half_u(x, v, coef, dW, J, 0)
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    _kick_then_half_u(x, v, g, coef, dW, J)
    reflect(x, v, box)


SCHEME = Scheme(
    NAME="ubu",
    WEAK_ORDER=2.0,
    STRONG_ORDER=2.0,
    FSAL=False,
    coefficients=coefficients, step=step, affine_ops=affine_ops,
    UPDATE=(half_u, REFLECT, FORCE, kick_half_u, REFLECT),
)

__all__ = ["SCHEME"]
