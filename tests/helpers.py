"""Plain-numpy references shared by the tests: single steps of every scheme, the affine step
maps of full-gradient schemes on Gaussian targets and their exact stationary laws."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from integrators.brownian import pair_covariance


def gaussian_batch_force(target, x, batch, scale):
    mu, prec, p0, m0 = target.arrays
    g = p0 @ (x - m0)
    for i in batch:
        g = g + scale * prec[i] @ (x - mu[i])
    return g


def reference_step(scheme, x, v, g, h, gamma, dW, J, grad):
    """One step written directly from the update rules; ``grad(x)`` is the step's force.

    ``g`` is the cached force for first-same-as-last schemes.  Returns (x, v, g).
    """
    x, v = x.copy(), v.copy()
    s = math.sqrt(2 * gamma)
    if scheme == "em":
        g = grad(x)
        x, v = x + h * v, v - h * g - h * gamma * v + s * (dW[0] + dW[1])
    elif scheme == "ubu":
        tau = h / 2
        eta = math.exp(-gamma * tau)
        for half in (0, 1):
            x = x + (1 - eta) / gamma * v + s / gamma * (dW[half] - J[half])
            v = eta * v + s * J[half]
            if half == 0:
                g = grad(x)
                v = v - h * g
    elif scheme == "baoab":
        v = v - h / 2 * g
        x = x + h / 2 * v
        j_full = math.exp(-gamma * h / 2) * J[0] + J[1]
        v = math.exp(-gamma * h) * v + s * j_full
        x = x + h / 2 * v
        g = grad(x)
        v = v - h / 2 * g
    elif scheme == "obabo":
        eta = math.exp(-gamma * h / 2)
        v = eta * v + s * J[0]
        v = v - h / 2 * g
        x = x + h * v
        g = grad(x)
        v = v - h / 2 * g
        v = eta * v + s * J[1]
    else:
        raise ValueError(scheme)
    return x, v, g


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


def stationary_covariance(scheme, hess, h, gamma):
    """Exact stationary covariance of ``z = (x, v)`` (discrete Lyapunov equation)."""
    a, q = affine_step_map(scheme, hess, h, gamma)
    if np.max(np.abs(np.linalg.eigvals(a))) >= 1:
        raise ValueError("unstable step size")
    return scipy.linalg.solve_discrete_lyapunov(a, q)
