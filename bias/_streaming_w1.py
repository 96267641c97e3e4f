"""``W_1`` to an exact law for sample counts too large to store.

* :class:`StreamingW1`: a fixed histogram plus exact tail sums, memory independent of the count,
  with the stated bound ``|W1_stream - W1_exact| <= bin_width / 2 + tail excess`` (moving every
  in-range sample to its bin centre moves no mass farther than half a bin; out-of-range samples
  are moved to the range's ends and their exact mean distance is added to the bound).
* :func:`w1_with_control`: ``W_1`` of the control-variate estimate of a sampler's cdf, whose
  noise is that of the sampler's small pathwise difference from a chain of known law.

The exact expectation of :class:`StreamingW1`'s value for ``n`` exact draws of the target (the
noise floor of the plain statistic, binning included) is :func:`bias._noise_floor.expected_binned_w1`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from bias._wasserstein import Normal, _w1_to_cdf
from integrators._memory import check_fits
from integrators._observers import histogram_add as _histogram_add
from integrators._validation import real_number, whole_number


def histogram_add(values, lo, inv_width, counts, tails):
    """Add samples ``values`` to the histogram in place: ``counts`` ``(n_bins,)`` on
    ``[lo, lo + n_bins / inv_width)``, and ``tails`` ``(n_below, excess_below, n_above, excess_above)``
    for those outside (the kernel's own loop, :func:`integrators._observers.histogram_add`)."""
    _histogram_add(values, lo, inv_width, counts, tails, np.full(values.shape[0], -1, dtype=np.int64))


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

    Parameters
    ----------
    dist : object
        The exact law, with ``cdf``, ``quantile`` and ``integrated_cdf`` (e.g. :class:`Normal`).
    lo, hi : float
        The binned range ``[lo, hi)``, ``lo < hi``.
    n_bins : int
        Number of bins, ``>= 1`` (``8 n_bins`` bytes must fit in memory).

    Attributes
    ----------
    width : float
        The bin width ``w = (hi - lo) / n_bins``.
    counts : numpy.ndarray
        ``(n_bins,)`` the bin counts.
    tails : numpy.ndarray
        ``(4,)`` ``(n_below, excess_below, n_above, excess_above)``: the out-of-range samples'
        counts and summed distances to the range.

    Raises
    ------
    ValueError
        If ``lo`` or ``hi`` is not a finite real number, ``lo >= hi``, ``n_bins`` is not a whole
        number ``>= 1``, ``dist`` has no ``integrated_cdf``, or the histogram does not fit in memory.
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
        """A histogram on ``mean +- half_range_sd std`` with bins narrow enough for ``bound``.

        Parameters
        ----------
        dist : Normal
            The exact law.
        half_range_sd : float
            Half the binned range, in standard deviations.
        bound : float
            The binning error wanted: bins of width ``2 bound`` (half a bin is the bound).

        Returns
        -------
        StreamingW1
            An empty histogram.
        """
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
        """The number of samples added, in and out of range."""
        return float(self.counts.sum() + self.tails[0] + self.tails[2])

    def add(self, values) -> None:
        """Add samples to the histogram.

        Parameters
        ----------
        values : array_like
            Samples (flattened), all finite.

        Raises
        ------
        ValueError
            If a sample is not finite (a diverged chain?).
        """
        values = np.ascontiguousarray(values, dtype=float).ravel()
        if not np.all(np.isfinite(values)):
            raise ValueError("samples contain non-finite values (a diverged chain?)")
        histogram_add(values, self.lo, 1.0 / self.width, self.counts, self.tails)

    def merge(self, counts, tails) -> None:
        """Add counts binned elsewhere on the same layout (e.g. by a sampler's kernel).

        Parameters
        ----------
        counts : numpy.ndarray
            ``(n_bins,)`` bin counts on this histogram's ``lo``, ``hi`` and ``n_bins``.
        tails : numpy.ndarray
            ``(4,)`` ``(n_below, excess_below, n_above, excess_above)`` to add to :attr:`tails`.
        """
        self.counts += counts
        self.tails += tails

    def value(self) -> float:
        """The exact ``W_1`` between the binned law and ``dist``.

        The binned law puts each bin's mass at its centre and the out-of-range mass at ``lo`` and
        ``hi``; ``int |F_binned - F| dt`` is computed exactly (within :attr:`bound` of the ``W_1`` of
        the raw samples).

        Returns
        -------
        float
            The ``W_1`` of the binned law to ``dist``.

        Raises
        ------
        ValueError
            If no samples were added.
        """
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

    Parameters
    ----------
    sampler : StreamingW1
        The histogram of the sampler's samples (its ``dist`` is the target).
    control : StreamingW1
        The histogram of the control chain's samples: same ``lo``, ``hi``, ``n_bins`` and count.
    control_law : object
        The exact law of the control chain, with ``cdf`` (e.g. :class:`Normal`).

    Returns
    -------
    value : float
        ``int |F_cv - F| dt``, the ``W_1`` estimate.
    bound : float
        Bound on the binning error: three unit masses moved by at most half a bin each, plus both
        chains' exact out-of-range excess.

    Raises
    ------
    ValueError
        If the two histograms differ in ``lo``, ``hi`` or ``n_bins``, or do not hold the same
        positive number of samples.
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
