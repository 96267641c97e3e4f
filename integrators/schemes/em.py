"""Euler-Maruyama for kinetic Langevin (SG-HMC under the ``iid`` plan; the paper's Algorithm SG-EM).

    x' = x + h v
    v' = v - h G(x, w_k) - h gamma v + sqrt(2 gamma) dW

with ``dW`` the Brownian increment over the whole step (the sum of its two half-step pieces).
"""

import math

import numba as nb
import numpy as np

from integrators._bounce import reflect
from integrators.schemes import FORCE, REFLECT, Scheme

ORDER = 1  # its place in tables and figures (integrators.registry.discover)


def coefficients(h: float, gamma: float) -> np.ndarray:
    """The coefficients the Euler-Maruyama step reads, at step size ``h`` and friction ``gamma``."""
    return np.array([h, gamma, math.sqrt(2.0 * gamma)])


def affine_ops(h: float, gamma: float) -> list:
    """The step as operations for the exact oracle."""
    return [("em", h)]


def euler(x, v, g, h, gamma, noise, c3, c4, dW1, J1, dW2, J2):
    """Both updates from the old state (a move of :data:`SCHEME`'s ``UPDATE``)."""
    damping = h * gamma * v
    x += h * v
    v -= h * g
    v -= damping
    v += noise * (dW1 + dW2)
    return x, v


@nb.njit(nogil=True)
def step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """One Euler-Maruyama step of size ``h`` of a block of ``n`` chains, in place (Numba)."""
    h, gamma, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            v_old = v[c, a]
            x[c, a] += h * v_old
            v[c, a] = v_old - h * g[c, a] - h * gamma * v_old + noise * (dW[0, a, c] + dW[1, a, c])
    reflect(x, v, box)


SCHEME = Scheme(
    NAME="em",
    WEAK_ORDER=1.0,
    STRONG_ORDER=1.0,
    FSAL=False,
    coefficients=coefficients, step=step, affine_ops=affine_ops,
    UPDATE=(FORCE, euler, REFLECT),
)

__all__ = ["SCHEME"]
