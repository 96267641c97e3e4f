"""Units that report the thread count the executor gave them (``run_unit``'s keyword
``threads``), for the executor's tests; the rest of its experiment is trivial."""

from __future__ import annotations

import os

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import ANY


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    return {"threads": threads, "pid": os.getpid()}


EXPERIMENT = Experiment(ID="threads", TITLE="Thread counts (test fixture)", CLAIM="None.",
                        COST={"quick": "~0 s", "full": "~0 s"}, PRESETS=("quick", "full"), RESULT=ANY,
                        units=lambda preset: [{"i": 0}], run_unit=run_unit,
                        draw=lambda results, preset: Drawing(measured=""))
