"""Figure 1 against its own kernel: time, peak memory and the acceptance checks, all from one run.

For each thread count asked for, in one process (the kernels compile once, timed apart):

  (a) the kernel's own chain-steps per second on this workload: one ``sample()`` call per
      (scheme, plan) the figure runs (the nine samplers and the full-gradient controls), with the
      figure's histogram, at the figure's step size h = 2^-k (finest k), ``threads`` threads over
      enough chains to give each thread whole tiles;
  (b) Figure 1 at the preset, wall time (kernels already compiled);
  (c) the ratio (b) / (total chain-steps / (a)), where the kernel time of the figure's chain-steps
      is summed per (scheme, plan) at that pair's own rate; target <= 1.3 at the full preset;
  (d) the same ratio in CPU seconds (all threads; less sensitive to other load on the machine);
  (e) the kernel as the figure now calls it: per scheme, its three plans and its full-gradient
      control on one Brownian path (``sample_together``, the path drawn once for the four), in
      chain-steps per second counting every sampler's, and its speed-up over (a);
  (f) the ratio (b) / (total chain-steps / (e)): how close the figure runs to that kernel.

Then the figure's checks (local slopes, errors, divergence), and whether every thread count gave
the same numbers.  The lead runs, on a 2-core machine and on a 16-core one:

    PYTHONPATH=. python3 benchmarks/bench_figure1.py --preset full --threads 2
    PYTHONPATH=. python3 benchmarks/bench_figure1.py --preset full --threads 2,16

(``--preset tiny`` or ``quick`` for a try; ``--kernel-steps`` sizes (a).)
"""

from __future__ import annotations

import argparse
import math
import resource
import time
from dataclasses import asdict

from experiments.figure1 import _compute as figure1
from integrators import GaussianTarget, sample, sample_together
from integrators._backends import TILE_SIZE

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (it writes no files)
# (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": {"tiny": ["--preset", "tiny", "--kernel-steps", "1e5"],
                      "quick": ["--preset", "quick", "--kernel-steps", "2e6"],
                      "full": ["--preset", "full"]}}


def _thread_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--threads takes integers separated by commas, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"--threads must be >= 1, got {text!r}")
    return counts


def _call(target, law, scheme, plan, h, chains, n_steps, threads):
    lo, hi, n_bins = figure1.histogram_layout(law)
    return sample(target, scheme, plan, h=h, gamma=1.0, n_chains=chains, n_steps=n_steps, burn_in=0,
                  batch_size=None if plan == "full" else 1, seed=1, x0=[law.mean],
                  histogram=(lo, hi, n_bins), divergence_bound=figure1.DIVERGENCE_BOUND, threads=threads)


def compile_kernels(pairs) -> float:
    """Seconds for the first (compiling) call of each scheme."""
    target = GaussianTarget.one_d_example()
    law = figure1.target_law(target)
    t0 = time.perf_counter()
    for scheme in dict.fromkeys(s for s, _ in pairs):
        _call(target, law, scheme, "sms", 0.125, 8, 2, 1)
    return time.perf_counter() - t0


def cpu_seconds() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def kernel_rates(pairs, preset: str, threads: int, steps_per_pair: float) -> tuple[dict, dict]:
    """Chain-steps per second of one ``sample()`` call per (scheme, plan), best of two, and the
    CPU seconds per chain-step of that call."""
    target = GaussianTarget.one_d_example()
    law = figure1.target_law(target)
    k = max(figure1.PRESETS[preset]["ks"])
    h = 2.0**-k
    per = TILE_SIZE * threads
    chains = per * math.ceil(max(figure1.PRESETS[preset]["n_chains"], per) / per)
    n_steps = max(10, int(steps_per_pair / chains))
    rates, cpu = {}, {}
    for scheme, plan in pairs:
        best = math.inf
        for _ in range(2):
            t0, c0 = time.perf_counter(), cpu_seconds()
            _call(target, law, scheme, plan, h, chains, n_steps, threads)
            if time.perf_counter() - t0 < best:
                best = time.perf_counter() - t0
                cpu[(scheme, plan)] = (cpu_seconds() - c0) / (chains * n_steps)
        rates[(scheme, plan)] = chains * n_steps / best
    return rates, cpu


def shared_path_rates(steps: dict, preset: str, threads: int, steps_per_call: float) -> dict:
    """Chain-steps per second (every sampler's counted) of the kernel as the figure calls it: per
    scheme, one ``sample_together`` call of its plans and its control on one path, at the finest
    ``h``, ``threads`` threads, best of two."""
    target = GaussianTarget.one_d_example()
    law = figure1.target_law(target)
    lo, hi, n_bins = figure1.histogram_layout(law)
    h = 2.0**-max(figure1.PRESETS[preset]["ks"])
    per = TILE_SIZE * threads
    chains = per * math.ceil(max(figure1.PRESETS[preset]["n_chains"], per) / per)
    rates = {}
    for scheme in dict.fromkeys(s for s, _ in steps):
        pairs = [pair for pair in steps if pair[0] == scheme]
        n_steps = max(10, int(steps_per_call / (chains * len(pairs))))
        best = math.inf
        for _ in range(2):
            t0 = time.perf_counter()
            sample_together(target, pairs, batch_size=1, h=h, gamma=1.0, n_chains=chains, n_steps=n_steps, burn_in=0,
                            seed=1, x0=[law.mean], histogram=(lo, hi, n_bins),
                            divergence_bound=figure1.DIVERGENCE_BOUND, threads=threads)
            best = min(best, time.perf_counter() - t0)
        rates[scheme] = len(pairs) * chains * n_steps / best
    return rates


def report_checks(points) -> None:
    slopes = figure1.local_slopes(points)
    second = {("ubu", "sms"), ("ubu", "rr"), ("baoab", "sms"), ("baoab", "rr")}
    for (s, p), v in slopes.items():
        want = ">= 1.6" if (s, p) in second else "<= 1.4"
        ok = (v >= 1.6) if (s, p) in second else (v <= 1.4)
        print(f"  local slope {s.upper()} x {p}: {v:.2f} (want {want}) {'met' if ok else 'NOT MET'}")
    worst = max(max(q.mc_error, q.noise_floor) / q.w1 for q in points if not q.diverged)
    estimators = sorted({q.estimator for q in points if not q.diverged})
    plain = figure1.local_slopes(points, "w1_plain")
    print(f"  estimator of the plotted W1: {', '.join(estimators)}; local slopes of the plain "
          f"empirical W1 (no control): " + ", ".join(f"{s.upper()} x {p} {v:.2f}" for (s, p), v in plain.items()))
    diverged = [(q.scheme, q.plan, q.h) for q in points if q.diverged]
    print(f"  max (MC error or noise floor) / bias: {worst:.3f} (want < 0.25) {'met' if worst < 0.25 else 'NOT MET'}")
    em_quarter = any(q.scheme == "em" and math.isclose(q.h, 0.25) for q in points if q.diverged)
    print(f"  EM at h = 1/4 marked diverged: {em_quarter}; all diverged points: {diverged}")
    res = figure1.resolution_metadata()
    smallest = min(q.w1 for q in points if not q.diverged)
    print(f"  histogram: {res['n_bins']} bins of {res['bin_width']:.2e}; binning bound of the plotted W1 "
          f"{res['binning_bound_control_variate']:.1e} = {res['binning_bound_control_variate'] / smallest:.2f} "
          f"of the smallest plotted W1 ({smallest:.2e})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="full", choices=sorted(figure1.PRESETS))
    parser.add_argument("--threads", type=_thread_counts, default=[2],
                        help="thread counts, comma separated (e.g. 2,16): each runs (a)-(c)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel-steps", type=float, default=None,
                        help="chain-steps per (scheme, plan) in (a) (default 1e8 at full, 2e7 otherwise)")
    parser.add_argument("--baoab-paper-friction", action="store_true",
                        help="BAOAB as the paper's listing (friction gamma / 2)")
    args = parser.parse_args(argv)
    steps = figure1.chain_steps(args.preset)
    total = sum(steps.values())
    kernel_steps = args.kernel_steps or (1e8 if args.preset == "full" else 2e7)
    print(f"Figure 1 at preset {args.preset}: {total:.3e} chain-steps ({len(steps)} (scheme, plan) pairs, "
          f"burn-in and controls included)")
    print(f"compiling the kernels (first call per scheme): {compile_kernels(steps):.1f} s (not in the times below)")
    columns = None
    for threads in args.threads:
        rates, cpu_per_step = kernel_rates(steps, args.preset, threads, kernel_steps)
        shared = shared_path_rates(steps, args.preset, threads, 4 * kernel_steps)
        kernel_seconds = sum(n / rates[pair] for pair, n in steps.items())
        shared_seconds = sum(n / shared[pair[0]] for pair, n in steps.items())
        kernel_cpu = sum(n * cpu_per_step[pair] for pair, n in steps.items())
        t0, c0 = time.perf_counter(), cpu_seconds()
        points = figure1.compute(args.preset, seed=args.seed, baoab_paper_friction=args.baoab_paper_friction,
                                 threads=threads)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        print(f"\n{threads} threads:")
        print("  (a) kernel chain-steps/s: " + ", ".join(f"{s} x {p} {r:.3g}" for (s, p), r in rates.items())
              + f"; over the figure's mix {total / kernel_seconds:.3g}")
        print(f"  (b) Figure 1 wall time {wall:.1f} s (target < 80 s at the full preset on 2 cores)")
        print(f"  (c) ratio (b) / (chain-steps / kernel rate) = {wall:.1f} / {kernel_seconds:.1f} = "
              f"{wall / kernel_seconds:.2f} (target <= 1.3 at the full preset)")
        print(f"  (d) in CPU seconds: {cpu:.1f} / {kernel_cpu:.1f} = {cpu / kernel_cpu:.2f}")
        print("  (e) the kernel as the figure calls it (a scheme's plans and control on one path, "
              "sample_together), chain-steps/s: " + ", ".join(f"{s} {r:.3g}" for s, r in shared.items())
              + f"; over the mix {total / shared_seconds:.3g} ({kernel_seconds / shared_seconds:.2f} x (a))")
        print(f"  (f) ratio (b) / (chain-steps / (e)) = {wall:.1f} / {shared_seconds:.1f} = "
              f"{wall / shared_seconds:.2f}")
        numbers = [{k: v for k, v in asdict(q).items() if k != "seconds"} for q in points]
        if columns is not None:
            print(f"  same numbers as with {args.threads[0]} threads: {repr(numbers) == repr(columns)}")
        columns = columns or numbers
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory {peak_mb:.0f} MB (target < 1024 MB); checks of the last run:")
    report_checks(points)


if __name__ == "__main__":
    main()
