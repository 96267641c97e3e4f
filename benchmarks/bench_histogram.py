"""The kernel's histogram observer at Figure 1's workload: the loop as it was and as it is.

Figure 1 streams the first coordinate of every chain, every step after burn-in, into a histogram
of ``n_bins`` bins (``experiments.figure1._compute.histogram_layout``: 291,043 at the paper's resolution).  In one
run, one thread (CPU seconds of this thread, so that other load on the machine matters less):

  (a) ns per add of the observer as it was: a per-chain loop that skips parked chains and calls a
      per-value add written ``if value < lo ... elif value >= hi ... else counts[i] += 1``;
  (b) ns per add of :func:`integrators._observers.histogram_add`, the kernel's loop now (in-range test
      first, one tight loop per step over the tile), with float64 counts and with int32 counts
      (what ``sample()`` uses wherever no bin can overflow: :func:`integrators._observers.histogram_counts`);
  (c) the kernel's chain-steps per second at the figure's finest step size (2,048 chains, tiles
      of ``TILE_SIZE``), without the histogram and with it, one (scheme, plan) per scheme.

The values are tiles of ``TILE_SIZE`` draws of the target law (the chains' stationary law), with
each tile's values changing from step to step as a chain's do.  (a) and (b) give the same
counts and tails (checked).

    PYTHONPATH=. python benchmarks/bench_histogram.py [--steps 4000] [--kernel-steps 3e7]
"""

from __future__ import annotations

import argparse
import math
import time

import numba as nb
import numpy as np

from experiments.figure1 import _compute as figure1
from integrators import GaussianTarget, sample
from integrators._backends import TILE_SIZE
from integrators._observers import histogram_add

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": {"tiny": ["--steps", "200", "--kernel-steps", "2e5"],
                      "quick": ["--steps", "1000", "--kernel-steps", "3e6"], "full": []}}


@nb.njit(nogil=True, inline="always")
def _old_add_value(value, lo, hi, inv_width, counts, tails):
    # the baseline: a per-value add (no second pass), the form the observer is measured against
    if value < lo:
        tails[0] += 1.0
        tails[1] += lo - value
    elif value >= hi:
        tails[2] += 1.0
        tails[3] += value - hi
    else:
        counts[int((value - lo) * inv_width)] += 1.0


@nb.njit(nogil=True)
def _drive(x, z, steps, lo, inv_width, counts, tails, diverged_at, old):
    """``steps`` steps of a tile: an AR(1) move of every value (stationary law kept), then the
    observer, the old one or the new one."""
    n = x.shape[0]
    hi = lo + counts.shape[0] / inv_width
    rho = 0.95
    s = math.sqrt(1.0 - rho * rho)
    for k in range(steps):
        for c in range(n):
            x[c, 0] = rho * x[c, 0] + s * z[(c * 7 + k) % z.shape[0]]
        if old:
            for c in range(n):
                if diverged_at[c] >= 0:
                    continue
                _old_add_value(x[c, 0], lo, hi, inv_width, counts, tails)
        else:
            histogram_add(x[:, 0], lo, inv_width, counts, tails, diverged_at)


def observer_ns(law, layout, steps: int, old: bool, dtype) -> tuple[float, np.ndarray, np.ndarray]:
    """ns per add of one observer over one tile, minus the AR(1) moves alone."""
    lo, hi, n_bins = layout
    rng = np.random.default_rng(0)
    z = law.std * rng.standard_normal(4096)
    diverged_at = np.full(TILE_SIZE, -1, dtype=np.int64)

    def once(with_hist, n_steps):
        x = law.std * rng.standard_normal((TILE_SIZE, 1))  # an AR(1) around the mean (0 here)
        counts, tails = np.zeros(n_bins, dtype), np.zeros(4)
        shift_lo = lo - law.mean
        t0 = time.thread_time()
        if with_hist:
            _drive(x, z, n_steps, shift_lo, n_bins / (hi - lo), counts, tails, diverged_at, old)
        else:
            _drive(x, z, n_steps, shift_lo, n_bins / (hi - lo), counts, tails,
                   np.zeros(TILE_SIZE, dtype=np.int64), True)  # every chain parked: moves only
        return time.thread_time() - t0, counts, tails

    once(True, 2)
    once(False, 2)
    best_hist = min(once(True, steps)[0] for _ in range(3))
    best_bare = min(once(False, steps)[0] for _ in range(3))
    _, counts, tails = once(True, steps)
    return (best_hist - best_bare) / (steps * TILE_SIZE) * 1e9, counts, tails


def kernel_rates(target, law, scheme, plan, layout, n_steps: int) -> tuple[float, float]:
    """Chain-steps per CPU second of one thread, 2,048 chains at the figure's finest h, without and
    with the histogram (best of three, the two interleaved so that changing load hits both)."""
    h = 2.0 ** -max(figure1.PRESETS["full"]["ks"])

    def once(steps, with_hist):
        t0 = time.thread_time()
        sample(target, scheme, plan, h=h, gamma=1.0, n_chains=2048, n_steps=steps, burn_in=0,
               batch_size=None if plan == "full" else 1, seed=1, x0=[law.mean],
               histogram=layout if with_hist else None, divergence_bound=figure1.DIVERGENCE_BOUND, threads=1)
        return time.thread_time() - t0

    once(2, False)
    once(2, True)
    best = [math.inf, math.inf]
    for _ in range(3):
        for i in (0, 1):
            best[i] = min(best[i], once(n_steps, bool(i)))
    return 2048 * n_steps / best[0], 2048 * n_steps / best[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="steps of one tile in (a) and (b)")
    parser.add_argument("--kernel-steps", type=float, default=3e7, help="chain-steps per kernel call in (c)")
    args = parser.parse_args(argv)
    if args.steps < 1 or not args.kernel_steps >= 2048:
        raise ValueError(f"--steps must be >= 1 and --kernel-steps >= 2048, got {args.steps}, {args.kernel_steps}")
    target = GaussianTarget.one_d_example()
    law = figure1.target_law(target)
    layout = figure1.histogram_layout(law)
    print(f"Figure 1's histogram: {layout[2]} bins over [{layout[0]:.3f}, {layout[1]:.3f}); tiles of {TILE_SIZE}")
    old, c_old, t_old = observer_ns(law, layout, args.steps, True, np.float64)
    new, c_new, t_new = observer_ns(law, layout, args.steps, False, np.float64)
    new32, c_32, _ = observer_ns(law, layout, args.steps, False, np.int32)
    same = np.array_equal(c_old, c_new) and np.array_equal(t_old, t_new) and np.array_equal(c_32, c_new)
    print(f"(a) observer as it was: {old:.2f} ns per add")
    print(f"(b) observer now: {new32:.2f} ns per add with int32 counts (the kernel's), {new:.2f} ns with "
          f"float64 counts; ratio old / new {old / new32:.1f}; same counts and tails: {same}")
    n_steps = max(2, int(args.kernel_steps / 2048))
    print(f"(c) kernel, one thread, 2048 chains, h = 2^-{max(figure1.PRESETS['full']['ks'])} "
          f"(chain-steps per CPU second):")
    for scheme, plan in (("ubu", "sms"), ("baoab", "iid"), ("em", "full")):
        bare, hist = kernel_rates(target, law, scheme, plan, layout, n_steps)
        print(f"    {scheme} x {plan}: {bare:.3g} without the histogram, {hist:.3g} with it "
              f"(ratio {hist / bare:.2f}; the observer {1e9 * (1 / hist - 1 / bare):.2f} ns per chain-step)")


if __name__ == "__main__":
    main()
