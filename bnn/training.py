"""Data and optimizer of one BNN run: the data sets a configuration names (:data:`DATASETS`, read
from local files or embedded), the tensors on the device, the potential's terms, the predictive, and
Adam followed by SWA (:func:`train`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

import data_sets as datasets
from bnn import models
from bnn._augment import augment
from bnn._config import DATASETS, RunConfig
from integrators.seeds import derive


def load(cfg: RunConfig) -> datasets.ImageData:
    """The data set ``cfg`` names, split (``stratified_test``) and cut (``n_train``, ``n_test``) as it says.

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration.

    Returns
    -------
    data_sets.ImageData
        The images, on the host.

    Raises
    ------
    ValueError
        If the data set is read from local files and ``cfg`` gives no ``data_path``.
    """
    d = DATASETS[cfg.dataset](cfg)
    if cfg.stratified_test is not None:
        d = d.stratified(cfg.stratified_test, seed=0)
    if cfg.n_train or cfg.n_test:
        d = d.subset(cfg.n_train, cfg.n_test)
    return d


@dataclass
class Tensors:
    """The run's data on its device (the training set possibly extended by fixed augmented copies).

    Attributes
    ----------
    x, y : torch.Tensor
        The training images and labels.
    x_test : torch.Tensor
        The test images.
    y_test : numpy.ndarray
        The test labels.
    n_classes : int
        The classes ``K``.
    in_shape : tuple
        An image's ``(channels, height, width)``.
    """

    x: torch.Tensor
    y: torch.Tensor
    x_test: torch.Tensor
    y_test: np.ndarray
    n_classes: int
    in_shape: tuple

    @property
    def n(self) -> int:
        """The number of training images ``N_D`` (augmented copies included)."""
        return self.x.shape[0]


def tensors(d: datasets.ImageData, cfg: RunConfig, device, seed: int) -> Tensors:
    """The data on ``device``, the training set extended by ``cfg.augment_copies`` augmented copies.

    Parameters
    ----------
    d : data_sets.ImageData
        The data set (:func:`load`).
    cfg : RunConfig
        The run's configuration.
    device : str or torch.device
        The run's device.
    seed : int
        The run's seed (the augmentation's generator is derived from it).

    Returns
    -------
    Tensors
        The tensors.
    """
    x = torch.from_numpy(d.x_train).to(device)
    y = torch.from_numpy(d.y_train).to(device)
    if cfg.augment_copies:
        gen = torch.Generator(device=device).manual_seed(derive(seed, "bnn", "augmentation"))
        x = torch.cat([x] + [augment(x, gen) for _ in range(cfg.augment_copies)])
        y = y.repeat(cfg.augment_copies + 1)
    return Tensors(x, y, torch.from_numpy(d.x_test).to(device), d.y_test, d.n_classes, d.in_shape)


def sum_loss(data: Tensors):
    """The samplers' batch loss.

    Parameters
    ----------
    data : Tensors
        The run's data on its device.

    Returns
    -------
    callable
        ``loss_fn(net, idx)``: summed cross-entropy over the training images ``idx`` (BatchNorm on them).
    """
    return lambda net, idx: F.cross_entropy(net(data.x[idx]), data.y[idx], reduction="sum")


def prior_term(net, precision: float) -> torch.Tensor:
    """The prior's potential ``precision |weights|^2 / 2`` over the parameters the prior covers
    (:func:`bnn.models.prior_mask_names`), as a differentiable scalar."""
    names = set(models.prior_mask_names(net))
    return 0.5 * precision * sum((p**2).sum() for n, p in net.named_parameters() if n in names)


@torch.no_grad()
def predict(net, data: Tensors, cfg: RunConfig, gen: torch.Generator, *, chunk: int = 1000,
            timings: dict | None = None) -> np.ndarray:
    """Test-set predictive probabilities.

    BatchNorm statistics from one training-mode pass over ``n_eval_batches * batch_size`` random
    training images, then evaluation mode.

    Parameters
    ----------
    net : torch.nn.Module
        The network (left in training mode).
    data : Tensors
        The run's data on its device.
    cfg : RunConfig
        The run's configuration.
    gen : torch.Generator
        Draws the training images of the BatchNorm pass.
    chunk : int
        Test images per forward pass.
    timings : dict or None
        Wall times, appended to under ``predict``.

    Returns
    -------
    numpy.ndarray
        ``(n_test, K)`` float64 probabilities.
    """
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
    """The batches of an epoch: ``ceil(n / batch_size)``.

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration.
    n : int
        Training images.

    Returns
    -------
    int
        The number of batches.
    """
    return math.ceil(n / cfg.batch_size)


def check_batches(cfg: RunConfig, n: int) -> None:
    """Refuse a training set whose last batch would hold one image, naming ``batch_size`` and ``n_train``.

    Every network normalizes each batch by its own statistics (batch normalization, ``momentum=1.0``), which
    a batch of one cannot give; the batch is not dropped, since a sweep over the partition must visit every
    datum for its average force to be the full gradient (the samplers' potential sums all ``n`` terms).

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration.
    n : int
        Training images (after augmentation).

    Raises
    ------
    ValueError
        If ``n % batch_size == 1`` (``n = 1`` included).
    """
    if n % cfg.batch_size != 1:
        return
    bs, copies = cfg.batch_size, f", {cfg.augment_copies} augmented copies" if cfg.augment_copies else ""
    last = "a batch of one image" if n == 1 else f"a last batch of one image ({n // bs} of {bs}, then 1)"
    raise ValueError(f"batch_size={bs} with {n} training image{'s' if n > 1 else ''} (n_train={cfg.n_train!r}{copies}) "
                     f"leaves {last}: batch normalization needs two or more images per batch; choose batch_size or "
                     f"n_train so that the training images modulo batch_size are not 1")


LR_SCHEDULES = ("per_step", "per_epoch")  # how Adam's polynomial decay is stepped (train's ``schedule``)


def train(net, data: Tensors, cfg: RunConfig, gen: torch.Generator, timings: dict, *, on_epoch=None,
          schedule: str = "per_step"):
    """Adam with polynomial decay (power 1), then SWA at a constant rate; returns the SWA network
    (a copy) and the per-epoch average training loss.

    ``schedule="per_step"`` (the annealed baseline) decays the rate after every batch, to 0 at the
    end of the ``epochs_train`` epochs; ``"per_epoch"`` (the paper's baseline, as the authors'
    code steps ``PolynomialLR`` once per epoch) holds ``lr_adam (1 - e / epochs_train)`` through
    epoch ``e + 1``, so the last epoch still runs at ``lr_adam / epochs_train``.
    ``on_epoch(stage, epoch, model)``, if given, is called after each epoch (``stage`` ``"Adam"``
    or ``"SWA"``, ``epoch`` counted from 1 within the stage, ``model`` the network or, during SWA,
    the average so far); it must not change them.

    The batch objective is ``mean cross-entropy + prior_precision |weights|^2 / (2 N_D)``.

    Parameters
    ----------
    net : torch.nn.Module
        The network, trained in place and left at Adam's final weights.
    data : Tensors
        The run's data on its device.
    cfg : RunConfig
        The run's configuration.
    gen : torch.Generator
        Draws the batches.
    timings : dict
        Wall times, appended to under ``adam`` and ``swa``.
    on_epoch : callable or None
        ``on_epoch(stage, epoch, model)``.
    schedule : {"per_step", "per_epoch"}
        When the decay steps (:data:`LR_SCHEDULES`).

    Returns
    -------
    swa_net : torch.nn.Module
        The SWA network ``x*`` (a copy; Adam's network when ``epochs_swa`` is 0).
    losses : list of float
        The per-epoch average training cross-entropy.

    Raises
    ------
    ValueError
        If ``schedule`` is not one of :data:`LR_SCHEDULES`.
    """
    from torch.optim.swa_utils import AveragedModel

    if schedule not in LR_SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(map(repr, LR_SCHEDULES))}, got {schedule!r}")
    per_step = schedule == "per_step"
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr_adam)
    m = batches_per_epoch(cfg, data.n)
    sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=max(1, cfg.epochs_train * (m if per_step else 1)),
                                                  power=1.0)
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
            if stage == "adam" and per_step:
                sched.step()
            total += float(ce.detach()) * len(idx)
        if data.x.is_cuda:
            torch.cuda.synchronize()
        if stage == "adam" and not per_step:
            sched.step()
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
    swa_net = copy_state(net, {n: p for n, p in swa_net.state_dict().items()})
    net.load_state_dict(adam_state)
    return swa_net, losses


def copy_state(net, state):
    """A deep copy of ``net`` (left as it is) holding the parameters and buffers of the state dict ``state``."""
    import copy

    out = copy.deepcopy(net)
    out.load_state_dict(state)
    return out

__all__ = ["Tensors", "batches_per_epoch", "load", "predict", "sum_loss", "tensors", "train"]
