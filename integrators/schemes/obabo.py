"""OBABO, first-same-as-last: ``O(h/2) B(h/2) A(h) B(h/2) O(h/2)``.

    v <- e^{-gamma h/2} v + sqrt(2 gamma) J_1      (J over the first half step)
    v <- v - h/2 g                                  (g = G(x_k, w_{k+1}), cached)
    x <- x + h v
    g <- G(x_{k+1}, w_{k+2})
    v <- v - h/2 g
    v <- e^{-gamma h/2} v + sqrt(2 gamma) J_2      (J over the second half step)

A new scheme is one file like this one, registered in ``integrators/schemes/__init__.py``
(or, from user code, with ``register_scheme``).
"""

import math

import numba as nb
import numpy as np

from integrators._bounce import reflect
from integrators.schemes import FORCE, REFLECT, Scheme

ORDER = 4  # its place in tables and figures (integrators.registry.discover)


def coefficients(h: float, gamma: float) -> np.ndarray:
    """The coefficients the OBABO step reads, at step size ``h`` and friction ``gamma``."""
    return np.array([h, math.exp(-0.5 * gamma * h), math.sqrt(2.0 * gamma)])


def affine_ops(h: float, gamma: float) -> list:
    """The step as operations for the exact oracle, in first-same-as-last rotated form: the
    state sits after A, so one transition ``B(h/2) O(h/2) O(h/2) B(h/2) A(h)`` uses one batch
    (the two O's draw on independent half-step noises)."""
    return [("kick", h / 2), ("o", h / 2, [(3, 1.0)]), ("o", h / 2, [(1, 1.0)]), ("kick", h / 2),
            ("drift", h)]


def rotation_ops(h: float, gamma: float) -> list:
    """From the state after a step to the rotated state of :func:`affine_ops` (after A): undo
    the last O, ``v <- e^{gamma h/2} (v - sqrt(2 gamma) J_2)`` with the step's own ``J_2`` (noise
    slot 3), then the last half kick."""
    return [("o", -h / 2, [(3, -math.exp(0.5 * gamma * h))]), ("kick", -h / 2)]


def damp_kick_drift(x, v, g, h, eta_half, noise, c3, c4, dW1, J1, dW2, J2):
    """O(h/2) B(h/2) A(h) with the cached force (a move of :data:`SCHEME`'s ``UPDATE``)."""
    v *= eta_half
    v += noise * J1
    v -= 0.5 * h * g
    x += h * v
    return x, v


def kick_damp(x, v, g, h, eta_half, noise, c3, c4, dW1, J1, dW2, J2):
    """B(h/2) O(h/2) with the force just computed."""
    v -= 0.5 * h * g
    v *= eta_half
    v += noise * J2
    return x, v


@nb.njit(nogil=True)
def step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """One OBABO step of size ``h`` of a block of ``n`` chains, in place (Numba)."""
    h, eta_half, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            v[c, a] = eta_half * v[c, a] + noise * J[0, a, c] - 0.5 * h * g[c, a]
            x[c, a] += h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            v[c, a] = eta_half * (v[c, a] - 0.5 * h * g[c, a]) + noise * J[1, a, c]


SCHEME = Scheme(
    NAME="obabo",
    WEAK_ORDER=2.0,
    STRONG_ORDER=1.0,
    FSAL=True,
    coefficients=coefficients, step=step, affine_ops=affine_ops, rotation_ops=rotation_ops,
    UPDATE=(damp_kick_drift, REFLECT, FORCE, kick_damp),
)

__all__ = ["SCHEME"]
