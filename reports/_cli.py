"""``sms-langevin`` (also ``python -m reports``): regenerate every figure and table.

```bash
sms-langevin list
sms-langevin run all --preset quick --out out/run [--resume] [--workers N]
sms-langevin run figure1 claims --scheduler tcp://host:8786
sms-langevin report --out out/run
sms-langevin claims --preset quick
sms-langevin bench
sms-langevin tour --out out/run [notebook ...]
```
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

from integrators._install import install_command
from integrators._validation import printable, seed_value
from reports import registry, schema
from reports._bench_command import cmd_bench
from reports._claims_command import cmd_claims
from reports._cli_common import CliError, backend_flags, check_out, check_preset, describe_exception, out_path
from reports._executor import (
    ResultNotSent,
    SchedulerError,
    UnitFailed,
    WorkerDied,
    check_scheduler,
    execute,
    local_cores,
)
from reports._progress import Progress, describe_unit, interleave
from reports._run_record import check_record_replaceable, read_left_out, read_run
from reports._runmeta import drawable, fingerprint, library_changes
from reports.drawing import Drawing, write_drawing, write_metadata
from reports.registry import _absent_input
from reports.store import (
    Busy,
    CorruptUnit,
    FolderLock,
    StaleUnit,
    Store,
    UnsafePath,
    json_change,
    own_path,
    own_tree,
    unit_seed,
    write_atomic,
)
from reports.verdict import NOT_TESTABLE, Verdict, checked


class _ShowDefaults(argparse.HelpFormatter):
    """``--help`` names every option's default (a flag's ``False`` and an absent ``None`` say nothing)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.option_strings and not any(action.default is v for v in (None, False, argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _ShowDefaults)
        super().__init__(*args, **kwargs)

    def error(self, message):  # one line, exit code 2
        raise CliError(message)


def build_parser() -> Parser:
    """The ``sms-langevin`` parser; its errors raise a one-line ``CliError`` (exit code 2)."""
    parser = Parser(prog="sms-langevin", description="Regenerate the paper's figures and tables.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    sub.add_parser("list", help="list every figure and table with what it shows and its cost")
    run = sub.add_parser("run", help="compute figures and tables (persisting every unit) and the report")
    run.add_argument("ids", nargs="+", help="figure/table ids (see `list`), or `all`")
    run.add_argument("--preset", default="quick", help="tiny (make demo), quick (minutes) or full (paper scale); "
                     "a figure's own levels (bnn: regime, regime-tiny) for that figure alone")
    run.add_argument("--out", default="out/run", help="output folder (results, figures, report)")
    run.add_argument("--seed", type=int, default=0, help="run seed; unit seeds derive from it")
    run.add_argument("--resume", action="store_true", help="skip units already finished in --out")
    run.add_argument("--workers", type=int, default=1, help="local worker processes")
    run.add_argument("--scheduler", default=None, help="address of a Dask scheduler to run units on")
    run.add_argument("--local-dask", action="store_true", help="start a local Dask cluster of --workers")
    run.add_argument("--backend", default="numba", choices=["numba", "torch"],
                     help="kernel for the figures that offer a choice (figure1)")
    run.add_argument("--device", default=None, help="torch device for --backend torch: cpu or cuda")
    run.add_argument("--data-dir", default=None,
                     help="folder of data files (e.g. pneumoniamnist.npz) searched first; sets SMS_LANGEVIN_DATA_DIR "
                          "for the run and its local workers (on a remote Dask cluster, set it there)")
    rep = sub.add_parser("report", help="rebuild figures and the report from persisted results only")
    rep.add_argument("--out", default="out/run", help="the folder of a previous run")
    rep.add_argument("--preset", default=None, help="preset of that run (default: read from it)")
    cl = sub.add_parser("claims", help="the claims table alone")
    cl.add_argument("--preset", default="quick", help="tiny (= quick), quick or full")
    cl.add_argument("--out", default="out/claims", help="output folder")
    bench = sub.add_parser("bench", help="run the benchmarks (speed and memory ratios)")
    bench.add_argument("--preset", default="quick",
                       help="size of every benchmark's run, as its BENCH_ARGS says: tiny, quick or full")
    bench.add_argument("--out", default=None,
                       help="folder for the outputs of benchmarks that write files (default: a temporary one)")
    bench.add_argument("--dir", default=None, help="folder of bench_*.py scripts (default: the project's benchmarks/)")
    tour = sub.add_parser("tour", help="execute the guided tour's notebooks into HTML pages (OUT/report/tour)")
    tour.add_argument("notebooks", nargs="*", help="notebooks to run (names or numbers such as 02; default all)")
    tour.add_argument("--out", default="out/run", help="output folder; a report there links the tour")
    return parser


def _lock(out: Path) -> FolderLock:
    return FolderLock(out)


def _select(ids, figures):
    if ids == ["all"]:
        return list(figures)
    if "all" in ids:
        raise CliError(f"`all` stands alone (it names every figure); got {' '.join(ids)}: run `all`, or name the "
                       f"figures from {', '.join(figures)}")
    unknown = [i for i in ids if i not in figures]
    if unknown:
        raise CliError(f"unknown id {unknown[0]!r}; known: {', '.join(figures)} (or all)")
    once = list(dict.fromkeys(ids))  # else each unit of a repeated id runs twice and run.json lists it twice
    repeated = [i for i in once if ids.count(i) > 1]
    if repeated:
        print(f"note: {', '.join(repeated)} named more than once; running each once", file=sys.stderr)
    return once


def listed_presets(mod) -> list[str]:
    """The presets ``list`` gives a figure's units and cost at: every preset of :data:`registry.PRESETS`
    (``tiny`` included, where the figure runs its quick level), then the figure's own others."""
    return list(dict.fromkeys([*registry.PRESETS, *mod.PRESETS]))


def _level_words(mod, preset: str) -> str:
    level = registry.module_preset(mod, preset)
    return "" if level == preset else f" (runs its {level} level)"


def cmd_list(args, figures) -> int:
    for fid, mod in figures.items():
        presets = listed_presets(mod)
        counts = {}
        for p in presets:
            level = registry.module_preset(mod, p)
            counts.setdefault(level, len(figure_units(mod, level, {})))
        cost = ", ".join(f"{p}{_level_words(mod, p)}: {mod.COST[registry.module_preset(mod, p)]}" for p in presets)
        lack = registry.lacking(mod)
        units = "units: " + ", ".join(f"{p} {counts[registry.module_preset(mod, p)]}" for p in presets) \
            + (f" ({lack})" if lack else "")
        print(f"{fid:14s} {mod.TITLE}\n{'':14s} claim: {mod.CLAIM}\n{'':14s} {units}; cost: {cost}")
    print("\ncosts: on 2 idle cores; unless a cost says so, with the kernels already compiled: the first run after "
          "installing also compiles them (about 30 s more per figure, in each worker process)")
    return 0


def _backend_options(args, ids, figures) -> dict:
    """``{"backend": ..., "device": ...}`` added to the units of figures that offer backends (their
    results then live under their own unit keys); empty for the default Numba backend."""
    if args.backend == "numba":
        if args.device not in (None, "cpu"):
            raise CliError(f"--device {args.device} needs --backend torch")
        return {}
    if not any(figures[fid].BACKENDS for fid in ids):
        # the figures of this registry that offer backends, not a name that may not be in it
        offering = [fid for fid, mod in figures.items() if mod.BACKENDS]
        where = (f"applies to {', '.join(offering)} only" if offering else
                 "applies to no figure of this registry (none offers backends)")
        raise CliError(f"--backend {args.backend} {where}; selected: {', '.join(ids)}")
    try:
        from integrators.torch._chains import resolve_device
    except ImportError:
        raise CliError(f"--backend torch needs torch: {install_command('torch')}") from None
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return {"backend": args.backend, "device": str(device)}


def cmd_run(args, figures) -> int:
    check_preset(args.preset, figures)
    if args.workers < 1:
        raise CliError(f"--workers must be >= 1, got {args.workers}")
    if not args.scheduler and args.workers > local_cores():
        # more local processes than cores only compete for them (and each compiles its kernels)
        print(f"note: --workers {args.workers} reduced to {local_cores()}, the cores of this machine "
              f"(a Dask --scheduler may take more)", file=sys.stderr)
        args.workers = local_cores()
    try:
        seed_value(args.seed, "--seed")
    except ValueError as exc:
        raise CliError(str(exc)) from None
    asked = _select(args.ids, figures)
    ids, not_run = registry.runnable(figures, asked)  # those an absent extra leaves out
    left_out = {fid: registry.lacking(figures[fid]) for fid in asked if fid not in ids}  # said in the report
    if not ids:
        raise CliError(not_run)
    check_preset(args.preset, figures, ids)
    backend = _backend_options(args, ids, figures)
    if (args.scheduler is not None or args.local_dask) and not _importable("dask", "distributed"):
        raise CliError(f"{'--scheduler' if args.scheduler else '--local-dask'} needs dask.distributed: "
                       f"{install_command('dask')}")
    if args.scheduler is not None:
        problem = check_scheduler(args.scheduler)
        if problem:
            raise CliError(f"--scheduler {args.scheduler}: {problem}")
    _use_data_dir(args.data_dir)
    out = out_path(args.out)
    check_out(out)  # creates the folder: only once every argument has passed its checks
    with _lock(out):
        try:
            code = _run_locked(args, figures, ids, out, backend, left_out)
        except CliError as exc:
            raise CliError(f"{exc}; {not_run}" if not_run else str(exc)) from None
    if not_run:  # the others ran and are in the report, but the run is not all that was asked
        raise CliError(not_run)
    return code


def _importable(*names: str) -> bool:
    """Whether every module of ``names`` is installed (found, not imported)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in names)
    except ImportError:  # an import hook that refuses the name
        return False


def _use_data_dir(data_dir) -> None:
    """``--data-dir``: an existing folder, given to the loaders (and the workers, which inherit the
    environment) as ``SMS_LANGEVIN_DATA_DIR``; without it, that variable where set is held to the same check
    (a file there would make every unit 'absent' once OUT is made, not a refusal before)."""
    from data_sets import DATA_DIR_ENV
    if data_dir is None:
        if os.environ.get(DATA_DIR_ENV):  # (set but empty: unset, as the loaders read it)
            _data_folder(os.environ[DATA_DIR_ENV], f"${DATA_DIR_ENV}")
        return
    os.environ[DATA_DIR_ENV] = str(_data_folder(data_dir, "--data-dir"))


def _data_folder(data_dir: str, name: str) -> Path:
    """``data_dir`` resolved, where it is an existing folder; else :class:`CliError` naming ``name``."""
    shown = data_dir if len(data_dir) <= 200 else f"{data_dir[:100]}...{data_dir[-60:]} ({len(data_dir)} characters)"
    if not data_dir.strip():
        raise CliError(f"{name} must name a folder, got an empty string")
    try:
        folder = Path(data_dir).expanduser()
        is_dir, exists = folder.is_dir(), folder.exists()
        resolved = folder.resolve() if is_dir else None
    except RuntimeError as exc:  # expanduser: ~user of no such user
        raise CliError(f"{name} {shown}: {exc}") from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL
        raise CliError(f"{name} {shown}: {getattr(exc, 'strerror', None) or exc}") from None
    if not is_dir:
        raise CliError(f"{name} {shown}: {'not a folder' if exists else 'no such folder'}")
    return resolved


def unit_inputs(mod, unit: dict, level: str) -> dict | None:
    """What identifies a unit's input files (the figure's optional ``inputs(unit, preset)``): a dict that comes
    back unchanged from JSON (it is stored with the unit and compared when drawn), or None."""
    if mod.inputs is None:
        return None
    with _figure_code(mod.ID, "inputs", mod, ""):
        found = mod.inputs(unit, level)
    change = None if found is None else "not a dict" if not isinstance(found, dict) else json_change(found)
    if change:
        raise CliError(f"{mod.ID}: inputs (in {mod.module}) returned {_shown(found)} for unit {_shown(unit)}: "
                       f"{change}")
    return found


def absent_inputs(figures, tasks) -> list:
    """``[(task, why)]`` for the tasks whose input data are absent, asked of each figure's optional
    ``missing_input(unit, preset)`` before anything runs (it checks paths only)."""
    by_module = {mod.module: mod for mod in figures.values()}
    absent = []
    for task in tasks:
        module, unit, level, _ = task
        mod = by_module[module]
        if mod.missing_input is None:
            continue
        with _figure_code(mod.ID, "missing_input", mod, ""):
            why = mod.missing_input(unit, level)
        if why is not None and not isinstance(why, str):
            raise CliError(f"{mod.ID}: missing_input (in {mod.module}) must return None or a string saying what is "
                           f"absent, got {_shown(why)}")
        if why is not None:
            absent.append((task, why))
    return absent


def _run_locked(args, figures, ids, out: Path, backend: dict, left_out: dict) -> int:
    print(f"{args.preset}: listing the units of {', '.join(ids)} (and which are done)", file=sys.stderr, flush=True)
    store = Store(out)
    store.remove_stale_temporaries(figures)  # its own temporaries, in its figures' folders only
    from reports._report import check_replaceable
    check_replaceable(out / "report")  # before any unit runs: the report is swapped in at the end
    own_path(out, out / "run.json")  # a link there would be silently replaced by the run's record, at the end
    check_record_replaceable(out)  # a user's own run.json (or a folder) would be replaced at the end
    tasks, prints = [], {}
    skipped = 0
    for fid in ids:
        level = registry.module_preset(figures[fid], args.preset)
        for unit in figure_units(figures[fid], level, backend):
            seed = unit_seed(args.seed, fid, unit)
            wanted = fingerprint(figures[fid].module, args.seed, seed, args.preset,
                                 inputs=unit_inputs(figures[fid], unit, level))
            if args.resume:
                try:
                    stored = store.load(fid, unit, wanted)
                    if store.path(fid, unit).exists() and registry._unfinished(stored) is None:
                        schema.check(stored, figures[fid].RESULT)
                        skipped += 1
                        continue
                except (CorruptUnit, StaleUnit) as exc:
                    print(printable(f"warning: {exc}; recomputing"), file=sys.stderr)
                except schema.SchemaError as exc:
                    print(printable(f"warning: {store.path(fid, unit)}: not a result of {fid} ({exc}); recomputing"),
                          file=sys.stderr)
            task = (figures[fid].module, unit, level, seed)
            tasks.append(task)
            prints[(fid, store.path(fid, unit))] = wanted
    by_module = {mod.module: fid for fid, mod in figures.items()}
    from reports._metadata import metadata

    def save(task, result, seconds):
        module, unit, preset, seed = task
        fid = by_module[module]
        meta = metadata(seed, preset)
        meta.update({"run_seed": args.seed, "wall_seconds": round(seconds, 2), "figure": fid,
                     "fingerprint": prints[(fid, store.path(fid, unit))]})
        _check_made(figures[fid], unit, result)
        try:
            store.save(fid, unit, result, meta)
        except (TypeError, ValueError, RecursionError) as exc:  # json.dumps: not JSON, a cycle, too deep
            raise unsaved(fid, unit, "json", f"{exc.__class__.__name__}: {str(exc)[:200]}") from None
        if _absent_input(result) is not None:
            absent.append((fid, _absent_input(result)))
        return fid, unit

    def unsaved(fid, unit, kind, why):
        what = "JSON cannot hold" if kind == "json" else "its worker process could not send back"
        return CliError(f"{fid}: run_unit({json.dumps(unit)}) returned a result {what} ({why}); it was not saved")

    absent = []
    # a remote cluster's workers may hold data this machine lacks: there the units find out themselves
    no_data = [] if args.scheduler else absent_inputs(figures, tasks)
    if no_data:  # said before the hours of other work, not after; persisted as absent, never run
        for fid in dict.fromkeys(by_module[task[0]] for task, _ in no_data):
            whys = [why for task, why in no_data if by_module[task[0]] == fid]
            print(printable(f"note: {fid}: {len(whys)} unit{'s' if len(whys) > 1 else ''} will be skipped, their data "
                            f"are absent ({whys[0]})"), file=sys.stderr)
        for task, why in no_data:
            save(task, {"missing": why}, 0.0)
        skip = {id(task) for task, _ in no_data}
        tasks = [task for task in tasks if id(task) not in skip]
    # two units of every figure first: the estimate of the time left waits until each figure is timed
    kinds = [by_module[task[0]] for task in tasks]
    order = interleave(kinds)
    tasks, kinds = [tasks[i] for i in order], [kinds[i] for i in order]
    progress = Progress(len(tasks), label=f"{args.preset}", kinds=kinds)
    from integrators._disk_cache import describe_state
    print(f"{args.preset}: {len(tasks)} units to run; {describe_state()}", file=sys.stderr, flush=True)
    if args.resume:
        print(f"resuming: {skipped} units already done, {len(tasks)} to run", file=sys.stderr)
    try:
        for task, result, seconds in execute(tasks, args.workers, args.scheduler, args.local_dask):
            fid, unit = save(task, result, seconds)
            progress.advance(describe_unit(fid, unit), kind=fid, seconds=seconds)
    except SchedulerError as exc:
        raise CliError(str(exc)) from None
    except ResultNotSent as exc:  # one that does not pickle, from a worker: said as in process, not a traceback
        task, kind, why = exc.args
        raise unsaved(by_module[task[0]], task[1], kind, why) from None
    except (UnitFailed, WorkerDied) as exc:
        raise CliError(f"{exc}; the finished units are saved: rerun with --resume to go on") from None
    run_meta = {"preset": args.preset, "seed": args.seed, "ids": ids, "backend": backend, "left_out": left_out}
    write_atomic(own_path(out, out / "run.json"), json.dumps(run_meta, indent=2) + "\n")
    build_outputs(out, figures, ids, args.preset, args.seed, backend, left_out)
    print(printable(f"report: {out / 'report' / 'index.html'}"))
    if absent:  # drawn (the figure says what is absent), but not a success
        raise CliError(f"{absent[0][0]}: {len(absent)} unit{'s' if len(absent) > 1 else ''} found no data "
                       f"({absent[0][1]}); the report lists them as absent; add the files and rerun with --resume")
    return 0


def _check_made(mod, unit: dict, result) -> None:
    """A unit's result checked against its figure's ``RESULT`` before it is saved, so a value that is not what
    ``draw`` expects (a NaN where the schema wants a finite number, an undeclared ``{"missing": why}``) is
    refused naming the unit."""
    try:
        schema.check(result, mod.RESULT)
    except schema.SchemaError as exc:
        raise CliError(f"{mod.ID}: run_unit({json.dumps(unit)}) returned a result that is not one of {mod.ID}'s "
                       f"RESULT ({exc}); it was not saved") from None
    except RecursionError:
        raise CliError(f"{mod.ID}: run_unit({json.dumps(unit)}) returned a result nested too deeply to check; "
                       f"it was not saved") from None


def figure_units(mod, level: str, backend: dict) -> list[dict]:
    """The units of a figure at ``level``; a figure that offers backends carries the run's
    ``{"backend", "device"}`` in each unit (so its results live under keys of their own).  ``units`` must
    return a non-empty list of distinct JSON objects (the experiment contract): else one line naming it."""
    with _figure_code(mod.ID, f"units({level!r})", mod, ""):
        units = mod.units(level)
    where = f"{mod.ID}: units({level!r}) (in {mod.module})"
    if not isinstance(units, list | tuple) or not units:
        raise CliError(f"{where} must return a non-empty list of dicts, got {_shown(units)}")
    keys = set()
    for unit in units:
        # a unit JSON changes (NaN, a key 1, a tuple) never equals its stored copy: a checksum mismatch forever
        change = "not a dict" if not isinstance(unit, dict) else json_change(unit)
        if change:
            raise CliError(f"{where} must return JSON objects (dicts of text keys) that JSON keeps unchanged; "
                           f"unit {_shown(unit)}: {change}")
        reserved = sorted(set(unit) & {"backend", "device"}) if mod.BACKENDS else []
        if reserved:  # the run's backend fills these: a unit's own would be overwritten, two units made one
            raise CliError(f"{where} returned unit {_shown(unit)} with the key {reserved[0]!r}, which the run's "
                           f"--backend fills for a figure with BACKENDS; name it otherwise")
        keys.add(json.dumps(unit, sort_keys=True))
    if len(keys) != len(units):
        raise CliError(f"{where} returned the same unit twice; each unit must differ (it names its file)")
    return [{**unit, **backend} if mod.BACKENDS else unit for unit in units]


@contextlib.contextmanager
def _figure_code(fid: str, function: str, mod, remedy: str):
    """An exception of a figure's own code (its ``units``, ``draw`` or ``verdict``) as one line naming the
    function, the module and the exception, where it was raised, and ``remedy``."""
    try:
        yield
    except CliError:
        raise
    except (Exception, SystemExit) as exc:  # sys.exit in a figure's code is its error (KeyboardInterrupt: Ctrl-C)
        raise CliError(f"{fid}: {function} (in {mod.module}) raised {describe_exception(exc)}{remedy}") from exc


def _shown(value) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def build_outputs(out: Path, figures, ids, preset, run_seed: int, backend: dict | None = None,
                  left_out: dict | None = None) -> None:
    """Draw the figures ``ids`` into ``out/report`` from the units persisted in ``out``, each checked to come
    from ``preset``, ``run_seed``, ``backend`` (``{}``: Numba) and the current code, and name those
    ``left_out`` of the run (``{id: why}``); the report is staged and swapped in whole
    (:mod:`reports._report`)."""
    from reports._report import remove_stale_staging, staging_folder, swap_in
    remove_stale_staging(out)
    staging = staging_folder(out)
    try:
        _draw_into(staging, out, figures, ids, preset, run_seed, backend, left_out)
        swap_in(staging, out / "report")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _verdict(mod, results, level):
    """The figure's :class:`reports.verdict.Verdict` (its ``verdict``), or one saying it declares none."""
    if mod.verdict is None:
        return Verdict(NOT_TESTABLE, f"{mod.module} declares no verdict for its claim")
    return mod.verdict(results, level)


def _load_drawable(store: Store, fid: str, unit: dict, wanted: dict, other_libraries: dict):
    """A unit's stored result for the report: held to the fingerprint ``wanted`` less the measured libraries'
    versions (:func:`reports._runmeta.drawable`); where only those differ, each difference is counted in
    ``other_libraries`` (``{difference: units}``) and the unit is drawn as it was computed."""
    try:
        return store.load(fid, unit, wanted)
    except StaleUnit:
        res = store.load(fid, unit, drawable(wanted))  # anything else that differs is refused
        for change in library_changes(store.meta(fid, unit).get("fingerprint"), wanted):
            other_libraries[change] = other_libraries.get(change, 0) + 1
        return res


def _other_libraries_note(fid: str, other_libraries: dict, units: int, rerun: str) -> str:
    """What the report and one line on standard error say of a figure's units computed with other versions of
    the libraries it measures (empty when there are none)."""
    if not other_libraries:
        return ""
    changes = ", ".join(f"{n} of {units} units with {change}" for change, n in other_libraries.items())
    note = (f"drawn from units computed with other versions of the libraries this figure measures: {changes}; "
            f"`{rerun}` recomputes them")
    print(f"note: {fid}: {note}", file=sys.stderr)
    return note


def _draw_into(report_dir: Path, out: Path, figures, ids, preset, run_seed: int, backend: dict | None,
               left_out: dict | None = None) -> None:
    """Draw the figures of ``ids`` and the index from the units in ``out`` into ``report_dir``."""
    from reports._report import write_report
    backend = backend or {}
    store = Store(out)
    drawn = {}
    for fid in ids:
        mod = figures[fid]
        level = registry.module_preset(mod, preset)
        results, missing, other_libraries = [], [], {}
        flags = backend_flags(backend) if mod.BACKENDS else ""
        rerun = shlex.join(["sms-langevin", "run", fid, "--resume", "--preset", preset, "--seed", str(run_seed),
                            *shlex.split(flags), "--out", str(out)])  # quoted: a path with a space stays one word
        for unit in figure_units(mod, level, backend):
            wanted = fingerprint(mod.module, run_seed, unit_seed(run_seed, fid, unit), preset,
                                 inputs=unit_inputs(mod, unit, level))
            try:
                res = _load_drawable(store, fid, unit, wanted, other_libraries)
            except (CorruptUnit, StaleUnit) as exc:
                raise CliError(f"{exc}; run `{rerun}` to recompute it") from None
            if res is None and not store.path(fid, unit).exists():
                missing.append(unit)
                continue
            try:
                schema.check(res, mod.RESULT)
            except schema.SchemaError as exc:
                raise CliError(f"{store.path(fid, unit)}: not a result of {fid} ({exc}); delete it and run "
                               f"`{rerun}`") from None
            results.append((unit, res))
        if missing:
            raise CliError(f"{fid}: {len(missing)} of {len(results) + len(missing)} units not computed in "
                           f"{out}; run `{rerun}`")
        note = _other_libraries_note(fid, other_libraries, len(results), rerun)
        # every unit has passed its checksum and RESULT above: the fault is the figure's code, not a unit file
        redraw = shlex.join(["sms-langevin", "report", "--out", str(out)])
        remedy = {function: f"; the units in {store.root / fid} passed their checks, so the fault is in {function} "
                            f"of {mod.module}: fix it and run `{redraw}` (the units are kept); the report in {out} "
                            f"is left as it was" for function in ("draw", "verdict")}
        with _figure_code(fid, "draw", mod, remedy["draw"]):
            drawing = mod.draw(results, level)
        with _figure_code(fid, "verdict", mod, remedy["verdict"]):  # named apart: says which of the two raised
            verdict = _verdict(mod, results, level)
        if not isinstance(drawing, Drawing):
            raise CliError(f"{fid}: draw (in {mod.module}) must return a reports.drawing.Drawing, got "
                           f"{_shown(drawing)}; the report in {out} is left as it was")
        if not isinstance(verdict, Verdict):
            raise CliError(f"{fid}: verdict (in {mod.module}) must return a reports.verdict.Verdict, got "
                           f"{_shown(verdict)}; the report in {out} is left as it was")
        try:
            checked(verdict)
        except ValueError as exc:  # else a later step (the metadata, the report's table) would name the wrong code
            raise CliError(f"{fid}: verdict (in {mod.module}) returned a Verdict whose {exc}; the report in {out} is "
                           f"left as it was") from None
        try:
            files = write_drawing(drawing, report_dir / fid)
        except ValueError as exc:  # a name that is not a plain file name: nothing of it written
            raise CliError(f"{fid}: draw (in {mod.module}) returned a Drawing that cannot be written: {exc}; "
                           f"the report in {out} is left as it was") from None
        metas = [store.meta(fid, unit) for unit, _ in results]
        figure_meta = {k: v for k, v in metas[0].items() if k not in ("seed", "wall_seconds", "created")}
        figure_meta.update({"preset": preset, "module_preset": level, "units": len(results),
                            "unit_seeds": "derived from run_seed and each unit (see units/)",
                            "compute_seconds": round(sum(m.get("wall_seconds", 0.0) for m in metas), 1)})
        if mod.BACKENDS:
            figure_meta.update(backend or {"backend": "numba"})
        clash = sorted(set(drawing.metadata) & set(figure_meta))
        if clash:  # a figure's facts never replace the run's own record
            raise CliError(f"{fid}: draw's metadata repeats the run's keys {clash}")
        figure_meta.update(drawing.metadata)
        figure_meta["verdict"] = verdict.as_dict()
        if note:
            figure_meta["other_library_versions"] = note
        try:
            write_metadata(report_dir / fid / "metadata.json", figure_meta)
        except ValueError as exc:  # not JSON among draw's facts (changed after its Drawing was checked)
            raise CliError(f"{fid}: draw (in {mod.module}) returned metadata that cannot be written: {exc}; "
                           f"the report in {out} is left as it was") from None
        info = {"files": files + ["metadata.json"], "measured": drawing.measured, "verdict": verdict, "note": note}
        if drawing.table:
            info["table"] = drawing.table
        drawn[fid] = {"module": mod, "info": info, "meta": metas[0] if metas else {},
                      "wall": sum(m.get("wall_seconds", 0.0) for m in metas)}
    write_report(report_dir, drawn, preset, left_out)


def cmd_report(args, figures) -> int:
    out = out_path(args.out)
    if args.preset is not None:
        check_preset(args.preset, figures)
    if not out.is_dir() or not ((out / "units").is_dir() or (out / ".lock").exists()):
        raise CliError(f"no persisted results in {out} (expected {out / 'units'})")
    with _lock(out):  # first: a run still writing there is named in one line, whatever it has written yet
        if not (out / "units").is_dir():
            raise CliError(f"no persisted results in {out} (expected {out / 'units'})")
        preset, seed, ids, backend = read_run(out, figures, args.preset)
        not_run = registry.runnable(figures, ids)[1]  # REQUIRES covers a figure's run and its draw alike
        if not_run:
            raise CliError(f"{not_run.replace(' not run:', ' not drawn:', 1)}; the report in {out} is left as it was")
        left_out = {fid: why for fid, why in read_left_out(out).items() if fid not in ids}
        build_outputs(out, figures, ids, preset, seed, backend, left_out)
    print(printable(f"report: {out / 'report' / 'index.html'}"))
    return 0


def cmd_tour(args, figures) -> int:
    """Execute the tour into ``OUT/report/tour``; a report already in ``OUT`` is rebuilt to link it."""
    from reports._metadata import metadata
    from tour._build import NotebookFailed, build
    from tour._notebooks import notebooks
    out = out_path(args.out)
    try:
        notebooks(args.notebooks)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    import tour
    if registry.lacking(tour):
        raise CliError(f"the tour {registry.lacking(tour)}")
    check_out(out)  # creates the folder: only once the names have passed
    with _lock(out):  # a run or report swapping OUT/report in meanwhile would drop what the tour writes
        own_tree(out, out / "report" / "tour")  # its pages are written in place: no link among them
        try:
            pages = build(out / "report" / "tour", args.notebooks, run_metadata=metadata(seed=0, preset="tour"),
                          progress=lambda msg: print(f"tour: {msg}", file=sys.stderr, flush=True))
        except NotebookFailed as exc:
            print(f"sms-langevin: {exc}", file=sys.stderr)
            return 1
    if (out / "units").exists():
        try:
            cmd_report(argparse.Namespace(out=str(out), preset=None), figures)
        except CliError as exc:
            print(printable(f"tour: the report in {out} was not rebuilt ({exc})"), file=sys.stderr)
    print(printable(f"tour: {out / 'report' / 'tour' / 'index.html'} ({len(pages)} "
                    f"notebook{'s' if len(pages) != 1 else ''})"))
    return 0


def _what_to_rerun(args, fix: str = "") -> str:
    """What a failed or interrupted command keeps and how to finish it: ``run`` resumes; ``report``
    (whose report is replaced whole or not at all) and ``tour`` are rerun as they were."""
    command = getattr(args, "command", None)
    if command in ("report", "tour"):
        preset = ["--preset", args.preset] if getattr(args, "preset", None) else []
        names = list(getattr(args, "notebooks", []) or [])
        kept = "the previous report, if any, is left as it was; " if command == "report" else ""
        return f"{kept}{fix}rerun `{shlex.join(['sms-langevin', command, *names, *preset, '--out', args.out])}`"
    if command == "run":
        return f"finished units are saved; {fix}rerun with --resume"
    return f"{fix}rerun the command" if fix else "rerun the command"


def _on_interrupt(signum, frame):
    _ignore_interrupts()  # the first Ctrl-C stops the run; more while it stops are ignored
    raise KeyboardInterrupt


def _ignore_interrupts() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt_once():
    """Install :func:`_on_interrupt` for Ctrl-C (main thread only); the handler it replaced, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, _on_interrupt)


def entry() -> None:
    """The ``sms-langevin`` command (and ``python -m reports``): :func:`main`, then exit with its code.
    After an interrupt, further Ctrl-C are ignored until the process has ended, so a second press
    cannot turn the clean exit into a traceback."""
    raise SystemExit(_main(None, restore_ctrl_c=False))


def main(argv=None) -> int:
    """Run ``sms-langevin`` on ``argv`` (default ``sys.argv[1:]``); returns the exit code: 2 after a one-line
    error (usage, a busy folder, an OS error), 130 if interrupted."""
    return _main(argv, restore_ctrl_c=True)


def _main(argv, *, restore_ctrl_c: bool) -> int:
    parser = build_parser()
    t0 = time.time()
    if not (sys.argv[1:] if argv is None else argv):  # no command: what the commands are, not one line
        parser.print_help(sys.stderr)
        return 2
    args = None
    previous = _interrupt_once()
    try:
        args = parser.parse_args(argv)
        figures = registry.load()
        handler = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "claims": cmd_claims,
                   "bench": cmd_bench, "tour": cmd_tour}[args.command]
        code = handler(args, figures)
    except (CliError, Busy, UnsafePath, registry.RegistryError) as exc:
        print(f"sms-langevin: error: {printable(exc)}", file=sys.stderr)  # the one line echoes the user's input
        return 2
    except OSError as exc:  # e.g. the output folder became unwritable (or full) mid-run
        where = f": {exc.filename}" if exc.filename else ""
        print(printable(f"sms-langevin: error: {exc.strerror or exc}{where} ({_what_to_rerun(args, 'fix this and ')})"),
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(printable(f"sms-langevin: interrupted; {_what_to_rerun(args)}"), file=sys.stderr)
        return 130
    finally:
        interrupted = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        if previous is not None and (restore_ctrl_c or not interrupted):  # a caller in Python gets its own back
            signal.signal(signal.SIGINT, previous)
    if args.command == "run":
        print(f"done in {time.time() - t0:.0f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
