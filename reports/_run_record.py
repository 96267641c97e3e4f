"""What a run left in its folder, read back for ``sms-langevin report``: its ``run.json`` (ids,
preset, seed, backend), checked, or, when that file is lost or unreadable, the same read from its
unit files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from integrators._validation import printable, seed_value
from reports._cli_common import CliError, check_preset
from reports.store import UnsafePath, read_regular


def run_json(out: Path) -> dict:
    """The object ``out/run.json`` holds (the one reader of that file).

    Raises
    ------
    ValueError
        Saying why it is unreadable: absent, not a regular file (a fifo), not JSON, nested too deeply to
        parse, or not an object.
    """
    try:
        value = json.loads(read_regular(out / "run.json"))
    except (OSError, ValueError, RecursionError, UnsafePath) as exc:
        raise ValueError(exc.__class__.__name__) from None
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value


RECORD_KEYS = ("preset", "seed", "ids", "backend", "left_out")  # what a run writes to run.json


def check_record_replaceable(out: Path) -> None:
    """Before a run replaces ``out/run.json`` with its record: refuse one sms-langevin did not write (a folder,
    or JSON that is no object with a key of a run record), naming it, so a user's file is never overwritten.
    An unreadable one (not JSON: a record a killed run truncated) is a damaged record and is rewritten."""
    path = out / "run.json"
    if path.is_dir() and not path.is_symlink():
        raise CliError(f"{path} is a folder, not the run record sms-langevin writes there; move it away or use "
                       f"another --out")
    if not path.exists():
        return
    try:
        value = json.loads(read_regular(path))
    except (OSError, ValueError, RecursionError, UnsafePath):
        return  # damaged: rebuilt from the units as before
    if isinstance(value, dict) and set(value) & set(RECORD_KEYS):
        return
    raise CliError(f"{path} is not a run record of sms-langevin (JSON without any of its keys "
                   f"{', '.join(RECORD_KEYS)}); it would be replaced by the run's record: move it away or use "
                   f"another --out")


def read_run(out: Path, figures, preset: str | None) -> tuple[str, int, list[str], dict]:
    """Preset, seed, ids and backend of the run in ``out``, from ``run.json`` or, where that is
    unreadable, from its unit files; ``preset`` (given) overrides the recorded one."""
    try:
        run_meta = run_json(out)
    except ValueError as exc:
        run_meta = infer_run(out, figures)
        skipped = run_meta.pop("unreadable")
        where = f"preset {run_meta['preset']}" if "preset" in run_meta else "preset quick (no unit file readable)"
        hurt = f"; unreadable unit files: {', '.join(str(p) for p in skipped)}" if skipped else ""
        print(printable(f"warning: {out / 'run.json'} unreadable ({exc}); rebuilding "
                        f"{', '.join(run_meta['ids']) or 'nothing'} at {where} from the units found in "
                        f"{out / 'units'}{hurt}"), file=sys.stderr)
    ids = run_meta.get("ids")
    if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        raise CliError(f"{out / 'run.json'}: ids must be a list of figure ids, got {ids!r}")
    ids = [i for i in ids if i in figures]
    if not ids:
        raise CliError(f"no figure of this registry has persisted units in {out}")
    given = preset is not None
    preset = preset if given else run_meta.get("preset", "quick")
    try:
        check_preset(preset, figures, ids)
    except CliError as exc:  # a given --preset is checked against the run's figures here first
        where = f"--preset (the run in {out} holds {', '.join(ids)})" if given else str(out / "run.json")
        raise CliError(f"{where}: {exc}") from None
    seed = run_meta.get("seed", 0)
    try:
        seed_value(seed, "seed")  # the bounds --seed has
    except ValueError as exc:
        raise CliError(f"{out / 'run.json'}: {exc}") from None
    backend = run_meta.get("backend") or {}
    if not (isinstance(backend, dict) and set(backend) <= {"backend", "device"}
            and all(isinstance(v, str) for v in backend.values())):
        raise CliError(f"{out / 'run.json'}: backend must be {{}} or {{'backend': ..., 'device': ...}}, "
                       f"got {backend!r}")
    return preset, seed, ids, backend


def read_left_out(out: Path) -> dict:
    """The figures the run in ``out`` was asked for but left out, and why (``run.json``'s ``left_out``,
    ``{id: reason}``); ``{}`` where none is recorded or the file is unreadable."""
    try:
        value = run_json(out).get("left_out", {})
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def infer_run(out: Path, figures) -> dict:
    """Ids, preset and seed of a run whose ``run.json`` is lost, read from its unit files."""
    ids, fprint, unreadable = [], {}, []
    for fid in figures:
        files = sorted(p for p in (out / "units" / fid).glob("*.json") if not p.name.startswith("."))
        if files:
            ids.append(fid)
        for path in files:
            if fprint:
                break
            # past a damaged file to the next: one unreadable unit must not hide the run's preset and seed
            try:
                fprint = json.loads(read_regular(path))["meta"]["fingerprint"]
            except (OSError, ValueError, KeyError, TypeError, RecursionError, UnsafePath):
                fprint = {}
            if not (isinstance(fprint, dict) and isinstance(fprint.get("preset"), str)):
                fprint = {}
                unreadable.append(path)
    meta = {"ids": ids, "unreadable": unreadable}
    if fprint:
        meta.update({k: fprint[k] for k, name in (("preset", "preset"), ("run_seed", "seed")) if k in fprint})
        if "run_seed" in meta:
            meta["seed"] = meta.pop("run_seed")
    meta["backend"] = infer_backend(out, figures)
    return meta


def infer_backend(out: Path, figures) -> dict:
    """The ``{"backend", "device"}`` of the units of a figure that offers backends (``{}``: Numba)."""
    for fid, mod in figures.items():
        if mod.BACKENDS:
            for path in sorted((out / "units" / fid).glob("*.json")):
                try:
                    unit = json.loads(read_regular(path))["unit"]
                    return {k: unit[k] for k in ("backend", "device") if k in unit}
                except (OSError, ValueError, KeyError, TypeError, RecursionError, UnsafePath):
                    continue
    return {}
