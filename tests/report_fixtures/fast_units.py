"""A small registry module of fast units for the reports tests (each unit sleeps briefly so a run
can be killed mid-way)."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

import numpy as np

from integrators import GaussianTarget, sample

ID = "fast"
TITLE = "Fast test figure: SMS-UBU means on the 1-D example"
CLAIM = "A tiny figure used by the tests."
COST = {"quick": "~1 s", "full": "~1 s"}


def units(preset: str) -> list[dict]:
    return [{"k": k, "plan": p} for k in (2, 3, 4) for p in ("sms", "iid")]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    if os.environ.get("FAST_UNITS_FAIL"):
        raise RuntimeError("run_unit called although results were persisted")
    time.sleep(float(os.environ.get("FAST_UNITS_SLEEP", "0")))
    res = sample(GaussianTarget.one_d_example(), "ubu", unit["plan"], h=2.0 ** -unit["k"], n_chains=16,
                 n_steps=400, burn_in=50, batch_size=1, seed=seed % (2**31))
    return {"mean": float(res.mean[0]), "variance": float(res.variance[0])}


def draw(results: list, out_dir: Path, preset: str) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "fast.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["k", "plan", "mean", "variance"])
        for unit, res in sorted(results, key=lambda r: (r[0]["plan"], r[0]["k"])):
            writer.writerow([unit["k"], unit["plan"], res["mean"], res["variance"]])
    fig, ax = plt.subplots(figsize=(4, 3))
    for plan in ("sms", "iid"):
        pts = sorted((u["k"], r["variance"]) for u, r in results if u["plan"] == plan)
        ax.plot(*np.array(pts).T, marker="o", label=plan)
    ax.legend()
    fig.savefig(out_dir / "fast.png", dpi=60)
    fig.savefig(out_dir / "fast.pdf")
    plt.close(fig)
    return {"files": ["fast.png", "fast.pdf", "fast.csv"], "measured": f"{len(results)} units."}
