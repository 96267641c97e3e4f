"""One independent run of the paper's Algorithm 4 (ensemble SMS-UBU around SWA points), with the
baselines of Section 5 on the same run.

For one seed:

1. random initialisation of the network (:mod:`bnn.models`);
2. Adam for ``epochs_train`` epochs with the learning rate decaying polynomially (power 1) from
   ``lr_adam`` to 0 over the steps (``torch.optim.lr_scheduler.PolynomialLR``), on the batch
   objective ``mean cross-entropy + prior_precision |weights|^2 / (2 N_D)`` (the potential / N_D);
3. ``epochs_swa`` epochs at the constant rate ``lr_swa``, averaging the weights at the end of each
   epoch (``torch.optim.swa_utils.AveragedModel``): the SWA point ``x*``;
4. each sampler of :data:`SAMPLERS` from ``x*`` with ``v ~ N(0, I)`` on the potential
   ``f(x) = sum_i CE_i(x) + prior_precision |weights|^2 / 2`` (no temperature); the localized ones
   on ``f*(x) = f(x) + |x - x*|^2 / (2 rho^2)`` in the box ``|x - x*|_inf < rho_max_factor * rho``
   with elastic bounces and friction ``gamma = 1 / rho``; SG-HMC and cyclical SG-HMC on the whole
   posterior (no localization, same friction), as in the paper. ``epochs_burn`` epochs of burn-in,
   then ``epochs_sample`` epochs each ending with one sample; the run's predictive is the mean of
   the samples' predictive probabilities.

With ``curve_every``, Adam's network and the SWA average are also scored on the test set along
training (the run's ``curve``), from a generator of their own so the networks trained are those
of the same run without it. ``step_convention`` and ``control_variate`` select the authors'
notebook variants (UBU step ``h / 2``, the control variate at ``x*``); the sampler
``SMS-UBU (notebook)`` runs with both, beside the paper's ``SMS-UBU``.

Evaluation (the design's convention): one forward pass in training mode over ``n_eval_batches``
batches of training images as one batch (BatchNorm with ``momentum = 1`` then holds their
statistics), then evaluation mode on the test set.

The sampler is :class:`integrators.torch.ModuleSampler` (the torch backend's module mode); a step size is
the ``h`` of the scheme as that module defines it (the supplement's tables list ``h``; the authors'
released code ran UBU at half of it, see the design): presets say which they use.
A diverging sampler is recorded as diverged with its step, never averaged into the predictive.
A sampler that did not diverge but whose samples are no estimate of the posterior is flagged in
its method's ``warnings`` and in the run's ``warnings`` (the summary): more than
:data:`BOUNDARY_WARN` of its coordinates on the localization box's wall after sampling (a step too
large for the posterior, held in the box by the bounces alone), or a test accuracy at chance level
``1/K`` within :data:`CHANCE_SE` standard errors.  A configuration whose network and buffers cannot
fit in memory is refused (``ValueError`` naming ``width``) before the network is built: by
:class:`RunConfig` when the network alone exceeds this machine's memory, by :func:`run` when its
buffers (:func:`run_bytes`) exceed the device's.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import time
from dataclasses import KW_ONLY, asdict, dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from bnn import data as bnn_data
from bnn import metrics as bnn_metrics
from bnn import models
from integrators.memory import check_fits, device_memory_bytes
from integrators.seeds import derive
from integrators.validation import int_at_least, positive_float, seed_value

TRACE_START_CLIP = 5.0  # trace chains start at x* + N(0, rho^2) clipped at this many rho (perturbed)
# Parameter-sized tensors a run keeps besides its samplers': the network and its gradient, Adam's
# two moments, the SWA average and the SWA copy, the saved Adam state and x*.
PIPELINE_BUFFERS = 8
BOUNDARY_WARN = 0.01  # a healthy localized chain puts ~1e-6 of its coordinates on the box's wall, a broken one ~1/6
CHANCE_SE = 2.0  # an accuracy within this many standard errors of 1/K is at chance level
# how the h of a run maps to the step of a UBU sampler: the paper's text (h) or the authors' notebooks (h / 2)
STEP_CONVENTIONS = {"paper": 1.0, "notebook": 0.5}


@dataclass(frozen=True)
class SamplerSpec:
    """A sampler of the comparison: scheme x plan, localized or not, cyclical step size or not."""

    label: str
    scheme: str
    plan: str
    localized: bool
    cyclical: bool = False
    notebook: bool = False  # the authors' notebooks: UBU step h/2 for the h given, control variate at x*


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

    ``stratified_test``: None (the data set's own splits), or a fraction in ``(0, 1)``: both splits
    pooled and split again by class (:meth:`bnn.data.ImageData.stratified`, seed 0: one split for
    every run), the class ratio equal in train and test up to one image per class.
    ``step_convention``: ``"paper"`` (a UBU sampler steps by ``h``, the paper's text) or
    ``"notebook"`` (by ``h / 2``, as the authors' released notebooks ran the tables' ``h``);
    the EM samplers step by ``h`` under both. ``control_variate``: the localized samplers' force
    with the control variate at ``x*`` (the design's SG1 form; the notebooks' BNN force). The
    sampler ``SMS-UBU (notebook)`` runs with both notebook variants whatever these two say, so a
    run can hold the paper's SMS-UBU and the notebooks' side by side; every sampler's entry records
    the step, convention and control variate it ran with.
    ``curve_every``: 0, or evaluate Adam's network on the test set after its first epoch, every
    ``curve_every`` epochs and after its last, and the SWA average likewise over the SWA epochs
    (the run's ``curve``: test NLL, accuracy, ACE, RPS against the optimizer's steps).

    ``chains``: chains per sampler from the SWA point. 1 runs one chain per sampler with
    :class:`integrators.torch.ModuleSampler`; ``k > 1`` runs ``k`` chains of each sampler at once
    with the torch samplers' multi-chain mode (:func:`run_chains`, several chains per device), the
    sampler's predictive then being the mean over chains and samples, and the ``trace_chains``
    chains also run at once.
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

    def __post_init__(self):
        # every field, before anything is loaded or trained (a bad value names itself in a ValueError);
        # sequences and paths given as arrays or Path objects are stored as tuples and strings (JSON)
        for name in ("samplers", "h_panel"):
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))  # frozen: set through object
        if isinstance(self.data_path, os.PathLike):
            object.__setattr__(self, "data_path", os.fspath(self.data_path))
        if not isinstance(self.step_convention, str) or self.step_convention not in STEP_CONVENTIONS:
            raise ValueError(f"step_convention must be one of {', '.join(map(repr, STEP_CONVENTIONS))}, got "
                             f"{self.step_convention!r}")
        if not isinstance(self.control_variate, bool):
            raise ValueError(f"control_variate must be True or False, got {self.control_variate!r}")
        if self.stratified_test is not None and (
                isinstance(self.stratified_test, bool) or not isinstance(self.stratified_test, numbers.Real)
                or not 0 < self.stratified_test < 1):
            raise ValueError(f"stratified_test must be None or a fraction in (0, 1), got {self.stratified_test!r}")
        for name in ("dataset", "network"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if self.network not in models.ARCHITECTURES:
            raise ValueError(f"unknown network {self.network!r}; choose from {', '.join(models.ARCHITECTURES)}")
        if self.dataset not in DATASETS:
            raise ValueError(f"unknown dataset {self.dataset!r}; choose from {', '.join(DATASETS)}")
        for name in ("width", "lr_adam", "lr_swa", "h", "rho", "rho_max_factor", "prior_precision"):
            positive_float(name, getattr(self, name))
        for name, low in (("batch_size", 1), ("n_eval_batches", 1), ("n_cycles", 1), ("hessian_batch", 1),
                          ("chains", 1), ("epochs_train", 0), ("epochs_swa", 0), ("epochs_burn", 0),
                          ("epochs_sample", 0), ("augment_copies", 0), ("hessian_iters", 0), ("trace_chains", 0),
                          ("trace_epochs", 0), ("curve_every", 0)):
            int_at_least(name, getattr(self, name), low)
        for name in ("n_train", "n_test"):  # None: the whole split
            if getattr(self, name) is not None:
                int_at_least(name, getattr(self, name), 1)
        if self.epochs_train + self.epochs_swa < 1:
            raise ValueError("epochs_train + epochs_swa must be >= 1")
        if not isinstance(self.samplers, tuple | list) or not all(isinstance(s, str) for s in self.samplers):
            raise ValueError(f"samplers must be a tuple of sampler names, got {self.samplers!r}")
        unknown = [s for s in self.samplers if s not in SAMPLERS]
        if unknown:
            raise ValueError(f"unknown sampler {unknown[0]!r}; choose from {', '.join(SAMPLERS)}")
        if len(set(self.samplers)) != len(self.samplers):
            raise ValueError(f"samplers must not repeat a sampler, got {self.samplers!r}")
        if not isinstance(self.h_panel, tuple | list):
            raise ValueError(f"h_panel must be a tuple of step sizes, got {self.h_panel!r}")
        for h in self.h_panel:
            if isinstance(h, bool) or not isinstance(h, numbers.Real) or not (math.isfinite(h) and h > 0):
                raise ValueError(f"h_panel must hold positive finite step sizes, got {self.h_panel!r}")
        if self.chains > 1 and (self.control_variate or any(SAMPLERS[s].notebook for s in self.samplers)):
            raise ValueError(f"control_variate (and the sampler SMS-UBU (notebook), which uses it) runs one chain "
                             f"per sampler: chains must be 1, got chains={self.chains!r}")
        if (self.samplers or self.h_panel) and self.epochs_sample < 1:
            raise ValueError(f"epochs_sample must be >= 1 when samplers run (their predictive is the mean of "
                             f"one sample per epoch), got {self.epochs_sample!r}")
        if self.trace_chains and self.trace_epochs < 1:
            raise ValueError(f"trace_epochs must be >= 1 when trace_chains > 0, got {self.trace_epochs!r}")
        if self.trace_chains and not self.rho_max_factor > TRACE_START_CLIP:
            # the trace chains start at N(0, rho^2) perturbations of x* clipped at 5 rho (perturbed),
            # which must lie inside the open box |x - x*|_inf < rho_max_factor * rho
            raise ValueError(f"rho_max_factor must be > {TRACE_START_CLIP:g} when trace_chains > 0 (the trace "
                             f"chains start up to {TRACE_START_CLIP:g} rho from x*), got {self.rho_max_factor!r}")
        if self.data_path is not None and not isinstance(self.data_path, str):
            raise ValueError(f"data_path must be a string (a folder or file) or None, got {self.data_path!r}")
        # the network is built in this machine's memory first: at least its smallest input's count
        n_params = network_parameters(self.network, self.width, _smallest_input(self.network), 2)
        check_fits(f"network={self.network!r} at width={self.width!r} ({_count_text(n_params, 'at least ')})",
                   n_params * torch.get_default_dtype().itemsize)

    def to_dict(self) -> dict:
        return asdict(self)


def network_parameters(network: str, width: float, in_shape=None, n_classes=None) -> float:
    """The parameter count of ``models.build(network, width=width, ...)``, built on the meta
    device (nothing is allocated); ``inf`` when a layer is beyond the sizes torch can hold."""
    return _network_parameters(network, float(width), None if in_shape is None else tuple(int(v) for v in in_shape),
                               n_classes)


@functools.lru_cache(maxsize=256)
def _network_parameters(network, width, in_shape, n_classes) -> float:
    try:
        with torch.device("meta"):
            net = models.build(network, width=width, in_shape=in_shape, n_classes=n_classes)
    except (RuntimeError, OverflowError, TypeError):  # (torch's size overflows: a RuntimeError or a TypeError)
        return math.inf
    return float(models.n_parameters(net))


@functools.cache
def _smallest_input(network: str) -> tuple[int, int, int]:
    """The smallest one-channel square input ``network`` accepts (its count there is a lower
    bound over inputs)."""
    for size in range(1, 1025):
        try:
            with torch.device("meta"):
                models.build(network, width=1e-9, in_shape=(1, size, size), n_classes=2)
        except ValueError:
            continue
        return (1, size, size)
    return models.ARCHITECTURES[network].in_shape


def _count_text(n_params: float, qualifier: str = "") -> str:
    return "more parameters than torch can size" if math.isinf(n_params) else f"{qualifier}{n_params:.4g} parameters"


def run_bytes(cfg: RunConfig, n_params: float) -> float:
    """Bytes a run of ``cfg`` keeps for a network of ``n_params`` parameters: :data:`PIPELINE_BUFFERS`
    copies, one per trace chain's start, and :data:`integrators.torch.config.SAMPLER_BUFFERS` per
    chain running at once (``chains``, or ``trace_chains`` when those run at once), in the default
    dtype (the activations come on top)."""
    from integrators.torch.config import SAMPLER_BUFFERS

    at_once = max(cfg.chains, cfg.trace_chains) if cfg.chains > 1 else 1
    return n_params * (PIPELINE_BUFFERS + cfg.trace_chains + SAMPLER_BUFFERS * at_once) \
        * torch.get_default_dtype().itemsize


def check_run_fits(cfg: RunConfig, n_params: float, device, what: str = "") -> None:
    """Refuse (``ValueError`` naming ``width``) a run whose buffers exceed ``device``'s memory."""
    check_fits(f"network={cfg.network!r} at width={cfg.width!r} ({_count_text(n_params, what)}) with "
               f"chains={cfg.chains} and trace_chains={cfg.trace_chains} on {device}", run_bytes(cfg, n_params),
               limit=device_memory_bytes(device))


def sample_warnings(probs, labels, boundary: float | None) -> list[str]:
    """Why a predictive that did not diverge is still no estimate: its chain(s) ended with more
    than :data:`BOUNDARY_WARN` of the coordinates on the localization box's wall (``boundary``),
    or its test accuracy is at chance level ``1/K`` (within :data:`CHANCE_SE` standard errors of
    it, the standard error of a classifier at chance on these test images)."""
    from integrators.torch.posterior_terms import BOUNDARY_BAND

    out = []
    if boundary is not None and boundary > BOUNDARY_WARN:
        out.append(f"{boundary:.1%} of the coordinates sit on the localization box's wall (within {BOUNDARY_BAND:.3g} "
                   f"rho_max of it) after sampling: the step is too large for the posterior and the bounces hold "
                   f"the parameters, so the samples are no estimate of it")
    if probs is not None:
        probs, labels = np.asarray(probs), np.asarray(labels)
        k, n = probs.shape[1], len(labels)
        acc, chance = float(np.mean(np.argmax(probs, axis=1) == labels)), 1.0 / probs.shape[1]
        se = math.sqrt(chance * (1.0 - chance) / n)
        if acc <= chance + CHANCE_SE * se:
            out.append(f"test accuracy {acc:.3g} is at chance level 1/{k} = {chance:.3g} (not above it by "
                       f"{CHANCE_SE:g} standard errors, {se:.2g} on {n} test images): the predictive is no estimate")
    return out


def _synthetic_fashion(n_train=60000, n_test=10000, seed=0):
    return bnn_data.synthetic((1, 28, 28), 10, n_train=n_train, n_test=n_test, seed=seed)


DATASETS = {
    "digits": lambda cfg: bnn_data.embedded_digits(),
    "xray_subset": lambda cfg: bnn_data.load_medmnist(cfg.data_path or bnn_data.SHARED_XRAY),
    "fashion_mnist": lambda cfg: bnn_data.load_fashion_mnist(_need_path(cfg)),
    "cifar10": lambda cfg: bnn_data.load_cifar10(_need_path(cfg)),
    "celeba": lambda cfg: bnn_data.load_celeba(_need_path(cfg)),
    "chest_xray": lambda cfg: bnn_data.load_chest_xray(_need_path(cfg)),
    "synthetic_fashion": lambda cfg: _synthetic_fashion(cfg.n_train or 60000, cfg.n_test or 10000),
}


def _need_path(cfg):
    if not cfg.data_path:
        raise ValueError(f"dataset {cfg.dataset!r} is read from local files: give data_path (no downloads)")
    return cfg.data_path


def load(cfg: RunConfig) -> bnn_data.ImageData:
    d = DATASETS[cfg.dataset](cfg)
    if cfg.stratified_test is not None:
        d = d.stratified(cfg.stratified_test, seed=0)
    if cfg.n_train or cfg.n_test:
        d = d.subset(cfg.n_train, cfg.n_test)
    return d


@dataclass
class Tensors:
    """The run's data on its device (the training set possibly extended by fixed augmented copies)."""

    x: torch.Tensor
    y: torch.Tensor
    x_test: torch.Tensor
    y_test: np.ndarray
    n_classes: int
    in_shape: tuple

    @property
    def n(self) -> int:
        return self.x.shape[0]


def tensors(d: bnn_data.ImageData, cfg: RunConfig, device, seed: int) -> Tensors:
    x = torch.from_numpy(d.x_train).to(device)
    y = torch.from_numpy(d.y_train).to(device)
    if cfg.augment_copies:
        gen = torch.Generator(device=device).manual_seed(derive(seed, "bnn", "augmentation"))
        x = torch.cat([x] + [bnn_data.augment(x, gen) for _ in range(cfg.augment_copies)])
        y = y.repeat(cfg.augment_copies + 1)
    return Tensors(x, y, torch.from_numpy(d.x_test).to(device), d.y_test, d.n_classes, d.in_shape)


def sum_loss(data: Tensors):
    """``loss_fn(net, idx)``: summed cross-entropy over the training images ``idx`` (BatchNorm on them)."""
    return lambda net, idx: F.cross_entropy(net(data.x[idx]), data.y[idx], reduction="sum")


def prior_term(net, precision: float) -> torch.Tensor:
    names = set(models.prior_mask_names(net))
    return 0.5 * precision * sum((p**2).sum() for n, p in net.named_parameters() if n in names)


@torch.no_grad()
def predict(net, data: Tensors, cfg: RunConfig, gen: torch.Generator, *, chunk: int = 1000,
            timings: dict | None = None) -> np.ndarray:
    """Test-set predictive probabilities: BatchNorm statistics from one training-mode pass over
    ``n_eval_batches * batch_size`` random training images, then evaluation mode."""
    t0 = time.perf_counter()
    n_eval = min(data.n, cfg.n_eval_batches * cfg.batch_size)
    idx = torch.randperm(data.n, generator=gen, device=data.x.device)[:n_eval]
    net.train()
    net(data.x[idx])
    net.eval()
    probs = torch.cat([torch.softmax(net(data.x_test[i:i + chunk]), dim=1) for i in range(0, len(data.x_test),
                                                                                          chunk)])
    net.train()
    if timings is not None:
        timings.setdefault("predict", []).append(time.perf_counter() - t0)
    return probs.double().cpu().numpy()


def batches_per_epoch(cfg: RunConfig, n: int) -> int:
    return math.ceil(n / cfg.batch_size)


def train(net, data: Tensors, cfg: RunConfig, gen: torch.Generator, timings: dict, *, on_epoch=None):
    """Adam with polynomial decay (power 1), then SWA at a constant rate; returns the SWA network
    (a copy) and the per-epoch average training loss. ``on_epoch(stage, epoch, model)``, if given,
    is called after each epoch (``stage`` ``"Adam"`` or ``"SWA"``, ``epoch`` counted from 1 within
    the stage, ``model`` the network or, during SWA, the average so far); it must not change them."""
    from torch.optim.swa_utils import AveragedModel

    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr_adam)
    m = batches_per_epoch(cfg, data.n)
    sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=max(1, cfg.epochs_train * m), power=1.0)
    swa = AveragedModel(net, use_buffers=False)
    losses = []
    net.train()

    def epoch(stage):
        t0 = time.perf_counter()
        perm = torch.randperm(data.n, generator=gen, device=data.x.device)
        total = 0.0
        for j in range(m):
            idx = perm[j * cfg.batch_size:(j + 1) * cfg.batch_size]
            opt.zero_grad(set_to_none=True)
            ce = F.cross_entropy(net(data.x[idx]), data.y[idx])
            loss = ce + prior_term(net, cfg.prior_precision) / data.n
            loss.backward()
            opt.step()
            if stage == "adam":
                sched.step()
            total += float(ce.detach()) * len(idx)
        if data.x.is_cuda:
            torch.cuda.synchronize()
        timings.setdefault(stage, []).append(time.perf_counter() - t0)
        losses.append(total / data.n)

    for e in range(cfg.epochs_train):
        epoch("adam")
        if on_epoch is not None:
            on_epoch("Adam", e + 1, net)
    adam_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    for group in opt.param_groups:
        group["lr"] = cfg.lr_swa
    for e in range(cfg.epochs_swa):
        epoch("swa")
        swa.update_parameters(net)
        if on_epoch is not None:
            on_epoch("SWA", e + 1, swa.module)
    swa_net = swa.module if cfg.epochs_swa else net
    swa_net = _copy(net, {n: p for n, p in swa_net.state_dict().items()})
    net.load_state_dict(adam_state)
    return swa_net, losses


def _copy(net, state):
    import copy

    out = copy.deepcopy(net)
    out.load_state_dict(state)
    return out


@dataclass
class ChainResult:
    """One sampler's chain: predictive mean over its samples, per-epoch average training loss,
    the step at which it diverged (None if it did not), epoch wall times."""

    probs: np.ndarray | None
    trace: list
    diverged: int | None
    epoch_seconds: list
    boundary: float | None = None  # fraction of the coordinates on the localization box's wall at the end


def sampler_settings(spec: SamplerSpec, cfg: RunConfig, h: float) -> dict:
    """What sampler ``spec`` runs with at the run's step size ``h``: ``step`` (the scheme's step),
    ``step_convention`` and ``control_variate`` (see :class:`RunConfig`)."""
    convention = "notebook" if spec.notebook else cfg.step_convention
    step = h * STEP_CONVENTIONS[convention] if spec.scheme == "ubu" else h
    return {"step": step, "step_convention": convention,
            "control_variate": spec.localized and (spec.notebook or cfg.control_variate)}


def _sampler_config(spec: SamplerSpec, x_star_net, data: Tensors, cfg: RunConfig, *, h: float, seed: int,
                    n_steps: int, control_variate: bool = False):
    from integrators.torch import CyclicalSchedule, Localization, SamplerConfig

    loc = None
    if spec.localized:
        x_star = torch.cat([p.detach().reshape(-1) for p in x_star_net.parameters()])
        loc = Localization(rho=cfg.rho, rho_max=cfg.rho_max_factor * cfg.rho, x_star=x_star)
    return SamplerConfig(h=h, gamma=1.0 / cfg.rho, n_data=data.n, scheme=spec.scheme, plan=spec.plan,
                         batch_size=min(cfg.batch_size, data.n), prior=cfg.prior_precision, localization=loc,
                         schedule=CyclicalSchedule(n_steps, min(cfg.n_cycles, n_steps)) if spec.cyclical else None,
                         seed=seed, check_every=batches_per_epoch(cfg, data.n), control_variate=control_variate)


def module_sampler(net, sconf):
    """:class:`integrators.torch.ModuleSampler` for ``sconf``."""
    from integrators.torch import ModuleSampler

    return ModuleSampler(net, sconf)


def _epoch_loss(total: float, spec: SamplerSpec, data: Tensors, cfg: RunConfig) -> float:
    """Average per-datum training loss of one epoch from the sum of its batch losses."""
    m = batches_per_epoch(cfg, data.n)
    return total / (m * cfg.batch_size) if spec.plan == "iid" else total / data.n


def run_chain(start_net, x_star_net, spec: SamplerSpec, data: Tensors, cfg: RunConfig, *, h: float, seed: int,
              epochs_burn: int, epochs_sample: int, evaluate: bool = True,
              timings: dict | None = None, control_variate: bool = False) -> ChainResult:
    """One chain of ``spec`` from ``start_net``'s weights (localized around ``x_star_net``'s) with
    step ``h`` (the scheme's step), the force's control variate at ``x_star_net``'s weights if
    ``control_variate``."""
    from integrators.torch import SamplerDiverged

    net = _copy(start_net, start_net.state_dict())
    net.train()
    m = batches_per_epoch(cfg, data.n)
    sconf = _sampler_config(spec, x_star_net, data, cfg, h=h, seed=seed, n_steps=(epochs_burn + epochs_sample) * m,
                            control_variate=control_variate)
    sampler = module_sampler(net, sconf)
    loss_fn = sum_loss(data)
    gen = torch.Generator(device=data.x.device).manual_seed(derive(seed, "bnn", "evaluation"))
    trace, seconds, acc, n_samples = [], [], None, 0
    first_bad = None  # the first step whose batch loss was not finite (the step the chain diverged at)
    try:
        for e in range(epochs_burn + epochs_sample):
            t0 = time.perf_counter()
            total = 0.0
            for _ in range(m):
                info = sampler.step(loss_fn)
                loss = float(info.loss)
                if first_bad is None and not math.isfinite(loss):
                    first_bad = info.step
                total += loss
            sampler.check_finite()
            if data.x.is_cuda:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t0)
            trace.append(_epoch_loss(total, spec, data, cfg))
            if evaluate and e >= epochs_burn:
                p = predict(net, data, cfg, gen, timings=timings)
                acc = p if acc is None else acc + p
                n_samples += 1
    except SamplerDiverged as exc:  # (seen at an epoch's end: a non-finite loss may have come first)
        return ChainResult(None, trace, exc.step if first_bad is None else min(first_bad, exc.step), seconds)
    if first_bad is not None:  # a non-finite loss the sampler did not raise on: diverged at that step
        return ChainResult(None, trace, first_bad, seconds)
    return ChainResult(acc / n_samples if n_samples else None, trace, None, seconds, sampler.boundary_fraction())


def run_chains(starts: list, x_star_net, spec: SamplerSpec, data: Tensors, cfg: RunConfig, *, h: float, seed: int,
               epochs_burn: int, epochs_sample: int, evaluate: bool = True,
               timings: dict | None = None) -> list[ChainResult]:
    """``len(starts)`` chains of ``spec`` at once through the torch samplers' multi-chain mode
    (:class:`integrators.torch.ensemble.EnsembleSampler`: one ``vmap`` over the stacked
    parameters, several chains per device). Chain ``k`` starts from ``starts[k]``'s weights and
    draws its velocity, path, batches and evaluation subsets as
    ``run_chain(starts[k], ..., seed=chain_seed(seed, k))`` does, so it follows the same
    trajectory up to rounding. A divergence stops every chain (each is reported diverged at that
    step, or at its first non-finite loss where that came earlier); ``epoch_seconds`` are those of
    the whole ensemble."""
    from integrators.torch import SamplerDiverged
    from integrators.torch.ensemble import EnsembleSampler, chain_seed
    from integrators.torch.posterior_terms import boundary_fraction

    if not starts:
        raise ValueError("run_chains needs at least one starting network")
    n_chains = len(starts)
    m = batches_per_epoch(cfg, data.n)
    sconf = _sampler_config(spec, x_star_net, data, cfg, h=h, seed=seed, n_steps=(epochs_burn + epochs_sample) * m)
    x0 = torch.stack([torch.nn.utils.parameters_to_vector(s.parameters()).detach() for s in starts])
    sampler = EnsembleSampler(starts[0], sconf, n_chains, x0=x0)
    view = _copy(starts[0], starts[0].state_dict())  # a network to evaluate each chain's parameters in
    loss_fn = sum_loss(data)
    # chain k's evaluation subsets: those of run_chain(..., seed=chain_seed(seed, k))
    gens = [torch.Generator(device=data.x.device).manual_seed(derive(chain_seed(sconf.seed, k), "bnn", "evaluation"))
            for k in range(n_chains)]
    traces, seconds, acc, n_samples = [[] for _ in range(n_chains)], [], [None] * n_chains, 0
    first_bad = [None] * n_chains  # per chain, the first step whose batch loss was not finite
    try:
        for e in range(epochs_burn + epochs_sample):
            t0 = time.perf_counter()
            total = torch.zeros(n_chains, dtype=torch.float64)
            for _ in range(m):
                step = sampler.step(loss_fn)
                losses = sampler.last_loss.double().cpu()
                for k in (~torch.isfinite(losses)).nonzero().flatten().tolist():
                    if first_bad[k] is None:
                        first_bad[k] = step
                total += losses
            if data.x.is_cuda:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t0)
            for k in range(n_chains):
                traces[k].append(_epoch_loss(float(total[k]), spec, data, cfg))
            if evaluate and e >= epochs_burn:
                for k in range(n_chains):
                    with torch.no_grad():
                        torch.nn.utils.vector_to_parameters(sampler.x[k], view.parameters())
                    p = predict(view, data, cfg, gens[k], timings=timings)
                    acc[k] = p if acc[k] is None else acc[k] + p
                n_samples += 1
    except SamplerDiverged as exc:
        return [ChainResult(None, t, exc.step if bad is None else min(bad, exc.step), seconds)
                for t, bad in zip(traces, first_bad, strict=True)]
    loc = sconf.localization
    boundary = [None if loc is None else boundary_fraction(sampler.x[k], sampler.x_star, loc.half_width)
                for k in range(n_chains)]
    # a chain whose loss became non-finite without the sampler raising diverged at that step
    return [ChainResult(None, t, bad, seconds) if bad is not None
            else ChainResult(a / n_samples if n_samples else None, t, None, seconds, b)
            for t, a, b, bad in zip(traces, acc, boundary, first_bad, strict=True)]


def _probs_json(p: np.ndarray | None):
    return None if p is None else np.round(p, 7).tolist()


def run(cfg: RunConfig, seed: int, *, device: str = "cpu") -> dict:
    """One independent run (see the module docstring); a JSON-serializable result. ``seed`` is an
    integer in ``[0, 2**64)`` (every generator of the run is seeded with
    ``integrators.seeds.derive(seed, "bnn", <part>)``), ``device`` a torch device available here
    (``cpu``, ``cuda``, ``cuda:1``); both are checked before the data are loaded."""
    from bnn.diagnostics import hessian_norm
    from integrators.torch.chains import resolve_device

    if not isinstance(cfg, RunConfig):
        raise ValueError(f"cfg must be a RunConfig, got {type(cfg).__name__}")
    seed = seed_value(seed)
    device = resolve_device(device)
    check_run_fits(cfg, network_parameters(cfg.network, cfg.width, _smallest_input(cfg.network), 2), device,
                   "at least ")  # before the data are loaded
    torch.manual_seed(derive(seed, "bnn", "initialisation"))  # the network's initial weights
    d = load(cfg)
    data = tensors(d, cfg, device, seed)
    check_run_fits(cfg, network_parameters(cfg.network, cfg.width, data.in_shape, data.n_classes), device)
    # the training batches, Adam's and SWA's evaluation subsets and the perturbed starting points
    gen = torch.Generator(device=device).manual_seed(derive(seed, "bnn", "training"))
    net = models.build(cfg.network, width=cfg.width, in_shape=data.in_shape, n_classes=data.n_classes).to(device)
    hess_x = data.x[:cfg.hessian_batch]
    hess_y = data.y[:cfg.hessian_batch]

    def hessian(model):
        # potential estimate (N_D / n) * sum-CE over a fixed batch + prior: its Hessian's spectral norm
        scale = data.n / len(hess_x)
        t0 = time.perf_counter()
        res = hessian_norm(model, hess_x, hess_y, prior_precision=cfg.prior_precision / scale,
                           n_iter=cfg.hessian_iters, tol=1e-4, seed=derive(seed, "bnn", "hessian"))
        timings.setdefault("hessian", []).append(time.perf_counter() - t0)
        return {"value": res.value * scale, "iterations": res.iterations, "converged": res.converged}

    out = {"config": cfg.to_dict(), "seed": seed, "data": d.source, "n_train": data.n,
           "n_parameters": models.n_parameters(net), "labels": np.asarray(data.y_test).tolist(), "methods": {},
           "hessian": {}, "timings": {}, "warnings": []}
    timings: dict = {}
    if cfg.hessian_iters:
        out["hessian"]["random initialisation"] = hessian(net)
    curve = []
    if cfg.curve_every:
        curve_gen = torch.Generator(device=device).manual_seed(derive(seed, "bnn", "curve"))
        m_train = batches_per_epoch(cfg, data.n)

        def on_epoch(stage, e, model):
            last = cfg.epochs_train if stage == "Adam" else cfg.epochs_swa
            if e == 1 or e % cfg.curve_every == 0 or e == last:
                scores = bnn_metrics.evaluate(predict(model, data, cfg, curve_gen, timings=timings), data.y_test)
                steps = (e if stage == "Adam" else cfg.epochs_train + e) * m_train
                curve.append({"stage": stage, "epoch": e, "step": steps,
                              **{k: scores[k] for k in ("accuracy", "nll", "ace", "rps")}})
    else:
        on_epoch = None
    swa_net, train_losses = train(net, data, cfg, gen, timings, on_epoch=on_epoch)
    out["train_losses"] = train_losses
    if curve:
        for point in curve:  # the training loss of the same epoch
            point["train_loss"] = train_losses[point["step"] // batches_per_epoch(cfg, data.n) - 1]
        out["curve"] = curve
    for name, model in (("Adam", net), ("SWA", swa_net)):
        out["methods"][name] = {"probs": _probs_json(predict(model, data, cfg, gen, timings=timings)), "h": None,
                                "diverged": None}
    if cfg.hessian_iters:
        out["hessian"]["Adam"] = hessian(net)
        out["hessian"]["SWA"] = hessian(swa_net)
        out["hessian"]["SWA + N(0, rho^2)"] = hessian(perturbed(swa_net, cfg.rho, gen))
    chains = [(label, cfg.h) for label in cfg.samplers] + [("SMS-UBU", h) for h in cfg.h_panel if h != cfg.h]
    for k, (label, h) in enumerate(chains):
        key = label if h == cfg.h else f"{label} h={h:g}"
        settings = sampler_settings(SAMPLERS[label], cfg, h)
        if cfg.chains == 1:
            res = run_chain(swa_net, swa_net, SAMPLERS[label], data, cfg, h=settings["step"],
                            seed=derive(seed, "bnn", "sampler", label, k),
                            epochs_burn=cfg.epochs_burn, epochs_sample=cfg.epochs_sample, timings=timings,
                            control_variate=settings["control_variate"])
            out["methods"][key] = {"probs": _probs_json(res.probs), "h": h, "diverged": res.diverged,
                                   "sampler": label, "trace": res.trace, "boundary_fraction": res.boundary,
                                   **settings}
            timings.setdefault(f"{label} epoch", []).extend(res.epoch_seconds)
            continue
        results = run_chains([swa_net] * cfg.chains, swa_net, SAMPLERS[label], data, cfg, h=settings["step"],
                             seed=derive(seed, "bnn", "sampler", label, k),
                             epochs_burn=cfg.epochs_burn, epochs_sample=cfg.epochs_sample, timings=timings)
        diverged = [r.diverged for r in results if r.diverged is not None]
        probs = None if diverged else np.mean([r.probs for r in results], axis=0)
        boundary = None if diverged or results[0].boundary is None else float(np.mean([r.boundary for r in results]))
        out["methods"][key] = {"probs": _probs_json(probs), "h": h, "diverged": min(diverged) if diverged else None,
                               "sampler": label, "trace": np.mean([r.trace for r in results], axis=0).tolist(),
                               "chains": cfg.chains, "boundary_fraction": boundary, **settings}
        timings.setdefault(f"{label} epoch ({cfg.chains} chains at once)", []).extend(results[0].epoch_seconds)
    if cfg.trace_chains:
        starts = [perturbed(swa_net, cfg.rho, gen) for _ in range(cfg.trace_chains)]
        settings = sampler_settings(SAMPLERS["SMS-UBU"], cfg, cfg.h)
        out["trace_settings"] = {"sampler": "SMS-UBU", "h": cfg.h, **settings}
        if cfg.chains == 1:
            results = [run_chain(start, swa_net, SAMPLERS["SMS-UBU"], data, cfg, h=settings["step"],
                                 seed=derive(seed, "bnn", "trace", c),
                                 epochs_burn=cfg.trace_epochs, epochs_sample=0, evaluate=False,
                                 control_variate=settings["control_variate"])
                       for c, start in enumerate(starts)]
        else:
            results = run_chains(starts, swa_net, SAMPLERS["SMS-UBU"], data, cfg, h=settings["step"],
                                 seed=derive(seed, "bnn", "trace"),
                                 epochs_burn=cfg.trace_epochs, epochs_sample=0, evaluate=False)
        out["traces"] = [{"trace": res.trace, "diverged": res.diverged, "boundary_fraction": res.boundary}
                         for res in results]
        on_box = [c for c, res in enumerate(results) if res.boundary is not None and res.boundary > BOUNDARY_WARN]
        if on_box:
            out["warnings"].append(f"trace chains {on_box}: more than {BOUNDARY_WARN:.0%} of the coordinates sit on "
                                   f"the localization box's wall after sampling: the step is too large for the "
                                   f"posterior")
        timings["trace epoch"] = [t for res in results[:1 if cfg.chains > 1 else None] for t in res.epoch_seconds]
    for key, m in out["methods"].items():
        m["warnings"] = sample_warnings(m["probs"], data.y_test, m.get("boundary_fraction"))
        out["warnings"].extend(f"{key}: {w}" for w in m["warnings"])
    out["timings"] = {k: [round(s, 4) for s in v] for k, v in timings.items()}
    return out


def perturbed(net, rho: float, gen: torch.Generator):
    """A copy of ``net`` with ``N(0, rho^2)`` added to every parameter (clipped at 5 rho, so the
    copy starts inside the box of half-width ``6 rho``)."""
    out = _copy(net, net.state_dict())
    with torch.no_grad():
        for p in out.parameters():
            clip = TRACE_START_CLIP * rho
            p.add_((rho * torch.randn(p.shape, generator=gen, device=p.device)).clamp_(-clip, clip))
    return out


def with_overrides(cfg: RunConfig, **changes) -> RunConfig:
    """``cfg`` with some fields replaced (validated again)."""
    return replace(cfg, **changes)
