"""A small registry module whose units read a data file (``DATA_UNITS_FILE``), as the BNN figure
does: while the file is absent a unit returns ``{"missing": why}``."""

from __future__ import annotations

import os
from pathlib import Path

from reports.drawing import Drawing
from reports.schema import INTEGER, NUMBER, Record

ID = "withdata"
TITLE = "A figure that needs a data file (test fixture)"
CLAIM = "A tiny figure used by the tests of absent data."
COST = {"quick": "~1 s", "full": "~1 s"}
PRESETS = ("quick", "full")
RESULT = Record(k=INTEGER, value=NUMBER)


def units(preset: str) -> list[dict]:
    return [{"k": k} for k in (1, 2)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    path = Path(os.environ["DATA_UNITS_FILE"])
    if not path.exists():
        return {"missing": f"{path}: file not found"}
    return {"k": unit["k"], "value": float(path.read_text()) * unit["k"]}


def draw(results: list, preset: str) -> Drawing:
    rows = [res for _, res in results if "missing" not in res]
    absent = [res["missing"] for _, res in results if "missing" in res]
    return Drawing(measured=f"data absent ({absent[0]})" if absent else f"{len(rows)} units",
                   tables={"withdata": rows})
