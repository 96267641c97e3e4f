"""What the command line's commands share: the one-line user error (:class:`CliError`, exit code
2) and the checks of ``--preset`` and ``--out``."""

from __future__ import annotations

import shlex
import traceback
from pathlib import Path

from reports import registry


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


def check_preset(preset, figures=None, ids=None):
    """A preset every module runs (``registry.PRESETS``), or one that each of the selected figures
    ``ids`` (None: some figure of ``figures``) declares in its own ``PRESETS`` (a module-specific
    level such as bnn's ``regime``)."""
    if preset in registry.PRESETS:
        return
    own = {fid: experiment.PRESETS for fid, experiment in (figures or {}).items()}
    holders = [fid for fid, presets in own.items() if preset in presets]
    if holders and (ids is None or all(fid in holders for fid in ids)):
        return
    if holders:
        lack = [fid for fid in ids if fid not in holders]
        raise CliError(f"preset {preset!r} is a level of {', '.join(holders)} only; {', '.join(lack)} has no such "
                       f"level (run `sms-langevin run {' '.join(holders)} --preset {preset}`, or choose from "
                       f"{', '.join(registry.PRESETS)})")
    raise CliError(f"unknown preset {preset!r}; choose from {', '.join(registry.PRESETS)}")


def out_path(text: str) -> Path:
    if not text.strip():
        raise CliError("--out must name a folder, got an empty string")
    return Path(text)


def check_out(out: Path) -> None:
    from reports._metadata import unwritable
    problem = unwritable(out)
    if problem:
        raise CliError(f"cannot write to --out {out}: {problem}")


def describe_exception(exc: BaseException) -> str:
    """An exception in one line, with where it was raised: ``"KeyError: 'hs' (at experiments/weak_orders.py:42)"``
    (the line of the innermost frame, the path relative to the project where it lies inside it)."""
    first = (str(exc).splitlines() or [""])[0][:300]
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return f"{exc.__class__.__name__}: {first}"
    path = Path(frames[-1].filename)
    root = Path(__file__).resolve().parents[1]
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    return f"{exc.__class__.__name__}: {first} (at {shown}:{frames[-1].lineno})"


def backend_flags(backend: dict) -> str:
    """`` --backend B --device D`` of a run's backend options (``{}``: none), shell-quoted."""
    return "".join(f" --{k} {shlex.quote(str(v))}" for k, v in backend.items())
