"""Gaussian data terms ``f_i(x) = (x - mu_i)^T A_i (x - mu_i) / 2`` with a Gaussian prior: the
targets of the exact oracle."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators._validation import finite_array
from integrators.targets._base import Target


@nb.njit(nogil=True, inline="always")
def _gauss_prior_grad_add(x, arrays, out):
    """Add the prior's gradient ``P_0 (x - m_0)`` at one point to ``out`` (a Numba function).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(d,)``.
    arrays : tuple
        The target's ``arrays``: ``(means, precisions, prior_precision, prior_mean)``.
    out : numpy.ndarray
        Shape ``(d,)``, added to in place.
    """
    _, _, p0, m0 = arrays
    d = x.shape[0]
    for a in range(d):
        acc = 0.0
        for b in range(d):
            acc += p0[a, b] * (x[b] - m0[b])
        out[a] += acc


@nb.njit(nogil=True, inline="always")
def _gauss_datum_grad_add(x, i, coef, arrays, out):
    """Add ``coef`` times the gradient ``A_i (x - mu_i)`` of data term ``i`` to ``out`` (a Numba function).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(d,)``.
    i : int
        Index of the data term.
    coef : float
        Factor of the term (the plan's force scale, or -1 for a control variate's reference).
    arrays : tuple
        The target's ``arrays``: ``(means, precisions, prior_precision, prior_mean)``.
    out : numpy.ndarray
        Shape ``(d,)``, added to in place.
    """
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
    """Write the prior's and the scaled batch's gradients of a block of chains to ``out`` (a Numba function).

    Chain ``c`` gets ``P_0 (x_c - m_0) + scale * sum_j A_i (x_c - mu_i)`` over its batch
    ``i = batch[j, c]``, ``j < n_batch``; loops run with chains innermost, so the arithmetic
    vectorizes.  Up to 8 data terms, each term is added by one masked, branch-free pass instead of
    gathers (the same additions in the same order).

    Parameters
    ----------
    x : numpy.ndarray
        Positions of the block, shape ``(n, d)``.
    out : numpy.ndarray
        Shape ``(n, d)``, overwritten.
    batch : numpy.ndarray
        Data indices, shape ``(k, n)``; chain ``c``'s batch is ``batch[:n_batch, c]``.
    n_batch : int
        Number of indices per chain in this batch.
    scale : float
        The plan's force scale.
    arrays : tuple
        The target's ``arrays``: ``(means, precisions, prior_precision, prior_mean)``.
    """
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
    """The potential ``f(x) = f_0(x) + sum_i f_i(x)`` at one point (a Numba function).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(d,)``.
    arrays : tuple
        The target's ``arrays``: ``(means, precisions, prior_precision, prior_mean)``.

    Returns
    -------
    float
        ``(x - m_0)^T P_0 (x - m_0) / 2 + sum_i (x - mu_i)^T A_i (x - mu_i) / 2``.
    """
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
    """Gaussian data terms ``f_i(x) = (x - mu_i)^T A_i (x - mu_i) / 2`` plus a Gaussian prior.

    The prior is ``f_0(x) = (x - m_0)^T P_0 (x - m_0) / 2``.  The posterior is exactly Gaussian,
    with precision ``P_0 + sum_i A_i``, and every step of every scheme on it is an affine map plus
    Gaussian noise: the targets of the exact oracle (:mod:`theory_checks.oracle`).

    Parameters
    ----------
    means : array_like
        The ``mu_i``, shape ``(n_data, d)``; shape ``(n_data,)`` (or one number) means
        one-dimensional data terms.
    precisions : array_like
        The ``A_i``, symmetric, shape ``(n_data, d, d)``; for ``d = 1`` also ``(n_data,)`` or one
        number.
    prior_precision : array_like or None, default None
        ``P_0``, shape ``(d, d)`` or one number (times the identity); ``None``: no prior.
    prior_mean : array_like or None, default None
        ``m_0``, shape ``(d,)`` (``None``: the origin); needs ``prior_precision``.

    Attributes
    ----------
    name : str
        ``"gaussian"``.
    arrays : tuple
        ``(means, precisions, prior_precision, prior_mean)`` as the Numba functions take them.
    dim : int
        Dimension ``d``.
    n_data : int
        Number of data terms ``N_D``.

    Raises
    ------
    ValueError
        If an array is not finite or has the wrong shape, a precision is not symmetric,
        ``prior_mean`` is given without ``prior_precision``, or the total precision is not
        positive definite.

    Examples
    --------
    >>> from integrators import GaussianTarget
    >>> target = GaussianTarget(means=[[-1.0], [1.0]], precisions=[4.0, 0.25])
    >>> target.dim, target.n_data
    (1, 2)
    """

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
        if not np.allclose(prior_precision, prior_precision.T):  # the data precisions' rule
            raise ValueError(f"prior_precision must be a symmetric matrix, got {prior_precision.tolist()}")
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
        """The Hessian of ``f``, ``P_0 + sum_i A_i`` (the posterior precision), shape ``(d, d)``."""
        return self.arrays[2] + self.arrays[1].sum(axis=0)

    @property
    def mean(self) -> np.ndarray:
        """The posterior mean, ``(P_0 + sum_i A_i)^{-1} (P_0 m_0 + sum_i A_i mu_i)``, shape ``(d,)``."""
        mu, prec, p0, m0 = self.arrays
        rhs = p0 @ m0 + np.einsum("iab,ib->a", prec, mu)
        return np.linalg.solve(self.precision, rhs)

    @property
    def covariance(self) -> np.ndarray:
        """The posterior covariance, the inverse of :attr:`precision`, shape ``(d, d)``."""
        return np.linalg.inv(self.precision)

    def initial_point(self) -> np.ndarray:
        """The default initial position of every chain.

        Returns
        -------
        numpy.ndarray
            The origin, shape ``(d,)``.
        """
        return np.zeros(self.dim)

    def typical_scale(self) -> tuple[float, float]:
        """The target's scale from its exact moments (it sets the default divergence bound).

        Returns
        -------
        tuple of float
            ``(|mean|_inf, largest marginal standard deviation)``.
        """
        return float(np.max(np.abs(self.mean))), float(math.sqrt(np.max(np.diag(self.covariance))))

    @classmethod
    def one_d_example(cls) -> GaussianTarget:
        """The paper's Section 3.4 example: two one-dimensional data terms and no prior.

        The terms are ``(x - x_i)^2 / (2 sigma_i^2)`` with means -1 and 1 and sigmas 0.5 and 2.
        The paper's text writes them without the factor 2; its figure uses this form (with
        friction 1), which the project follows.

        Returns
        -------
        GaussianTarget
            The target, ``d = 1``, ``n_data = 2``.
        """
        sig = np.array([0.5, 2.0])
        return cls(means=[[-1.0], [1.0]], precisions=(1.0 / sig**2)[:, None, None])
