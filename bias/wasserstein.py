"""One-dimensional Wasserstein distances.

* :func:`wasserstein_samples`: ``W_p`` between two empirical samples (the sorted formula for
  equal sizes, the quantile-function integral for any sizes).
* :func:`wasserstein_to_distribution`: ``W_p`` between an empirical sample and an exact
  distribution through its quantile function, integrated cell by cell with Gauss-Legendre
  (no sampling noise on the target side); exact closed form for ``W_1`` to a normal law.
* :class:`StreamingW1`: ``W_1`` to an exact distribution for sample counts too large to store:
  a fixed histogram plus exact tail sums, memory independent of the count, with the stated
  bound ``|W1_stream - W1_exact| <= bin_width / 2 + tail excess`` (moving every in-range sample
  to its bin centre moves no mass farther than half a bin; out-of-range samples are moved to the
  range's ends and their exact mean distance is added to the bound).
* :func:`expected_binned_w1`: the exact expectation of :class:`StreamingW1`'s value for ``n``
  exact draws of the target (the noise floor of the plain statistic), binning included.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numba as nb
import numpy as np
import scipy.special
import scipy.stats

from integrators.memory import check_fits
from integrators.observers import histogram_add as _histogram_add
from integrators.validation import real_number, whole_number


@dataclass(frozen=True)
class Normal:
    """A normal law with what the evaluators need: cdf, quantile, and the integrated cdf."""

    mean: float
    std: float

    def __post_init__(self):
        object.__setattr__(self, "mean", real_number("Normal's mean", self.mean))  # frozen: set through object
        std = real_number("Normal's std", self.std)
        if std <= 0:
            raise ValueError(f"Normal's std must be > 0, got {self.std!r}")
        object.__setattr__(self, "std", std)

    def cdf(self, t):
        return scipy.special.ndtr((np.asarray(t, float) - self.mean) / self.std)

    def quantile(self, u):
        return self.mean + self.std * scipy.special.ndtri(np.asarray(u, float))

    def integrated_cdf(self, t):
        """``int_{-inf}^t F(s) ds``."""
        z = (np.asarray(t, float) - self.mean) / self.std
        return self.std * (z * scipy.special.ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))

    def sample(self, rng, n):
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
    """``W_p`` between the empirical laws of ``x`` and ``y`` (any sizes)."""
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
    """``W_p`` between the empirical law of ``x`` and ``dist`` (with ``quantile``):
    ``int_0^1 |F_n^{-1}(u) - Q(u)|^p du`` cell by cell, Gauss-Legendre with ``nodes`` points
    (exact closed form for ``p = 1`` and a :class:`Normal`)."""
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


# ------------------------------------------------------------------------ streaming W1
@nb.njit(nogil=True)
def histogram_add(values, lo, inv_width, counts, tails):
    """Add samples to a fixed histogram; ``tails = (n_below, excess_below, n_above, excess_above)``
    records samples outside ``[lo, lo + n_bins / inv_width)`` exactly (the kernel's own loop,
    :func:`integrators.observers.histogram_add`, with every sample live)."""
    _histogram_add(values, lo, inv_width, counts, tails, np.full(values.shape[0], -1, dtype=np.int64))


@nb.njit(nogil=True)
def _normal_histogram(n, mean, std, lo, inv_width, counts, tails, rng):
    block = np.empty(4096)
    live = np.full(4096, -1, dtype=np.int64)
    done = 0
    while done < n:
        m = min(4096, n - done)
        for i in range(m):
            block[i] = mean + std * rng.standard_normal()
        _histogram_add(block[:m], lo, inv_width, counts, tails, live)
        done += m


def _cached(fn):
    """A bounded cache keyed by ``(law, lo, hi, n_bins)`` (everything the arrays depend on; laws
    that cannot be hashed are computed afresh); the arrays it returns are read-only."""
    cached = functools.lru_cache(maxsize=8)(fn)

    @functools.wraps(fn)
    def wrapper(dist, lo, hi, n_bins):
        try:
            hash(dist)
        except TypeError:
            return fn(dist, lo, hi, n_bins)
        return cached(dist, float(lo), float(hi), int(n_bins))
    return wrapper


def _read_only(*arrays):
    for a in arrays:
        a.flags.writeable = False
    return arrays if len(arrays) > 1 else arrays[0]


@_cached
def _grid(dist, lo, hi, n_bins):
    """The points a binned law sits on (``lo``, the bin centres, ``hi``) with ``F`` and ``G`` of
    ``dist`` there: computed once per histogram layout, shared by every evaluation on it."""
    width = (hi - lo) / n_bins
    centres = lo + (np.arange(n_bins) + 0.5) * width
    points = np.concatenate([[lo], centres, [hi]])
    return _read_only(points, dist.cdf(points), dist.integrated_cdf(points))


@_cached
def _bin_masses(dist, lo, hi, n_bins):
    """The mass of ``dist`` below ``lo``, in each bin and above ``hi``."""
    width = (hi - lo) / n_bins
    law_cdf = dist.cdf(lo + np.arange(n_bins + 1) * width)
    return _read_only(np.concatenate([[law_cdf[0]], np.diff(law_cdf), [1.0 - law_cdf[-1]]]))


class StreamingW1:
    """``W_1`` between a stream of samples and an exact law ``dist`` in fixed memory.

    Samples in ``[lo, hi)`` are binned (``n_bins`` bins of width ``w``); samples outside are
    counted with their exact distance to the range.  ``value()`` is the exact ``W_1`` of the
    binned law (mass at bin centres, out-of-range mass at ``lo``/``hi``); ``bound`` (``w / 2`` plus
    the exact mean excess of out-of-range samples) bounds its difference from the exact ``W_1`` of
    the raw samples.
    """

    def __init__(self, dist, lo: float, hi: float, n_bins: int = 200_000):
        lo, hi = real_number("lo", lo), real_number("hi", hi)
        n_bins = whole_number("n_bins", n_bins, 1)
        if not hi > lo:
            raise ValueError(f"need lo < hi, got lo={lo}, hi={hi}")
        if not callable(getattr(dist, "integrated_cdf", None)):
            raise ValueError(f"dist must be a law with cdf and integrated_cdf (e.g. Normal), got {type(dist).__name__}")
        check_fits(f"n_bins={n_bins}", 8.0 * n_bins)
        self.dist, self.lo, self.hi, self.n_bins = dist, lo, hi, n_bins
        self.width = (self.hi - self.lo) / self.n_bins
        self.counts = np.zeros(self.n_bins)
        self.tails = np.zeros(4)

    @classmethod
    def for_normal(cls, dist: Normal, half_range_sd: float = 12.0, bound: float = 1e-5):
        n_bins = int(math.ceil(2 * half_range_sd * dist.std / (2 * bound)))
        return cls(dist, dist.mean - half_range_sd * dist.std, dist.mean + half_range_sd * dist.std, n_bins)

    @property
    def bound(self) -> float:
        """Bound on ``|value() - W1(raw samples, dist)|``: half a bin plus the exact mean
        distance of out-of-range samples to the range."""
        n = max(self.count, 1.0)
        return 0.5 * self.width + (self.tails[1] + self.tails[3]) / n

    @property
    def count(self) -> float:
        return float(self.counts.sum() + self.tails[0] + self.tails[2])

    def add(self, values) -> None:
        values = np.ascontiguousarray(values, dtype=float).ravel()
        if not np.all(np.isfinite(values)):
            raise ValueError("samples contain non-finite values (a diverged chain?)")
        histogram_add(values, self.lo, 1.0 / self.width, self.counts, self.tails)

    def merge(self, counts, tails) -> None:
        self.counts += counts
        self.tails += tails

    def add_exact_samples(self, n: int, seed: int = 0) -> None:
        """Stream ``n`` exact draws of a :class:`Normal` target (for the noise floor)."""
        rng = np.random.default_rng(seed)
        _normal_histogram(int(n), self.dist.mean, self.dist.std, self.lo, 1.0 / self.width,
                          self.counts, self.tails, rng)

    def value(self) -> float:
        n = self.count
        if n == 0:
            raise ValueError("no samples")
        points, f_pts, g_pts = _grid(self.dist, self.lo, self.hi, self.n_bins)
        weights = np.concatenate([[self.tails[0]], self.counts, [self.tails[2]]]) / n
        keep = weights > 0
        return _w1_to_cdf(points[keep], weights[keep], self.dist, f_pts[keep], g_pts[keep])


def w1_with_control(sampler: StreamingW1, control: StreamingW1, control_law) -> tuple[float, float]:
    """``W_1`` to ``sampler.dist`` of the control-variate estimate of the sampler's cdf.

    ``control`` holds the samples of a second chain driven by the same random numbers (same
    Brownian path, same initial velocities) whose exact law ``control_law`` is known -- for the
    1-D example the full-gradient scheme, exactly Gaussian with the oracle's variance.  The
    estimate ``F_cv = F_sampler - F_control + F_control_law`` (all on the histogram's bins, the
    last one exactly) has the sampler's cdf as its expectation, and because the two chains stay
    close pathwise its noise is that of their small difference instead of that of either chain.
    ``F_cv`` need not be monotone; ``int |F_cv - F|`` is computed exactly for the binned function.

    Returns ``(value, bound)``: ``bound`` bounds the binning error (three unit masses moved by at
    most half a bin each, plus both chains' exact out-of-range excess).
    """
    if (sampler.lo, sampler.hi, sampler.n_bins) != (control.lo, control.hi, control.n_bins):
        raise ValueError("sampler and control histograms must share lo, hi and n_bins")
    n = sampler.count
    if n == 0 or control.count != n:
        raise ValueError(f"sampler and control need the same positive sample count, got {n} and {control.count}")
    expected = _bin_masses(control_law, sampler.lo, sampler.hi, sampler.n_bins)
    observed = np.concatenate([[sampler.tails[0] - control.tails[0]], sampler.counts - control.counts,
                               [sampler.tails[2] - control.tails[2]]]) / n
    weights = observed + expected
    points, f_pts, g_pts = _grid(sampler.dist, sampler.lo, sampler.hi, sampler.n_bins)
    keep = weights != 0
    value = _w1_to_cdf(points[keep], weights[keep], sampler.dist, f_pts[keep], g_pts[keep])
    bound = 1.5 * sampler.width + (sampler.tails[1] + sampler.tails[3] + control.tails[1] + control.tails[3]) / n
    return value, float(bound)


def scipy_w1(x, y) -> float:
    """Reference implementation (scipy) for cross-checks."""
    return float(scipy.stats.wasserstein_distance(np.ravel(x), np.ravel(y)))


# ------------------------------------------------------------------ the exact noise floor
EXACT_BELOW = 2_000  # binomial sums exact where min(n p, n (1 - p)) is below this, normal limit above
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(6)


def expected_binned_w1(dist, n: int, lo: float, hi: float, n_bins: int, *,
                       exact_below: float = EXACT_BELOW) -> float:
    """The expectation of :meth:`StreamingW1.value` for ``n`` independent exact draws of ``dist``
    on the histogram ``(lo, hi, n_bins)``: the noise floor of the plain statistic, binning included.

    The binned law puts the out-of-range mass at ``lo`` and ``hi`` and each bin's mass at its
    centre ``c_j``, so its cdf is ``0`` left of ``lo``, ``1`` from ``hi`` on, and on each segment
    ``[lo, c_0), [c_0, c_1), ..., [c_{m-1}, hi)`` it is ``X / n`` with ``X ~ Binomial(n, p)``,
    ``p = F(e)`` at the bin edge ``e`` inside the segment (the count of draws below ``e``).  So

        E W1 = G(lo) + int_hi^inf (1 - F) + sum_segments int_seg g_p(F(t)) dt,
        g_p(q) = E|X / n - q| = p (1 - 2 B_{n-1,p}(m - 1)) + q (2 B_{n,p}(m) - 1),  m = floor(n q)

    (de Moivre's identity ``E X 1{X <= m} = n p B_{n-1,p}(m - 1)``, ``B`` the binomial cdf).  ``g_p``
    is linear in ``q`` between the breakpoints ``q = m / n``, so on each piece the integral is
    ``alpha dt + beta dG`` with ``G`` the integrated cdf: exact up to rounding.  Where
    ``min(n p, n (1 - p)) >= exact_below`` (the breakpoints are too many to visit) ``X / n`` is
    replaced by its normal limit ``N(p, p (1 - p) / n)``, for which
    ``E|X / n - q| = s psi((p - q) / s)``, ``psi(u) = 2 phi(u) + u erf(u / sqrt 2)``, integrated by
    Gauss-Legendre on pieces no wider than ``s`` in ``q``; its relative error there is of order
    ``1 / (n p (1 - p))`` and the odd (skewness) term cancels over each segment.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo) or int(n_bins) < 1:
        raise ValueError(f"need finite lo < hi and n_bins >= 1, got lo={lo}, hi={hi}, n_bins={n_bins}")
    if not exact_below >= 0:
        raise ValueError(f"exact_below must be >= 0, got {exact_below!r}")
    n, n_bins = int(n), int(n_bins)
    points, f_pts, g_pts = _grid(dist, lo, hi, n_bins)
    G = dist.integrated_cdf
    far = hi + 50.0 * max(1.0, abs(hi))
    total = float(g_pts[0]) + float((far - hi) - (G(far) - g_pts[-1]))  # the two deterministic tails
    width = (hi - lo) / n_bins
    p = dist.cdf(lo + np.arange(n_bins + 1) * width)  # segment i has X ~ Binomial(n, F(e_i))
    exact = np.minimum(n * p, n * (1.0 - p)) < exact_below
    seg = np.flatnonzero(exact)
    if seg.size:
        total += _exact_pieces(dist, n, points[seg], points[seg + 1], f_pts[seg], f_pts[seg + 1], p[seg])
    seg = np.flatnonzero(~exact)
    if seg.size:
        total += _normal_pieces(dist, n, points[seg], points[seg + 1], f_pts[seg], f_pts[seg + 1], p[seg])
    return total


def _exact_pieces(dist, n, ta, tb, qa, qb, p) -> float:
    """``sum int_{ta}^{tb} E|Binomial(n, p) / n - F(t)| dt``, split where ``n F(t)`` crosses an integer."""
    ma = np.clip(np.floor(n * qa), 0, n).astype(np.int64)
    mb = np.clip(np.floor(n * qb), 0, n).astype(np.int64)
    counts = mb - ma + 1
    seg = np.repeat(np.arange(ta.size), counts)
    m = ma[seg] + (np.arange(seg.size) - np.repeat(np.cumsum(counts) - counts, counts))
    left = np.where(m == ma[seg], ta[seg], dist.quantile(np.minimum(m / n, 1.0)))
    right = np.where(m == mb[seg], tb[seg], dist.quantile(np.minimum((m + 1) / n, 1.0)))
    left = np.clip(left, ta[seg], tb[seg])
    right = np.clip(right, left, tb[seg])
    pp = p[seg]
    alpha = pp * (1.0 - 2.0 * scipy.stats.binom.cdf(m - 1, n - 1, pp)) if n > 1 else pp * (1.0 - 2.0 * (m >= 1))
    beta = 2.0 * scipy.stats.binom.cdf(m, n, pp) - 1.0
    G = dist.integrated_cdf
    return float(np.sum(alpha * (right - left) + beta * (G(right) - G(left))))


def _normal_pieces(dist, n, ta, tb, qa, qb, p) -> float:
    """The same integral with ``Binomial(n, p) / n`` replaced by ``N(p, p (1 - p) / n)``."""
    s = np.sqrt(p * (1.0 - p) / n)
    k = np.clip(np.ceil((qb - qa) / s), 1, 256).astype(np.int64)  # pieces no wider than s in q
    seg = np.repeat(np.arange(ta.size), k)
    j = np.arange(seg.size) - np.repeat(np.cumsum(k) - k, k)
    step = (tb - ta)[seg] / k[seg]
    a = ta[seg] + j * step
    t = a[:, None] + 0.5 * step[:, None] * (_GL_NODES[None, :] + 1.0)
    u = (p[seg][:, None] - dist.cdf(t)) / s[seg][:, None]
    psi = 2.0 * np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi) + u * scipy.special.erf(u / math.sqrt(2.0))
    return float(np.sum(0.5 * step * s[seg] * (psi @ _GL_WEIGHTS)))
