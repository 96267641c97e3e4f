"""The Numba kernel: one scheme x one plan x one target, vectorized over a block of chains.

Chains run one after the other (each chain's state stays in cache), each drawing its path
from ``rng_path`` and its batches from ``rng_plan`` in a fixed order, so a chain's output depends
only on the seed, its block and its place in the block.  Observers are streamed: running sums of
first and second moments and of user test functions, a histogram of the first coordinate (for
the streaming Wasserstein evaluator), and thinned samples; memory does not grow
with the number of steps.  A chain whose state becomes non-finite is frozen and its step
recorded (non-finite, or a coordinate of x or v beyond ``bound`` in absolute
value); it keeps consuming its random numbers so that the chains after it are unchanged.

The path is drawn ``refine`` fine intervals per half step and composed exactly, so a run at
``h`` with ``refine = 2^L`` sees the very same Brownian path as a run at ``h / 2^L``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators.brownian import pair_cholesky
from integrators.plans import next_batch


@nb.njit(nogil=True)
def no_test_functions(x, out, data):
    """The default observer: no extra test functions."""
    return


@nb.njit(nogil=True, inline="always")
def histogram_add_value(value, lo, hi, inv_width, counts, tails):
    """Add one value to a fixed histogram on ``[lo, hi)``; ``tails = (n_below, excess_below,
    n_above, excess_above)`` records out-of-range values exactly."""
    if value < lo:
        tails[0] += 1.0
        tails[1] += lo - value
    elif value >= hi:
        tails[2] += 1.0
        tails[3] += value - hi
    else:
        counts[int((value - lo) * inv_width)] += 1.0


@nb.njit(nogil=True, inline="always")
def draw_step_path(rng, l11, l21, l22, decay_fine, refine, dW, J):
    """Fill ``dW, J`` (shape (2, d)) with the pair over each half step, composed from
    ``refine`` fine intervals (interval-major, coordinates inner)."""
    d = dW.shape[1]
    for half in range(2):
        for a in range(d):
            dW[half, a] = 0.0
            J[half, a] = 0.0
        for _ in range(refine):
            for a in range(d):
                z1 = rng.standard_normal()
                z2 = rng.standard_normal()
                dW[half, a] += l11 * z1
                J[half, a] = decay_fine * J[half, a] + l21 * z1 + l22 * z2


_KERNELS: dict = {}


def kernel_for(scheme_module, force):
    """The kernel for one scheme and one target class, compiled once and cached (a force whose
    target allocates, ``force.allocates``, keeps reference counting on).

    The scheme's step and the target's force are closed over (not passed as arguments) so that
    Numba inlines them into the chain loop.
    """
    key = (scheme_module.NAME, force)
    if key not in _KERNELS:
        _KERNELS[key] = _make_kernel(scheme_module.step, scheme_module.FSAL, force, force.allocates)
    return _KERNELS[key]


def make_work_buffers(d: int, n_data: int, batch_size: int, n_tests: int) -> tuple:
    """Scratch arrays of one kernel call: (dW, J, g, batch, perm, position, test values)."""
    return (np.zeros((2, d)), np.zeros((2, d)), np.zeros(d),
            np.zeros(max(batch_size, n_data), dtype=np.int64), np.zeros(n_data, dtype=np.int64),
            np.zeros(1, dtype=np.int64), np.zeros(n_tests))


def _make_kernel(step, fsal, force, allocates):
    # Compiled without Numba's reference counting (``_nrt=False``): every array the loop touches
    # is an argument owned by the caller, and the kernel allocates nothing.  With reference
    # counting on, each array passed to the inlined step, force and plan costs an
    # increment/decrement call, several times the arithmetic of a one-dimensional step.
    # Targets whose gradients allocate scratch arrays (``Target.allocates``) keep it on.
    @nb.njit(nogil=True, _nrt=allocates)
    def run_chains(coef, gamma, tau_fine, refine, x, v, n_steps, burn_in, thin,
                   plan_code, batch_size, scale, n_data, tdata, box, rng_path, rng_plan, bound,
                   test_fn, test_data, sum_x, sum_xx, sum_outer, sum_tests, samples, diverged_at, work,
                   hist, hist_lo, hist_inv_width, hist_tails):
        n_chains, d = x.shape
        l11, l21, l22 = pair_cholesky(gamma, tau_fine)
        decay_fine = math.exp(-gamma * tau_fine)
        dW, J, g, batch, perm, position, tvals = work
        no_source = perm[:0]
        track_outer = sum_outer.shape[1] > 0
        n_bins = hist.shape[0]
        hist_hi = hist_lo + n_bins / hist_inv_width
        n_keep = samples.shape[1]
        for c in range(n_chains):
            xc = x[c]
            vc = v[c]
            for i in range(n_data):
                perm[i] = i
            position[0] = 0
            dead = False
            kept = 0
            if fsal:
                n_b = next_batch(plan_code, perm, position, batch_size, rng_plan, batch, no_source)
                force(xc, g, batch, n_b, scale, tdata)
            for k in range(1, n_steps + 1):
                draw_step_path(rng_path, l11, l21, l22, decay_fine, refine, dW, J)
                n_b = next_batch(plan_code, perm, position, batch_size, rng_plan, batch, no_source)
                if dead:
                    continue
                step(xc, vc, g, coef, dW, J, force, batch, n_b, scale, tdata, box)
                size = 0.0
                for a in range(d):
                    size = max(size, abs(xc[a]), abs(vc[a]))
                if not size <= bound:  # also true for NaN
                    dead = True
                    diverged_at[c] = k
                    continue
                if k <= burn_in:
                    continue
                for a in range(d):
                    sum_x[c, a] += xc[a]
                    sum_xx[c, a] += xc[a] * xc[a]
                if track_outer:
                    for a in range(d):
                        for b in range(d):
                            sum_outer[c, a, b] += xc[a] * xc[b]
                if tvals.shape[0] > 0:
                    test_fn(xc, tvals, test_data)
                    for t in range(tvals.shape[0]):
                        sum_tests[c, t] += tvals[t]
                if n_bins > 0:  # streaming histogram of the first coordinate (1-D Wasserstein)
                    histogram_add_value(xc[0], hist_lo, hist_hi, hist_inv_width, hist, hist_tails)
                if kept < n_keep and (k - burn_in) % thin == 0:
                    for a in range(d):
                        samples[c, kept, a] = xc[a]
                    kept += 1

    return run_chains
