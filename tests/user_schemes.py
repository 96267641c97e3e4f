"""The README's user schemes (section "Verifying a scheme of your own"), shared by the tests:
ABOBA, written for this toolkit as a user would, and a broken ABOBA whose O step forgets the first
half step's ``J``."""

import math

import numba as nb
import numpy as np

from integrators import Scheme
from integrators._bounce import reflect


@nb.njit(nogil=True)
def aboba_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """The README's ABOBA: A(h/2) B(h/2) O(h) B(h/2) A(h/2); J over the step = e^{-gamma h/2} J_1 + J_2."""
    h, eta, noise, eta_half = coef[0], coef[1], coef[2], coef[3]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            w = eta * (v[c, a] - 0.5 * h * g[c, a]) + noise * (eta_half * J[0, a, c] + J[1, a, c])
            v[c, a] = w - 0.5 * h * g[c, a]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


def aboba_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h), math.sqrt(2 * gamma), math.exp(-gamma * h / 2)])


ABOBA = Scheme("aboba", aboba_step, aboba_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)


@nb.njit(nogil=True)
def aboba_broken_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """The README's broken ABOBA: the O step forgets the first half step's J."""
    h, eta, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            w = eta * (v[c, a] - 0.5 * h * g[c, a]) + noise * J[1, a, c]
            v[c, a] = w - 0.5 * h * g[c, a]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


ABOBA_BROKEN = Scheme("aboba_broken", aboba_broken_step, aboba_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)


def aboba_torch_step(x, v, g, coef, dW, J, force, reflect):
    """ABOBA on tensors (the contract of integrators.torch.schemes), in the Numba step's order of operations."""
    h, eta, noise, eta_half = coef[0], coef[1], coef[2], coef[3]
    x.add_(0.5 * h * v)
    if reflect is not None:
        reflect(x, v)
    g = force(x)
    w = eta * (v - 0.5 * h * g) + noise * (eta_half * J[0] + J[1])
    v.copy_(w - 0.5 * h * g)
    x.add_(0.5 * h * v)
    if reflect is not None:
        reflect(x, v)
    return g


# ABOBA with its tensor step: it runs on both backends
ABOBA_BOTH = Scheme("aboba_both", aboba_step, aboba_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0,
                    TORCH_STEP=aboba_torch_step)


@nb.njit(nogil=True)
def aoboa_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """The tour's AOBOA (notebook 7): A(h/2) O(h/2) B(h) O(h/2) A(h/2)."""
    h, eta, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            w = eta * v[c, a] + noise * J[0, a, c]
            w = w - h * g[c, a]
            v[c, a] = eta * w + noise * J[1, a, c]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


def aoboa_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h / 2), math.sqrt(2 * gamma)])


AOBOA = Scheme("aoboa", aoboa_step, aoboa_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)
