"""SMS-UBU against SG-UBU on the paper's 1-D example (the demo)."""

from __future__ import annotations

from experiments.demo import _compute as demo
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, TEXT, ListOf, Nullable, Record

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
)

__all__ = ["EXPERIMENT"]
