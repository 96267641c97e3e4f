"""Several independent chains of one network at once: ``torch.func.functional_call`` + ``vmap``.

The ``K`` chains' parameters are the rows of one ``(K, P)`` tensor (each row laid out as
:class:`integrators.torch.module.FlatParameters` lays out the model's parameters); the force of
every chain comes from one vectorized call, ``vmap(grad(loss))`` over the rows and over each
chain's own batch indices, and the scheme's update (:mod:`integrators.torch.schemes`, elementwise)
runs on the whole ``(K, P)`` block.  Chain ``k`` draws its velocity, path and batches from its own
``torch.Generator`` seeded with :func:`chain_seed` ``(seed, k)``, in the order a
:class:`~integrators.torch.module.ModuleSampler` with ``seed = chain_seed(seed, k)`` draws them,
so its trajectory does not depend on how many chains run beside it (and equals that sampler's).

The loss closure is the module mode's, ``loss_fn(net, idx)``; ``net`` is the network evaluated at
the chain's parameters.  Batch normalization layers are switched to batch statistics only
(``torch.func.replace_all_batch_norm_modules_`` on a copy of the model): the design's convention,
and the only one ``vmap`` allows.  Dropout in training mode is refused by name: its masks would
come from torch's global generator inside the ``vmap`` (for all chains at once), so chain ``k``
would depend on its neighbours and on no seed of its own; call ``model.eval()`` on the dropout
layers (or the model) first.
"""

from __future__ import annotations

import copy

import torch
from torch.func import functional_call, grad_and_value, replace_all_batch_norm_modules_, vmap

from integrators.torch.bounce import make_reflect
from integrators.torch.module import (
    FlatParameters,
    SamplerConfig,
    SamplerDiverged,
    boundary_fraction,
    check_finite_input,
    check_sampler_fits,
    prior_precisions,
    run_metadata,
)
from integrators.torch.plans import plan_batches
from integrators.torch.rng import mix64_reference, pair_factors, pairs_from_normals
from integrators.torch.schemes import torch_step
from integrators.validation import int_at_least


def chain_seed(seed: int, k: int) -> int:
    """The seed of chain ``k``'s generator: a function of ``(seed, k)`` only."""
    return mix64_reference(mix64_reference(seed) + k) >> 1


class EnsembleSampler:
    """``n_chains`` chains of ``scheme x plan`` on the posterior over ``model``'s parameters.

    ``x0``: ``(n_chains, P)`` starting points (default: every chain at the model's parameters).
    ``config.control_variate`` is not offered here (the reference gradients would be per chain).
    """

    def __init__(self, model: torch.nn.Module, config: SamplerConfig, n_chains: int, *, x0=None):
        if not isinstance(config, SamplerConfig):
            raise ValueError(f"config must be a SamplerConfig, got {type(config).__name__}")
        n_chains = int_at_least("n_chains", n_chains, 1)
        if config.control_variate:
            raise ValueError("control_variate is not offered for ensembles; use ModuleSampler per chain")
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        dropout = [f"{name or 'the model'!r} ({type(m).__name__})" for name, m in model.named_modules()
                   if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.training and m.p > 0]
        if dropout:
            raise ValueError(f"the model has dropout in training mode ({', '.join(dropout)}): its masks would be "
                             f"drawn for all chains at once from torch's global generator, so no chain would "
                             f"follow its own seed; put those layers in evaluation mode (.eval()) or sample each "
                             f"chain with ModuleSampler")
        self.model = replace_all_batch_norm_modules_(copy.deepcopy(model))
        layout = FlatParameters(self.model)
        self.names = [n for n, _ in layout.named]
        self.shapes = [p.shape for _, p in layout.named]
        self.offsets, self.sizes = layout.offsets, layout.sizes
        self.buffers = dict(self.model.named_buffers())
        self.config, self.n_chains = config, n_chains
        dev, dt = layout.device, layout.dtype
        self.device, self.dtype = dev, dt
        self.module = torch_step(config.scheme)
        p = len(layout)
        check_sampler_fits(f"an EnsembleSampler of n_chains={n_chains}", p, dt, dev, config, n_chains)
        loc = config.localization
        if x0 is None or (loc is not None and loc.x_star is None):  # the model's parameters are used
            layout.check_finite()
        if x0 is None:
            self.x = layout.x.detach()[None].repeat(n_chains, 1)
        else:
            self.x = torch.as_tensor(x0).to(device=dev, dtype=dt).clone()
            if self.x.shape != (n_chains, p):
                raise ValueError(f"x0 must have shape {(n_chains, p)}, got {tuple(self.x.shape)}")
            check_finite_input("x0", self.x)
        self.generators, self._batches, vs = [], [], []
        for k in range(n_chains):
            gen = torch.Generator(device=dev)
            gen.manual_seed(chain_seed(config.seed, k))
            plan_gen = torch.Generator(device=dev)
            plan_gen.manual_seed(int(torch.randint(2**62, (1,), generator=gen, device=dev)))
            self.generators.append(gen)
            self._batches.append(plan_batches(config.plan, config.n_data, config.effective_batch_size,
                                              plan_gen, dev))
            vs.append(torch.randn(p, generator=gen, device=dev, dtype=dt))
        self.v = torch.stack(vs)
        self.prior = layout.per_coordinate(prior_precisions(layout.named, config.prior, layout.frozen))
        self.curvature, self.shift, self.reflect, self.x_star = self.prior, None, None, None
        if loc is not None:
            self.x_star = layout.x.detach().clone() if loc.x_star is None else layout.flatten(loc.x_star)
            if not bool(((self.x - self.x_star).abs() < loc.half_width).all()):
                raise ValueError("a chain starts outside the box |x - x_star|_inf < rho_max")
            self.reflect = make_reflect(self.x_star, torch.tensor(loc.half_width, device=dev, dtype=dt))
            self.curvature = self.prior + 1.0 / loc.rho**2
            self.shift = self.x_star / loc.rho**2
        self.g = None
        self.k = 0
        self.last_loss = None  # every chain's batch loss at the last force evaluation

    def metadata(self) -> dict:
        """Run metadata: the configuration, the device, the dtype, the torch version, the chains."""
        return run_metadata(self.config, self.x, n_chains=self.n_chains)

    def boundary_fraction(self) -> float | None:
        """The fraction of all chains' coordinates sitting on the localization box's wall
        (:func:`integrators.torch.module.boundary_fraction`; None without localization)."""
        loc = self.config.localization
        return None if loc is None else boundary_fraction(self.x, self.x_star, loc.half_width)

    def _params(self, flat):
        return {n: flat[o:o + s].view(shape)
                for n, o, s, shape in zip(self.names, self.offsets, self.sizes, self.shapes, strict=True)}

    def data_gradients(self, loss_fn, x, idx) -> torch.Tensor:
        """``grad L(x_k; idx_k)`` of every chain, shape ``(K, P)``, in one vectorized call; the
        losses ``L(x_k; idx_k)`` themselves are kept in :attr:`last_loss` (shape ``(K,)``)."""

        def single(flat, batch):
            params = self._params(flat)

            def net(*inputs):
                return functional_call(self.model, (params, self.buffers), inputs)

            return loss_fn(net, batch)

        try:
            grads, losses = vmap(grad_and_value(single))(x, idx)
        except RuntimeError as exc:
            if "random" not in str(exc):
                raise
            raise ValueError(f"the model or loss_fn draws random numbers (dropout in training mode?): under vmap "
                             f"they would come from one global generator for all chains, so no chain would "
                             f"follow its own seed; draw none, or sample each chain with ModuleSampler ({exc})"
                             ) from exc
        self.last_loss = losses.detach()
        return grads

    def force(self, loss_fn, x, idx) -> torch.Tensor:
        g = torch.mul(x, self.curvature)
        if self.shift is not None:
            g.sub_(self.shift)
        return g.add_(self.data_gradients(loss_fn, x, idx), alpha=self.config.scale)

    def next_batches(self) -> torch.Tensor:
        """Every chain's next batch, shape ``(K, n_b)``."""
        return torch.stack([next(b) for b in self._batches])

    def step(self, loss_fn) -> int:
        """Advance every chain one step; returns the step number."""
        cfg = self.config
        if self.module.FSAL and self.g is None:
            self.g = self.force(loss_fn, self.x, self.next_batches())
        k = self.k + 1
        h = cfg.h if cfg.schedule is None else cfg.h * cfg.schedule.factor(k)
        coef = tuple(float(c) for c in self.module.coefficients(h, cfg.gamma))
        z = torch.stack([torch.randn((4, self.x.shape[1]), generator=gen, device=self.device, dtype=self.dtype)
                         for gen in self.generators], dim=1)  # (4, K, P)
        dW, J = pairs_from_normals(z, pair_factors(cfg.gamma, h))
        idx = self.next_batches()
        g = self.g if self.g is not None else torch.zeros_like(self.x)
        with torch.no_grad():
            self.g = self.module.step(self.x, self.v, g, coef, dW, J,
                                      lambda y: self.force(loss_fn, y, idx), self.reflect)
        self.k = k
        if k % cfg.check_every == 0:
            bad = ~(torch.isfinite(self.x).all(1) & torch.isfinite(self.g).all(1))
            if bool(bad.any()):
                raise SamplerDiverged(k, f"chain {int(bad.nonzero()[0, 0])}'s state or force")
        return k
