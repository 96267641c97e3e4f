"""Several independent chains of one network at once: ``torch.func.functional_call`` + ``vmap``.

The ``K`` chains' parameters are the rows of one ``(K, P)`` tensor (each row laid out as
:class:`integrators.torch._flat.FlatParameters` lays out the model's parameters); the force of
every chain comes from one vectorized call, ``vmap(grad(loss))`` over the rows and over each
chain's own batch indices, and the scheme's update (:mod:`integrators.torch.schemes`, elementwise)
runs on the whole ``(K, P)`` block.  Chain ``k`` draws its velocity, path and batches from its own
``torch.Generator`` seeded with :func:`chain_seed` ``(seed, k)``, in the order a
:class:`~integrators.torch.ModuleSampler` with ``seed = chain_seed(seed, k)`` draws them
(both take them from :func:`~integrators.torch._posterior_terms.chain_streams`), so its trajectory does not
depend on how many chains run beside it (and equals that sampler's).  The prior, the localization
and its box are the module mode's (:func:`~integrators.torch._posterior_terms.quadratic_terms`), and a
divergence follows the policy of :mod:`integrators._divergence`: the first chain to diverge stops
the ensemble, with every chain's first non-finite step recorded.

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

from integrators._divergence import NOT_DIVERGED, SamplerDiverged
from integrators._validation import callable_taking, int_at_least, one_line
from integrators.seeds import derive
from integrators.torch._config import (
    LOSS_FN_FORM,
    SamplerConfig,
    auto_chains,
    check_sampler_fits,
    checked_loss,
    run_metadata,
)
from integrators.torch._flat import FlatParameters
from integrators.torch._graph import StepReplay, graph_enabled, static_step
from integrators.torch._posterior_terms import chain_streams, check_finite_input, quadratic_terms, record_divergence
from integrators.torch._rng import pair_factors, pairs_from_normals
from integrators.torch.schemes import torch_step

# the layers whose training-mode masks would come from torch's global generator under vmap
DROPOUT_LAYERS = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d,
                  torch.nn.AlphaDropout, torch.nn.FeatureAlphaDropout)


def chain_seed(seed: int, k: int) -> int:
    """The seed of chain ``k``'s generator: :func:`integrators.seeds.derive` ``(seed, "chain", k)``
    without its lowest bit, so that it lies in ``[0, 2**63)`` (a non-negative int64, which a
    ``torch.Generator`` takes and a seed reduced modulo ``2**63`` keeps)."""
    return derive(seed, "chain", k) >> 1


class EnsembleSampler:
    """``n_chains`` chains of ``scheme x plan`` on the posterior over ``model``'s parameters, from ``x0``
    ``(n_chains, P)`` (default: the model's parameters); no control variate (its gradients would be per chain).
    ``n_chains="auto"``: :func:`integrators.torch._config.auto_chains` (as many as the device's free memory
    holds by the buffer estimate, capped; 4 off CUDA).  ``config.graph`` replays the step of all chains
    from static buffers (:mod:`integrators.torch._graph`), one CUDA graph on CUDA, with the eager step's
    trajectory."""

    def __init__(self, model: torch.nn.Module, config: SamplerConfig, n_chains: int, *, x0=None):
        if not isinstance(config, SamplerConfig):
            raise ValueError(f"config must be a SamplerConfig, got {type(config).__name__}")
        auto = isinstance(n_chains, str) and n_chains == "auto"
        if not auto:
            n_chains = int_at_least("n_chains", n_chains, 1)
        if config.control_variate:
            raise ValueError("control_variate is not offered for ensembles; use ModuleSampler per chain")
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        dropout = [f"{name or 'the model'!r} ({type(m).__name__})" for name, m in model.named_modules()
                   if isinstance(m, DROPOUT_LAYERS) and m.training and m.p > 0]
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
        if auto:
            self.n_chains = n_chains = auto_chains(layout, config)
        check_sampler_fits(f"an EnsembleSampler of n_chains={n_chains}", layout, config, n_chains)
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
        self.normals, self._batches = zip(*(chain_streams(config, layout, chain_seed(config.seed, k))
                                            for k in range(n_chains)), strict=True)
        self.v = torch.stack([normals.normals(p) for normals in self.normals])
        self.terms = quadratic_terms(config, layout, self.x, outside="a chain starts")
        self.prior, self.curvature, self.shift = self.terms.prior, self.terms.curvature, self.terms.shift
        self.x_star, self.reflect = self.terms.x_star, self.terms.reflect
        self.g = None
        self.k = 0
        self.diverged_at = torch.full((n_chains,), NOT_DIVERGED, device=dev, dtype=torch.int64)  # per chain
        self.last_loss = None  # every chain's batch loss at the last force evaluation
        self._replay = (StepReplay(dev, strict=config.graph is True)
                        if graph_enabled(config.graph, dev, schedule=config.schedule) else None)
        self._static: dict = {}  # the graph step's buffers (made at its first step)

    def metadata(self) -> dict:
        """Run metadata: the configuration, the device, the dtype, the torch version, the chains."""
        return run_metadata(self.config, self.x, n_chains=self.n_chains)

    def boundary_fraction(self) -> float | None:
        """The fraction of all chains' coordinates sitting on the localization box's wall
        (:func:`integrators.torch._posterior_terms.boundary_fraction`; None without localization)."""
        return self.terms.boundary_fraction(self.x)

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

            return checked_loss(loss_fn(net, batch), tracked=False)  # ModuleSampler's contract, its words

        try:
            grads, losses = vmap(grad_and_value(single))(x, idx)
        except RuntimeError as exc:
            if ".item()" in str(exc):  # vmap cannot read one chain's number: the loss must stay a tensor
                raise ValueError(f"loss_fn(model, indices) must return a one-element tensor computed from the "
                                 f"model's parameters (the summed loss of the batch), without .item() or "
                                 f"control flow on tensor values (under vmap they read no number); "
                                 f"{one_line(exc, limit=120)}") from exc
            if "random" not in str(exc):
                raise
            raise ValueError(f"the model or loss_fn draws random numbers (dropout in training mode?): under vmap "
                             f"they would come from one global generator for all chains, so no chain would "
                             f"follow its own seed; draw none, or sample each chain with ModuleSampler ({exc})"
                             ) from exc
        self.last_loss = losses.detach()
        return grads

    def force(self, loss_fn, x, idx) -> torch.Tensor:
        return self.terms.linear(x).add_(self.data_gradients(loss_fn, x, idx), alpha=self.config.scale)

    def next_batches(self) -> torch.Tensor:
        """Every chain's next batch, shape ``(K, n_b)``."""
        return torch.stack([next(b) for b in self._batches])

    def step(self, loss_fn) -> int:
        """Advance every chain one step; returns the step number."""
        callable_taking("loss_fn", loss_fn, 2, LOSS_FN_FORM)
        cfg = self.config
        if self.module.FSAL and self.g is None:
            self.g = self.force(loss_fn, self.x, self.next_batches())
        k = self.k + 1
        h = cfg.step_size(k)
        coef = tuple(float(c) for c in self.module.coefficients(h, cfg.gamma))
        if self._replay is not None:
            return self._graph_step(loss_fn, k, h, coef)
        z = torch.stack([normals.normals((4, self.x.shape[1])) for normals in self.normals], dim=1)  # (4, K, P)
        dW, J = pairs_from_normals(z, pair_factors(cfg.gamma, h))
        idx = self.next_batches()
        g = self.g if self.g is not None else torch.zeros_like(self.x)
        with torch.no_grad():
            self.g = self.module.step(self.x, self.v, g, coef, dW, J,
                                      lambda y: self.force(loss_fn, y, idx), self.reflect)
        self.k = k
        record_divergence(self.diverged_at, k, self.x, self.g, self.last_loss)
        if k % cfg.check_every == 0:
            self.check_finite()
        return k

    def _graph_step(self, loss_fn, k: int, h: float, coef: tuple) -> int:
        """:meth:`step` from static buffers (:class:`~integrators.torch._graph.StepReplay`): every chain's
        normals and batch drawn as the eager step draws them, stacked into the buffers, then one replay."""
        st, (n_chains, p) = self._static, self.x.shape
        if not st:
            st["g"] = self.g.clone() if self.g is not None else torch.zeros_like(self.x)
            st["k"] = torch.full((), self.k, device=self.device, dtype=torch.int64)
            st["z"] = torch.empty((4, n_chains, p), device=self.device, dtype=self.dtype)
        torch.stack([normals.normals((4, p)) for normals in self.normals], dim=1, out=st["z"])
        batches = [next(b) for b in self._batches]
        shape = (n_chains, *batches[0].shape)
        idx = st.setdefault(("idx", shape, batches[0].dtype), torch.empty(shape, dtype=batches[0].dtype,
                                                                          device=batches[0].device))
        torch.stack(batches, out=idx)
        factors = pair_factors(self.config.gamma, h)

        def replayed():
            dW, J = pairs_from_normals(st["z"], factors)
            static_step(st, self, coef, dW, J, lambda y: self.force(loss_fn, y, idx), lambda: self.last_loss)

        self._replay((loss_fn, coef, shape, idx.dtype), replayed)
        self.g, self.k, self.last_loss = st["g"], k, st["loss"].clone()
        if k % self.config.check_every == 0:
            self.check_finite()
        return k

    def check_finite(self) -> None:
        """Raise :class:`~integrators._divergence.SamplerDiverged` if a chain has diverged: its
        ``step`` the earliest chain's first non-finite step, its ``diverged_at`` every chain's
        (one read from the device; see :mod:`integrators._divergence`)."""
        at = self.diverged_at.tolist()
        steps = [a for a in at if a != NOT_DIVERGED]
        if steps:
            first = min(steps)
            raise SamplerDiverged(first, f"chain {at.index(first)}'s state, force or loss", tuple(at))
