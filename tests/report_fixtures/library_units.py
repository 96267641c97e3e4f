"""A small registry module that measures another library, as the conformance figure does: while
``LIBRARY_UNITS_ABSENT`` is set the library counts as not installed and each unit is skipped."""

from __future__ import annotations

import os

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import INTEGER, NUMBER, SKIPPED, OneOf, Record


def units(preset: str) -> list[dict]:
    return [{"k": k} for k in (1, 2)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    if os.environ.get("LIBRARY_UNITS_ABSENT"):
        return {"k": unit["k"], "skipped": "numpy is not installed (pip install numpy)"}
    return {"k": unit["k"], "value": float(unit["k"])}


def draw(results: list, preset: str) -> Drawing:
    skipped = [res["skipped"] for _, res in results if "skipped" in res]
    rows = [res for _, res in results if "skipped" not in res]
    return Drawing(measured=f"skipped: {skipped[0]}" if skipped else f"{len(rows)} units measured",
                   tables={"withlib": rows})


EXPERIMENT = Experiment(
    ID="withlib",
    TITLE="A figure that measures another library (test fixture)",
    CLAIM="A tiny figure used by the tests of skipped units.",
    COST={"quick": "~1 s", "full": "~1 s"},
    PRESETS=("quick", "full"),
    RESULT=OneOf(Record(k=INTEGER, value=NUMBER), SKIPPED),
    LIBRARIES=("numpy",),
    units=units,
    run_unit=run_unit,
    draw=draw,
)
