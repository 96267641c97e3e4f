"""A small registry module that offers backends, as Figure 1 does (``BACKENDS``): the command
line adds ``{"backend", "device"}`` to its units, and every later step (``--resume``, ``report``,
the suggested rerun) must find them under those keys.  Units take milliseconds."""

from __future__ import annotations

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import INTEGER, TEXT, Record


def units(preset: str) -> list[dict]:
    return [{"k": k} for k in (1, 2, 3)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    return {"k": unit["k"], "backend": unit.get("backend", "numba"), "device": unit.get("device"),
            "value": (seed % 1000) / 1000.0}


def draw(results: list, preset: str) -> Drawing:
    return Drawing(measured=f"{len(results)} units", tables={"twin": [res for _, res in results]})


EXPERIMENT = Experiment(
    ID="twin",
    TITLE="A figure with two backends (test fixture)",
    CLAIM="A tiny figure used by the tests of --backend.",
    COST={"quick": "~1 s", "full": "~1 s"},
    PRESETS=("quick", "full"),
    RESULT=Record(k=INTEGER, backend=TEXT),
    BACKENDS=("numba", "torch"),
    units=units,
    run_unit=run_unit,
    draw=draw,
)
