"""The paper's Figure 1: W1 bias of nine samplers on the 1-D example."""

from __future__ import annotations

from experiments.figure1 import _compute as figure1
from experiments.figure1._compute import local_slopes, run_points
from experiments.figure1._setup import PRESETS as PRESET_SETTINGS  # the presets' settings (PRESETS: their names)
from experiments.figure1._setup import target_law
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import ListOf, Record, from_dataclass
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict, worst
from theory_checks.orders import format_slope

ORDER = 30  # its place in the registry, the list and the report


def units(preset: str) -> list[dict]:
    """The independent units of work of Figure 1, JSON-serializable: one per scheme and step size
    (``{"scheme", "k"}``, with the options and backend the command line adds), the scheme's three plans
    and their control on one Brownian path per repeat."""
    # one per scheme and step size: its three plans and their control on one path per repeat
    return [{"scheme": s, "k": k} for s, k in figure1.units(preset)]


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    """Compute one unit: the points (one per plan) of the unit's group, of the structure ``EXPERIMENT.RESULT``;
    ``threads`` are the cores the executor lets it use (None: the unit runs alone in its process)."""
    # the options figure1.compute adds to its units, at their defaults in the command line's
    options = {name: unit[name] for name in ("baoab_paper_friction", "control_variate") if name in unit}
    return figure1.run_group(unit["scheme"], unit["k"], preset, seed, threads=threads,
                             backend=unit.get("backend", "numba"), device=unit.get("device"), **options)


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of Figure 1: its figures, tables and measured numbers, from every
    ``(unit, result)`` pair (run at ``preset``)."""
    points = [figure1.Point(**q) for _, res in results for q in res["points"]]
    slopes = figure1.local_slopes(points)
    names = {"sms": "SMS", "iid": "SG", "rr": "SG-RR"}
    text = "; ".join(f"{names[p]}-{s.upper()}: {format_slope(v, 'a point diverged')}" for (s, p), v in slopes.items())
    diverged = [f"{q.scheme.upper()} x {q.plan} at h = {q.h:g} (step {q.first_divergence_step})"
                for q in points if q.diverged]
    worst = max((max(q.mc_error, q.noise_floor) / q.w1 for q in points if not q.diverged), default=0.0)
    return Drawing(measured=(f"Local slopes between the two finest h: {text}. Diverged: "
                             f"{', '.join(diverged) or 'none'}. Largest (Monte Carlo error or noise floor) / "
                             f"bias over plotted points: {worst:.2f}."),
                   figures={"figure1": figure1.plot(points, slopes)},
                   tables={"figure1": figure1.table(points, slopes, with_seconds=False)},
                   metadata=figure1.run_facts(points, preset))


SLOPE_TOL = 0.5  # a claimed order q holds for a local slope of at least q - SLOPE_TOL (order 1: at most q + SLOPE_TOL)
NOISE = 2.0  # a point is above noise when its W1 exceeds NOISE x max(Monte Carlo error, noise floor)


def claimed_order(scheme: str, plan: str) -> float | None:
    """The figure's claim for a sampler: 2 for UBU and BAOAB under sms or rr, 1 for iid and for EM."""
    if scheme == "em" or plan == "iid":
        return 1.0
    return 2.0 if plan in ("sms", "rr") else None


def verdict(results: list, preset: str) -> Verdict:
    """Each sampler's local slope between the two finest h (:func:`local_slopes`) against its claimed order
    (:func:`claimed_order`, within :data:`SLOPE_TOL`), where both points stand above noise (:data:`NOISE`);
    EM diverges at h = 1/4 where the run has that step size."""
    import math

    points = [figure1.Point(**q) for _, res in results for q in res["points"]]
    slopes = figure1.local_slopes(points)
    outcomes, numbers = [], []
    for (scheme, plan), slope in slopes.items():
        order = claimed_order(scheme, plan)
        if order is None:
            continue
        finest = sorted((q for q in points if q.scheme == scheme and q.plan == plan), key=lambda q: q.h)[:2]
        name = f"{scheme.upper()} x {plan} (order {order:g})"
        noisy = [q for q in finest if q.diverged or not q.w1 > NOISE * max(q.mc_error, q.noise_floor)]
        if noisy or not math.isfinite(slope):
            outcomes.append(NOT_TESTABLE)
            numbers.append(f"{name}: below noise at h = {', '.join(f'{q.h:g}' for q in noisy) or '-'}")
            continue
        ok = slope >= order - SLOPE_TOL and (order == 2.0 or slope <= order + SLOPE_TOL)
        outcomes.append(HOLDS if ok else DOES_NOT_HOLD)
        numbers.append(f"{name}: {slope:.2f}" + ("" if ok else " (misses)"))
    em = [q for q in points if q.scheme == "em" and q.h == 0.25]
    if em:
        outcomes.append(HOLDS if all(q.diverged for q in em) else DOES_NOT_HOLD)
        numbers.append(f"EM at h = 1/4: {sum(q.diverged for q in em)} of {len(em)} plans diverged")
    return Verdict(worst(outcomes), f"local slope between the two finest h at least q - {SLOPE_TOL:g} (order 1: "
                   f"within {SLOPE_TOL:g}) where both points are above {NOISE:g} x their noise; any sampler below "
                   "noise leaves the claim not testable here", "; ".join(numbers))


EXPERIMENT = Experiment(
    ID="figure1",
    TITLE="Figure 1: Wasserstein bias of nine samplers on the 1-D example",
    CLAIM="SMS-UBU, SG-UBU without replacement (rr), SMS-BAOAB and SG-BAOAB-rr have W1 bias O(h^2); "
          "the iid and EM samplers O(h); EM diverges at h = 1/4 (paper, Section 3.4, Figure 1).",
    COST={"tiny": "~15 s on a machine's first run, mostly compiling (numba, kept on disk for later runs); "
                  "~12 min with --backend torch on a CPU (eager torch steps: 511 "
                  "CPU-seconds measured on 2 loaded cores, 965 s on one core)",
          "quick": "~25 s", "full": "7.3e9 chain-steps (10^7 * 2^k samples per point, plus full-gradient "
                                     "controls), bound by the kernel: bench_figure1 measures it"},
    PRESETS=tuple(figure1.PRESETS),  # its own tiny level (`--preset tiny` ran quick before it was declared)
    # draw rebuilds each Point; a diverged point's w1 (and a lone repeat's mc_error) is NaN
    RESULT=Record(points=ListOf(from_dataclass(figure1.Point, nonfinite=("w1", "mc_error")))),
    BACKENDS=figure1.BACKENDS,  # `sms-langevin run figure1 --backend torch --device cuda` adds both to the units
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT", "PRESET_SETTINGS", "local_slopes", "run_points", "target_law"]
