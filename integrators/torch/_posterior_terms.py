"""The parts of a module-mode posterior that do not come from the data, shared by the sampler
(:class:`integrators.torch.ModuleSampler`) and the ensembles (:mod:`integrators.torch._ensemble`): the prior,
the localization and its box (:func:`quadratic_terms`), a chain's random sources
(:func:`chain_streams`), and the checks of starting values, divergence and the box's wall."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from integrators.torch._bounce import make_reflect
from integrators.torch._config import SamplerConfig, prior_precisions
from integrators.torch._divergence import mark_divergence
from integrators.torch._flat import FlatParameters
from integrators.torch._plans import plan_batches
from integrators.torch._rng import GeneratorNormals

BOUNDARY_BAND = 1.0 / 6.0  # a coordinate within this fraction of rho_max of the box's wall "sits on the box"


def boundary_fraction(x: torch.Tensor, x_star: torch.Tensor, half_width: float) -> float:
    """Fraction of the coordinates of ``x`` within ``BOUNDARY_BAND * half_width`` of the box's wall: below 1e-6
    under the localized posterior, a sixth or more for a chain whose step is too large."""
    y = (x - x_star).abs()
    return float((y >= (1.0 - BOUNDARY_BAND) * half_width).double().mean())


def check_finite_input(name: str, value: torch.Tensor) -> None:
    """Refuse a non-finite starting value by name (bad input, not a divergence)."""
    bad = ~torch.isfinite(value)
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])  # (chain, coordinate) for an ensemble's x0
        raise ValueError(f"{name} contains non-finite values ({int(bad.sum())} of {value.numel()}, the first "
                         f"at index {first[0] if len(first) == 1 else first})")


def record_divergence(diverged_at: torch.Tensor, k: int, x: torch.Tensor, g: torch.Tensor,
                      loss: torch.Tensor | None = None) -> None:
    """Write step ``k`` into ``diverged_at`` ``(...)`` in place where ``x`` or ``g`` ``(..., P)`` or the batch
    ``loss`` ``(...)`` is not finite and nothing is recorded yet (:func:`integrators.torch._divergence.mark_divergence`,
    no bound).  The loss too: an infinite loss can have a finite gradient, and the steps would go on."""
    mark_divergence(diverged_at, k, x, g, *(() if loss is None else (loss,)))


def chain_streams(config: SamplerConfig, params: FlatParameters, seed: int, generator=None):
    """One chain's ``(normals, batches)``: path normals (and starting velocity) from a generator seeded with
    ``seed`` (or ``generator``), the batches from a second one seeded by the first's first draw."""
    dev = params.device
    normals = GeneratorNormals(seed, dev, params.dtype, generator)
    plan_gen = torch.Generator(device=dev)
    plan_gen.manual_seed(int(torch.randint(2**62, (1,), generator=normals.generator, device=dev)))
    return normals, plan_batches(config.plan, config.n_data, config.effective_batch_size, plan_gen, dev)


@dataclass(frozen=True)
class QuadraticTerms:
    """The force's non-data terms ``G(x) = scale grad L(x; w) + curvature x - shift`` (:meth:`linear`) and
    the localization box's ``reflect`` (None without); ``curvature = prior + 1/rho^2``, ``shift = x*/rho^2``
    under localization; ``x`` is ``(P,)`` or ``(K, P)``."""

    prior: torch.Tensor
    curvature: torch.Tensor
    shift: torch.Tensor | None = None
    x_star: torch.Tensor | None = None
    half_width: float | None = None
    reflect: Callable | None = None

    def linear(self, x: torch.Tensor) -> torch.Tensor:
        """``curvature * x - shift`` (a new tensor, to which the data's force is added)."""
        g = torch.mul(x, self.curvature)
        if self.shift is not None:
            g.sub_(self.shift)
        return g

    def boundary_fraction(self, x: torch.Tensor) -> float | None:
        """:func:`boundary_fraction` of ``x`` in the box (None without localization)."""
        return None if self.x_star is None else boundary_fraction(x, self.x_star, self.half_width)


def quadratic_terms(config: SamplerConfig, params: FlatParameters, x: torch.Tensor, *,
                    outside: str) -> QuadraticTerms:
    """The :class:`QuadraticTerms` of ``config`` on ``params``: prior, and with localization ``x*`` (finite),
    ``1/rho^2`` and the box of half width ``rho_max`` (default ``6 rho``); ``ValueError`` (``outside`` says
    whose) when ``x`` is outside the box."""
    prior = params.per_coordinate(prior_precisions(params.named, config.prior, params.frozen))
    loc = config.localization
    if loc is None:
        return QuadraticTerms(prior, prior)
    x_star = params.x.detach().clone() if loc.x_star is None else params.flatten(loc.x_star)
    half = loc.half_width
    if not bool(((x - x_star).abs() < half).all()):
        raise ValueError(f"{outside} outside the box |x - x_star|_inf < rho_max")
    reflect = make_reflect(x_star, torch.tensor(half, device=params.device, dtype=params.dtype))
    return QuadraticTerms(prior, prior + 1.0 / loc.rho**2, x_star / loc.rho**2, x_star, half, reflect)
