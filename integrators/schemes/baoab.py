"""BAOAB, first-same-as-last: ``B(h/2) A(h/2) O(h) A(h/2) B(h/2)`` (Leimkuhler-Matthews;
the paper's Algorithms SG-BAOAB and SMS-BAOAB).

    v <- v - h/2 g                     (g = G(x_k, w_{k+1}), cached from the previous step)
    x <- x + h/2 v
    v <- e^{-gamma h} v + sqrt(2 gamma) J      (J over the whole step: O is exact OU on v)
    x <- x + h/2 v
    g <- G(x_{k+1}, w_{k+2})           (the one force of the step: batch of the next step)
    v <- v - h/2 g

This is the standard BAOAB with ``exp(-gamma h)`` in O (see the design's conventions: the
paper's listing reuses ``eta = exp(-gamma h / 2)``, i.e. this scheme at friction gamma / 2).
"""

import math

import numba as nb
import numpy as np

from integrators._bounce import reflect
from integrators.schemes import FORCE, REFLECT, Scheme

ORDER = 2  # its place in tables and figures (integrators.registry.discover)


def coefficients(h: float, gamma: float) -> np.ndarray:
    """The coefficients the BAOAB step reads, at step size ``h`` and friction ``gamma``."""
    return np.array([h, math.exp(-gamma * h), math.sqrt(2.0 * gamma), math.exp(-0.5 * gamma * h)])


def affine_ops(h: float, gamma: float) -> list:
    """The step as operations for the exact oracle, in first-same-as-last rotated form: the
    state sits before the last half kick, so one transition ``B(h) A O A`` uses one batch.
    Noise slots: 0 dW, 1 J over the first half step, 2 dW, 3 J over the second."""
    return [("kick", h), ("drift", h / 2), ("o", h, [(1, math.exp(-gamma * h / 2)), (3, 1.0)]),
            ("drift", h / 2)]


def rotation_ops(h: float, gamma: float) -> list:
    """From the state after a step to the rotated state of :func:`affine_ops`: undo the last
    half kick (``v + h/2 G(x)``, with the batch of the cached force)."""
    return [("kick", -h / 2)]


def half_kick_drift(x, v, g, h, eta, noise, eta_half, c4, dW1, J1, dW2, J2):
    """B(h/2) A(h/2) (a move of :data:`SCHEME`'s ``UPDATE``)."""
    v -= 0.5 * h * g
    x += 0.5 * h * v
    return x, v


def damp_drift(x, v, g, h, eta, noise, eta_half, c4, dW1, J1, dW2, J2):
    """O(h) with J over the step composed exactly from its two halves, then A(h/2)."""
    v *= eta
    v += noise * (eta_half * J1 + J2)
    x += 0.5 * h * v
    return x, v


def half_kick(x, v, g, h, eta, noise, eta_half, c4, dW1, J1, dW2, J2):
    """B(h/2) with the force just computed."""
    v -= 0.5 * h * g
    return x, v


@nb.njit(nogil=True)
def step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """One BAOAB step of size ``h`` of a block of ``n`` chains, in place (Numba)."""
    h, eta, noise, eta_half = coef[0], coef[1], coef[2], coef[3]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            v[c, a] -= 0.5 * h * g[c, a]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    for a in range(d):
        for c in range(n):
            # J over the step, composed exactly from its two halves
            v[c, a] = eta * v[c, a] + noise * (eta_half * J[0, a, c] + J[1, a, c])
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            v[c, a] -= 0.5 * h * g[c, a]


SCHEME = Scheme(
    NAME="baoab",
    WEAK_ORDER=2.0,
    STRONG_ORDER=1.0,
    FSAL=True,
    EXACT_GAUSSIAN_X=True,  # with full gradients the x-marginal is exact on Gaussian targets (every stable h)
    coefficients=coefficients, step=step, affine_ops=affine_ops, rotation_ops=rotation_ops,
    UPDATE=(half_kick_drift, REFLECT, damp_drift, REFLECT, FORCE, half_kick),
)

__all__ = ["SCHEME"]
