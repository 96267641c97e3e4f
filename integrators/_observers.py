"""The kernel's streamed observers: running sums of first and second moments, ``x x^T`` and user
test functions, thinned samples, and the fixed histogram of the first coordinate (for the
streaming Wasserstein evaluator).  Memory does not grow with the number of steps; a diverged
chain's statistics stop at its divergence (:mod:`integrators._kernel`)."""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

Observers = namedtuple("Observers", "test_fn test_data sum_x sum_xx sum_outer sum_tests samples "
                                    "hist hist_lo hist_inv_width hist_tails")


Observers.__doc__ = """The streamed statistics, per chain (rows) unless said: sums of ``x``, ``x^2``
(``(n, d)``; ``(n, 0)`` to leave them out), ``x x^T`` (``(n, d, d)`` or ``(n, 0, 0)``), the test
functions ``test_fn(x, out, test_data)`` (``(n, n_tests)``), thinned samples ``(n, n_keep, d)``, and
one histogram of the first coordinate shared by the block (``hist`` of ``n_bins`` counts on
``[hist_lo, hist_lo + n_bins / hist_inv_width)`` and its ``hist_tails``)."""


@nb.njit(nogil=True)
def no_test_functions(x, out, data):
    """The default observer: no extra test functions."""
    return


@nb.njit(nogil=True)
def histogram_add_tail(value, lo, hi, tails):
    """Record a value outside ``[lo, hi)`` in ``tails = (n_below, excess_below, n_above, excess_above)``."""
    if value < lo:
        tails[0] += 1.0
        tails[1] += lo - value
    else:
        tails[2] += 1.0
        tails[3] += value - hi


@nb.njit(nogil=True)
def histogram_add(values, lo, inv_width, counts, tails, parked):
    """Add ``values[i]`` for every ``i`` with ``parked[i] < 0`` to the fixed histogram ``counts``
    on ``[lo, lo + n_bins / inv_width)``; out-of-range values go to ``tails``
    (:func:`histogram_add_tail`, in the order of ``i``, so the float sums there do not depend on
    how the values are split into calls).

    One tight loop whose common case is a single non-short-circuit test and an increment: written
    as a per-value function (``if value < lo ... elif value >= hi ... else``) called from the
    kernel's per-chain observer loop, the same adds ran several times slower, and the figure's
    kernel spent most of its time there (``benchmarks/bench_histogram.py`` measures both ways)."""
    n_bins = counts.shape[0]
    hi = lo + n_bins / inv_width
    for i in range(values.shape[0]):
        value = values[i]
        live = parked[i] < 0
        if (value >= lo) & (value < hi) & live:  # (the index can round up to n_bins just below hi)
            counts[min(int((value - lo) * inv_width), n_bins - 1)] += 1
        elif live:
            histogram_add_tail(value, lo, hi, tails)


COUNT_DTYPE_LIMIT = int(np.iinfo(np.int32).max)  # histograms that may add more values count in float64


def histogram_counts(n_bins: int, max_adds: int) -> np.ndarray:
    """Zeroed counts for :func:`histogram_add` when at most ``max_adds`` values will be added:
    ``int32`` where no bin can pass ``COUNT_DTYPE_LIMIT``, ``float64`` otherwise (exact integers up
    to ``2^53``).  Either way the counts are exact integers, so the W1 read from them does not
    depend on the type; the kernel's scatter into int32 counts misses the caches less (half the
    bytes; ``benchmarks/bench_histogram.py`` measures both)."""
    return np.zeros(n_bins, np.int32 if max_adds <= COUNT_DTYPE_LIMIT else np.float64)


@nb.njit(nogil=True, inline="always")
def add_moments(x, sum_x, sum_xx):
    """Add ``x`` and ``x^2`` of every chain to its sums (parked chains sit at the origin and add
    zeros: their sums stop at their divergence); ``sum_x`` of shape ``(n, 0)`` adds nothing."""
    for a in range(sum_x.shape[1]):
        for c in range(x.shape[0]):
            sum_x[c, a] += x[c, a]
            sum_xx[c, a] += x[c, a] * x[c, a]


@nb.njit(nogil=True, inline="always")
def observe_chains(x, diverged_at, obs, tvals, keep_now, kept):
    """The per-chain observers of one step for the chains not diverged: the histogram of the
    first coordinate (:func:`histogram_add`, its own loop), ``x x^T``, the test functions and,
    when ``keep_now``, sample ``kept`` (each only when its array is not empty; see
    :class:`Observers`).  ``tvals``: scratch."""
    n, d = x.shape
    track_outer = obs.sum_outer.shape[1] > 0
    n_tests = obs.sum_tests.shape[1]
    if obs.hist.shape[0] > 0:  # streaming histogram of the first coordinate (1-D Wasserstein)
        histogram_add(x[:, 0], obs.hist_lo, obs.hist_inv_width, obs.hist, obs.hist_tails, diverged_at)
    if not (track_outer or n_tests > 0 or keep_now):
        return
    for c in range(n):
        if diverged_at[c] >= 0:
            continue
        if track_outer:
            for a in range(d):
                for b in range(d):
                    obs.sum_outer[c, a, b] += x[c, a] * x[c, b]
        if n_tests > 0:
            obs.test_fn(x[c], tvals, obs.test_data)
            for t in range(n_tests):
                obs.sum_tests[c, t] += tvals[t]
        if keep_now:
            for a in range(d):
                obs.samples[c, kept, a] = x[c, a]


def no_observers(n_chains: int, d: int, test_fn=no_test_functions, test_data=(), sum_tests=None) -> Observers:
    """Observers that record nothing but, optionally, test functions into ``sum_tests`` (user test
    functions bounds-checked, :func:`integrators._user_code.guarded`)."""
    from integrators._user_code import guarded

    return Observers(guarded(test_fn, "test_functions"), test_data, np.zeros((n_chains, 0)), np.zeros((n_chains, 0)),
                     np.zeros((n_chains, 0, 0)), np.zeros((n_chains, 0)) if sum_tests is None else sum_tests,
                     np.zeros((n_chains, 0, d)), histogram_counts(0, 0), 0.0, 1.0, np.zeros(4))
