"""A small registry module whose units read a data file (``DATA_UNITS_FILE``, or ``withdata.txt`` in
``--data-dir``), as the BNN figure does: while the file is absent a unit returns ``{"missing": why}``,
and ``missing_input`` says so before the run starts."""

from __future__ import annotations

import os
from pathlib import Path

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import INTEGER, MISSING, NUMBER, OneOf, Record


def units(preset: str) -> list[dict]:
    return [{"k": k} for k in (1, 2)]


def _path() -> Path:
    """``DATA_UNITS_FILE``, else ``withdata.txt`` in the data folder (``--data-dir``)."""
    if os.environ.get("DATA_UNITS_FILE"):
        return Path(os.environ["DATA_UNITS_FILE"])
    return Path(os.environ.get("SMS_LANGEVIN_DATA_DIR", "nowhere")) / "withdata.txt"


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    path = _path()
    if not path.exists():
        return {"missing": f"{path}: file not found"}
    return {"k": unit["k"], "value": float(path.read_text()) * unit["k"]}


def missing_input(unit: dict, preset: str) -> str | None:
    if os.environ.get("DATA_UNITS_NO_PRECHECK"):  # as a figure without the hook: found when the unit runs
        return None
    return None if _path().exists() else f"{_path()}: file not found"


def draw(results: list, preset: str) -> Drawing:
    rows = [res for _, res in results if "missing" not in res]
    absent = [res["missing"] for _, res in results if "missing" in res]
    return Drawing(measured=f"data absent ({absent[0]})" if absent else f"{len(rows)} units",
                   tables={"withdata": rows})


def inputs(unit: dict, preset: str) -> dict | None:
    return {"data": _path().name, "bytes": _path().stat().st_size} if _path().exists() else None


EXPERIMENT = Experiment(
    ID="withdata",
    TITLE="A figure that needs a data file (test fixture)",
    CLAIM="A tiny figure used by the tests of absent data.",
    COST={"quick": "~1 s", "full": "~1 s"},
    PRESETS=("quick", "full"),
    RESULT=OneOf(Record(k=INTEGER, value=NUMBER), MISSING),
    units=units,
    run_unit=run_unit,
    draw=draw,
    missing_input=missing_input,
    inputs=inputs,
)
