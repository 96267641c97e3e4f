"""The kernel's streamed observers: running sums of first and second moments, ``x x^T`` and user
test functions, thinned samples, and the fixed histogram of the first coordinate (for the
streaming Wasserstein evaluator).  Memory does not grow with the number of steps; a diverged
chain's statistics stop at its divergence (:mod:`integrators._kernel`)."""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from integrators._disk_cache import njit_cached

Observers = namedtuple("Observers", "test_fn test_data sum_x sum_xx sum_outer sum_tests samples "
                                    "hist hist_lo hist_inv_width hist_tails")


Observers.__doc__ = """The streamed statistics, per chain (rows) unless said: sums of ``x``, ``x^2``
(``(n, d)``; ``(n, 0)`` to leave them out), ``x x^T`` (``(n, d, d)`` or ``(n, 0, 0)``), the test
functions ``test_fn(x, out, test_data)`` (``(n, n_tests)``), thinned samples ``(n, n_keep, d)``, and
one histogram of the first coordinate shared by the block (``hist`` of ``n_bins`` counts on
``[hist_lo, hist_lo + n_bins / hist_inv_width)`` and its ``hist_tails``)."""


@njit_cached(nogil=True)
def no_test_functions(x, out, data):
    """The default observer: no extra test functions."""
    return


@njit_cached(nogil=True)
def histogram_add_tail(value, lo, hi, tails):
    """Record a value outside ``[lo, hi)`` in ``tails = (n_below, excess_below, n_above, excess_above)``."""
    if value < lo:
        tails[0] += 1.0
        tails[1] += lo - value
    else:
        tails[2] += 1.0
        tails[3] += value - hi


@njit_cached(nogil=True)
def histogram_add(values, lo, inv_width, counts, tails, parked):
    """Add ``values[i]`` (where ``parked[i] < 0``) to ``counts`` on ``[lo, lo + n_bins / inv_width)``,
    out-of-range ones to ``tails`` in order of ``i``.  One tight loop: a per-value function was several times
    slower (``benchmarks/bench_histogram.py``)."""
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
    """Zeroed exact-integer counts for at most ``max_adds`` adds: ``int32`` where no bin can pass
    ``COUNT_DTYPE_LIMIT`` (fewer cache misses), else ``float64``."""
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
    """One step's per-chain observers for the chains not diverged: histogram, ``x x^T``, test functions and,
    when ``keep_now``, sample ``kept`` (each only where its array is not empty).  ``tvals``: scratch of
    ``n_tests + d`` values, the test functions' ``out`` then a copy of the chain's state, which is what
    they are given: a test function that writes into its ``x`` cannot move the chain."""
    n, d = x.shape
    track_outer = obs.sum_outer.shape[1] > 0
    n_tests = obs.sum_tests.shape[1]
    if obs.hist.shape[0] > 0:  # streaming histogram of the first coordinate (1-D Wasserstein)
        histogram_add(x[:, 0], obs.hist_lo, obs.hist_inv_width, obs.hist, obs.hist_tails, diverged_at)
    if not (track_outer or n_tests > 0 or keep_now):
        return
    out, seen = tvals[:n_tests], tvals[n_tests:n_tests + d]
    for c in range(n):
        if diverged_at[c] >= 0:
            continue
        if track_outer:
            for a in range(d):
                for b in range(d):
                    obs.sum_outer[c, a, b] += x[c, a] * x[c, b]
        if n_tests > 0:
            for a in range(d):
                seen[a] = x[c, a]
            obs.test_fn(seen, out, obs.test_data)
            for t in range(n_tests):
                obs.sum_tests[c, t] += out[t]
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
