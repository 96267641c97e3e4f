"""What ``verify`` costs: its exact level (``strong=False, monte_carlo=False``) and its default level,
each the first call in a fresh process (compilation included) and a second call in the same process
(compiled), for a scheme written in user code (the README's ABOBA) and a built-in one.

Printed: the seconds of each call and the report's verdict line.  Run each level in its own process
so the first call pays every compilation it needs::

    PYTHONPATH=. python benchmarks/bench_verify.py --level exact [--scheme aboba]

``--seeds N`` is the no-false-alarm run instead: every correct scheme (the built-in ones, the
README's ABOBA, the tour's AOBOA and ``tests/unusual_schemes``) at seeds ``0 .. N-1`` at the
level's defaults, one line per run and a count of the runs that were not ``ok``::

    PYTHONPATH=. python benchmarks/bench_verify.py --level default --seeds 20 [--scheme ubu_expm]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": {"tiny": ["--level", "exact", "--scheme", "ubu"],
                      "quick": ["--level", "exact"], "full": ["--level", "default"]}}


def correct_schemes() -> dict:
    """Every correct scheme by name: the registered ones, ABOBA, AOBOA and the unusual ones."""
    from integrators import SCHEMES
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from unusual_schemes import UNUSUAL
    from user_schemes import ABOBA, AOBOA
    return {**{name: name for name in sorted(SCHEMES)}, "aboba": ABOBA, "aoboa": AOBOA, **UNUSUAL}


def scheme_for(name: str):
    """A registered scheme's name, or a correct scheme of :func:`correct_schemes` by name."""
    return correct_schemes()[name]


def no_false_alarm(level_options: dict, seeds: int, only: str | None) -> None:
    """Every correct scheme (or ``only``) at seeds ``0 .. seeds-1``: one line per run, then the count."""
    from theory_checks import verify

    bad = runs = 0
    for name, scheme in correct_schemes().items():
        if only not in (None, name):
            continue
        for seed in range(seeds):
            t0 = time.perf_counter()
            report = verify(scheme, seed=seed, **level_options)
            runs += 1
            bad += not report.ok
            print(f"{name} seed {seed}: {time.perf_counter() - t0:.1f} s; {report.verdict_line()}", flush=True)
    print(f"{bad} of {runs} runs not ok")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=("exact", "default"), default="exact")
    parser.add_argument("--scheme", default="aboba", help="a correct scheme's name; with --seeds, 'all' for every one")
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=0, help="the no-false-alarm run over this many seeds")
    args = parser.parse_args(argv)
    from theory_checks import verify

    options = dict(strong=False, monte_carlo=False) if args.level == "exact" else {}
    if args.seeds:
        no_false_alarm(options, args.seeds, None if args.scheme == "all" else args.scheme)
        return
    scheme = scheme_for(args.scheme)
    seconds = []
    for call in range(args.calls):
        t0 = time.perf_counter()
        report = verify(scheme, **options)
        seconds.append(time.perf_counter() - t0)
        what = "first call (compiles)" if call == 0 else "again (compiled)"
        print(f"{args.level} {args.scheme} {what}: {seconds[-1]:.1f} s; {report.verdict_line()}", flush=True)
    if len(seconds) > 1:
        print(f"ratio of the compiled call to the first: {min(seconds[1:]) / seconds[0]:.3f}")


if __name__ == "__main__":
    main()
