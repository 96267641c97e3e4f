"""What the conformance report costs (:mod:`experiments.conformance`): one preset's samplers on the
default target, every plan, each unit (one sampler) in a process of a pool of ``--workers``.

The chains each plan runs follow from the limit error the measurement must detect
(``theory_checks.adapters._analysis.DETECTABLE_LIMIT``), so the time is set by that effect, not by a
budget.  Printed: the wall time, the chain-steps run (chains x steps x steps per call, summed),
and the ratio of the wall time to a plain reference measured in the same process: one
``integrators.sample`` run (UBU x sms, 2-D default target) of the same number of chain-steps,
split over the same workers.  Also each sampler's verdict, and the positive controls' (a level
either detects its control or says that it cannot).

    PYTHONPATH=. python benchmarks/bench_conformance.py [--level quick] [--adapters N] [--workers 2] [--plans full]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": {"tiny": ["--level", "tiny", "--adapters", "1", "--plans", "full"],
                      "quick": ["--level", "quick"], "full": ["--level", "full"]},
              "requires": ["posteriors", "blackjax"]}


def run_one(args: tuple) -> tuple[dict, float]:
    """One unit of the report (a sampler on the default target; every plan unless ``plans``): its
    record and its seconds."""
    from experiments import conformance as fig_conformance
    from theory_checks.adapters import _conformance as conformance

    name, preset, seed, plans = args
    t0 = time.perf_counter()
    if plans is None:
        rec = fig_conformance.EXPERIMENT.run_unit({"sampler": name, "target": "default"}, preset, seed)
    else:
        report = conformance.measure_adapter(conformance.conformance_adapters()[name], plans=plans,
                                             level=fig_conformance.LEVEL[preset], seed=seed)
        rec = conformance.record(report, target="default")
    return rec, time.perf_counter() - t0


def chain_steps(rec: dict) -> int:
    """Chain-steps a record ran: chains x (burn-in + window) calls x steps per call, every plan."""
    from theory_checks.adapters._conformance import conformance_adapters
    from theory_checks.adapters._protocol import steps_per_call

    per_call = steps_per_call(conformance_adapters()[rec["sampler"]])
    return sum(n * sum(calls) * per_call for m in rec["plans"].values()
               for n, calls in zip(m["n_chains"], m["calls"], strict=True))


def reference(total: int, workers: int) -> float:
    """Seconds of ``integrators.sample`` (UBU x sms, 2-D default target) running ``total`` chain-steps
    in ``workers`` processes (after a compiling call in each)."""
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_plain, [1000] * workers))  # compile in every worker
        t0 = time.perf_counter()
        list(pool.map(_plain, [max(total // workers, 1)] * workers))
        return time.perf_counter() - t0


def _plain(steps: int) -> None:
    from integrators import sample
    from theory_checks._verify import default_target

    chains = 4096
    sample(default_target(), "ubu", "sms", h=0.05, gamma=2.0, n_chains=chains, n_steps=max(steps // chains, 1),
           batch_size=1, threads=1)


def main() -> None:
    from experiments import conformance as fig_conformance

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="quick", choices=fig_conformance.EXPERIMENT.PRESETS,
                        help="the report's preset (its measurement level: fig_conformance.LEVEL)")
    parser.add_argument("--adapters", type=int, default=None, help="only the first N samplers of the preset")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plans", default=None, help="comma-separated plans (default: every plan, as the report)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    names = [u["sampler"] for u in fig_conformance.EXPERIMENT.units(args.level)
             if u["sampler"] != "toolkit" and u["target"] == "default"][:args.adapters]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        plans = None if args.plans is None else args.plans.split(",")
        results = list(pool.map(run_one, [(n, args.level, args.seed, plans) for n in names]))
    wall = time.perf_counter() - t0
    from theory_checks.adapters._conformance import control_verdict, is_control

    measured = [rec for rec, _ in results if "skipped" not in rec]
    total = sum(chain_steps(rec) for rec in measured)
    print(f"conformance preset {args.level!r} (level {fig_conformance.LEVEL[args.level]}), {len(names)} samplers, "
          f"default target, {args.workers} workers")
    for (rec, seconds), name in zip(results, names, strict=True):
        if "skipped" in rec:
            print(f"  {name}: skipped ({rec['skipped']})")
            continue
        chains = sorted({n for m in rec["plans"].values() for n in m["n_chains"]})
        verdict = control_verdict(rec) if is_control(rec) else "; ".join(
            [f"FAILED: {', '.join(rec['failed'])}"] * bool(rec["failed"])
            + [f"INCONCLUSIVE: {', '.join(rec['inconclusive'])}"] * bool(rec["inconclusive"])) or "OK"
        chain_text = f"chains {chains[0]}-{chains[-1]}" if chains else "not measured"
        print(f"  {name}: {seconds:.1f} s, {chain_text}, {chain_steps(rec):,} chain-steps: {verdict}")
    plain = reference(total, args.workers) if total else float("nan")
    print(f"wall time {wall:.1f} s for {total:,} chain-steps")
    print(f"plain integrators.sample (ubu x sms) of the same chain-steps, {args.workers} workers: {plain:.2f} s")
    print(f"ratio conformance / plain sample: {wall / plain:.1f}")


if __name__ == "__main__":
    main()
