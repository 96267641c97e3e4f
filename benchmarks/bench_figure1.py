"""Time and peak memory of the paper's Figure 1 at a preset (default: full, 10^7 * 2^k samples
per point, nine samplers, k = 2..5), with the acceptance checks printed from the one run.

    python benchmarks/bench_figure1.py [--preset full] [--out out/bench_figure1] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import resource
import time

from bias import figure1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="full", choices=sorted(figure1.PRESETS))
    parser.add_argument("--out", default="out/bench_figure1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baoab-paper-friction", action="store_true",
                        help="BAOAB as the paper's listing (friction gamma / 2)")
    args = parser.parse_args(argv)
    t0 = time.time()
    points = figure1.run(args.out, args.preset, seed=args.seed, progress=lambda m: print(m, flush=True),
                         baoab_paper_friction=args.baoab_paper_friction)
    seconds = time.time() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slopes = figure1.local_slopes(points)
    print(f"\nFigure 1 at preset {args.preset}: {seconds:.0f} s (target < 900 s), "
          f"peak memory {peak_mb:.0f} MB (target < 1024 MB)")
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


if __name__ == "__main__":
    main()
