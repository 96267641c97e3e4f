"""The torch backend's one divergence detector, :func:`mark_divergence`, called by every loop on
tensors: chains mode's observers (:mod:`integrators.torch._chains`, with the run's bound), module
mode and the ensembles (:mod:`integrators.torch._posterior_terms`, no bound) and the BNN chains
(:mod:`bnn._chains`, on their batch losses).  The Numba kernel's counterpart is
:func:`integrators._kernel.mark_diverged`; the policy is :mod:`integrators._divergence`."""

from __future__ import annotations

import torch

from integrators._divergence import NOT_DIVERGED


def mark_divergence(diverged_at: torch.Tensor, step, *values: torch.Tensor, bound: float | None = None) -> None:
    """Record ``step`` in place in ``diverged_at`` (int64, per-chain shape ``S``) for every chain not yet marked
    where one of ``values`` (shape ``S + ...``) is not finite or exceeds ``bound``; branch-free, nothing read
    back to the host, so it runs every step (and under ``torch.compile``)."""
    flat = [value.reshape(*diverged_at.shape, -1) for value in values]
    if bound is None:
        finite = torch.isfinite(flat[0]).all(-1)
        for value in flat[1:]:
            finite = finite & torch.isfinite(value).all(-1)
        bad = ~finite
    else:
        size = flat[0].abs().amax(-1)
        for value in flat[1:]:
            size = torch.maximum(size, value.abs().amax(-1))  # NaN propagates
        bad = ~(size <= bound)  # NaN compares False: beyond every bound
    diverged_at.copy_(torch.where(bad & (diverged_at == NOT_DIVERGED), step, diverged_at))
