"""Two BNN runs at a micro size (digits, width 1/8, seconds each) through the real unit function
and drawing of :mod:`experiments.bnn`: the Dask test's registry."""

from __future__ import annotations

from experiments import bnn as fig_bnn
from experiments.bnn._pipeline import RunConfig
from reports.registry import Experiment

CONFIG = RunConfig("digits", "fashion_mnist", width=0.125, n_train=300, n_test=120, batch_size=100, epochs_train=1,
                   epochs_swa=1, epochs_burn=0, epochs_sample=1, h=1e-3, n_eval_batches=1)


def units(preset: str) -> list[dict]:
    return [{"dataset": "digits", "run": i} for i in range(2)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    return fig_bnn.run_config(CONFIG, seed)


def draw(results: list, preset: str):
    return fig_bnn.EXPERIMENT.draw(results, preset)


EXPERIMENT = Experiment(
    ID="bnn_micro",
    TITLE="BNN runs at a micro size",
    CLAIM=fig_bnn.EXPERIMENT.CLAIM,
    COST={"quick": "seconds", "full": "seconds"},
    PRESETS=("quick", "full"),
    RESULT=fig_bnn.EXPERIMENT.RESULT,
    units=units,
    run_unit=run_unit,
    draw=draw,
)
