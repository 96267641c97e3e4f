"""A small registry module of fast units for the reports tests (each unit sleeps briefly so a run
can be killed mid-way).

The units test the executor (persistence, resume, workers, Dask), not a sampler: each is seeded
arithmetic that takes milliseconds.  A unit still calls one Numba function, the path pair's
Cholesky factor (compiled with ``cache=True``, so a worker process loads it instead of compiling),
so Numba runs inside every kind of worker; compiling a sampler kernel in each of the tests'
subprocesses cost about 20 s apiece."""

from __future__ import annotations

import os
import time

import numpy as np

from integrators._brownian import pair_cholesky
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, Record


def units(preset: str) -> list[dict]:
    return [{"k": k, "plan": p} for k in (2, 3, 4) for p in ("sms", "iid")]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    if os.environ.get("FAST_UNITS_FAIL"):
        raise RuntimeError("run_unit called although results were persisted")
    time.sleep(float(os.environ.get("FAST_UNITS_SLEEP", "0")))
    # the velocity's exact OU flow over h = 2^-k, v' = e^{-h} v + sqrt(2) J, J from the pair's factor;
    # "iid" restarts every chain from N(0, 1), "sms" from zero (a seeded number either way)
    h = 2.0 ** -unit["k"]
    _, l21, l22 = pair_cholesky(1.0, h)
    rng = np.random.default_rng([seed % (2**31), unit["k"]])
    v = rng.normal(size=16) if unit["plan"] == "iid" else np.zeros(16)
    trace = np.empty((400, 16))
    for step in range(400):
        z = rng.normal(size=(2, 16))
        v = np.exp(-h) * v + np.sqrt(2.0) * (l21 * z[0] + l22 * z[1])
        trace[step] = v
    planted = os.environ.get("FAST_UNITS_BAD")  # a result that must be refused when the unit is made
    if planted == "nan":
        return {"mean": float("nan"), "variance": float(trace[50:].var())}
    if planted == "not-json":
        return {"mean": 0.0, "variance": 1.0, "extra": {1, 2}}
    if planted == "unpicklable":  # nor can a worker process send it back
        return {"mean": 0.0, "variance": 1.0, "extra": lambda: 1}
    return {"mean": float(trace[50:].mean()), "variance": float(trace[50:].var())}


def draw(results: list, preset: str) -> Drawing:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [{"k": unit["k"], "plan": unit["plan"], "mean": res["mean"], "variance": res["variance"]}
            for unit, res in sorted(results, key=lambda r: (r[0]["plan"], r[0]["k"]))]
    fig, ax = plt.subplots(figsize=(4, 3))
    for plan in ("sms", "iid"):
        pts = sorted((u["k"], r["variance"]) for u, r in results if u["plan"] == plan)
        ax.plot(*np.array(pts).T, marker="o", label=plan)
    ax.legend()
    return Drawing(measured=f"{len(results)} units.", figures={"fast": fig}, tables={"fast": rows})


EXPERIMENT = Experiment(
    ID="fast",
    TITLE="Fast test figure: exact Ornstein-Uhlenbeck velocity moments",
    CLAIM="A tiny figure used by the tests.",
    COST={"quick": "~1 s", "full": "~1 s"},
    PRESETS=("quick", "full"),
    RESULT=Record(mean=NUMBER, variance=NUMBER),
    units=units,
    run_unit=run_unit,
    draw=draw,
)
