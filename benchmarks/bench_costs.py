"""The costs that `sms-langevin list` states (each figure module's ``COST``), measured.

For each ``FIGURE:PRESET`` given (``FIGURE:PRESET:torch`` for Figure 1 with ``--backend torch
--device cpu``), the figure's units at that preset are run and drawn, and the script prints the
wall-clock and CPU seconds measured, the cost the text states (the first number of seconds,
minutes or hours in ``COST[PRESET]``, or in its clause that names ``--backend torch`` for the torch
variant) and their ratio.  The issue's bar: a stated cost within a factor 1.5 of the measurement,
on 2 cores, or the text changes.

Where the text states the cost ``with --workers 2``, the figure runs as a user runs it,
``sms-langevin run FIGURE --preset PRESET --workers 2`` in a subprocess (its CPU seconds are its
processes'); the torch variant runs through the command line too; otherwise the units run in this
process, one after the other, and are drawn (imports excluded, compiling included: a user's first
run compiles).  The kernels compile into an empty cache folder (a machine's first run, the cost
the texts state); ``--warm`` uses the kernels this machine already keeps (a later run).  On a
machine shared with other work the wall-clock seconds are an upper bound.

    python benchmarks/bench_costs.py                          # the cheapest: weak_orders at quick
    python benchmarks/bench_costs.py figure1:tiny logistic:tiny bnn:tiny
    python benchmarks/bench_costs.py figure1:tiny:torch       # Figure 1 with the torch backend on the CPU
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (see reports._bench_command.cmd_bench);
# tiny: the cheapest figure alone (what tests/test_benchmarks.py runs), quick: every figure at its make-demo level
BENCH_ARGS = {"cpu": {"tiny": [],
                      "quick": ["demo:quick", "weak_orders:quick", "figure1:tiny", "logistic:tiny", "ghmc:tiny",
                                "conformance:tiny", "bnn:tiny", "claims:quick"],
                      "full": "the full presets' stated costs are estimates of hours (or a GPU): measure one with "
                              "python benchmarks/bench_costs.py FIGURE:full"}}
CHEAPEST = "weak_orders:quick"
TOLERANCE = 1.5  # the bar on stated / measured
UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
         "h": 3600.0, "hour": 3600.0, "hours": 3600.0}
NUMBER = re.compile(r"~?\s*(\d+(?:\.\d+)?)\s*(seconds|second|sec|s|minutes|minute|min|hours|hour|h)\b")


def stated_seconds(text: str, torch: bool = False) -> float | None:
    """The cost ``text`` states, in seconds: the first number with a unit of time, in the clause
    (between semicolons or commas) naming ``--backend torch`` when ``torch``, else in the text
    before any such clause; None when it states none ("a few minutes", "GPU or cluster").

    Parameters
    ----------
    text : str
        A ``COST`` entry.
    torch : bool
        Whether the torch backend's cost is wanted.

    Returns
    -------
    float or None
        Seconds, or None.
    """
    clauses = re.split(r"[;,]", text)
    if torch:
        clauses = [c for c in clauses if "--backend torch" in c]
    else:
        clauses = [c for c in clauses if "--backend torch" not in c]
    for clause in clauses:
        found = NUMBER.search(clause)
        if found:
            return float(found[1]) * UNITS[found[2]]
    return None


def _spec(text: str) -> tuple[str, str, bool]:
    parts = text.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "torch"):
        raise argparse.ArgumentTypeError(f"expected FIGURE:PRESET or FIGURE:PRESET:torch, got {text!r}")
    return parts[0], parts[1], len(parts) == 3


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _self_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def run_cli(fid: str, preset: str, workers: int, torch: bool) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``sms-langevin run`` of one figure (into a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="bench-costs-") as out:
        argv = [sys.executable, "-m", "reports", "run", fid, "--preset", preset, "--out", out,
                "--workers", str(workers)]
        if torch:
            argv += ["--backend", "torch", "--device", "cpu"]
        cpu0, t0 = _children_cpu(), time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[1:])} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return wall, cpu


def run_in_process(mod, preset: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds of every unit of ``mod`` at ``preset``, then its drawing."""
    from reports.registry import module_preset
    from reports.store import unit_seed
    level = module_preset(mod, preset)
    cpu0, t0 = _self_cpu(), time.perf_counter()
    results = [(unit, mod.run_unit(unit, level, unit_seed(0, mod.ID, unit))) for unit in mod.units(level)]
    drawing = mod.draw(results, level)
    wall, cpu = time.perf_counter() - t0, _self_cpu() - cpu0
    import matplotlib.pyplot as plt
    for fig in drawing.figures.values():
        plt.close(fig)
    return wall, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("figures", nargs="*", type=_spec, default=[_spec(CHEAPEST)],
                        help=f"FIGURE:PRESET or FIGURE:PRESET:torch (default: {CHEAPEST}, the cheapest)")
    parser.add_argument("--warm", action="store_true",
                        help="use the kernels already compiled on this machine (default: an empty kernel cache, so the "
                             "costs measured are a machine's first run, the ones stated)")
    args = parser.parse_args(argv)
    if not args.warm:  # (before the toolkit is imported: the cache folder is read once)
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-costs-cache-")
        os.environ.pop("SMS_LANGEVIN_CACHE_DIR", None)
    from reports import registry
    figures = registry.load()
    for fid, preset, _ in args.figures:
        if fid not in figures:
            parser.error(f"unknown figure {fid!r}; choose from {', '.join(figures)}")
        if preset not in figures[fid].COST:
            parser.error(f"{fid} states no cost for preset {preset!r} (it states {', '.join(figures[fid].COST)})")
    rows = []
    for fid, preset, torch in args.figures:
        mod = figures[fid]
        text = mod.COST[preset]
        clause = next((c for c in re.split(r"[;,]", text) if "--backend torch" in c), text) if torch else text
        workers = 2 if "--workers 2" in clause else 1
        how = f"sms-langevin run --workers {workers}{' --backend torch' if torch else ''}" \
            if workers > 1 or torch else "in process"
        print(f"{fid} {preset}{' (torch, cpu)' if torch else ''}: {how}; stated: {text}", flush=True)
        wall, cpu = run_cli(fid, preset, workers, torch) if workers > 1 or torch else run_in_process(mod, preset)
        rows.append((f"{fid}:{preset}{':torch' if torch else ''}", wall, cpu, stated_seconds(text, torch)))
    print(f"\n{'figure:preset':28s} {'wall s':>8s} {'CPU s':>8s} {'stated s':>9s} {'ratio wall/stated':>18s} "
          f"{'ratio CPU/stated':>17s}  within {TOLERANCE}x")
    for name, wall, cpu, stated in rows:
        if stated is None:
            print(f"{name:28s} {wall:8.1f} {cpu:8.1f} {'none':>9s} {'n/a':>18s} {'n/a':>17s}  (no number stated)")
            continue
        ratio = wall / stated
        ok = 1 / TOLERANCE <= ratio <= TOLERANCE
        print(f"{name:28s} {wall:8.1f} {cpu:8.1f} {stated:9.1f} {ratio:18.2f} {cpu / stated:17.2f}  "
              f"{'yes' if ok else 'NO'}")
    print("(wall seconds on a machine shared with other work are an upper bound)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
