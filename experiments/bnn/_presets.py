"""Named presets of the BNN experiments: the supplement's hyper-parameter tables and the reduced
CPU levels. One source of truth: the reports module and the benchmark read these.

| level | data | network | runs | epochs (Adam, SWA, burn-in, samples) |
| --- | --- | --- | --- | --- |
| ``tiny`` (``make demo``) | scikit-learn digits (8 x 8) | Fashion-MNIST's, width 1/4, batch 300 | 2 | 3, 2, 1, 3 |
| ``quick`` (2 CPU cores) | PneumoniaMNIST (28 x 28, ``find_medmnist``) | chest X-ray's, width 1/4 | 12 | 8, 4, 4, 8 |
| ``full`` (GPU, cluster) | Fashion-MNIST, Celeb-A, chest X-ray, CIFAR-10 | the paper's, width 1 | 64 | 15, 5, 10, 30 |
| ``regime`` (2 CPU cores) | X-ray subset pooled, stratified; digits | 1/8; 1/4 (below) | 32 + 32 | below |
| ``regime-tiny`` (the tests) | the same, 300 train / 100 test images | 1/16; 1/8 | 2 + 2 | 2, 2, 1, 1 |

``quick`` is budgeted for about 10 minutes with ``--workers 2`` on 2 cores (one torch thread per
worker): at width 1/4 on the 4,406 training images (train + val of the development setup's subset;
the full PneumoniaMNIST that ``medmnist`` downloads has 5,232, about a fifth more time per epoch) an Adam, SWA or
SMS-UBU epoch costs about 1.5 s on one core and an evaluation (the 4,000-image BatchNorm pass, then
the 624 test images) about 1.2 s, so a plain run (24 epochs, 10 evaluations) takes about 50 s; runs 0
and 1 also carry the step-size panel (3 more SMS-UBU chains), 4 trace chains of 8 epochs and the
Hessian norms at 4 points (about 4.5 min each). It compares SMS-UBU with Adam and SWA only: the other
samplers (SG-UBU, SG-UBU rr, SG-HMC, cyclical SG-HMC) are left to ``full`` (and ``tiny`` runs them
all on digits).

``regime`` tests the paper's claim where the paper measures it: baselines trained long enough to be
overconfident. Its settings were fixed before any of its results were seen, from the paper and from
cost pilots only:

| setting | chest X-ray subset (``xray_stratified``) | digits |
| --- | --- | --- |
| data | the subset's 5,030 images pooled, split stratified (below) | scikit-learn digits, 1,200 / 597 |
| network | chest X-ray's at width 1/8 (8,158 parameters) | Fashion-MNIST's, width 1/4 (76,578) |
| batch, batches per epoch | 50, 81 | 32, 38 |
| Adam (1e-2, power-1 decay) + SWA (1e-3) | 56 + 19 epochs: 4,536 + 1,539 steps | 118 + 39: 4,484 + 1,482 |
| samplers | 6 burn-in + 14 sample epochs (1,620 steps, 14 samples) | 12 + 30 epochs (1,596 steps, 30 samples) |
| test metrics along training | Adam and SWA every 4 epochs (and the first, the last) | every 10 epochs |
| the paper's baseline (``paper_baseline``) | Adam 15 epochs, decay stepped per epoch, + 5 SWA epochs | the same |
| runs; with every sampler; with the panel and traces | 32; 8; 2 | 32; 8; 2 |
| step-size panel (SMS-UBU) | h = 5e-4 (the table's), 8.75e-4, 1.75e-3, 3.5e-3 | 2.5e-4 (F-MNIST's), same others |
| trace chains (SMS-UBU from x* + N(0, rho^2)) | 4 chains x 24 epochs (1,944 steps) | 4 x 50 epochs (1,900 steps) |

The X-ray split: train + val + test of the subset pooled (5,030 images, 757 normal = 15.0%), 20% of
each class to test: 4,024 train (606 normal), 1,006 test (151 normal, 855 pneumonia), the class
ratio equal in both (the subset's own splits have 10% and 37.5% normal: a class shift).
Common to both: the optimizer budget is the paper's Fashion-MNIST one in steps (15 + 5 epochs of
300 batches = 6,000 steps), with smaller batches; localization ``rho = 50^(-1/2)``, ``rho_max = 6
rho``, friction ``gamma = 1 / rho`` (the paper's); samplers SMS-UBU, SMS-UBU (notebook) (step h/2,
control variate at x*), SG-UBU (localized, with replacement), SG-HMC (EM, whole posterior), all at
``h`` = :data:`REGIME_H` = 1.75e-3: the tables' step scaled by ``sqrt(N_paper / N)`` (5e-4
sqrt(47,400 / 4,024) = 1.72e-3; 2.5e-4 sqrt(60,000 / 1,200) = 1.77e-3), which keeps ``h`` times the
square root of the data term's curvature (proportional to ``N``) at the paper's; the tables' own
steps are points of the panel. The sampler epochs give about 1,600 steps, 2.8 time units, about 10
relaxation times ``2 / gamma`` of the localized dynamics. Cost pilots (one run of each with the
panel and traces, 2 processes on 2 cores shared with another job): 454 s (X-ray) and 405 s (digits)
of wall time; idle, about 300 s and 265 s for those runs, 170 s and 150 s for a plain run, so about
3,600 core-seconds for the 16 runs: about 30 minutes with ``--workers 2`` on 2 idle cores (the
preset as it was then: 8 runs each, the panel at a fixed number of steps, no paper baseline).

Two baselines. The *annealed* one (``epochs_train`` Adam epochs, the rate decayed per batch to 0,
then SWA) is trained to the overconfident regime, and the samplers start from its SWA point. The
*paper's* one (``paper_baseline``: Adam for 15 epochs with the power-1 decay stepped once per
epoch, the epoch-15 network, then 5 SWA epochs from it; from the same initial network) is the
baseline the paper's claim is about: its Figures and Tables compare SMS-UBU with Adam and SWA
trained that way. Both are scored and judged (``Adam (paper)``, ``SWA (paper)``); the samplers
are not rerun from the paper's SWA point, so a verdict against the paper's baseline compares
SMS-UBU around the annealed SWA point with it.

Runs: 32 per data set, so that ensembles of 1, 2 and 4 form 32, 16 and 8 disjoint groups and
every ensemble verdict of SMS-UBU against the baselines has at least 7 degrees of freedom; runs
0-7 run every sampler (SMS-UBU (notebook), SG-UBU and SG-HMC keep 8 runs: their verdicts at
sizes 2 and 4 have 3 and 1 degrees of freedom and are not tested), runs 8-31 SMS-UBU alone
(:attr:`Experiment.sampler_runs`); runs 0-1 carry the panel, at a fixed integration time (a chain
at ``h`` runs ``round(N_m REGIME_H / h)`` steps per epoch, :func:`bnn._chains.panel_steps_per_epoch`),
and the traces. Estimated cost, from one-epoch timings of each part on 2 cores under a load of
about 3.6 (one torch thread): an X-ray training epoch 1.3 s, an SMS-UBU epoch 1.1 s (the notebook
variant 2.1 s, SG-UBU and SG-HMC 0.7 s), an evaluation 0.24 s; digits 0.3 s, 0.3 s (0.8 s, 0.3 s),
0.03 s. An X-ray run then costs about 150 s with SMS-UBU alone, 230 s with every sampler and
470 s with the panel and traces (the paper's baseline about 25 s of each); digits 70 s, 130 s and
320 s: about 9,000 core-seconds in all with the panel on runs 0-1 (9,900 with it on 0-3), and,
scaled as the pilots' idle to loaded times (about 0.8), some 60 minutes with ``--workers 2`` on 2
idle cores; the measured time is in ``benchmarks/RESULTS.md``.

The ``full`` tables (:data:`PAPER_TABLES`): batch 200, Adam 1e-2 decaying with power 1, SWA at 1e-3,
``h`` = 2.5e-4 (Fashion-MNIST, Celeb-A) and 5e-4 (chest X-ray), ``rho`` = 50^(-1/2) (0.2 for
Celeb-A), ``rho_max = 6 rho``, ``gamma = 1 / rho``; the chest X-ray training set augmented
(rotations, shifts, crops, brightness) to about 9 times its size (the paper: 5,217 -> 47,400).
Step sizes are used as the tables print them (the authors' released code ran UBU at half of that,
see the design). Real data is read from the folders ``fashion-mnist/``, ``celeba/``, ``chest_xray/``
and ``cifar-10-batches-py/``, found by :func:`data_sets.find_data` in the folder of
``SMS_LANGEVIN_DATA_DIR`` (set by ``--data-dir``); a data set whose files are absent is reported as
absent (:func:`missing_data` says so before a run starts), never replaced by something else.

Importing this module does not import torch: the tables hold each configuration's arguments, and
:attr:`Experiment.config` makes the :class:`bnn._config.RunConfig` (which sizes its network with
torch) when first asked.
"""

from __future__ import annotations

import functools
from dataclasses import KW_ONLY, dataclass

from bnn._config import SAMPLERS, RunConfig, data_location
from data_sets import DataError
from integrators._validation import int_at_least

LEVELS = ("tiny", "quick", "full", "regime", "regime-tiny")


@dataclass(frozen=True)
class Experiment:
    """One data set's experiment at one level: the run configuration and how many runs; runs
    ``0 .. extra_runs - 1`` also carry the step-size panel, the Hessian norms and the traces, and
    runs from ``sampler_runs`` on run SMS-UBU alone (with Adam, SWA and the baselines): the other
    samplers keep fewer runs."""

    name: str
    settings: dict
    n_runs: int
    extra_runs: int
    extras: dict
    _: KW_ONLY
    sampler_runs: int | None = None

    @functools.cached_property
    def config(self) -> RunConfig:
        """The configuration of every run (made, and checked, when first asked: it imports torch)."""
        return RunConfig(**self.settings)


def _cfg(dataset: str, network: str, **fields) -> dict:
    """A :class:`RunConfig`'s arguments, made into one by :attr:`Experiment.config`."""
    return {"dataset": dataset, "network": network, **fields}


_ALL = tuple(SAMPLERS)
# the folders are names, found where the user keeps data (data_sets.find_data)
_PAPER_SETTINGS = {
    "fashion_mnist": _cfg("fashion_mnist", "fashion_mnist", h=2.5e-4, rho=50**-0.5, samplers=_ALL,
                          data_path="fashion-mnist"),
    "celeba": _cfg("celeba", "celeba", h=2.5e-4, rho=0.2, data_path="celeba"),
    "chest_xray": _cfg("chest_xray", "chest_xray", h=5e-4, rho=50**-0.5, augment_copies=8, data_path="chest_xray"),
    "cifar10": _cfg("cifar10", "cifar10_wide", h=5e-4, rho=50**-0.5, epochs_train=22, epochs_swa=8,
                    epochs_burn=5, epochs_sample=55, data_path="cifar-10-batches-py"),
}
_FULL_EXTRAS = {"h_panel": (1.25e-4, 5e-4, 1e-3), "hessian_iters": 50, "trace_chains": 4, "trace_epochs": 40}

EXPERIMENTS = {
    "tiny": (Experiment("digits", _cfg("digits", "fashion_mnist", width=0.25, batch_size=300, epochs_train=3,
                                      epochs_swa=2, epochs_burn=1, epochs_sample=3, h=1e-3, samplers=_ALL),
                        n_runs=2, extra_runs=1,
                        extras={"h_panel": (3e-4, 3e-3), "hessian_iters": 10, "trace_chains": 2,
                                "trace_epochs": 5}),),
    "quick": (Experiment("xray_subset", _cfg("xray_subset", "chest_xray", width=0.25, epochs_train=8,
                                            epochs_swa=4, epochs_burn=4, epochs_sample=8, h=5e-4),
                         n_runs=12, extra_runs=2,
                         extras={"h_panel": (2.5e-4, 1e-3, 2e-3), "hessian_iters": 20, "trace_chains": 4,
                                 "trace_epochs": 8}),),
    "full": tuple(Experiment(name, cfg, n_runs=4 if name == "cifar10" else 64,
                             extra_runs=0 if name == "cifar10" else 16,
                             extras={} if name == "cifar10" else _FULL_EXTRAS)
                  for name, cfg in _PAPER_SETTINGS.items()),
}


# ``regime``: the paper's claim where the paper measures it (see the module docstring for the choices)
REGIME_SAMPLERS = ("SMS-UBU", "SMS-UBU (notebook)", "SG-UBU", "SG-HMC")
CORE_SAMPLERS = ("SMS-UBU",)  # what the runs after an experiment's sampler_runs still run
# 32 runs: groups of 1, 2 and 4 give 31, 15 and 7 degrees of freedom (issue 37: every ensemble verdict >= 7)
REGIME_RUNS, REGIME_SAMPLER_RUNS = 32, 8
REGIME_PANEL_RUNS = 2  # the panel and traces are descriptive: 2 runs keep the level inside 60 min on 2 cores
REGIME_H = 1.75e-3  # the tables' h times sqrt(N_paper / N): 5e-4 sqrt(47400 / 4024), 2.5e-4 sqrt(60000 / 1200)
REGIME_PANEL = (8.75e-4, 3.5e-3)  # with the tables' own h of each data set and REGIME_H: 4 points
EXPERIMENTS["regime"] = (
    Experiment("xray_stratified", _cfg("xray_subset", "chest_xray", width=0.125, batch_size=50, epochs_train=56,
                                      epochs_swa=19, epochs_burn=6, epochs_sample=14, h=REGIME_H,
                                      samplers=REGIME_SAMPLERS, stratified_test=0.2, curve_every=4,
                                      paper_baseline=True),
               n_runs=REGIME_RUNS, extra_runs=REGIME_PANEL_RUNS, sampler_runs=REGIME_SAMPLER_RUNS,
               extras={"h_panel": (5e-4, *REGIME_PANEL), "trace_chains": 4, "trace_epochs": 24}),
    Experiment("digits", _cfg("digits", "fashion_mnist", width=0.25, batch_size=32, epochs_train=118,
                             epochs_swa=39, epochs_burn=12, epochs_sample=30, h=REGIME_H,
                             samplers=REGIME_SAMPLERS, curve_every=10, paper_baseline=True),
               n_runs=REGIME_RUNS, extra_runs=REGIME_PANEL_RUNS, sampler_runs=REGIME_SAMPLER_RUNS,
               extras={"h_panel": (2.5e-4, *REGIME_PANEL), "trace_chains": 4, "trace_epochs": 50}),
)
# the same code path in seconds (the test suite's level of ``regime``): the paper baseline shortened too
_TINY_PAPER = {"paper_baseline": True, "paper_epochs_train": 2, "paper_epochs_swa": 1}
EXPERIMENTS["regime-tiny"] = (
    Experiment("xray_stratified", _cfg("xray_subset", "chest_xray", width=0.0625, n_train=300, n_test=100,
                                      batch_size=50, epochs_train=2, epochs_swa=2, epochs_burn=1,
                                      epochs_sample=1, h=REGIME_H, samplers=REGIME_SAMPLERS,
                                      stratified_test=0.2, curve_every=1, n_eval_batches=2, **_TINY_PAPER),
               n_runs=2, extra_runs=1, sampler_runs=1,
               extras={"h_panel": (REGIME_PANEL[0],), "trace_chains": 2, "trace_epochs": 6}),
    Experiment("digits", _cfg("digits", "fashion_mnist", width=0.125, n_train=300, n_test=100, batch_size=50,
                             epochs_train=2, epochs_swa=2, epochs_burn=1, epochs_sample=1, h=REGIME_H,
                             samplers=REGIME_SAMPLERS, curve_every=1, n_eval_batches=2, **_TINY_PAPER),
               n_runs=2, extra_runs=1, sampler_runs=1,
               extras={"h_panel": (REGIME_PANEL[0],), "trace_chains": 2, "trace_epochs": 6}),
)


def experiments(level: str) -> tuple[Experiment, ...]:
    """The experiments of one preset level."""
    if not isinstance(level, str) or level not in EXPERIMENTS:
        raise ValueError(f"unknown BNN preset {level!r}; choose from {', '.join(LEVELS)}")
    return EXPERIMENTS[level]


def run_config(level: str, dataset: str, run: int) -> RunConfig:
    """The configuration of run ``run`` (an integer index) of ``dataset`` at ``level`` (extras on
    the first runs)."""
    run = int_at_least("run", run, 0)
    if not isinstance(dataset, str):
        raise ValueError(f"dataset must be a string, got {dataset!r}")
    for exp in experiments(level):
        if exp.name == dataset:
            if not 0 <= run < exp.n_runs:
                raise ValueError(f"run {run} outside 0..{exp.n_runs - 1} for {dataset} at {level}")
            changes = dict(exp.extras) if run < exp.extra_runs else {}
            if exp.sampler_runs is not None and run >= exp.sampler_runs:
                changes["samplers"] = tuple(s for s in exp.config.samplers if s in CORE_SAMPLERS)
            return RunConfig(**{**exp.config.to_dict(), **changes}) if changes else exp.config
    raise ValueError(f"no experiment {dataset!r} at {level}; have {[e.name for e in experiments(level)]}")


def missing_data(preset: str, dataset: str) -> str | None:
    """Whether the files of one BNN unit's data set exist, asked before a run starts: only paths
    are checked (no file is read, torch is not imported).

    Parameters
    ----------
    preset : str
        One of :data:`LEVELS`.
    dataset : str
        An experiment's data set at that level (a unit's ``dataset``).

    Returns
    -------
    str or None
        None when the data are found (or made in memory, like the digits); else the one-line
        reason, saying where the files were looked for and how to obtain them.

    Raises
    ------
    ValueError
        On an unknown level or data set.
    """
    try:
        _data_location(preset, dataset)
    except DataError as exc:
        return f"{dataset} ({preset}): {exc}"
    return None


def _data_location(preset: str, dataset: str):
    """Where the files of ``dataset``'s experiment at ``preset`` lie (:func:`bnn._config.data_location`)."""
    if not isinstance(dataset, str):
        raise ValueError(f"dataset must be a string, got {dataset!r}")
    for exp in experiments(preset):
        if exp.name == dataset:
            return data_location(exp.settings["dataset"], exp.settings.get("data_path"))
    raise ValueError(f"no experiment {dataset!r} at {preset}; have {[e.name for e in experiments(preset)]}")


@functools.cache
def _paper_tables() -> dict:
    return {name: RunConfig(**settings) for name, settings in _PAPER_SETTINGS.items()}


def __getattr__(name: str):
    # PAPER_TABLES: the ``full`` tables as RunConfig objects, made when first asked (they import torch)
    if name == "PAPER_TABLES":
        return _paper_tables()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache  # asked for every unit of a run: a folder of images is listed once
def data_identity(preset: str, dataset: str) -> dict | None:
    """The name and size in bytes of the file (or the files of the folder) a unit of ``dataset``
    reads at ``preset``; None for data made in memory or found nowhere (then the unit is absent)."""
    try:
        where = _data_location(preset, dataset)
    except DataError:
        return None
    if where is None:
        return None
    files = [where] if where.is_file() else sorted(p for p in where.rglob("*") if p.is_file())
    return {"data": where.name, "bytes": sum(f.stat().st_size for f in files)}
