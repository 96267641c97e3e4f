"""Gaussian data terms ``f_i(x) = (x - mu_i)^T A_i (x - mu_i) / 2`` with a Gaussian prior: the
targets of the exact oracle."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators.targets.base import Target
from integrators.validation import finite_array


@nb.njit(nogil=True, inline="always")
def _gauss_prior_grad_add(x, arrays, out):
    _, _, p0, m0 = arrays
    d = x.shape[0]
    for a in range(d):
        acc = 0.0
        for b in range(d):
            acc += p0[a, b] * (x[b] - m0[b])
        out[a] += acc


@nb.njit(nogil=True, inline="always")
def _gauss_datum_grad_add(x, i, coef, arrays, out):
    mu, prec, _, _ = arrays
    d = x.shape[0]
    for a in range(d):
        acc = 0.0
        for b in range(d):
            acc += prec[i, a, b] * (x[b] - mu[i, b])
        out[a] += coef * acc


SMALL_DATA = 8  # up to this many data terms, the Gaussian lane force makes one masked pass per term


@nb.njit(nogil=True, inline="always")
def _gauss_lane_grad(x, out, batch, n_batch, scale, arrays):
    """Prior and scaled batch gradients of a block of chains written to ``out``, chains
    innermost (vectorized)."""
    mu, prec, p0, m0 = arrays
    n, d = x.shape
    few = mu.shape[0] <= SMALL_DATA
    for a in range(d):
        fresh = True  # out[:, a] not written yet: the first pass writes instead of adding to zeros
        for b in range(d):
            if p0[a, b] != 0.0:  # (the paper's 1-D example has no prior)
                for c in range(n):
                    out[c, a] = (0.0 if fresh else out[c, a]) + p0[a, b] * (x[c, b] - m0[b])
                fresh = False
        if few:
            fresh = _gauss_masked_terms(x, out, a, fresh, batch, n_batch, scale, mu, prec)
        if fresh:
            for c in range(n):
                out[c, a] = 0.0
    if few:
        return
    for j in range(n_batch):  # gathers by each chain's batch (scalar: Numba tells LLVM nothing of aliasing)
        for a in range(d):
            for b in range(d):
                for c in range(n):
                    i = batch[j, c]
                    out[c, a] += scale * (prec[i, a, b] * (x[c, b] - mu[i, b]))


@nb.njit(nogil=True, inline="always")
def _gauss_masked_terms(x, out, a, fresh, batch, n_batch, scale, mu, prec):
    """Coordinate ``a`` of the batch gradients with few data terms; returns whether ``out[:, a]``
    is still unwritten."""
    n, d = x.shape
    # one branch-free pass per term, each chain adding it where its batch holds it (vectorizes;
    # the same additions in the same order as the gathers of _gauss_lane_grad)
    for j in range(n_batch):
        for i in range(mu.shape[0]):
            for b in range(d):
                for c in range(n):
                    term = scale * (prec[i, a, b] * (x[c, b] - mu[i, b]))
                    out[c, a] = (0.0 if fresh else out[c, a]) + (term if batch[j, c] == i else 0.0)
                fresh = False
    return fresh


@nb.njit(nogil=True, inline="always")
def _gauss_potential(x, arrays):
    mu, prec, p0, m0 = arrays
    d = x.shape[0]
    total = 0.0
    for a in range(d):
        for b in range(d):
            total += 0.5 * (x[a] - m0[a]) * p0[a, b] * (x[b] - m0[b])
    for i in range(mu.shape[0]):
        for a in range(d):
            for b in range(d):
                total += 0.5 * (x[a] - mu[i, a]) * prec[i, a, b] * (x[b] - mu[i, b])
    return total


class GaussianTarget(Target):
    """Gaussian data terms ``f_i(x) = (x - mu_i)^T A_i (x - mu_i) / 2`` plus a Gaussian prior
    ``f_0(x) = (x - m_0)^T P_0 (x - m_0) / 2``.  The posterior is exactly Gaussian."""

    name = "gaussian"
    lane_grad = staticmethod(_gauss_lane_grad)
    prior_grad_add = staticmethod(_gauss_prior_grad_add)
    datum_grad_add = staticmethod(_gauss_datum_grad_add)
    potential = staticmethod(_gauss_potential)

    def __init__(self, means, precisions, prior_precision=None, prior_mean=None):
        means = finite_array("means", means)
        if means.ndim == 0:  # one number: one one-dimensional data term
            means = means.reshape(1)
        raw_means_1d = means.ndim == 1
        if raw_means_1d:
            means = means[:, None]
        if means.ndim != 2 or means.shape[0] < 1:
            raise ValueError(f"means must have shape (n_data, d), got {means.shape}")
        n, d = means.shape
        precisions = finite_array("precisions", precisions)
        if precisions.ndim <= 1 and d == 1:
            precisions = precisions.reshape(-1, 1, 1)
        if precisions.shape != (n, d, d):
            hint = (f" (means of shape {(n,)} is read as {n} one-dimensional data terms; for one term in d={n} "
                    f"pass means of shape {(1, n)})" if raw_means_1d and n > 1 else "")
            raise ValueError(f"precisions must have shape {(n, d, d)}, got {precisions.shape}{hint}")
        if not np.allclose(precisions, np.swapaxes(precisions, 1, 2)):
            raise ValueError("precisions must be symmetric matrices")
        if prior_precision is None:
            if prior_mean is not None:
                raise ValueError("prior_mean needs prior_precision (without a prior precision there is no prior "
                                 "for it to center)")
            prior_precision = np.zeros((d, d))
        prior_precision = finite_array("prior_precision", prior_precision)
        if prior_precision.ndim == 0:
            prior_precision = prior_precision * np.eye(d)
        if prior_precision.shape != (d, d):
            raise ValueError(f"prior_precision must have shape {(d, d)}, got {prior_precision.shape}")
        prior_mean = np.zeros(d) if prior_mean is None else finite_array("prior_mean", prior_mean)
        if prior_mean.ndim == 0 and d == 1:
            prior_mean = prior_mean.reshape(1)
        if prior_mean.shape != (d,):
            raise ValueError(f"prior_mean must have shape {(d,)}, got {prior_mean.shape}")
        total = prior_precision + precisions.sum(axis=0)
        eig = np.linalg.eigvalsh(0.5 * (total + total.T))
        if eig.min() <= 0:
            raise ValueError("the total precision (prior + data terms) must be positive definite")
        self.arrays = (means, precisions, np.ascontiguousarray(prior_precision), prior_mean)
        self.dim, self.n_data = d, n

    @property
    def precision(self) -> np.ndarray:
        """Hessian of f (the posterior precision)."""
        return self.arrays[2] + self.arrays[1].sum(axis=0)

    @property
    def mean(self) -> np.ndarray:
        mu, prec, p0, m0 = self.arrays
        rhs = p0 @ m0 + np.einsum("iab,ib->a", prec, mu)
        return np.linalg.solve(self.precision, rhs)

    @property
    def covariance(self) -> np.ndarray:
        return np.linalg.inv(self.precision)

    def initial_point(self) -> np.ndarray:
        return np.zeros(self.dim)

    def typical_scale(self) -> tuple[float, float]:
        """The exact moments: ``(|mean|_inf, largest marginal standard deviation)``."""
        return float(np.max(np.abs(self.mean))), float(math.sqrt(np.max(np.diag(self.covariance))))

    @classmethod
    def one_d_example(cls) -> GaussianTarget:
        """The paper's Section 3.4 example: two terms ``(x - x_i)^2 / (2 sigma_i^2)``,
        means -1 and 1, sigmas 0.5 and 2, no prior (the design's convention)."""
        sig = np.array([0.5, 2.0])
        return cls(means=[[-1.0], [1.0]], precisions=(1.0 / sig**2)[:, None, None])
