"""The exact noise floor of the binned ``W_1`` statistic.

:func:`expected_binned_w1` is the exact expectation of :meth:`bias._streaming_w1.StreamingW1.value`
for ``n`` independent exact draws of the target: the ``W_1`` a perfect sampler would show at that
sample count on that histogram (the noise floor of the plain statistic), binning included.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special
import scipy.stats

from bias._streaming_w1 import _grid

EXACT_BELOW = 2_000  # binomial sums exact where min(n p, n (1 - p)) is below this, normal limit above
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(6)


def expected_binned_w1(dist, n: int, lo: float, hi: float, n_bins: int, *,
                       exact_below: float = EXACT_BELOW) -> float:
    """The expectation of the binned ``W_1`` (:meth:`StreamingW1.value` on ``(lo, hi, n_bins)``) for
    ``n`` independent exact draws of ``dist`` (``cdf``, ``quantile``, ``integrated_cdf``); ``ValueError``
    on a bad ``n``, range, ``n_bins`` or ``exact_below``.

    The binned law's cdf is ``X / n`` on each segment between bin centres, ``X ~ Binomial(n, p)``,
    ``p = F(e)`` at the segment's edge, so

        E W1 = G(lo) + int_hi^inf (1 - F) + sum_segments int_seg g_p(F(t)) dt,
        g_p(q) = E|X / n - q| = p (1 - 2 B_{n-1,p}(m - 1)) + q (2 B_{n,p}(m) - 1),  m = floor(n q)

    (de Moivre's identity, ``B`` the binomial cdf).  ``g_p`` is linear in ``q`` between breakpoints
    ``m / n``, so each piece integrates exactly with ``G`` the integrated cdf.  Where
    ``min(n p, n (1 - p)) >= exact_below`` the normal limit ``E|X / n - q| = s psi((p - q) / s)``,
    ``psi(u) = 2 phi(u) + u erf(u / sqrt 2)``, is integrated by Gauss-Legendre; its relative error is
    of order ``1 / (n p (1 - p))``."""
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
