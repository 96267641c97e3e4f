"""The samplers of one BNN run: each chain of a sampler from the SWA point (:func:`run_chain`), or
several at once (:func:`run_chains`), their settings and step convention, and the warnings a
chain's samples raise."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from bnn._config import STEP_CONVENTIONS, TRACE_START_CLIP, RunConfig, SamplerSpec
from bnn.training import Tensors, batches_per_epoch, copy_state, predict, sum_loss
from integrators._divergence import NOT_DIVERGED
from integrators.seeds import derive

BOUNDARY_WARN = 0.01  # a healthy localized chain puts ~1e-6 of its coordinates on the box's wall, a broken one ~1/6


CHANCE_SE = 2.0  # an accuracy within this many standard errors of 1/K is at chance level


def sample_warnings(probs, labels, boundary: float | None) -> list[str]:
    """Why a predictive that did not diverge is still no estimate, one sentence per problem: more
    than :data:`BOUNDARY_WARN` of the coordinates on the box's wall, or test accuracy within
    :data:`CHANCE_SE` standard errors of chance ``1/K``."""
    from integrators.torch._posterior_terms import BOUNDARY_BAND

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


@dataclass
class ChainResult:
    """One sampler's chain: predictive mean ``probs`` (None if diverged or no sample), per-epoch
    loss ``trace``, ``diverged`` step or None, ``epoch_seconds``, and the ``boundary`` fraction on the box's wall."""

    probs: np.ndarray | None
    trace: list
    diverged: int | None
    epoch_seconds: list
    boundary: float | None = None


def sampler_settings(spec: SamplerSpec, cfg: RunConfig, h: float) -> dict:
    """What sampler ``spec`` runs with at step ``h``: ``step`` (``h``, or ``h / 2`` for UBU under the
    notebook convention), ``step_convention`` and ``control_variate``."""
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
    """The one-chain sampler for ``sconf``: :class:`integrators.torch.ModuleSampler`, or with the
    control variate :class:`bnn._control_variate.BlockReferenceSampler` (exact with batch norm)."""
    from integrators.torch import ModuleSampler

    if sconf.control_variate:
        from bnn._control_variate import BlockReferenceSampler

        return BlockReferenceSampler(net, sconf)
    return ModuleSampler(net, sconf)


def _epoch_loss(total: float, spec: SamplerSpec, data: Tensors, cfg: RunConfig, steps: int) -> float:
    """Average per-datum training loss of an epoch of ``steps`` batches from the sum of its batch
    losses (a partition's batches counted at ``N_D / N_m`` data each)."""
    per_batch = cfg.batch_size if spec.plan == "iid" else data.n / batches_per_epoch(cfg, data.n)
    return total / (steps * per_batch)


def panel_steps_per_epoch(cfg: RunConfig, n: int, h: float) -> int:
    """The steps of one epoch of a step-size panel chain at ``h``: ``round(N_m cfg.h / h)`` (at least 1).

    Every step size then integrates for the same time ``(epochs_burn + epochs_sample) N_m cfg.h`` and
    samples at the same times, so the panel measures the discretization's bias, not a shorter trajectory."""
    return max(1, round(batches_per_epoch(cfg, n) * cfg.h / h))


def run_chain(start_net, x_star_net, spec: SamplerSpec, data: Tensors, cfg: RunConfig, *, h: float, seed: int,
              epochs_burn: int, epochs_sample: int, evaluate: bool = True,
              timings: dict | None = None, control_variate: bool = False,
              steps_per_epoch: int | None = None) -> ChainResult:
    """One chain of ``spec`` from ``start_net``'s weights (copied), localized around ``x_star_net``'s,
    as a :class:`ChainResult` (diverged at the first non-finite batch loss or where the sampler raised).
    ``steps_per_epoch`` None means one pass over the data (:func:`panel_steps_per_epoch` for panels)."""
    from integrators.torch import SamplerDiverged
    from integrators.torch._divergence import mark_divergence

    net = copy_state(start_net, start_net.state_dict())
    net.train()
    m = batches_per_epoch(cfg, data.n) if steps_per_epoch is None else steps_per_epoch
    sconf = _sampler_config(spec, x_star_net, data, cfg, h=h, seed=seed, n_steps=(epochs_burn + epochs_sample) * m,
                            control_variate=control_variate)
    sampler = module_sampler(net, sconf)
    loss_fn = sum_loss(data)
    gen = torch.Generator(device=data.x.device).manual_seed(derive(seed, "bnn", "evaluation"))
    trace, seconds, acc, n_samples = [], [], None, 0
    bad_at = torch.full((), NOT_DIVERGED)  # the first step whose batch loss was not finite (the chain diverged)
    try:
        for e in range(epochs_burn + epochs_sample):
            t0 = time.perf_counter()
            total = 0.0
            for _ in range(m):
                info = sampler.step(loss_fn)
                loss_host = info.loss.detach().double().cpu()
                mark_divergence(bad_at, info.step, loss_host)
                total += float(loss_host)
            sampler.check_finite()
            if data.x.is_cuda:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t0)
            trace.append(_epoch_loss(total, spec, data, cfg, m))
            if evaluate and e >= epochs_burn:
                p = predict(net, data, cfg, gen, timings=timings)
                acc = p if acc is None else acc + p
                n_samples += 1
    except SamplerDiverged as exc:  # (seen at an epoch's end: a non-finite loss may have come first)
        first_bad = _first_steps(bad_at)[0]
        return ChainResult(None, trace, exc.step if first_bad is None else min(first_bad, exc.step), seconds)
    first_bad = _first_steps(bad_at)[0]
    if first_bad is not None:  # a non-finite loss the sampler did not raise on: diverged at that step
        return ChainResult(None, trace, first_bad, seconds)
    return ChainResult(acc / n_samples if n_samples else None, trace, None, seconds, sampler.boundary_fraction())


def _first_steps(bad_at: torch.Tensor) -> list:
    """The steps :func:`integrators.torch._divergence.mark_divergence` recorded, per chain (None: none)."""
    return [None if step == NOT_DIVERGED else step for step in bad_at.reshape(-1).tolist()]


def run_chains(starts: list, x_star_net, spec: SamplerSpec, data: Tensors, cfg: RunConfig, *, h: float, seed: int,
               epochs_burn: int, epochs_sample: int, evaluate: bool = True,
               timings: dict | None = None, steps_per_epoch: int | None = None) -> list[ChainResult]:
    """``len(starts)`` chains of ``spec`` at once through the torch samplers' multi-chain mode
    (:class:`integrators.torch._ensemble.EnsembleSampler`: one ``vmap`` over the stacked
    parameters, several chains per device). Chain ``k`` starts from ``starts[k]``'s weights and
    draws its velocity, path, batches and evaluation subsets as
    ``run_chain(starts[k], ..., seed=chain_seed(seed, k))`` does, so it follows the same
    trajectory up to rounding. A divergence stops every chain (each is reported diverged at that
    step, or at its first non-finite loss where that came earlier); ``epoch_seconds`` are those of
    the whole ensemble.

    Parameters
    ----------
    starts : list of torch.nn.Module
        The starting networks, one per chain.
    x_star_net : torch.nn.Module
        The SWA network ``x*``: the localization's centre (and the control variate's point).
    spec : SamplerSpec
        The sampler.
    data : Tensors
        The run's data on its device.
    cfg : RunConfig
        The run's configuration.
    h : float
        The scheme's step.
    seed : int
        The chain's seed (its velocity, path, batches and evaluation subsets).
    epochs_burn, epochs_sample : int
        Burn-in epochs, then sampling epochs each ending with one sample.
    evaluate : bool
        Whether the samples' test predictive is computed (False: the trace only).
    timings : dict or None
        Wall times, appended to by kind.
    steps_per_epoch : int or None
        The steps of one epoch (None: one pass over the data), as in :func:`run_chain`.

    Returns
    -------
    list of ChainResult
        One per chain, in the order of ``starts``.

    Raises
    ------
    ValueError
        If ``starts`` is empty.
    """
    from integrators.torch import SamplerDiverged
    from integrators.torch._divergence import mark_divergence
    from integrators.torch._ensemble import EnsembleSampler, chain_seed
    from integrators.torch._posterior_terms import boundary_fraction

    if not starts:
        raise ValueError("run_chains needs at least one starting network")
    n_chains = len(starts)
    m = batches_per_epoch(cfg, data.n) if steps_per_epoch is None else steps_per_epoch
    sconf = _sampler_config(spec, x_star_net, data, cfg, h=h, seed=seed, n_steps=(epochs_burn + epochs_sample) * m)
    x0 = torch.stack([torch.nn.utils.parameters_to_vector(s.parameters()).detach() for s in starts])
    sampler = EnsembleSampler(starts[0], sconf, n_chains, x0=x0)
    view = copy_state(starts[0], starts[0].state_dict())  # a network to evaluate each chain's parameters in
    loss_fn = sum_loss(data)
    # chain k's evaluation subsets: those of run_chain(..., seed=chain_seed(seed, k))
    gens = [torch.Generator(device=data.x.device).manual_seed(derive(chain_seed(sconf.seed, k), "bnn", "evaluation"))
            for k in range(n_chains)]
    traces, seconds, acc, n_samples = [[] for _ in range(n_chains)], [], [None] * n_chains, 0
    bad_at = torch.full((n_chains,), NOT_DIVERGED)  # per chain, the first step whose batch loss was not finite
    try:
        for e in range(epochs_burn + epochs_sample):
            t0 = time.perf_counter()
            total = torch.zeros(n_chains, dtype=torch.float64)
            for _ in range(m):
                step = sampler.step(loss_fn)
                losses = sampler.last_loss.double().cpu()
                mark_divergence(bad_at, step, losses)
                total += losses
            if data.x.is_cuda:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - t0)
            for k in range(n_chains):
                traces[k].append(_epoch_loss(float(total[k]), spec, data, cfg, m))
            if evaluate and e >= epochs_burn:
                for k in range(n_chains):
                    with torch.no_grad():
                        torch.nn.utils.vector_to_parameters(sampler.x[k], view.parameters())
                    p = predict(view, data, cfg, gens[k], timings=timings)
                    acc[k] = p if acc[k] is None else acc[k] + p
                n_samples += 1
    except SamplerDiverged as exc:
        return [ChainResult(None, t, exc.step if bad is None else min(bad, exc.step), seconds)
                for t, bad in zip(traces, _first_steps(bad_at), strict=True)]
    first_bad = _first_steps(bad_at)
    loc = sconf.localization
    boundary = [None if loc is None else boundary_fraction(sampler.x[k], sampler.x_star, loc.half_width)
                for k in range(n_chains)]
    # a chain whose loss became non-finite without the sampler raising diverged at that step
    return [ChainResult(None, t, bad, seconds) if bad is not None
            else ChainResult(a / n_samples if n_samples else None, t, None, seconds, b)
            for t, a, b, bad in zip(traces, acc, boundary, first_bad, strict=True)]


def perturbed(net, rho: float, gen: torch.Generator):
    """A copy of ``net`` with ``N(0, rho^2)`` added to every parameter, clipped at 5 rho
    (:data:`bnn._config.TRACE_START_CLIP`) so it starts inside the localization box."""
    out = copy_state(net, net.state_dict())
    with torch.no_grad():
        for p in out.parameters():
            clip = TRACE_START_CLIP * rho
            p.add_((rho * torch.randn(p.shape, generator=gen, device=p.device)).clamp_(-clip, clip))
    return out
