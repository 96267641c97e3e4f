"""SMS-GHMC (supplement, Algorithm 7) against SMS-UBU on the multinomial logistic regression of
Section 3.4 (the supplement's section D); the computation is :mod:`experiments.ghmc._compute`."""

from __future__ import annotations

from experiments.ghmc import _compute as ghmc_logistic
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import ANY, INTEGER, NUMBER, TEXT, ListOf, Nullable, Record

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
)

__all__ = ["EXPERIMENT"]
