"""A second fixture figure (two trivial units, no sampler) so the tests can run one figure of two."""

from __future__ import annotations

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, Record


def units(preset: str) -> list[dict]:
    return [{"i": i} for i in range(2)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    return {"value": unit["i"] + seed % 7}


def draw(results: list, preset: str) -> Drawing:
    return Drawing(measured=f"{len(results)} units.", tables={"other": [{"i": u["i"], "value": r["value"]}
                                                                        for u, r in results]})


EXPERIMENT = Experiment(
    ID="other",
    TITLE="Other fixture figure",
    CLAIM="A second tiny figure used by the tests.",
    COST={"quick": "~0 s", "full": "~0 s"},
    PRESETS=("quick", "full"),
    RESULT=Record(value=NUMBER),
    units=units,
    run_unit=run_unit,
    draw=draw,
)
