"""SMS-UBU against SG-UBU on the paper's 1-D example (the demo)."""

from __future__ import annotations

from experiments.demo import _compute as demo
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, TEXT, ListOf, Nullable, Record
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict, worst

ORDER = 10  # its place in the registry, the list and the report


def units(preset: str) -> list[dict]:
    """The independent units of work of the one-dimensional demo.

    One per sampler and step size ``h = 2**-k``, ``k`` in 2..5 (``{"sampler", "k"}``).
    """
    return [{"sampler": name, "k": k} for name in demo.SAMPLERS for k in range(2, 6)]


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    """Compute one unit: the sampler's row at that step size (and its histogram at ``k = 2``)."""
    # the unit's seed (store.unit_seed), unreduced
    out = demo.run_unit(unit["sampler"], unit["k"], preset, seed, threads=threads)
    out.pop("summary")
    return out


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the one-dimensional demo: its figures, tables and measured numbers."""
    found = [res for _, res in results]
    rows = demo.table(found)
    at = {r["sampler"]: abs(r["variance_bias"]) for r in rows if r["h"] == 0.03125}
    return Drawing(measured="|variance bias| at h = 1/32: " + ", ".join(f"{k} {v:.2e}" for k, v in at.items()) + ".",
                   figures={"demo": demo.plot(rows, demo.histograms(found))}, tables={"demo": rows})


ORDERS = {"SMS-UBU": 2.0, "SG-UBU": 1.0}  # the claimed weak order of each sampler
SLOPE_TOL = 0.5  # Monte Carlo slopes over a few h: a claimed order q holds within q +- SLOPE_TOL
NOISE = 2.0  # a point enters the fit when its |variance bias| is above NOISE standard errors


def verdict(results: list, preset: str) -> Verdict:
    """Each sampler's weak order: the least-squares slope of log |variance bias| on log h over the step sizes
    whose bias stands above :data:`NOISE` standard errors, within :data:`SLOPE_TOL` of :data:`ORDERS` (SMS-UBU
    may exceed 2); fewer than two such points: not testable."""
    import numpy as np

    rows = [res["row"] for _, res in results]
    outcomes, numbers = [], []
    for name, order in ORDERS.items():
        pts = sorted((r["h"], abs(r["variance_bias"])) for r in rows if r["sampler"] == name
                     and abs(r["variance_bias"]) > NOISE * r.get("variance_se", 0.0))
        if len(pts) < 2:
            outcomes.append(NOT_TESTABLE)
            numbers.append(f"{name}: {len(pts)} step size above noise")
            continue
        slope = float(np.polyfit(np.log([h for h, _ in pts]), np.log([b for _, b in pts]), 1)[0])
        ok = slope >= order - SLOPE_TOL and (order == 2.0 or slope <= order + SLOPE_TOL)
        outcomes.append(HOLDS if ok else DOES_NOT_HOLD)
        numbers.append(f"{name}: slope {slope:.2f} over h = {', '.join(f'{h:g}' for h, _ in pts)}")
    return Verdict(worst(outcomes), f"SMS-UBU's slope at least {2 - SLOPE_TOL:g}, SG-UBU's within {SLOPE_TOL:g} "
                   f"of 1 (log-log fit over the step sizes whose bias is above {NOISE:g} standard errors)",
                   "; ".join(numbers))


EXPERIMENT = Experiment(
    ID="demo",
    TITLE="SMS-UBU against SG-UBU on the 1-D example, against the exact target",
    CLAIM="Symmetric minibatch splitting makes UBU's stationary bias second order in h; SG-UBU (iid "
          "batches) is first order (paper, Sections 2-3).",
    COST={"quick": "~15 s", "full": "~1 min"},
    PRESETS=("quick", "full"),  # make demo (tiny) runs the quick demo
    RESULT=Record(row=Record(sampler=TEXT, h=NUMBER, mean=NUMBER, variance=NUMBER, variance_bias=NUMBER),
                  hist=Nullable(ListOf(NUMBER))),  # the counts at k = 2 only
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT"]
