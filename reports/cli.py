"""``sms-langevin`` (also ``python -m reports``): regenerate every figure and table.

    sms-langevin list
    sms-langevin run all --preset quick --out out/run [--resume] [--workers N]
    sms-langevin run figure1 claims --scheduler tcp://host:8786
    sms-langevin report --out out/run
    sms-langevin claims --preset quick
    sms-langevin bench
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from reports import registry
from reports.executor import execute
from reports.progress import Progress
from reports.store import CorruptUnit, Store, unit_seed


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        raise CliError(message)


def build_parser() -> Parser:
    parser = Parser(prog="sms-langevin", description="Regenerate the paper's figures and tables.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    sub.add_parser("list", help="list every figure and table with what it shows and its cost")
    run = sub.add_parser("run", help="compute figures and tables (persisting every unit) and the report")
    run.add_argument("ids", nargs="+", help="figure/table ids (see `list`), or `all`")
    run.add_argument("--preset", default="quick", help="quick (minutes) or full (paper scale)")
    run.add_argument("--out", default="out/run", help="output folder (results, figures, report)")
    run.add_argument("--seed", type=int, default=0, help="run seed; unit seeds derive from it")
    run.add_argument("--resume", action="store_true", help="skip units already finished in --out")
    run.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    run.add_argument("--scheduler", default=None, help="address of a Dask scheduler to run units on")
    run.add_argument("--local-dask", action="store_true", help="start a local Dask cluster of --workers")
    rep = sub.add_parser("report", help="rebuild figures and the report from persisted results only")
    rep.add_argument("--out", default="out/run", help="the folder of a previous run")
    rep.add_argument("--preset", default=None, help="preset of that run (default: read from it)")
    cl = sub.add_parser("claims", help="the claims table alone")
    cl.add_argument("--preset", default="quick", help="quick or full")
    cl.add_argument("--out", default="out/claims", help="output folder")
    sub.add_parser("bench", help="run the benchmarks (speed and memory ratios)")
    return parser


def _check_preset(preset):
    if preset not in registry.PRESETS:
        raise CliError(f"unknown preset {preset!r}; choose from {', '.join(registry.PRESETS)}")


def _check_out(out: Path) -> None:
    from integrators.metadata import unwritable
    problem = unwritable(out)
    if problem:
        raise CliError(f"cannot write to --out {out}: {problem}")


def _select(ids, figures):
    if ids == ["all"]:
        return list(figures)
    unknown = [i for i in ids if i not in figures]
    if unknown:
        raise CliError(f"unknown id {unknown[0]!r}; known: {', '.join(figures)} (or all)")
    return ids


def cmd_list(args, figures) -> int:
    for fid, mod in figures.items():
        cost = ", ".join(f"{k}: {v}" for k, v in mod.COST.items())
        print(f"{fid:14s} {mod.TITLE}\n{'':14s} claim: {mod.CLAIM}\n{'':14s} units (quick): "
              f"{len(mod.units('quick'))}; cost: {cost}")
    return 0


def cmd_run(args, figures) -> int:
    _check_preset(args.preset)
    out = Path(args.out)
    _check_out(out)
    if args.workers < 1:
        raise CliError(f"--workers must be >= 1, got {args.workers}")
    if args.seed < 0:
        raise CliError(f"--seed must be >= 0, got {args.seed}")
    ids = _select(args.ids, figures)
    store = Store(out)
    store.remove_stale_temporaries()
    tasks = []
    skipped = 0
    for fid in ids:
        for unit in figures[fid].units(args.preset):
            if args.resume:
                try:
                    if store.load(fid, unit) is not None:
                        skipped += 1
                        continue
                except CorruptUnit as exc:
                    print(f"warning: {exc}; recomputing", file=sys.stderr)
            tasks.append((figures[fid].__name__, unit, args.preset, unit_seed(args.seed, fid, unit)))
    by_module = {mod.__name__: fid for fid, mod in figures.items()}
    progress = Progress(len(tasks), label=f"{args.preset}")
    if skipped:
        print(f"resuming: {skipped} units already done, {len(tasks)} to run", file=sys.stderr)
    from integrators.metadata import metadata
    for (module, unit, preset, seed), result, seconds in execute(
            tasks, args.workers, args.scheduler, args.local_dask):
        fid = by_module[module]
        meta = metadata(seed, preset)
        meta.update({"run_seed": args.seed, "wall_seconds": round(seconds, 2), "figure": fid})
        store.save(fid, unit, result, meta)
        progress.advance(f"{fid} {unit}")
    run_meta = {"preset": args.preset, "seed": args.seed, "ids": ids}
    (out / "run.json").write_text(json.dumps(run_meta, indent=2) + "\n")
    build_outputs(out, figures, ids, args.preset)
    print(f"report: {out / 'report' / 'index.html'}")
    return 0


def build_outputs(out: Path, figures, ids, preset) -> None:
    from reports.report import write_report
    store = Store(out)
    drawn = {}
    for fid in ids:
        mod = figures[fid]
        results, missing = [], []
        for unit in mod.units(preset):
            try:
                res = store.load(fid, unit)
            except CorruptUnit as exc:
                raise CliError(f"{exc}; rerun with `run {fid} --resume` to recompute it") from None
            if res is None:
                missing.append(unit)
            else:
                results.append((unit, res))
        if missing:
            raise CliError(f"{fid}: {len(missing)} of {len(results) + len(missing)} units not computed in "
                           f"{out}; run `sms-langevin run {fid} --resume --out {out}`")
        info = mod.draw(results, out / "report" / fid, preset)
        metas = [store.meta(fid, unit) for unit, _ in results]
        figure_meta = {k: v for k, v in metas[0].items() if k not in ("seed", "wall_seconds", "created")}
        figure_meta.update({"preset": preset, "units": len(results),
                            "unit_seeds": "derived from run_seed and each unit (see units/)",
                            "compute_seconds": round(sum(m.get("wall_seconds", 0.0) for m in metas), 1)})
        (out / "report" / fid / "metadata.json").write_text(json.dumps(figure_meta, indent=2) + "\n")
        info["files"] = list(info["files"]) + ["metadata.json"]
        drawn[fid] = {"module": mod, "info": info, "meta": metas[0] if metas else {},
                      "wall": sum(m.get("wall_seconds", 0.0) for m in metas)}
    write_report(out / "report", drawn, preset)


def cmd_report(args, figures) -> int:
    out = Path(args.out)
    if not (out / "units").exists():
        raise CliError(f"no persisted results in {out} (expected {out / 'units'})")
    try:
        run_meta = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        run_meta = {}
    preset = args.preset or run_meta.get("preset", "quick")
    _check_preset(preset)
    ids = [i for i in run_meta.get("ids", list(figures)) if i in figures]
    build_outputs(out, figures, ids, preset)
    print(f"report: {out / 'report' / 'index.html'}")
    return 0


def cmd_claims(args, figures) -> int:
    from theory_checks import claims
    if args.preset not in claims.PRESETS:
        raise CliError(f"unknown preset {args.preset!r}; choose from {', '.join(claims.PRESETS)}")
    out = Path(args.out)
    _check_out(out)
    return claims.main(["--preset", args.preset, "--out", str(out)])


def cmd_bench(args, figures) -> int:
    root = Path(__file__).resolve().parents[1] / "benchmarks"
    scripts = sorted(root.glob("bench_*.py"))
    if not scripts:
        raise CliError(f"no benchmarks found in {root}")
    for script in scripts:
        print(f"== {script.name}", flush=True)
        subprocess.run([sys.executable, str(script)], check=False, env=os.environ.copy())
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    t0 = time.time()
    try:
        args = parser.parse_args(argv)
        figures = registry.load()
        handler = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "claims": cmd_claims,
                   "bench": cmd_bench}[args.command]
        code = handler(args, figures)
    except CliError as exc:
        print(f"sms-langevin: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sms-langevin: interrupted; finished units are saved, rerun with --resume", file=sys.stderr)
        return 130
    if args.command == "run":
        print(f"done in {time.time() - t0:.0f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
