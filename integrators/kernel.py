"""The Numba kernel: one scheme x one plan x one target over tiles of chains.

A tile of about 256 chains advances step by step, all chains together: each step draws every
chain's path from its own stream, each chain's batch from its own batch stream
(:mod:`integrators.rng`), then applies the scheme to the whole tile with loops over chains
innermost, so the arithmetic vectorizes.  One call runs a thread's tiles one after the other.
A chain's output depends only on the seed and its index, never on how many chains run beside it
or how they are tiled.  Observers are streamed: running sums of first and second moments and of
user test functions, a histogram of the first coordinate (for the streaming Wasserstein
evaluator), and thinned samples; memory does not grow with the number of steps.  A chain whose
state leaves ``[-bound, bound]`` (or is not finite) has its step recorded, is parked at the origin
and its statistics stop there (finite partial sums); its final state is returned as NaN.

The path is drawn ``refine`` fine intervals per half step and composed exactly, so a run at
``h`` with ``refine = 2^L`` sees the very same Brownian path as a run at ``h / 2^L``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators.brownian import pair_cholesky
from integrators.plans import batch_rule, next_batches
from integrators.rng import lane_normals


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


@nb.njit(nogil=True)
def draw_step_path(states, l11, l21, l22, decay_fine, refine, dW, J, z1, z2, raw):
    """Fill ``dW, J`` (shape ``(2, d, n)``) with each chain's pair over each half step, composed
    from ``refine`` fine intervals (interval-major, coordinates inner).  Chain ``c`` draws from
    its stream ``states[:, c]`` (word-major, shape ``(4, n)``), in the same order whatever the
    number of chains; the draws of all chains are made together (:func:`lane_normals`).
    ``z1, z2`` (shape ``(n,)``, used when ``refine > 1``) and ``raw`` are scratch."""
    n, d = dW.shape[2], dW.shape[1]
    for half in range(2):
        for a in range(d):  # the first interval: the normals land where the pair goes
            w, j = dW[half, a], J[half, a]
            lane_normals(states, w, raw)
            lane_normals(states, j, raw)
            for c in range(n):
                j[c] = l21 * w[c] + l22 * j[c]
                w[c] = l11 * w[c]
        for _ in range(1, refine):
            for a in range(d):
                lane_normals(states, z1, raw)
                lane_normals(states, z2, raw)
                for c in range(n):
                    dW[half, a, c] += l11 * z1[c]
                    J[half, a, c] = decay_fine * J[half, a, c] + l21 * z1[c] + l22 * z2[c]


_KERNELS: dict = {}


def kernel_for(scheme_module, force, plan_module=None):
    """The kernel for one scheme, one target class and one batch rule, compiled once and cached
    (a force whose target allocates, ``force.allocates``, keeps reference counting on).

    The scheme's step, the target's force (over blocks, ``lane_force_for``) and the plan's batch
    rule (:func:`integrators.plans.next_batches` for the built-in plans, a plan's own Numba
    ``BATCH_RULE`` otherwise) are closed over; the step and force are called once per step for
    the whole block, so they are compiled once and shared by every kernel rather than inlined.
    """
    rule = batch_rule(plan_module)
    key = (scheme_module.step, bool(scheme_module.FSAL), force, rule)
    if key not in _KERNELS:
        _KERNELS[key] = _make_kernel(scheme_module.step, bool(scheme_module.FSAL), force, force.allocates, rule)
    return _KERNELS[key]



ALIGN_BYTES = 64  # a cache line: vector loads of a lane pass never straddle two lines


def aligned_zeros(shape, dtype=np.float64) -> np.ndarray:
    """``np.zeros`` starting on a cache line (numpy only promises 16 bytes; the kernel's passes
    over chains run measurably slower when their rows straddle cache lines)."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    buf = np.zeros(max(size, 1) * dtype.itemsize + ALIGN_BYTES, dtype=np.uint8)
    start = (-buf.ctypes.data) % ALIGN_BYTES
    # view at least one item before cutting to size: an empty view may not keep the pointer
    return buf[start:start + max(size, 1) * dtype.itemsize].view(dtype)[:size].reshape(shape)


def make_work_buffers(n_chains: int, d: int, n_data: int, batch_size: int, n_tests: int) -> tuple:
    """Scratch arrays of one kernel call: (dW, J, g, batches, permutations, plan position, test
    values, (normals, normals, raw draws)), each starting on a cache line."""
    width = max(batch_size, n_data)
    return (aligned_zeros((2, d, n_chains)), aligned_zeros((2, d, n_chains)), aligned_zeros((n_chains, d)),
            aligned_zeros((width, n_chains), np.int32), aligned_zeros((n_data, n_chains), np.int32),
            np.zeros(1, dtype=np.int64), np.zeros(n_tests),
            (aligned_zeros(n_chains), aligned_zeros(n_chains), aligned_zeros(n_chains, np.uint64)))


def _make_kernel(step, fsal, force, allocates, next_batches=next_batches):
    # Compiled without Numba's reference counting (``_nrt=False``): every array the loop touches
    # is an argument owned by the caller, and the kernel allocates nothing, so the views and calls
    # of the step loop need no increment/decrement calls (they once cost more than the arithmetic).
    # Targets whose gradients allocate scratch arrays (``Target.allocates``) keep it on.
    @nb.njit(nogil=True, _nrt=allocates)
    def run_tile(coef, gamma, tau_fine, refine, x, v, n_steps, burn_in, thin,
                 plan_code, batch_size, scale, n_data, tdata, box, path_states, plan_states, bound,
                 test_fn, test_data, sum_x, sum_xx, sum_outer, sum_tests, samples, diverged_at, work,
                 hist, hist_lo, hist_inv_width, hist_tails):
        n, d = x.shape
        l11, l21, l22 = pair_cholesky(gamma, tau_fine)
        decay_fine = math.exp(-gamma * tau_fine)
        dW, J, g, batch, perm, position, tvals, (z1, z2, raw) = work
        no_source = perm[:0]
        track_outer = sum_outer.shape[1] > 0
        n_tests = tvals.shape[0]
        n_bins = hist.shape[0]
        n_keep = samples.shape[1]
        kept = 0
        for i in range(n_data):
            for c in range(n):
                perm[i, c] = i
        position[0] = 0
        n_b = 0
        n_dead = 0
        for c in range(n):  # lanes marked beforehand (padding) stay parked throughout
            if diverged_at[c] >= 0:
                n_dead += 1
        if fsal:
            n_b = next_batches(plan_code, perm, position, batch_size, plan_states, batch, no_source, z1)
            force(x, g, batch, n_b, scale, tdata)
        for k in range(1, n_steps + 1):
            draw_step_path(path_states, l11, l21, l22, decay_fine, refine, dW, J, z1, z2, raw)
            n_b = next_batches(plan_code, perm, position, batch_size, plan_states, batch, no_source, z1)
            step(x, v, g, coef, dW, J, force, batch, n_b, scale, tdata, box)
            all_in = True  # a branch-free pass over the block first (it vectorizes)
            if k > burn_in and n_dead == 0:
                # the usual case, in one pass: check every chain and add those in bounds to the
                # sums (a chain parked below adds nothing this step, as if it were added as zero)
                for a in range(d):
                    for c in range(n):
                        xc = x[c, a]
                        ok = (abs(xc) <= bound) & (abs(v[c, a]) <= bound)  # False for NaN
                        all_in &= ok
                        sum_x[c, a] += xc if ok else 0.0
                        sum_xx[c, a] += xc * xc if ok else 0.0
                summed = True
            else:
                for a in range(d):
                    for c in range(n):
                        all_in &= (abs(x[c, a]) <= bound) & (abs(v[c, a]) <= bound)
                summed = False
            if not all_in or n_dead > 0:
                for c in range(n):
                    size = 0.0
                    for a in range(d):
                        size = max(size, abs(x[c, a]), abs(v[c, a]))
                    if not size <= bound or diverged_at[c] >= 0:
                        if diverged_at[c] < 0:
                            diverged_at[c] = k
                            n_dead += 1
                        for a in range(d):  # parked at the origin, left out of every statistic
                            x[c, a] = 0.0
                            v[c, a] = 0.0
                            g[c, a] = 0.0
            if k <= burn_in:
                continue
            if not summed:
                for a in range(d):  # parked chains add zeros: their sums stop at their divergence
                    for c in range(n):
                        sum_x[c, a] += x[c, a]
                        sum_xx[c, a] += x[c, a] * x[c, a]
            keep_now = kept < n_keep and (k - burn_in) % thin == 0
            if n_bins > 0:  # streaming histogram of the first coordinate (1-D Wasserstein)
                histogram_add(x[:, 0], hist_lo, hist_inv_width, hist, hist_tails, diverged_at)
            if track_outer or n_tests > 0 or keep_now:
                for c in range(n):
                    if diverged_at[c] >= 0:
                        continue
                    if track_outer:
                        for a in range(d):
                            for b in range(d):
                                sum_outer[c, a, b] += x[c, a] * x[c, b]
                    if n_tests > 0:
                        test_fn(x[c], tvals, test_data)
                        for t in range(n_tests):
                            sum_tests[c, t] += tvals[t]
                    if keep_now:
                        for a in range(d):
                            samples[c, kept, a] = x[c, a]
            if keep_now:
                kept += 1
        for c in range(n):
            if diverged_at[c] >= 0:
                for a in range(d):
                    x[c, a] = np.nan
                    v[c, a] = np.nan

    @nb.njit(nogil=True, _nrt=allocates)
    def run_chains(coef, gamma, tau_fine, refine, x, v, n_steps, burn_in, thin,
                   plan_code, batch_size, scale, n_data, tdata, box, path_states, plan_states, bound,
                   test_fn, test_data, sum_x, sum_xx, sum_outer, sum_tests, samples, diverged_at, work,
                   hist, hist_lo, hist_inv_width, hist_tails):
        """All tiles of ``tile = path_states.shape[2]`` chains, one after the other, in one call
        (one call per thread keeps the interpreter out of the loop); ``path_states`` and
        ``plan_states`` have shape ``(n_tiles, 4, tile)`` and the chain arrays ``n_tiles * tile`` rows."""
        tile = path_states.shape[2]
        for t in range(path_states.shape[0]):
            lo, hi = t * tile, (t + 1) * tile
            run_tile(coef, gamma, tau_fine, refine, x[lo:hi], v[lo:hi], n_steps, burn_in, thin,
                     plan_code, batch_size, scale, n_data, tdata, box, path_states[t], plan_states[t], bound,
                     test_fn, test_data, sum_x[lo:hi], sum_xx[lo:hi], sum_outer[lo:hi], sum_tests[lo:hi],
                     samples[lo:hi], diverged_at[lo:hi], work, hist, hist_lo, hist_inv_width, hist_tails)

    return run_chains
