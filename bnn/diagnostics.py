"""Diagnostics of the networks: the Hessian's spectral norm and R-hat of training-loss traces.

Hessian spectral norm (the supplement's Hessian figure): power iteration
``u_{k+1} = H u_k / |H u_k|`` on Hessian-vector products computed forward-over-reverse with
``torch.func`` (``jvp`` of ``grad``), never forming ``H``. The Rayleigh quotient ``u^T H u`` tends
to the eigenvalue of largest modulus ``lambda`` (for a start vector not orthogonal to its
eigenvector) at the rate ``(|lambda_2| / |lambda|)^{2k}``; ``|lambda| = |H|_2``. The potential is the
one the samplers see: summed cross-entropy over the given images plus the Gaussian prior
(precision ``prior_precision`` on weights, not biases), with BatchNorm on the current batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, jvp

from bnn.models import prior_mask_names


@dataclass(frozen=True)
class PowerIteration:
    """Estimate ``value`` of ``|H|_2`` after ``iterations`` steps; ``converged`` when the relative
    change of the Rayleigh quotient fell below the tolerance."""

    value: float
    iterations: int
    converged: bool


def power_iteration(hvp: Callable[[torch.Tensor], torch.Tensor], dim: int, *, n_iter: int = 100, tol: float = 1e-6,
                    seed: int = 0, dtype=torch.float64, device="cpu") -> PowerIteration:
    """Largest |eigenvalue| of the symmetric operator ``hvp`` on ``R^dim`` by power iteration."""
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    gen = torch.Generator(device=device).manual_seed(seed)
    u = torch.randn(dim, generator=gen, dtype=dtype, device=device)
    u /= u.norm()
    previous = None
    for k in range(1, n_iter + 1):
        w = hvp(u)
        rayleigh = float(torch.dot(u, w))
        norm = w.norm()
        if not torch.isfinite(norm) or norm == 0:
            return PowerIteration(abs(rayleigh), k, bool(norm == 0))
        u = w / norm
        if previous is not None and abs(rayleigh - previous) <= tol * abs(rayleigh):
            return PowerIteration(abs(rayleigh), k, True)
        previous = rayleigh
    return PowerIteration(abs(rayleigh), n_iter, False)


def potential_fn(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, prior_precision: float = 1.0):
    """``(flat_params, unflatten)``-style pair: a function of one flat parameter vector giving the
    summed cross-entropy over ``(x, y)`` plus ``prior_precision / 2 |weights|^2``, and the start
    vector (the model's current parameters, flattened)."""
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    prior = set(prior_mask_names(model))
    buffers = dict(model.named_buffers())

    def f(flat):
        params = {n: t.view(s) for n, t, s in zip(names, torch.split(flat, sizes), shapes, strict=True)}
        logits = functional_call(model, (params, buffers), (x,))
        nll = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
        return nll + 0.5 * prior_precision * sum((params[n] ** 2).sum() for n in names if n in prior)

    x0 = torch.cat([p.detach().reshape(-1) for _, p in model.named_parameters()])
    return f, x0


def hessian_norm(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, prior_precision: float = 1.0,
                 n_iter: int = 100, tol: float = 1e-6, seed: int = 0) -> PowerIteration:
    """``|H|_2`` of the potential (:func:`potential_fn`) at the model's current weights, with
    BatchNorm on this batch (training mode; a copy of the model without running statistics, so
    nothing is mutated under the ``torch.func`` transforms)."""
    import copy

    from torch.func import replace_all_batch_norm_modules_

    frozen = replace_all_batch_norm_modules_(copy.deepcopy(model)).train()
    f, x0 = potential_fn(frozen, x, y, prior_precision=prior_precision)
    g = grad(f)
    return power_iteration(lambda u: jvp(g, (x0,), (u.to(x0.dtype),))[1], x0.numel(), n_iter=n_iter, tol=tol,
                           seed=seed, dtype=x0.dtype, device=x0.device)


def trace_rhat(traces) -> dict:
    """Classic and rank-normalised split R-hat of ``traces`` ``(n_chains, n_draws)`` (the average
    training loss per chain and epoch), from :mod:`integrators.diagnostics`."""
    from integrators.diagnostics import gelman_rubin_rhat, rank_normalized_split_rhat

    traces = np.asarray(traces, dtype=float)
    if traces.ndim != 2 or traces.shape[0] < 2 or traces.shape[1] < 4:
        raise ValueError(f"traces must be (n_chains >= 2, n_draws >= 4), got shape {traces.shape}")
    return {"rhat": float(gelman_rubin_rhat(traces)), "rank_split_rhat": float(rank_normalized_split_rhat(traces))}
