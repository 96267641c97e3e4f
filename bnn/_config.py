"""The BNN experiment's configuration: the samplers of the comparison (:data:`SAMPLERS`), one
run's settings (:class:`RunConfig`, checked when made) and the networks' parameter counts.

Importing this module does not import torch (the data sets' table and the sampler names serve a
caller that only asks whether a run's data exist); making a :class:`RunConfig` does, to size its
network."""

from __future__ import annotations

import functools
import math
import os
from dataclasses import KW_ONLY, asdict, dataclass, replace

import numpy as np

import data_sets as datasets
from integrators._memory import check_fits
from integrators._validation import (
    BOOLEAN,
    POSITIVE,
    Either,
    InstanceOf,
    Interval,
    ListOf,
    OneOf,
    Optional,
    at_least,
    check_parameters,
)

TRACE_START_CLIP = 5.0  # trace chains start at x* + N(0, rho^2) clipped at this many rho (perturbed)


# how the h of a run maps to the step of a UBU sampler: the paper's text (h) or the authors' notebooks (h / 2)
STEP_CONVENTIONS = {"paper": 1.0, "notebook": 0.5}


def _synthetic_fashion(n_train=60000, n_test=10000, seed=0):
    return datasets.synthetic((1, 28, 28), 10, n_train=n_train, n_test=n_test, seed=seed)


# each data set's loader; ``xray_subset`` is PneumoniaMNIST wherever data_sets.find_medmnist
# finds it (data_path, SMS_LANGEVIN_DATA_DIR, ~/.medmnist, ...), the others are read from the file or
# folder data_path names (a relative name is looked up by data_sets.find_data)
DATASETS = {
    "digits": lambda cfg: datasets.embedded_digits(),
    "xray_subset": lambda cfg: datasets.load_medmnist(cfg.data_path),
    "fashion_mnist": lambda cfg: datasets.load_fashion_mnist(data_location(cfg.dataset, cfg.data_path)),
    "cifar10": lambda cfg: datasets.load_cifar10(data_location(cfg.dataset, cfg.data_path)),
    "celeba": lambda cfg: datasets.load_celeba(data_location(cfg.dataset, cfg.data_path)),
    "chest_xray": lambda cfg: datasets.load_chest_xray(data_location(cfg.dataset, cfg.data_path)),
    "synthetic_fashion": lambda cfg: _synthetic_fashion(cfg.n_train or 60000, cfg.n_test or 10000),
}
IN_PACKAGE = ("digits", "synthetic_fashion")  # data sets made in memory: no file to find


def data_location(dataset: str, data_path: str | None):
    """Where the files of a data set lie (paths only, nothing read); None for one made in memory.
    ``ValueError`` for an unknown ``dataset`` or a missing ``data_path``; :class:`data_sets.DataError`
    when the files are found nowhere."""
    if not isinstance(dataset, str) or dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}")
    if dataset in IN_PACKAGE:
        return None
    if dataset == "xray_subset":
        return datasets.find_medmnist(data_dir=data_path)
    if not data_path:
        raise ValueError(f"dataset {dataset!r} is read from local files: give data_path (no downloads)")
    return datasets.find_data(data_path)


def _architectures():
    from bnn import models  # (imports torch: read when a configuration is checked)

    return models.ARCHITECTURES


PAPER_REFERENCE = ("Adam (paper)", "SWA (paper)")  # the methods of RunConfig.paper_baseline


@dataclass(frozen=True)
class SamplerSpec:
    """A sampler of the comparison (``label``, a key of :data:`SAMPLERS`): ``scheme`` x ``plan``,
    ``localized`` around ``x*`` or not, ``cyclical`` step size or not, ``notebook`` conventions
    (UBU step ``h / 2``, control variate at ``x*``) or not."""

    label: str
    scheme: str
    plan: str
    localized: bool
    cyclical: bool = False
    notebook: bool = False


SAMPLERS = {s.label: s for s in (
    SamplerSpec("SMS-UBU", "ubu", "sms", True),
    SamplerSpec("SMS-UBU (notebook)", "ubu", "sms", True, notebook=True),
    SamplerSpec("SG-UBU", "ubu", "iid", True),
    SamplerSpec("SG-UBU (rr)", "ubu", "rr", True),
    SamplerSpec("SG-HMC", "em", "iid", False),
    SamplerSpec("cyclical SG-HMC", "em", "iid", False, cyclical=True),
)}


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run (a preset fixes all but the seed).

    Every field is checked when the configuration is made, before anything is loaded or trained
    (a bad value names itself in a ``ValueError``); sequences and paths given as arrays or Path
    objects are stored as tuples and strings (JSON).

    Parameters
    ----------
    dataset : str
        The data set, a key of :data:`DATASETS`.
    network : str
        The architecture, a key of :data:`bnn.models.ARCHITECTURES`.
    width : float
        The network's width factor.
    n_train, n_test : int or None
        Images kept of each split (None: the whole split).
    augment_copies : int
        Augmented copies of the training set added to it (:mod:`bnn._augment`).
    batch_size : int
        The minibatch size of training and of the samplers; :func:`~experiments.bnn._pipeline.run`
        refuses, before training, a training set whose last batch would hold one image (batch
        normalization needs two; the batch is not dropped, every datum is in the potential).
    lr_adam : float
        Adam's learning rate, decaying polynomially (power 1) to 0 over ``epochs_train`` epochs.
    lr_swa : float
        The constant learning rate of the SWA epochs.
    epochs_train, epochs_swa : int
        Adam's epochs and SWA's (together ``>= 1``).
    h : float
        The samplers' step size.
    rho : float
        The localization's scale: the potential's ``|x - x*|^2 / (2 rho^2)``, friction ``1 / rho``,
        the trace chains' start ``x* + N(0, rho^2)``.
    rho_max_factor : float
        The localization box ``|x - x*|_inf < rho_max_factor * rho`` (``> 5`` with trace chains, whose
        starts are clipped at 5 rho; below 1 the samplers' :class:`~integrators.torch.Localization` warns).
    epochs_burn, epochs_sample : int
        The samplers' burn-in epochs, and their sampling epochs, each ending with one sample
        (``>= 1`` when samplers run).
    samplers : tuple of str
        The samplers run, keys of :data:`SAMPLERS`, none repeated.
    h_panel : tuple of float
        More step sizes at which SMS-UBU runs (positive, finite).
    n_cycles : int
        Cycles of cyclical SG-HMC's step size.
    prior_precision : float
        The Gaussian prior's precision on the weights.
    n_eval_batches : int
        Batches of training images whose BatchNorm statistics an evaluation uses.
    hessian_iters : int
        Power iterations of the Hessian's spectral norm (0: none computed).
    hessian_batch : int
        The training images of the Hessian's potential estimate (``>= 2`` when ``hessian_iters > 0``).
    trace_chains, trace_epochs : int
        SMS-UBU chains started at perturbations of ``x*`` whose traces are recorded, and their epochs
        (``>= 1`` when there are trace chains).
    chains : int or "auto"
        Chains per sampler from the SWA point. 1 runs one chain per sampler with
        :class:`integrators.torch.ModuleSampler`; ``k > 1`` runs ``k`` chains of each sampler at once
        with the torch samplers' multi-chain mode (:func:`bnn._chains.run_chains`, several chains per
        device), the sampler's predictive then being the mean over chains and samples, and the
        ``trace_chains`` chains also run at once. ``"auto"``: on CUDA as many as the run's memory
        estimate lets half the device's free memory hold (at most 32), 1 elsewhere or with the control
        variate; the run's record holds the number chosen.
    data_path : str or None
        The local files of a data set read from disk (no downloads): a file or folder, a relative
        name looked up in ``SMS_LANGEVIN_DATA_DIR`` and the development data folder
        (:func:`data_sets.find_data`); for ``xray_subset`` a ``.npz`` file or a folder
        searched first, None to search ``SMS_LANGEVIN_DATA_DIR`` and ``~/.medmnist``
        (:func:`data_sets.find_medmnist`).
    stratified_test : float or None
        None (the data set's own splits), or a fraction in ``(0, 1)``: both splits pooled and split
        again by class (:meth:`data_sets.ImageData.stratified`, seed 0: one split for every
        run), the class ratio equal in train and test up to one image per class.
    step_convention : {"paper", "notebook"}
        ``"paper"`` (a UBU sampler steps by ``h``, the paper's text) or ``"notebook"`` (by ``h / 2``,
        as the authors' released notebooks ran the tables' ``h``); the EM samplers step by ``h``
        under both.
    control_variate : bool
        The localized samplers' force with the control variate at ``x*`` (the design's SG1 form; the
        notebooks' BNN force); one chain per sampler only. Its reference gradient at ``x*`` is
        recomputed over each period of the plan's batches (one partition for ``sms``,
        :class:`bnn._control_variate.BlockReferenceSampler`), so it stays unbiased with batch norm:
        one more pass over the data per period (about half an epoch's gradients more per epoch
        for ``sms``). The sampler ``SMS-UBU (notebook)`` runs
        with both notebook variants whatever these two say, so a run can hold the paper's SMS-UBU
        and the notebooks' side by side; every sampler's entry records the step, convention and
        control variate it ran with.
    curve_every : int
        0, or evaluate Adam's network on the test set after its first epoch, every ``curve_every``
        epochs and after its last, and the SWA average likewise over the SWA epochs (the run's
        ``curve``: test NLL, accuracy, both ACE readings, RPS against the optimizer's steps).
    paper_baseline : bool
        Also train the paper's baseline from the same initial network: Adam for
        ``paper_epochs_train`` epochs with the power-1 decay stepped once per epoch (the authors'
        code; the network after the last epoch), then ``paper_epochs_swa`` SWA epochs at
        ``lr_swa`` from it: the methods ``Adam (paper)`` and ``SWA (paper)``, beside the annealed
        baseline of ``epochs_train`` / ``epochs_swa`` (decay stepped per batch, to 0), whose SWA
        point the samplers start from. About ``(paper_epochs_train + paper_epochs_swa) /
        epochs_train`` more training time (from its own generator: the annealed run is unchanged).
    paper_epochs_train, paper_epochs_swa : int
        The paper baseline's Adam epochs (``>= 1``, the paper's 15) and SWA epochs (``>= 0``, the
        paper's 5).

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each checked field (:mod:`integrators._validation`); the rules
        between fields are checked after them.

    Raises
    ------
    ValueError
        If a field is out of its range or of the wrong type, a name is unknown, the settings
        contradict each other, or the network alone exceeds this machine's memory.
    """

    dataset: str
    network: str
    _: KW_ONLY
    width: float = 1.0
    n_train: int | None = None
    n_test: int | None = None
    augment_copies: int = 0
    batch_size: int = 200
    lr_adam: float = 1e-2
    lr_swa: float = 1e-3
    epochs_train: int = 15
    epochs_swa: int = 5
    h: float = 2.5e-4
    rho: float = 50**-0.5
    rho_max_factor: float = 6.0
    epochs_burn: int = 10
    epochs_sample: int = 30
    samplers: tuple[str, ...] = ("SMS-UBU",)
    h_panel: tuple[float, ...] = ()
    n_cycles: int = 4
    prior_precision: float = 1.0
    n_eval_batches: int = 20
    hessian_iters: int = 0
    hessian_batch: int = 200
    trace_chains: int = 0
    trace_epochs: int = 0
    chains: int = 1
    data_path: str | None = None
    stratified_test: float | None = None
    step_convention: str = "paper"
    control_variate: bool = False
    curve_every: int = 0
    paper_baseline: bool = False
    paper_epochs_train: int = 15
    paper_epochs_swa: int = 5

    CONSTRAINTS = {
        "step_convention": OneOf(STEP_CONVENTIONS), "control_variate": BOOLEAN, "paper_baseline": BOOLEAN,
        "stratified_test": Optional(Interval(float, 0, 1, closed="neither")),
        "dataset": OneOf(DATASETS), "network": OneOf(_architectures),
        **dict.fromkeys(("width", "lr_adam", "lr_swa", "h", "rho", "rho_max_factor", "prior_precision"), POSITIVE),
        **dict.fromkeys(("batch_size", "n_eval_batches", "n_cycles", "hessian_batch", "paper_epochs_train"),
                        at_least(1)),
        "chains": Either(at_least(1), OneOf(("auto",))),
        **dict.fromkeys(("epochs_train", "epochs_swa", "epochs_burn", "epochs_sample", "augment_copies",
                         "hessian_iters", "trace_chains", "trace_epochs", "curve_every", "paper_epochs_swa"),
                        at_least(0)),
        "n_train": Optional(at_least(1)), "n_test": Optional(at_least(1)),  # None: the whole split
        "samplers": ListOf(OneOf(SAMPLERS), unique=True), "h_panel": ListOf(POSITIVE),
        "data_path": Optional(InstanceOf(str, "a string (a folder or file)")),
    }
    VALID_EXAMPLE = {"dataset": "digits", "network": "fashion_mnist", "width": 0.125, "samplers": ("SMS-UBU", "SG-HMC"),
                     "h_panel": (1e-4,), "trace_chains": 1, "trace_epochs": 1}

    def __post_init__(self):
        import torch

        for name in ("samplers", "h_panel"):
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))  # frozen: set through object
        if isinstance(self.data_path, os.PathLike):
            object.__setattr__(self, "data_path", os.fspath(self.data_path))
        # checked; a field given as a numpy number or 0-d array is stored as its canonical Python value (the
        # run's JSON records it), a Python value stays as given
        canonical = check_parameters({name: getattr(self, name) for name in self.CONSTRAINTS}, self.CONSTRAINTS)
        for name, value in canonical.items():
            if isinstance(getattr(self, name), np.generic | np.ndarray):
                object.__setattr__(self, name, value)
        if self.epochs_train + self.epochs_swa < 1:
            raise ValueError("epochs_train + epochs_swa must be >= 1")
        if self.chains not in (1, "auto") and (self.control_variate
                                               or any(SAMPLERS[s].notebook for s in self.samplers)):
            raise ValueError(f"control_variate (and the sampler SMS-UBU (notebook), which uses it) runs one chain "
                             f"per sampler: chains must be 1, got chains={self.chains!r}")
        if (self.samplers or self.h_panel) and self.epochs_sample < 1:
            raise ValueError(f"epochs_sample must be >= 1 when samplers run (their predictive is the mean of "
                             f"one sample per epoch), got {self.epochs_sample!r}")
        if self.hessian_iters and self.hessian_batch < 2:  # its potential runs the network in training mode
            raise ValueError(f"hessian_batch must be >= 2 when hessian_iters > 0 (batch normalization needs two or "
                             f"more images per batch), got {self.hessian_batch!r}")
        if self.trace_chains and self.trace_epochs < 1:
            raise ValueError(f"trace_epochs must be >= 1 when trace_chains > 0, got {self.trace_epochs!r}")
        if self.trace_chains and not self.rho_max_factor > TRACE_START_CLIP:
            # the trace chains start at N(0, rho^2) perturbations of x* clipped at 5 rho (perturbed),
            # which must lie inside the open box |x - x*|_inf < rho_max_factor * rho
            raise ValueError(f"rho_max_factor must be > {TRACE_START_CLIP:g} when trace_chains > 0 (the trace "
                             f"chains start up to {TRACE_START_CLIP:g} rho from x*), got {self.rho_max_factor!r}")
        # the network is built in this machine's memory first: at least its smallest input's count
        n_params = network_parameters(self.network, self.width, smallest_input(self.network), 2)
        check_fits(f"network={self.network!r} at width={self.width!r} ({count_text(n_params, 'at least ')})",
                   n_params * torch.get_default_dtype().itemsize)

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict.

        Returns
        -------
        dict
            Every field by name.
        """
        return asdict(self)


def network_parameters(network: str, width: float, in_shape=None, n_classes=None) -> float:
    """The parameter count of ``models.build(network, width=width, ...)``, built on the meta device
    (nothing allocated); ``inf`` when a layer is beyond the sizes torch can hold."""
    return _network_parameters(network, float(width), None if in_shape is None else tuple(int(v) for v in in_shape),
                               n_classes)


@functools.lru_cache(maxsize=256)
def _network_parameters(network, width, in_shape, n_classes) -> float:
    import torch

    from bnn import models

    try:
        with torch.device("meta"):
            net = models.build(network, width=width, in_shape=in_shape, n_classes=n_classes)
    except (RuntimeError, OverflowError, TypeError):  # (torch's size overflows: a RuntimeError or a TypeError)
        return math.inf
    return float(models.n_parameters(net))


@functools.cache
def smallest_input(network: str) -> tuple[int, int, int]:
    """The smallest one-channel square input ``network`` accepts (its count there is a lower
    bound over inputs)."""
    import torch

    from bnn import models

    for size in range(1, 1025):
        try:
            with torch.device("meta"):
                models.build(network, width=1e-9, in_shape=(1, size, size), n_classes=2)
        except ValueError:
            continue
        return (1, size, size)
    return models.ARCHITECTURES[network].in_shape


def count_text(n_params: float, qualifier: str = "") -> str:
    """A parameter count in words for error messages, e.g. ``"at least 1.2e+06 parameters"``."""
    return "more parameters than torch can size" if math.isinf(n_params) else f"{qualifier}{n_params:.4g} parameters"


def with_overrides(cfg: RunConfig, **changes) -> RunConfig:
    """``cfg`` with some fields replaced, validated again (``ValueError`` as :class:`RunConfig`)."""
    return replace(cfg, **changes)
