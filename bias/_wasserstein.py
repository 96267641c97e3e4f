"""One-dimensional Wasserstein distances.

* :func:`wasserstein_samples`: ``W_p`` between two empirical samples (the sorted formula for
  equal sizes, the quantile-function integral for any sizes).
* :func:`wasserstein_to_distribution`: ``W_p`` between an empirical sample and an exact
  distribution through its quantile function, integrated cell by cell with Gauss-Legendre
  (no sampling noise on the target side); exact closed form for ``W_1`` to a normal law.
* :func:`scipy_w1`: scipy's ``W_1`` between two samples, the reference for cross-checks.

``W_1`` to an exact law for sample counts too large to store (a fixed histogram) is
:mod:`bias._streaming_w1`; the exact noise floor of that statistic is :mod:`bias._noise_floor`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.special
import scipy.stats

from integrators._validation import real_number


@dataclass(frozen=True)
class Normal:
    """A normal law with what the evaluators need: cdf, quantile, and the integrated cdf.

    Parameters
    ----------
    mean : float
        The mean.
    std : float
        The standard deviation, ``> 0``.

    Raises
    ------
    ValueError
        If ``mean`` or ``std`` is not a finite real number, or ``std <= 0``.
    """

    mean: float
    std: float

    def __post_init__(self):
        object.__setattr__(self, "mean", real_number("Normal's mean", self.mean))  # frozen: set through object
        std = real_number("Normal's std", self.std)
        if std <= 0:
            raise ValueError(f"Normal's std must be > 0, got {self.std!r}")
        object.__setattr__(self, "std", std)

    def cdf(self, t):
        """The cdf ``F(t)``.

        Parameters
        ----------
        t : array_like
            Points.

        Returns
        -------
        numpy.ndarray
            ``F`` at ``t``.
        """
        return scipy.special.ndtr((np.asarray(t, float) - self.mean) / self.std)

    def quantile(self, u):
        """The quantile function ``F^{-1}(u)``.

        Parameters
        ----------
        u : array_like
            Levels in ``[0, 1]``.

        Returns
        -------
        numpy.ndarray
            ``F^{-1}`` at ``u``.
        """
        return self.mean + self.std * scipy.special.ndtri(np.asarray(u, float))

    def integrated_cdf(self, t):
        """The integrated cdf ``G(t) = int_{-inf}^t F(s) ds``.

        In closed form ``G(t) = std (z Phi(z) + phi(z))`` with ``z = (t - mean) / std``.

        Parameters
        ----------
        t : array_like
            Points.

        Returns
        -------
        numpy.ndarray
            ``G`` at ``t``.
        """
        z = (np.asarray(t, float) - self.mean) / self.std
        return self.std * (z * scipy.special.ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))

    def sample(self, rng, n):
        """Independent draws of the law.

        Parameters
        ----------
        rng : numpy.random.Generator
            The random numbers.
        n : int
            How many draws.

        Returns
        -------
        numpy.ndarray
            ``(n,)`` draws.
        """
        return self.mean + self.std * rng.standard_normal(n)


def _check_p(p):
    if not (p >= 1 and math.isfinite(p)):
        raise ValueError(f"p must be a finite number >= 1, got {p}")


def _check_sample(name, x):
    x = np.asarray(x, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains non-finite values (a diverged chain?)")
    return x


def wasserstein_samples(x, y, p: float = 1.0) -> float:
    """``W_p`` between the empirical laws of ``x`` and ``y`` (any sizes).

    For equal sizes it is the sorted formula ``(mean |x_(i) - y_(i)|^p)^(1/p)``; otherwise both
    quantile functions are step functions and ``int_0^1 |F_x^{-1}(u) - F_y^{-1}(u)|^p du`` is
    summed exactly over their merged breakpoints.

    Parameters
    ----------
    x, y : array_like
        The two samples (flattened), finite and not empty.
    p : float
        The order, finite and ``>= 1``.

    Returns
    -------
    float
        ``W_p`` between the two empirical laws.

    Raises
    ------
    ValueError
        If ``p`` is not finite and ``>= 1``, or a sample is empty or holds non-finite values.
    """
    _check_p(p)
    x, y = np.sort(_check_sample("x", x)), np.sort(_check_sample("y", y))
    if x.size == y.size:
        return float(np.mean(np.abs(x - y) ** p) ** (1.0 / p))
    # both quantile functions are step functions: integrate over the merged breakpoints
    u = np.union1d(np.arange(1, x.size) / x.size, np.arange(1, y.size) / y.size)
    edges = np.concatenate([[0.0], u, [1.0]])
    mids = 0.5 * (edges[1:] + edges[:-1])
    qx = x[np.minimum((mids * x.size).astype(int), x.size - 1)]
    qy = y[np.minimum((mids * y.size).astype(int), y.size - 1)]
    return float(np.sum(np.diff(edges) * np.abs(qx - qy) ** p) ** (1.0 / p))


def wasserstein_to_distribution(x, dist, p: float = 1.0, nodes: int = 12) -> float:
    """``W_p`` between the empirical law of ``x`` and an exact law ``dist``.

    ``int_0^1 |F_n^{-1}(u) - Q(u)|^p du`` cell by cell (``F_n^{-1}`` is constant on each cell
    ``[i/n, (i+1)/n)``), Gauss-Legendre with ``nodes`` points per cell: no sampling noise on the
    target side.  For ``p = 1`` and a :class:`Normal` the integral ``int |F_n - F| dt`` is taken in
    exact closed form instead.

    Parameters
    ----------
    x : array_like
        The sample (flattened), finite and not empty.
    dist : object
        The exact law, with ``quantile`` (a :class:`Normal`, or any law with that method).
    p : float
        The order, finite and ``>= 1``.
    nodes : int
        Gauss-Legendre nodes per cell.

    Returns
    -------
    float
        ``W_p`` between the empirical law of ``x`` and ``dist``.

    Raises
    ------
    ValueError
        If ``p`` is not finite and ``>= 1``, or ``x`` is empty or holds non-finite values.
    """
    _check_p(p)
    x = np.sort(_check_sample("x", x))
    n = x.size
    if p == 1 and isinstance(dist, Normal):
        return _w1_to_cdf(x, np.full(n, 1.0 / n), dist)
    g, w = np.polynomial.legendre.leggauss(nodes)
    lo = np.arange(n)[:, None] / n
    u = lo + (g[None, :] + 1.0) / (2.0 * n)
    vals = np.abs(x[:, None] - dist.quantile(u)) ** p
    total = np.sum(vals * w[None, :]) / (2.0 * n)
    return float(total ** (1.0 / p))


def _w1_to_cdf(points, weights, dist, f_pts=None, g_pts=None) -> float:
    """Exact ``int |F_disc(t) - F(t)| dt`` for a discrete law (sorted ``points``, ``weights``)
    against ``dist`` with ``cdf``, ``quantile`` and ``integrated_cdf`` (``f_pts``, ``g_pts``:
    ``F`` and ``G`` at ``points`` when the caller has them already)."""
    cum = np.cumsum(weights)
    cum[-1] = 1.0
    G = dist.integrated_cdf
    if g_pts is None:  # once per point, shared by the cells on either side
        g_pts, f_pts = G(points), dist.cdf(points)
    total = float(g_pts[0])  # left tail: int_{-inf}^{x_1} F
    # right tail: int_{x_n}^{inf} (1 - F) = G(t) - t evaluated as limit: use symmetry of identity
    far = points[-1] + 50.0 * max(1.0, abs(points[-1]))
    total += float((far - points[-1]) - (G(far) - g_pts[-1]))
    a, b, c = points[:-1], points[1:], cum[:-1]
    ga, gb, fa, fb = g_pts[:-1], g_pts[1:], f_pts[:-1], f_pts[1:]
    inner = c * (b - a) - (gb - ga)               # int_a^b (c - F)
    absval = np.where(fb <= c, inner, -inner)
    crosses = np.flatnonzero((fa < c) & (fb > c))  # F crosses the level c inside the cell
    if crosses.size:
        ac, bc, cc = a[crosses], b[crosses], c[crosses]
        t_star = np.clip(dist.quantile(np.clip(cc, 1e-300, 1 - 1e-16)), ac, bc)
        g_star = G(t_star)
        left = cc * (t_star - ac) - (g_star - ga[crosses])   # where c > F
        right = (gb[crosses] - g_star) - cc * (bc - t_star)  # where F > c
        absval[crosses] = left + right
    return total + float(np.sum(absval))


def scipy_w1(x, y) -> float:
    """``W_1`` between two empirical samples by scipy: the reference for cross-checks."""
    return float(scipy.stats.wasserstein_distance(np.ravel(x), np.ravel(y)))
