"""Module mode: one posterior over an ``nn.Module``'s parameters, held in one flat buffer.

The parameters are copied into one flat tensor ``x`` (and their ``.grad`` into one flat gradient
buffer), then every parameter is made a view into it, so the scheme's update is a handful of
whole-buffer tensor operations whatever the number of layers.  The force on ``x`` is

    G(x) = N_m * grad_x L(x; w) + P x + (x - x*) / rho^2                   (SG / RR / SMS)

with ``L(x; w)`` the *sum* of the per-datum losses over the batch ``w`` (the user's closure),
``N_m = ceil(N_D / N_b)`` (``N_D / N_b`` for ``iid``, 1 for ``full``), ``P`` the diagonal prior
precision (by parameter group: default ``1`` on every parameter whose name ends in ``weight``, ``0``
on biases), and the localization term of the paper's Section 4 when ``localization`` is given:
``f*(x) = f(x) + |x - x*|^2 / (2 rho^2)`` on the box ``|x - x*|_inf < rho_max`` with an elastic
bounce per coordinate.  With ``control_variate=True`` (reference point ``x*``):

    G(x) = P x + (x - x*)/rho^2 + sum_i grad f_i(x*) + N_m (grad L(x; w) - grad L(x*; w)).

Usage (the data loader only gets indices from the sampler)::

    def loss_fn(net, idx):              # sum of per-datum losses on the batch idx
        return F.cross_entropy(net(X[idx]), Y[idx], reduction="sum")

    cfg = SamplerConfig(h=1e-4, gamma=1.0, n_data=len(X), batch_size=200, scheme="ubu", plan="sms",
                        localization=Localization(rho=0.05))   # x* = the model's current weights
    sampler = ModuleSampler(model, cfg)
    for k in range(n_steps):
        info = sampler.step(loss_fn)    # info.step, info.h, info.batch, info.loss

The schemes are the tensor steps of :mod:`integrators.torch.schemes` (the same update rules and
coefficients as the Numba kernel), the noise the path pair ``(dW, J)`` over each half step drawn
from a seeded ``torch.Generator`` on the parameters' device.  ``schedule=CyclicalSchedule(...)``
gives the cyclical step size of Zhang et al. (2020) (cyclical SG-HMC is ``scheme="em"``,
``plan="iid"`` with it).  Divergence follows the one policy of :mod:`integrators._divergence`
(:class:`SamplerDiverged` names the first step whose result was not finite).  A step is a
transaction: when ``loss_fn`` raises (or returns what is not a loss) the parameters, velocities,
cached force and step count are put back as they were before the step, and a divergence puts them
back at the last step that passed its check (before the diverged step with the default
``check_every=1``), so the model is never left half-updated or NaN; the random streams are not
rewound (a step retried draws new noise and the next batch).  The saved state costs three flat
buffers (six when ``check_every > 1``).  A request whose
buffers cannot fit in the device's memory (:data:`integrators.torch._config.SAMPLER_BUFFERS`) is refused with a
``ValueError`` before anything is allocated.

The set-up shared with the ensembles (:mod:`integrators.torch._ensemble`) is written once, in
:mod:`integrators.torch._config` (:class:`SamplerConfig`, its prior and memory) and
:mod:`integrators.torch._posterior_terms` (``chain_streams``: a chain's generators, in the order both
draw from them; ``quadratic_terms``: the prior, the localization and its box); the parameters'
flat layout is :class:`integrators.torch._flat.FlatParameters`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from integrators._divergence import NOT_DIVERGED, SamplerDiverged
from integrators._options import CyclicalSchedule, Localization
from integrators._validation import batch_indices, callable_taking
from integrators.torch._config import (
    LOSS_FN_FORM,
    SamplerConfig,
    check_sampler_fits,
    checked_loss,
    run_metadata,
    weights_prior,
)
from integrators.torch._flat import FlatParameters
from integrators.torch._graph import StepReplay, graph_enabled, static_step
from integrators.torch._posterior_terms import (
    chain_streams,
    check_finite_input,
    quadratic_terms,
    record_divergence,
)
from integrators.torch._rng import pair_factors, pairs_from_normals
from integrators.torch.schemes import torch_step

__all__ = ["CyclicalSchedule", "FlatParameters", "Localization", "ModuleSampler", "SamplerConfig", "StepInfo",
           "weights_prior"]


@dataclass
class StepInfo:
    """What one step of :class:`ModuleSampler` did.

    Parameters
    ----------
    step : int
        The step's number, counted from 1.
    h : float
        Its step size (the schedule's, if any).
    batch : torch.Tensor
        The indices of the batch of the force it evaluated (for first-same-as-last schemes the
        batch of the next step's first kick).
    loss : torch.Tensor
        That batch's summed loss, a tensor on the device (reading it waits for the device).
    """

    step: int
    h: float
    batch: torch.Tensor
    loss: torch.Tensor


class ModuleSampler:
    """``scheme x plan`` on the posterior over an ``nn.Module``'s parameters (module mode).

    The parameters live in one flat buffer (:class:`FlatParameters`); the force, the prior, the
    localization, the control variate and an example are in the module docstring.

    Parameters
    ----------
    model : torch.nn.Module
        The model; its trainable parameters become views into the sampler's flat buffer.
    config : SamplerConfig
        The sampler's configuration.
    generator : torch.Generator or None, default None
        A seeded generator on the parameters' device for the path noise (default: one seeded
        with ``config.seed``); the batches are drawn from a second generator seeded from it.
    batches : iterable of torch.Tensor or None, default None
        Explicit batch indices replacing the plan's draws (for tests): each 1 to ``batch_size`` integers in
        ``[0, n_data)``, checked as it is used.
    noise : iterable of (dW, J) or None, default None
        Explicit path pairs of shape ``(2, P)`` each, replacing the generator's (for tests).
    v0 : torch.Tensor or array_like or None, default None
        Initial velocities, ``P`` values (default: standard normal).

    Attributes
    ----------
    params : FlatParameters
        The flat layout of the model's parameters.
    x, v : torch.Tensor
        The flat parameters (views of the model's) and velocities.
    k : int
        Steps taken.

    Raises
    ------
    ValueError
        If ``config`` is not a SamplerConfig, the model is not an ``nn.Module`` with trainable
        floating-point parameters on one device, the buffers would not fit in the device's memory,
        a parameter, ``v0`` or ``x_star`` is not finite or of the wrong size, or the parameters lie
        outside the localization's box.
    """

    def __init__(self, model: torch.nn.Module, config: SamplerConfig, *, generator=None,
                 batches=None, noise=None, v0=None):
        if not isinstance(config, SamplerConfig):
            raise ValueError(f"config must be a SamplerConfig, got {type(config).__name__}")
        self.model, self.config = model, config
        self.params = FlatParameters(model)  # (a model that is no nn.Module: refused naming model)
        self.x = self.params.x
        dev, dt = self.params.device, self.params.dtype
        # the state saved before each step (x, v, g), and at each passed check when checks are sparser
        check_sampler_fits("a ModuleSampler", self.params, config, extra_buffers=3 if config.check_every == 1 else 6)
        self.params.check_finite()
        self.module = torch_step(config.scheme)
        self.normals, plan = chain_streams(config, self.params, config.seed, generator)
        self._batches: Iterator = iter(batches) if batches is not None else plan
        self._explicit_batches = batches is not None  # checked as they come (they may be a generator)
        self._noise = iter(noise) if noise is not None else None
        self.terms = quadratic_terms(config, self.params, self.x, outside="the parameters lie")
        self.prior, self.curvature, self.shift = self.terms.prior, self.terms.curvature, self.terms.shift
        self.x_star, self.reflect = self.terms.x_star, self.terms.reflect
        if v0 is None:
            self.v = self.normals.normals(len(self.params))
        else:
            self.v = torch.as_tensor(v0).to(device=dev, dtype=dt).reshape(-1).clone()
            if self.v.numel() != len(self.params):
                raise ValueError(f"v0 must have {len(self.params)} values, got {self.v.numel()}")
            check_finite_input("v0", self.v)
        self.g = None
        self.k = 0
        self.diverged_at = torch.full((), NOT_DIVERGED, device=dev, dtype=torch.int64)  # on the device
        self.ref_full = None  # sum_i grad f_i(x*) for the control variate (computed on first use)
        self._last_loss = None
        self._reaching_loss = None  # the last loss_fn whose loss was seen to reach the parameters
        self._checked_loss_fn = object()  # the last loss_fn whose signature was checked (once, not every step)
        graph = graph_enabled(config.graph, dev, schedule=config.schedule, control_variate=config.control_variate)
        self._replay = StepReplay(dev, strict=config.graph is True) if graph else None
        self._static: dict = {}  # the graph step's buffers (made at its first step)
        self._before: dict = {}  # the state before the step in progress (restored if it fails)
        self._checked: dict = {}  # the state at the last passed check (restored on a divergence), check_every > 1
        if config.check_every > 1:
            self._save(self._checked)

    # ------------------------------------------------------------------------- the saved state
    def _save(self, into: dict) -> None:
        """Copy what a step changes (``x``, ``v``, the cached force, the step count) into ``into``'s buffers."""
        g = self._static["g"] if self._static else self.g
        with torch.no_grad():
            for name, value in (("x", self.x), ("v", self.v), ("g", g)):
                if value is None:
                    into[name] = None
                elif into.get(name) is None:
                    into[name] = value.detach().clone()
                else:
                    into[name].copy_(value)
        into["k"] = self.k

    def _restore(self, saved: dict) -> None:
        """Put back the state :meth:`_save` saved, and clear the divergence record."""
        with torch.no_grad():
            self.x.copy_(saved["x"])
            self.v.copy_(saved["v"])
            if self._static:  # the graph step's own force and step counter
                if saved["g"] is None:
                    self._static["g"].zero_()
                else:
                    self._static["g"].copy_(saved["g"])
                self._static["k"].fill_(saved["k"])
            self.g = None if saved["g"] is None else (self._static["g"] if self._static else saved["g"].clone())
            self.diverged_at.fill_(NOT_DIVERGED)
        self.k = saved["k"]

    def _check_at(self, k: int) -> None:
        """The divergence check of step ``k`` (every ``check_every`` steps): a divergence puts the state back
        at the last passed check; a pass saves the state as that check's."""
        if k % self.config.check_every:
            return
        try:
            self.check_finite()
        except SamplerDiverged:
            self._restore(self._before if self.config.check_every == 1 else self._checked)
            raise
        if self.config.check_every > 1:
            self._save(self._checked)

    # ------------------------------------------------------------------------------ the force
    def _loss(self, loss_fn, batch) -> torch.Tensor:
        if loss_fn is not self._checked_loss_fn:
            callable_taking("loss_fn", loss_fn, 2, LOSS_FN_FORM)
            self._checked_loss_fn = loss_fn
        try:
            loss = loss_fn(self.model, batch)
        except IndexError as exc:  # the plan draws indices below n_data: the data must be at least that long
            # (on CPU; on CUDA an index beyond the data is a device-side assert torch cannot name)
            raise ValueError(f"loss_fn raised IndexError on batch indices up to {int(batch.max())}: is "
                             f"SamplerConfig.n_data={self.config.n_data} larger than the data? ({exc})") from exc
        return checked_loss(loss)

    def _gradient(self, loss_fn, loss) -> torch.Tensor:
        """The flat gradient of ``loss``, refused where no parameter received one: a constant that requires
        grad would leave the gradient zero and the sampler sampling the prior.  Checked once per loss
        function (its graph walked; a graph the walk cannot follow, a reentrant checkpoint, passes where the
        gradient is not zero)."""
        reached = loss_fn is self._reaching_loss or self.params.reaches(loss)
        grad = self.params.gradient(loss)
        if not reached and not bool(grad.any()):
            raise ValueError(f"loss_fn {getattr(loss_fn, '__name__', type(loss_fn).__name__)!r} returned a loss "
                             f"from which no parameter received a gradient: it must be computed from the model's "
                             f"parameters (the summed loss of the batch)")
        self._reaching_loss = loss_fn
        return grad

    def _data_gradient(self, loss_fn, batch) -> torch.Tensor:
        loss = self._loss(loss_fn, batch)
        self._last_loss = loss.detach()
        return self._gradient(loss_fn, loss)

    def _reference_gradient(self, loss_fn, batch) -> torch.Tensor:
        """``grad L(x*; batch)``: the parameters visit ``x*`` and come back."""
        here = self.x.detach().clone()
        with torch.no_grad():
            self.x.copy_(self.x_star)
        try:
            return self._gradient(loss_fn, self._loss(loss_fn, batch)).clone()
        finally:  # back where they were, also when the loss raises (the model is the user's)
            with torch.no_grad():
                self.x.copy_(here)

    def full_reference_gradient(self, loss_fn) -> torch.Tensor:
        """The control variate's ``sum_i grad f_i(x*)``, in batches of ``batch_size`` (``x`` visits ``x*``).

        Exact when a datum's loss does not depend on the rest of its batch.  With batch norm on the
        current batch it does, the sum depends on the partition, and a plan that redraws its
        partition (``rr``, ``sms``) makes the correction's sweep average non-zero: the force is
        biased.  ``bnn._control_variate.BlockReferenceSampler`` recomputes the reference for each
        period's batches instead (what the BNN pipeline uses).

        Parameters
        ----------
        loss_fn : callable
            ``loss_fn(model, indices)``: the summed loss of the batch ``indices``.

        Returns
        -------
        torch.Tensor
            The flat gradient, a new tensor.
        """
        n, b = self.config.n_data, self.config.effective_batch_size
        total = torch.zeros_like(self.x)
        for start in range(0, n, b):
            idx = torch.arange(start, min(start + b, n), device=self.x.device)
            total += self._reference_gradient(loss_fn, idx)
        return total

    def force(self, loss_fn, batch) -> torch.Tensor:
        """The force ``G(x, batch)`` at the current parameters.

        Parameters
        ----------
        loss_fn : callable
            ``loss_fn(model, indices)``: the summed loss of the batch ``indices`` (one element).
        batch : torch.Tensor
            The batch's data indices.

        Returns
        -------
        torch.Tensor
            The flat force, a new tensor.

        Raises
        ------
        ValueError
            If ``loss_fn`` does not return a one-element tensor that depends on the parameters,
            or raises ``IndexError`` (``n_data`` larger than the data).
        """
        scale = self.config.scale
        with torch.enable_grad():
            data = self._data_gradient(loss_fn, batch)
            if self.config.control_variate:
                data = data.clone()  # (the reference gradients below are computed into the same flat buffer)
                if self.ref_full is None:
                    self.ref_full = self.full_reference_gradient(loss_fn)
                data = data - self._reference_gradient(loss_fn, batch)
        with torch.no_grad():
            g = self.terms.linear(self.x)
            g.add_(data, alpha=scale)
            if self.ref_full is not None:
                g.add_(self.ref_full)
        return g

    # ------------------------------------------------------------------------------- stepping
    def next_batch(self) -> torch.Tensor:
        """The plan's next batch (what the data loader should load).

        Returns
        -------
        torch.Tensor
            The batch's data indices.

        Raises
        ------
        ValueError
            If an explicit ``batches`` sequence ran out, or its batch is not 1 to ``batch_size`` integer
            indices in ``[0, n_data)``.
        """
        try:
            batch = next(self._batches)
        except StopIteration:
            raise ValueError(f"the explicit batch sequence ran out at step {self.k + 1}") from None
        if self._explicit_batches:
            batch_indices(f"the explicit batch at step {self.k + 1}", batch, self.config.n_data,
                          self.config.effective_batch_size)
        return batch

    def _path(self, h):
        if self._noise is not None:
            try:
                dW, J = next(self._noise)
            except StopIteration:
                raise ValueError(f"the explicit noise sequence ran out at step {self.k + 1}") from None
            dW, J = (torch.as_tensor(a, device=self.x.device, dtype=self.x.dtype) for a in (dW, J))
            if dW.shape != (2, len(self.params)) or J.shape != (2, len(self.params)):
                # broadcasting a smaller array would give every coordinate the same noise
                raise ValueError(f"explicit noise at step {self.k + 1}: dW and J must each have shape "
                                 f"(2, {len(self.params)}) (the pair over each half step), got "
                                 f"{tuple(dW.shape)} and {tuple(J.shape)}")
            return dW, J
        z = self.normals.normals((4, len(self.params)))
        return pairs_from_normals(z, pair_factors(self.config.gamma, h))

    def prime(self, loss_fn, batch=None) -> None:
        """Evaluate the force at the starting point, for first-same-as-last schemes (:meth:`step` calls it).

        Parameters
        ----------
        loss_fn : callable
            ``loss_fn(model, indices)``: the summed loss of the batch ``indices``.
        batch : torch.Tensor or None, default None
            The batch (default: the plan's next batch, the first step's).
        """
        batch = self.next_batch() if batch is None else batch
        self.g = self.force(loss_fn, batch)

    def step_size(self, k: int) -> float:
        """The step size of step ``k``.

        Parameters
        ----------
        k : int
            The step, counted from 1.

        Returns
        -------
        float
            ``config.step_size(k)``: ``h``, times the schedule's factor if any.
        """
        return self.config.step_size(k)

    def step(self, loss_fn) -> StepInfo:
        """Advance the parameters and velocities by one step of the scheme.

        A divergence is recorded on the device and read every ``config.check_every`` steps.

        Parameters
        ----------
        loss_fn : callable
            ``loss_fn(model, indices)``: the sum of the per-datum losses of the batch ``indices``.

        Returns
        -------
        StepInfo
            The step's number, step size, batch and loss.

        Raises
        ------
        SamplerDiverged
            At a check, if a step's parameters or force were not finite; the parameters, velocities
            and ``k`` are then those of the last step that passed a check (the step before the
            diverged one when ``check_every`` is 1).
        ValueError
            If ``loss_fn`` is not a function of two positional arguments ``(model, indices)`` (said
            before the step moves anything), does not return a real one-element tensor that some
            parameter receives a gradient from, or an explicit batch or noise sequence ran out or has
            the wrong shape; the state is then as it was before the step (so after any exception
            ``loss_fn`` raises).  Also, before the step, if a parameter was replaced, converted or moved
            since the sampler was built (:meth:`FlatParameters.check_bound`).
        """
        self.params.check_bound(self.model)
        self._save(self._before)
        try:
            return self._step(loss_fn)
        except SamplerDiverged:
            raise  # (the check put the state back)
        except BaseException:
            self._restore(self._before)
            raise

    def _step(self, loss_fn) -> StepInfo:
        if self.module.FSAL and self.g is None:
            self.prime(loss_fn)
        k = self.k + 1
        h = self.step_size(k)
        coef = tuple(float(c) for c in self.module.coefficients(h, self.config.gamma))
        if self._replay is not None:
            return self._graph_step(loss_fn, k, h, coef)
        dW, J = self._path(h)
        batch = self.next_batch()

        def force(x):
            return self.force(loss_fn, batch)

        g = self.g if self.g is not None else torch.zeros_like(self.x)
        with torch.no_grad():
            self.g = self.module.step(self.x, self.v, g, coef, dW, J, force, self.reflect)
        self.k = k
        record_divergence(self.diverged_at, k, self.x, self.g, self._last_loss)
        self._check_at(k)
        return StepInfo(step=k, h=h, batch=batch, loss=self._last_loss)

    def _graph_step(self, loss_fn, k: int, h: float, coef: tuple) -> StepInfo:
        """:meth:`step` from static buffers, replayed by :class:`~integrators.torch._graph.StepReplay`: the
        normals (or explicit pair) and the batch are drawn as the eager step draws them, copied into the
        buffers, and the step, the force's cache, the loss and the divergence record run as one replay."""
        st, n = self._static, len(self.params)
        if not st:
            st["g"] = self.g.clone() if self.g is not None else torch.zeros_like(self.x)
            st["k"] = torch.full((), self.k, device=self.x.device, dtype=torch.int64)
            st["z"] = torch.empty((4, n), device=self.x.device, dtype=self.x.dtype)
            st["pair"] = torch.empty((2, 2, n), device=self.x.device, dtype=self.x.dtype)
        if self._noise is None:  # the eager step's draw, then its pair inside the step
            st["z"].copy_(self.normals.normals((4, n)))
            factors = pair_factors(self.config.gamma, h)
        else:
            dW, J = self._path(h)
            st["pair"][0].copy_(dW)
            st["pair"][1].copy_(J)
            factors = None
        batch = self.next_batch()
        idx = st.setdefault(("idx", tuple(batch.shape), batch.dtype), torch.empty_like(batch))
        idx.copy_(batch)

        def replayed():
            dW, J = pairs_from_normals(st["z"], factors) if factors is not None else st["pair"]
            static_step(st, self, coef, dW, J, lambda x: self.force(loss_fn, idx), lambda: self._last_loss)

        self._replay((loss_fn, coef, factors is None, tuple(batch.shape), batch.dtype), replayed)
        self.g, self.k = st["g"], k
        self._check_at(k)
        return StepInfo(step=k, h=h, batch=batch, loss=st["loss"].clone())

    def check_finite(self) -> None:
        """Check the divergence record (one read from the device).

        Raises
        ------
        SamplerDiverged
            Naming the first step whose parameters, force or loss were not finite, if there was one.
        """
        at = int(self.diverged_at)
        if at != NOT_DIVERGED:
            finite = bool(torch.isfinite(self.x).all())
            loss = self._static.get("loss") if self._static else self._last_loss
            bad_loss = loss is not None and not bool(torch.isfinite(loss).all())
            # a NaN loss makes the parameters NaN in the same step: when they were finite before that step
            # (known where every step is checked), the loss is the cause, and is named
            before = self._before.get("x") if self.config.check_every == 1 else None
            if bad_loss and (finite or (before is not None and bool(torch.isfinite(before).all()))):
                what = f"the loss ({float(loss.reshape(-1)[0]):g}, at finite parameters)"
            else:
                what = "a parameter" if not finite else "the force or the loss"
            raise SamplerDiverged(at, what)

    def metadata(self) -> dict:
        """The run's metadata.

        Returns
        -------
        dict
            Configuration, device, dtype, torch version and number of parameters.
        """
        return run_metadata(self.config, self.x, n_chains=1)

    def boundary_fraction(self) -> float | None:
        """The fraction of the parameters sitting on the localization box's wall.

        Large when the step is too large for the posterior and the bounces, not the posterior,
        hold the parameters (a coordinate of the localized posterior gets there with probability
        below 1e-6).

        Returns
        -------
        float or None
            :func:`integrators.torch._posterior_terms.boundary_fraction` (None without localization).
        """
        return self.terms.boundary_fraction(self.x)

    @property
    def state(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x, v)``: the flat parameters (views of the model's) and velocities."""
        return self.x, self.v
