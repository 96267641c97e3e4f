"""The exact oracle for Gaussian targets (full gradients so far).

For ``f(x) = (x - m)^T H (x - m) / 2`` every step of every scheme is an affine map of
``z = (x, v)`` plus Gaussian noise built from the path pairs ``(dW, J)`` of its two half steps:
``z' - z* = A (z - z*) + noise``, ``noise ~ N(0, Q)``, with the fixed point ``z* = (m, 0)`` (the
force vanishes at ``m``).  The stationary mean is therefore ``m`` exactly and the stationary
covariance solves the discrete Lyapunov equation ``S = A S A^T + Q``.  A step size with spectral
radius of ``A`` at least 1 is reported unstable, never as numbers.

Still to come (issue 3): ``iid``, ``rr`` and ``sms`` plans, weak/strong order fits, the claims table.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from integrators.brownian import pair_covariance


class UnstableStepError(ValueError):
    """The scheme's step map has spectral radius >= 1: no stationary law."""


def affine_step_map(scheme, hess, h, gamma):
    """For a full-gradient step on ``f(x) = x^T H x / 2``: ``z' = A z + noise``, noise ~ N(0, Q)
    with ``z = (x, v)``.  Built by propagating the path pair exactly through the scheme."""
    d = hess.shape[0]
    eye = np.eye(d)
    # state augmented with the path variables of the two half steps: (x, v, dW1, J1, dW2, J2)
    n = 2 * d + 4 * d

    def lift(m):
        out = np.eye(n)
        out[: 2 * d, :] = m
        return out

    def idx(k):
        return slice(2 * d + k * d, 2 * d + (k + 1) * d)

    x_, v_ = slice(0, d), slice(d, 2 * d)
    s = math.sqrt(2 * gamma)
    ops = []

    def kick(c):
        m = np.zeros((2 * d, n))
        m[x_, x_] = eye
        m[v_, v_] = eye
        m[v_, x_] = -c * hess
        ops.append(lift(m))

    def drift(c):
        m = np.zeros((2 * d, n))
        m[x_, x_] = eye
        m[x_, v_] = c * eye
        m[v_, v_] = eye
        ops.append(lift(m))

    def ou_v(decay, coeffs):
        m = np.zeros((2 * d, n))
        m[x_, x_] = eye
        m[v_, v_] = decay * eye
        for k, c in coeffs:
            m[v_, idx(k)] = s * c * eye
        ops.append(lift(m))

    def u_half(half):
        tau = h / 2
        eta = math.exp(-gamma * tau)
        m = np.zeros((2 * d, n))
        m[x_, x_] = eye
        m[x_, v_] = (1 - eta) / gamma * eye
        m[x_, idx(2 * half)] = s / gamma * eye
        m[x_, idx(2 * half + 1)] = -s / gamma * eye
        m[v_, v_] = eta * eye
        m[v_, idx(2 * half + 1)] = s * eye
        ops.append(lift(m))

    if scheme == "em":
        m = np.zeros((2 * d, n))
        m[x_, x_] = eye
        m[x_, v_] = h * eye
        m[v_, x_] = -h * hess
        m[v_, v_] = (1 - h * gamma) * eye
        m[v_, idx(0)] = s * eye
        m[v_, idx(2)] = s * eye
        ops.append(lift(m))
    elif scheme == "ubu":
        u_half(0)
        kick(h)
        u_half(1)
    elif scheme == "baoab":
        kick(h / 2)
        drift(h / 2)
        ou_v(math.exp(-gamma * h), [(1, math.exp(-gamma * h / 2)), (3, 1.0)])
        drift(h / 2)
        kick(h / 2)
    elif scheme == "obabo":
        eta = math.exp(-gamma * h / 2)
        ou_v(eta, [(1, 1.0)])
        kick(h / 2)
        drift(h)
        kick(h / 2)
        ou_v(eta, [(3, 1.0)])
    total = np.eye(n)
    for op in ops:
        total = op @ total
    a = total[: 2 * d, : 2 * d]
    b = total[: 2 * d, 2 * d:]
    pair = pair_covariance(gamma, h / 2)
    noise_cov = np.zeros((4 * d, 4 * d))
    for half in (0, 1):
        for p in range(2):
            for q in range(2):
                noise_cov[idx(2 * half + p).start - 2 * d: idx(2 * half + p).stop - 2 * d,
                          idx(2 * half + q).start - 2 * d: idx(2 * half + q).stop - 2 * d] = pair[p, q] * eye
    return a, b @ noise_cov @ b.T


def spectral_radius(scheme, hess, h, gamma) -> float:
    a, _ = affine_step_map(scheme, hess, h, gamma)
    return float(np.max(np.abs(np.linalg.eigvals(a))))


def stationary_covariance(scheme, hess, h, gamma):
    """Exact stationary covariance of ``z = (x, v)`` (discrete Lyapunov equation)."""
    a, q = affine_step_map(scheme, hess, h, gamma)
    if np.max(np.abs(np.linalg.eigvals(a))) >= 1:
        raise UnstableStepError(
            f"{scheme} at h={h:g}, gamma={gamma:g} is unstable (spectral radius >= 1)")
    return scipy.linalg.solve_discrete_lyapunov(a, q)


def stationary_full(scheme, target, h, gamma):
    """Exact stationary mean of ``x`` and covariance of ``(x, v)`` of ``scheme x full`` on a
    :class:`~integrators.targets.GaussianTarget`."""
    return target.mean, stationary_covariance(scheme, target.precision, h, gamma)
