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

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, jvp

from bnn.models import prior_mask_names
from integrators._validation import int_at_least, positive_float


@dataclass(frozen=True)
class PowerIteration:
    """Estimate ``value`` of ``|H|_2`` (a lower bound when not converged) after ``iterations`` steps;
    ``converged`` when both tests of :func:`power_iteration` passed."""

    value: float
    iterations: int
    converged: bool


def power_iteration(hvp: Callable[[torch.Tensor], torch.Tensor], dim: int, *, n_iter: int = 100, tol: float = 1e-6,
                    seed: int = 0, dtype=torch.float64, device="cpu") -> PowerIteration:
    """Largest |eigenvalue| of the symmetric operator ``hvp`` on ``R^dim`` by power iteration.

    Converged means both: the Rayleigh quotient ``r = u^T H u`` changed by at most ``tol |r|``, and
    ``|H u| - |r| <= tol |H u|``.  The second is needed: with eigenvalues ``+-lambda`` the iterate flips
    and ``r = lambda (a^2 - b^2)`` stands still below ``lambda``; ``|r| <= |H u|`` with equality only for
    an eigenvector.  Such an operator is reported unconverged with the lower bound ``|H u|``."""
    dim = int_at_least("dim", dim, 1)
    n_iter = int_at_least("n_iter", n_iter, 1)
    tol = positive_float("tol", tol)
    seed = int_at_least("seed", seed, 0)
    gen = torch.Generator(device=device).manual_seed(seed)
    u = torch.randn(dim, generator=gen, dtype=dtype, device=device)
    u /= u.norm()
    previous = None
    for k in range(1, n_iter + 1):
        w = hvp(u)
        rayleigh = float(torch.dot(u, w))
        norm = float(w.norm())
        if not np.isfinite(norm) or norm == 0:
            return PowerIteration(abs(rayleigh), k, norm == 0)
        u = w / norm
        steady = previous is not None and abs(rayleigh - previous) <= tol * abs(rayleigh)
        if steady and norm - abs(rayleigh) <= tol * norm:
            return PowerIteration(abs(rayleigh), k, True)
        previous = rayleigh
    # not converged: |H u| >= |u^T H u| is the better lower bound of |H|_2 (it is |H|_2 for the flip)
    return PowerIteration(max(abs(rayleigh), norm), n_iter, False)


def potential_fn(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, prior_precision: float = 1.0):
    """``(f, x0)``: the summed cross-entropy over ``(x, y)`` plus ``prior_precision / 2 |weights|^2``
    as a function of one flat parameter vector, and the model's current parameters, flattened."""
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
    """``|H|_2`` of the potential (:func:`potential_fn`) at the model's weights, BatchNorm on this
    batch (a copy of the model, nothing mutated); ``ValueError`` for out-of-range arguments or labels."""
    import copy

    from torch.func import replace_all_batch_norm_modules_

    if isinstance(prior_precision, bool) or not isinstance(prior_precision, numbers.Real) or not (
            math.isfinite(prior_precision) and prior_precision >= 0):
        raise ValueError(f"prior_precision must be a finite number >= 0, got {prior_precision!r}")
    int_at_least("n_iter", n_iter, 1)
    positive_float("tol", tol)
    int_at_least("seed", seed, 0)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(x, torch.Tensor) or x.ndim < 1 or x.shape[0] < 1:
        raise ValueError(f"x must be a torch tensor of at least one image, got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    if not isinstance(y, torch.Tensor) or y.shape != (x.shape[0],):
        raise ValueError(f"y must be a torch tensor of {x.shape[0]} labels (one per image of x), got "
                         f"{tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise ValueError(f"y must hold integer class indices, got dtype {y.dtype}")
    y = y.long()  # the cross-entropy wants int64 class indices
    frozen = replace_all_batch_norm_modules_(copy.deepcopy(model)).train()
    n_classes = getattr(model, "n_classes", None)
    if not isinstance(n_classes, int):
        with torch.no_grad():
            n_classes = frozen(x[:2] if x.shape[0] > 1 else x).shape[-1]  # (BatchNorm needs 2 in training)
    if int(y.min()) < 0 or int(y.max()) >= n_classes:
        raise ValueError(f"y (labels) must lie in [0, {n_classes}) for this model's {n_classes} classes, "
                         f"found {int(y.min())}..{int(y.max())}")
    f, x0 = potential_fn(frozen, x, y, prior_precision=prior_precision)
    g = grad(f)
    return power_iteration(lambda u: jvp(g, (x0,), (u.to(x0.dtype),))[1], x0.numel(), n_iter=n_iter, tol=tol,
                           seed=seed, dtype=x0.dtype, device=x0.device)


def trace_rhat(traces) -> dict:
    """Classic and rank-normalised split R-hat of ``traces`` ``(n_chains >= 2, n_draws >= 4)``, as
    ``{"rhat", "rank_split_rhat"}`` (:data:`bnn._metrics.RHAT_MIXED`: the mixing bar)."""
    from integrators._diagnostics import gelman_rubin_rhat, rank_normalized_split_rhat

    traces = np.asarray(traces, dtype=float)
    if traces.ndim != 2 or traces.shape[0] < 2 or traces.shape[1] < 4:
        raise ValueError(f"traces must be (n_chains >= 2, n_draws >= 4), got shape {traces.shape}")
    return {"rhat": float(gelman_rubin_rhat(traces)), "rank_split_rhat": float(rank_normalized_split_rhat(traces))}
