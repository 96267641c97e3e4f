"""Correct schemes written in unusual ways, for the no-false-alarm checks of ``verify``: an O step
split in two, UBU with its coefficients from matrix exponentials, and symplectic Euler after an
exact OU step (declaring order 1)."""

import math

import numba as nb
import numpy as np
from scipy.linalg import expm

from integrators import Scheme
from integrators._bounce import reflect
from integrators.schemes.ubu import SCHEME as ubu


@nb.njit(nogil=True)
def aboba_split_o_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """A(h/2) B(h/2) O(h/2) O(h/2) B(h/2) A(h/2): ABOBA with its O step as two exact half steps, each
    on its own half interval's ``J``."""
    h, eta_half, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            w = v[c, a] - 0.5 * h * g[c, a]
            w = eta_half * w + noise * J[0, a, c]
            w = eta_half * w + noise * J[1, a, c]
            v[c, a] = w - 0.5 * h * g[c, a]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


def aboba_split_o_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h / 2), math.sqrt(2 * gamma)])


def ubu_expm_coefficients(h, gamma):
    """UBU's coefficients read off ``expm`` of the OU generator ``[[0, 1], [0, -gamma]]`` over ``h/2``."""
    flow = expm(np.array([[0.0, 1.0], [0.0, -gamma]]) * (h / 2))
    s = math.sqrt(2 * gamma)
    return np.array([h, flow[1, 1], flow[0, 1], s, s / gamma])


@nb.njit(nogil=True)
def ou_symplectic_euler_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """O(h) exact, then symplectic Euler: ``v -= h G(x)``, ``x += h v`` (first order)."""
    h, eta, noise, eta_half = coef[0], coef[1], coef[2], coef[3]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            v[c, a] = eta * v[c, a] + noise * (eta_half * J[0, a, c] + J[1, a, c])
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            v[c, a] -= h * g[c, a]
            x[c, a] += h * v[c, a]
    reflect(x, v, box)


def ou_symplectic_euler_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h), math.sqrt(2 * gamma), math.exp(-gamma * h / 2)])


ABOBA_SPLIT_O = Scheme("aboba_split_o", aboba_split_o_step, aboba_split_o_coefficients, WEAK_ORDER=2.0,
                       STRONG_ORDER=1.0)
UBU_EXPM = Scheme("ubu_expm", ubu.step, ubu_expm_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=2.0)
OU_SYMPLECTIC_EULER = Scheme("ou_symplectic_euler", ou_symplectic_euler_step, ou_symplectic_euler_coefficients,
                             WEAK_ORDER=1.0, STRONG_ORDER=1.0)
UNUSUAL = {"aboba_split_o": ABOBA_SPLIT_O, "ubu_expm": UBU_EXPM, "ou_symplectic_euler": OU_SYMPLECTIC_EULER}
