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
   the samples' predictive probabilities. The step-size panel (``h_panel``) runs SMS-UBU at other
   step sizes for the same integration time: an epoch of ``round(N_m h / h_panel)`` steps
   (:func:`bnn._chains.panel_steps_per_epoch`), the same number of epochs and samples.

With ``curve_every``, Adam's network and the SWA average are also scored on the test set along
training (the run's ``curve``), from a generator of their own so the networks trained are those
of the same run without it. With ``paper_baseline``, the paper's Adam (15 epochs, the decay
stepped per epoch, the last epoch's network) and SWA from it are trained from the same initial
network and scored too (``Adam (paper)``, ``SWA (paper)``; the samplers start from the annealed
SWA point). ``step_convention`` and ``control_variate`` select the authors'
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

import time

import numpy as np
import torch

from bnn import _metrics as bnn_metrics
from bnn import models
from bnn._chains import (
    BOUNDARY_WARN,
    panel_steps_per_epoch,
    perturbed,
    run_chain,
    run_chains,
    sample_warnings,
    sampler_settings,
)
from bnn._config import (
    PAPER_REFERENCE,
    SAMPLERS,
    RunConfig,
    count_text,
    network_parameters,
    smallest_input,
    with_overrides,
)
from bnn.training import (
    Tensors,
    batches_per_epoch,
    check_batches,
    copy_state,
    load,
    predict,
    tensors,
    train,
)
from experiments.bnn._curves import CURVE_METRICS
from integrators._memory import check_fits, device_memory_bytes
from integrators._validation import seed_value
from integrators.seeds import derive

# Parameter-sized tensors a run keeps besides its samplers': the network and its gradient, Adam's
# two moments, the SWA average and the SWA copy, the saved Adam state and x*.
PIPELINE_BUFFERS = 8


def run_bytes(cfg: RunConfig, n_params: float) -> float:
    """Bytes a run of ``cfg`` keeps for a network of ``n_params`` parameters."""
    from integrators.torch._config import SAMPLER_BUFFERS

    at_once = max(cfg.chains, cfg.trace_chains) if cfg.chains > 1 else 1
    return n_params * (PIPELINE_BUFFERS + cfg.trace_chains + SAMPLER_BUFFERS * at_once) \
        * torch.get_default_dtype().itemsize


def resolve_chains(cfg: RunConfig, n_params: float, device) -> RunConfig:
    """``cfg`` with ``chains="auto"`` resolved: on CUDA without the control variate the most chains, at most
    ``AUTO_CHAINS_CAP``, whose run (:func:`run_bytes`) fits in ``AUTO_CHAINS_SHARE`` of the device's free
    memory (:mod:`integrators.torch._config`, the ensembles' rule); 1 elsewhere."""
    from integrators.torch._config import AUTO_CHAINS_CAP, AUTO_CHAINS_SHARE

    if cfg.chains != "auto":
        return cfg
    if torch.device(device).type != "cuda" or cfg.control_variate or any(SAMPLERS[s].notebook for s in cfg.samplers):
        return with_overrides(cfg, chains=1)
    free = device_memory_bytes(device)
    fitting = [k for k in range(1, AUTO_CHAINS_CAP + 1)
               if free is None or run_bytes(with_overrides(cfg, chains=k), n_params) <= AUTO_CHAINS_SHARE * free]
    return with_overrides(cfg, chains=max(fitting, default=1))


def check_run_fits(cfg: RunConfig, n_params: float, device, what: str = "") -> None:
    """Refuse (``ValueError`` naming ``width``) a run whose buffers exceed ``device``'s memory."""
    check_fits(f"network={cfg.network!r} at width={cfg.width!r} ({count_text(n_params, what)}) with "
               f"chains={cfg.chains} and trace_chains={cfg.trace_chains} on {device}", run_bytes(cfg, n_params),
               limit=device_memory_bytes(device))


def _probs_json(p: np.ndarray | None):
    return None if p is None else np.round(p, 7).tolist()


def _paper_baseline(net, data: Tensors, cfg: RunConfig, seed: int, methods: dict, timings: dict) -> list:
    """The paper's baseline from ``net`` (trained in place, own generator): Adam for ``paper_epochs_train``
    epochs then ``paper_epochs_swa`` SWA epochs; adds ``Adam (paper)`` and ``SWA (paper)`` to ``methods``
    and returns the per-epoch training losses."""
    gen = torch.Generator(device=data.x.device).manual_seed(derive(seed, "bnn", "paper baseline"))
    paper = with_overrides(cfg, epochs_train=cfg.paper_epochs_train, epochs_swa=cfg.paper_epochs_swa)
    own: dict = {}
    swa_net, losses = train(net, data, paper, gen, own, schedule="per_epoch")
    for stage, seconds in own.items():
        timings[f"paper {stage}"] = seconds
    for name, model in zip(PAPER_REFERENCE, (net, swa_net), strict=True):
        methods[name] = {"probs": _probs_json(predict(model, data, cfg, gen, timings=timings)), "h": None,
                         "diverged": None}
    return losses


def run(cfg: RunConfig, seed: int, *, device: str = "cpu") -> dict:
    """One independent run (see the module docstring).

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration.
    seed : int
        An integer in ``[0, 2**64)`` (every generator of the run is seeded with
        ``integrators.seeds.derive(seed, "bnn", <part>)``).
    device : str
        A torch device available here (``cpu``, ``cuda``, ``cuda:1``).

    Returns
    -------
    dict
        JSON-serializable: the configuration, seed, data, training losses, per method (Adam, SWA,
        each sampler) its predictive, step and divergence, the traces, Hessian norms, timings and
        warnings.

    Raises
    ------
    ValueError
        If ``cfg`` is not a :class:`RunConfig`, ``seed`` or ``device`` is invalid (both checked
        before the data are loaded), the training images leave a last batch of one (checked once
        they are loaded, before training: :func:`bnn.training.check_batches`), or the run's buffers
        exceed the device's memory.
    """
    from bnn._diagnostics import hessian_norm
    from integrators.torch._chains import resolve_device

    if not isinstance(cfg, RunConfig):
        raise ValueError(f"cfg must be a RunConfig, got {type(cfg).__name__}")
    seed = seed_value(seed)
    device = resolve_device(device)
    at_least = network_parameters(cfg.network, cfg.width, smallest_input(cfg.network), 2)
    cfg = resolve_chains(cfg, at_least, device)
    check_run_fits(cfg, at_least, device, "at least ")  # before the data are loaded
    torch.manual_seed(derive(seed, "bnn", "initialisation"))  # the network's initial weights
    d = load(cfg)
    data = tensors(d, cfg, device, seed)
    check_batches(cfg, data.n)  # the first point the count is known (n_train may exceed the split), before training
    check_run_fits(cfg, network_parameters(cfg.network, cfg.width, data.in_shape, data.n_classes), device)
    # the training batches, Adam's and SWA's evaluation subsets and the perturbed starting points
    gen = torch.Generator(device=device).manual_seed(derive(seed, "bnn", "training"))
    net = models.build(cfg.network, width=cfg.width, in_shape=data.in_shape, n_classes=data.n_classes).to(device)
    initial = copy_state(net, net.state_dict()) if cfg.paper_baseline else None  # the paper baseline's start
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
                              **{k: scores[k] for k in CURVE_METRICS}})
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
    if initial is not None:
        out["paper_train_losses"] = _paper_baseline(initial, data, cfg, seed, out["methods"], timings)
    if cfg.hessian_iters:
        out["hessian"]["Adam"] = hessian(net)
        out["hessian"]["SWA"] = hessian(swa_net)
        out["hessian"]["SWA + N(0, rho^2)"] = hessian(perturbed(swa_net, cfg.rho, gen))
    chains = [(label, cfg.h) for label in cfg.samplers] + [("SMS-UBU", h) for h in cfg.h_panel if h != cfg.h]
    m_data = batches_per_epoch(cfg, data.n)
    for k, (label, h) in enumerate(chains):
        key = label if h == cfg.h else f"{label} h={h:g}"
        settings = sampler_settings(SAMPLERS[label], cfg, h)
        # the panel's chains integrate for the main chains' time: more steps per epoch at a smaller h
        steps = m_data if h == cfg.h else panel_steps_per_epoch(cfg, data.n, h)
        settings["steps_per_epoch"] = steps
        settings["time"] = (cfg.epochs_burn + cfg.epochs_sample) * steps * settings["step"]
        if cfg.chains == 1:
            res = run_chain(swa_net, swa_net, SAMPLERS[label], data, cfg, h=settings["step"],
                            seed=derive(seed, "bnn", "sampler", label, k),
                            epochs_burn=cfg.epochs_burn, epochs_sample=cfg.epochs_sample, timings=timings,
                            control_variate=settings["control_variate"], steps_per_epoch=steps)
            out["methods"][key] = {"probs": _probs_json(res.probs), "h": h, "diverged": res.diverged,
                                   "sampler": label, "trace": res.trace, "boundary_fraction": res.boundary,
                                   **settings}
            timings.setdefault(f"{label} epoch", []).extend(res.epoch_seconds)
            continue
        results = run_chains([swa_net] * cfg.chains, swa_net, SAMPLERS[label], data, cfg, h=settings["step"],
                             seed=derive(seed, "bnn", "sampler", label, k),
                             epochs_burn=cfg.epochs_burn, epochs_sample=cfg.epochs_sample, timings=timings,
                             steps_per_epoch=steps)
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
