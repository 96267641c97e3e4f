"""SMS-GHMC (supplement, Algorithm 7) against SMS-UBU on the multinomial logistic regression of
Section 3.4 (the supplement's section D); the computation is :mod:`experiments.ghmc._compute`."""

from __future__ import annotations

from experiments.ghmc import _compute as ghmc_logistic
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import ANY, INTEGER, NUMBER, TEXT, ListOf, Nullable, Record
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict

ORDER = 50  # its place in the registry, the list and the report


def units(preset: str) -> list[dict]:
    """The independent units of work of the SMS-GHMC logistic experiment.

    One per sampler and step size, and the reference (:func:`experiments.ghmc._compute.units`).
    """
    return ghmc_logistic.units(preset)


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    """Compute one unit: the unit's chains' summary (:func:`experiments.ghmc._compute.run_unit`)."""
    # the unit's seed (store.unit_seed), unreduced
    return ghmc_logistic.run_unit(unit, preset, seed, threads=threads)


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the SMS-GHMC logistic experiment: its figures, tables and measured numbers."""
    table = ghmc_logistic.rows([res for _, res in results])
    return Drawing(figures={"ghmc": ghmc_logistic.plot(table)}, tables={"ghmc": table},
                   measured=(f"Data: {results[0][1]['data']}; batch 200, control variate at the mode, chains from "
                             f"the mode; predictive from the chains' final states. {ghmc_logistic.summary(table)}"))


MUCH_SMALLER = 4.0  # "a much smaller step size": at least this factor below SMS-UBU's


def verdict(results: list, preset: str) -> Verdict:
    """Where SMS-GHMC reaches SMS-UBU's smallest error of the predictive (within two combined standard
    errors, among runs that left the mode): the claim holds when it does so only at step sizes at least
    :data:`MUCH_SMALLER` times below the one where SMS-UBU has it (or at none of this run's), and does not
    hold when it is more than two combined standard errors below it at a larger one; when at a larger
    one the two differ by less than that, this preset's noise hides the comparison: not testable, as
    without a sampling run of either."""
    import math

    table = ghmc_logistic.rows([res for _, res in results])
    ok = {name: [r for r in table if r["sampler"] == name and r["p_true_error"] != "" and not ghmc_logistic.stuck(r)]
          for name in ("SMS-GHMC", "SMS-UBU")}
    if not ok["SMS-GHMC"] or not ok["SMS-UBU"]:
        idle = [name for name, runs in ok.items() if not runs]
        return Verdict(NOT_TESTABLE, f"{' and '.join(idle)} never sampled here (every run stuck at the mode or "
                       "diverged)")
    ubu = min(ok["SMS-UBU"], key=lambda r: r["p_true_error"])
    ghmc = min(ok["SMS-GHMC"], key=lambda r: r["p_true_error"])

    def noise(r: dict) -> float:  # two combined standard errors of a SMS-GHMC run's error and SMS-UBU's smallest
        return 2 * math.hypot(r["p_true_error_se"], ubu["p_true_error_se"])

    reach = [r for r in ok["SMS-GHMC"] if r["p_true_error"] <= ubu["p_true_error"] + noise(r)]
    numbers = (f"SMS-UBU's smallest error {ubu['p_true_error']:.2e} (s.e. {ubu['p_true_error_se']:.1e}) at h = "
               f"{ubu['h']:g}; SMS-GHMC's {ghmc['p_true_error']:.2e} (s.e. {ghmc['p_true_error_se']:.1e}) at h = "
               f"{ghmc['h']:g}" + (", below SMS-UBU's" if ghmc["p_true_error"] < ubu["p_true_error"] else ""))
    largest = max((r["h"] for r in reach), default=None)
    if largest is None:
        return Verdict(HOLDS, f"SMS-GHMC does not reach SMS-UBU's error at any of its step sizes here "
                       f"(h = {', '.join(format(r['h'], 'g') for r in ok['SMS-GHMC'])})", numbers)
    if largest * MUCH_SMALLER <= ubu["h"]:
        return Verdict(HOLDS, f"SMS-GHMC reaches SMS-UBU's error (within 2 s.e.) only at h <= {largest:g}, at least "
                       f"{MUCH_SMALLER:g}x below SMS-UBU's h = {ubu['h']:g}", numbers)
    comparable = [r for r in reach if r["h"] * MUCH_SMALLER > ubu["h"]]
    below = [r for r in comparable if r["p_true_error"] < ubu["p_true_error"] - noise(r)]
    if not below:
        return Verdict(NOT_TESTABLE, f"SMS-GHMC at h = {largest:g} differs from SMS-UBU's smallest error by less than "
                       f"2 combined s.e.: at this preset the noise hides whether it needs a step "
                       f"{MUCH_SMALLER:g}x below SMS-UBU's h = {ubu['h']:g}", numbers)
    return Verdict(DOES_NOT_HOLD, f"SMS-GHMC is more than 2 combined s.e. below SMS-UBU's smallest error at h = "
                   f"{max(r['h'] for r in below):g}, less than {MUCH_SMALLER:g}x below SMS-UBU's h = {ubu['h']:g}: "
                   "at this preset it does not need a much smaller step", numbers)


EXPERIMENT = Experiment(
    ID="ghmc",
    TITLE="SMS-GHMC against SMS-UBU on multinomial logistic regression: error of the predictive and acceptance",
    CLAIM="The Metropolized SMS-GHMC reaches the calibration of SMS-UBU only at a much smaller step size (the "
          "paper: h = 1e-5 against 1e-3 on Fashion-MNIST, acceptance 0.844 with L = 10, alpha = 0.7), so it costs "
          "far more gradient evaluations (paper, supplement D).",
    COST={"tiny": ("~20 s on a machine's first run, mostly compiling two Numba kernels, kept on disk (digits PCA 8, "
                   "12 chains, 25 iterations of 10 sweeps)"),
          "quick": "a few minutes (digits PCA 16, 16 chains, 60 iterations of 10 sweeps)",
          "full": "~30 min, estimated (digits, 64 features, 64 chains, 1000 iterations)"},
    PRESETS=tuple(ghmc_logistic.PRESETS),  # its own tiny level (make demo)
    RESULT=Record(sampler=TEXT, h=NUMBER, data=TEXT, labels=ListOf(INTEGER),
                  probs=Nullable(ListOf(ListOf(NUMBER))),  # null where every chain diverged
                  chain_p_true=ListOf(ListOf(NUMBER)), chains=INTEGER, epochs_per_chain=NUMBER, diverged=ANY),
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT"]
