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
``plan="iid"`` with it).  Divergence follows the one policy of :mod:`integrators.divergence`
(:class:`SamplerDiverged` names the first step whose result was not finite); a request whose
buffers cannot fit in the device's memory (:data:`SAMPLER_BUFFERS`) is refused with a
``ValueError`` before anything is allocated.

The set-up shared with the ensembles (:mod:`integrators.torch.ensemble`) is written here once:
:func:`chain_streams` (a chain's generators, in the order both draw from them),
:func:`quadratic_terms` (the prior, the localization and its box) and
:meth:`SamplerConfig.step_size`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass

import torch

from integrators.divergence import NOT_DIVERGED, SamplerDiverged
from integrators.memory import check_fits, device_memory_bytes
from integrators.options import CyclicalSchedule, Localization
from integrators.plans import force_scale, plan_rule
from integrators.torch.bounce import make_reflect
from integrators.torch.plans import plan_batches
from integrators.torch.rng import GeneratorNormals, pair_factors, pairs_from_normals
from integrators.torch.schemes import torch_step
from integrators.validation import (
    BOOLEAN,
    POSITIVE,
    SEED,
    Constraint,
    at_least,
    check_parameters,
    instance_of,
    optional,
    step_over_friction,
)

# Flat parameter-sized tensors a sampler holds at its peak, per chain: the state x, v, the force g
# and the gradient buffer, the prior and the localization's curvature, shift and x*, the step's
# four normals and the path pair (dW, J) drawn from them, and the bounce's temporaries.
SAMPLER_BUFFERS = 20
LOCALIZATION_BUFFERS = 7  # of those, held only with localization: its curvature, shift, x* and the bounce's
BOUNDARY_BAND = 1.0 / 6.0  # a coordinate within this fraction of rho_max of the box's wall "sits on the box"


def sampler_bytes(n_params: int, dtype: torch.dtype, config, n_chains: int = 1) -> float:
    """Bytes ``n_chains`` chains of a sampler of ``n_params`` parameters hold at their peak:
    :data:`SAMPLER_BUFFERS` flat tensors each, and each chain's plan (a permutation of the
    ``n_data`` indices as int64; the batch for ``iid``)."""
    itemsize = torch.empty((), dtype=dtype, device="meta").element_size()
    plan = config.effective_batch_size if config.plan == "iid" else config.n_data
    buffers = SAMPLER_BUFFERS - (0 if config.localization is not None else LOCALIZATION_BUFFERS)
    return float(n_chains) * (float(n_params) * buffers * itemsize + 8.0 * plan)


def check_sampler_fits(request: str, params: FlatParameters, config, n_chains: int = 1) -> None:
    """Refuse (``ValueError`` naming ``request``) ``n_chains`` chains over ``params`` whose buffers
    exceed the memory of their device (:func:`integrators.memory.check_fits`), before any of them
    is allocated."""
    n, dtype, device = len(params), params.dtype, params.device
    check_fits(f"{request} ({n} parameters of {str(dtype).replace('torch.', '')} on {device}, "
               f"n_data={config.n_data}, plan {config.plan!r})",
               sampler_bytes(n, dtype, config, n_chains), limit=device_memory_bytes(device))


def boundary_fraction(x: torch.Tensor, x_star: torch.Tensor, half_width: float) -> float:
    """The fraction of the coordinates of ``x`` (any shape ending in the parameters) within
    :data:`BOUNDARY_BAND` ``* half_width`` of the wall of the box ``|x - x*|_inf < half_width``.
    Under the localized posterior (``half_width = 6 rho``) a coordinate gets there with probability
    below 1e-6 from the Gaussian term; a chain whose step is too large for the posterior scatters
    over the box (or piles on its walls) and puts about a sixth or more of its coordinates there."""
    y = (x - x_star).abs()
    return float((y >= (1.0 - BOUNDARY_BAND) * half_width).double().mean())


def check_finite_input(name: str, value: torch.Tensor) -> None:
    """Refuse a non-finite starting value by name (bad input, not a divergence)."""
    bad = ~torch.isfinite(value)
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])  # (chain, coordinate) for an ensemble's x0
        raise ValueError(f"{name} contains non-finite values ({int(bad.sum())} of {value.numel()}, the first "
                         f"at index {first[0] if len(first) == 1 else first})")


def record_divergence(diverged_at: torch.Tensor, k: int, x: torch.Tensor, g: torch.Tensor) -> None:
    """Write step ``k`` into ``diverged_at`` (in place, per chain: ``x`` and ``g`` of shape
    ``(..., P)``, ``diverged_at`` of shape ``(...)``) where the state or the force is not finite and
    no step is recorded yet.  No value is read back to the host, so it runs every step and the
    checks every ``check_every`` steps still name the first step (:mod:`integrators.divergence`)."""
    bad = ~(torch.isfinite(x).all(-1) & torch.isfinite(g).all(-1))
    diverged_at.copy_(torch.where(bad & (diverged_at == NOT_DIVERGED), k, diverged_at))


def weights_prior(precision: float = 1.0) -> Callable[[str, torch.Tensor], float]:
    """The design's prior: ``precision`` on parameters whose name ends in ``weight``, 0 elsewhere."""
    return lambda name, param: precision if name.endswith("weight") else 0.0


@dataclass(frozen=True)
class SamplerConfig:
    """Everything that defines a module-mode sampler (validated on construction).

    ``prior``: a number (that precision on weights only, :func:`weights_prior`), a mapping
    ``{parameter name: precision}`` (others 0) or a callable ``(name, param) -> precision``.
    ``check_every``: steps between the finiteness checks (each one waits for the device).
    """

    h: float
    gamma: float
    n_data: int
    _: KW_ONLY
    scheme: str = "ubu"
    plan: str = "sms"
    batch_size: int | None = None
    prior: object = 1.0
    localization: Localization | None = None
    control_variate: bool = False
    schedule: CyclicalSchedule | None = None
    seed: int = 0
    check_every: int = 1

    CONSTRAINTS = {
        "h": POSITIVE, "gamma": POSITIVE, "n_data": at_least(1),
        # unknown, or with no tensor step / batches from a Numba rule of its own: refused by name
        "scheme": Constraint("a scheme with a tensor step", lambda name, value: torch_step(value)),
        "plan": Constraint("a plan with a batch rule", lambda name, value: plan_rule(value)),
        "batch_size": optional(at_least(1)), "control_variate": BOOLEAN,
        "localization": optional(instance_of(Localization, "a Localization")),
        "schedule": optional(instance_of(CyclicalSchedule, "a CyclicalSchedule")),
        "seed": SEED, "check_every": at_least(1),
    }

    def __post_init__(self):
        check_parameters({name: getattr(self, name) for name in self.CONSTRAINTS}, self.CONSTRAINTS)
        step_over_friction(self.h, self.gamma)  # the rule every backend applies
        if self.batch_size is None and plan_rule(self.plan).kind != "full":
            raise ValueError(f"batch_size is required for plan {self.plan!r}")
        if self.batch_size is not None and self.batch_size > self.n_data:
            raise ValueError(f"batch_size={self.batch_size} is larger than the data (n_data={self.n_data})")
        if self.control_variate and self.localization is None:
            raise ValueError("control_variate needs a reference point: give localization (its x_star)")

    @property
    def effective_batch_size(self) -> int:
        return self.n_data if self.batch_size is None else self.batch_size

    def step_size(self, k: int) -> float:
        """The step size of step ``k`` (1-based): ``h``, times the schedule's factor if any."""
        return self.h if self.schedule is None else self.h * self.schedule.factor(k)

    @property
    def scale(self) -> float:
        return force_scale(self.plan, self.n_data, self.effective_batch_size)


def prior_precisions(named_params, prior, frozen=()) -> list[float]:
    """Per-parameter prior precision from ``SamplerConfig.prior``.  A mapping may also name the
    ``frozen`` parameters (``requires_grad=False``, as an ``x_star`` mapping may): they do not
    move, so their precision is accepted and has no effect; a callable must return one number
    per parameter."""
    if isinstance(prior, numbers.Real) and not isinstance(prior, bool):
        rule = weights_prior(float(prior))
    elif isinstance(prior, Mapping):
        names = {name for name, _ in named_params}
        unknown = sorted(set(prior) - names - set(frozen))
        if unknown:
            raise ValueError(f"prior names unknown parameters {unknown}; the model has {sorted(names)}")
        rule = lambda name, param: prior.get(name, 0.0)  # noqa: E731
    elif callable(prior):
        rule = prior
    else:
        raise ValueError(f"prior must be a number, a mapping or a callable, got {prior!r}")
    out = []
    for name, param in named_params:
        value = rule(name, param)
        try:
            if isinstance(value, str | bytes | bool) or getattr(value, "ndim", 0) != 0:
                raise TypeError  # (a string or a flag would read as a number; an array is one per coordinate)
            prec = float(value)
        except (TypeError, ValueError, RuntimeError):
            shape = getattr(value, "shape", None)
            got = f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else repr(value)
            raise ValueError(f"prior must give one precision per parameter: prior({name!r}, param) returned "
                             f"{got}, not a number") from None
        if not (math.isfinite(prec) and prec >= 0):
            raise ValueError(f"prior precision of {name} must be finite and >= 0, got {prec}")
        out.append(prec)
    return out


def run_metadata(config: SamplerConfig, x: torch.Tensor, n_chains: int) -> dict:
    loc, sched = config.localization, config.schedule
    return {"backend": "torch", "device": str(x.device), "dtype": str(x.dtype).replace("torch.", ""),
            "torch": torch.__version__, "scheme": config.scheme, "plan": config.plan, "h": config.h,
            "gamma": config.gamma, "n_data": config.n_data, "batch_size": config.effective_batch_size,
            "seed": config.seed, "n_parameters": int(x.shape[-1]), "n_chains": n_chains,
            "rho": None if loc is None else loc.rho, "rho_max": None if loc is None else loc.half_width,
            "control_variate": config.control_variate,
            "schedule": None if sched is None else {"n_steps": sched.n_steps, "n_cycles": sched.n_cycles}}


@dataclass
class StepInfo:
    """What one step did: its number, step size, the batch of the force it evaluated (for
    first-same-as-last schemes the batch of the next step's first kick) and that batch's loss (a
    tensor: reading it waits for the device)."""

    step: int
    h: float
    batch: torch.Tensor
    loss: torch.Tensor


class FlatParameters:
    """The trainable parameters of ``model`` as views into one flat buffer ``x`` (and their
    gradients into ``grad``).  All must share one device and one dtype."""

    def __init__(self, model: torch.nn.Module):
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.state_names = set(model.state_dict())  # what a state_dict of the model may also hold
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
        if not named:
            raise ValueError("the model has no trainable parameters")
        devices = sorted({str(p.device) for _, p in named})
        if len(devices) > 1:
            raise ValueError(f"parameters on mixed devices {devices}; move the model to one device")
        dtypes = sorted({str(p.dtype) for _, p in named})
        if len(dtypes) > 1:
            raise ValueError(f"parameters of mixed dtypes {dtypes}; convert the model to one dtype")
        self.named = named
        self.device, self.dtype = named[0][1].device, named[0][1].dtype
        if not self.dtype.is_floating_point:
            raise ValueError(f"parameters must be floating point, got {self.dtype}")
        self.sizes = [p.numel() for _, p in named]
        self.offsets = [sum(self.sizes[:i]) for i in range(len(named))]
        total = sum(self.sizes)
        with torch.no_grad():
            self.x = torch.cat([p.detach().reshape(-1) for _, p in named])
        self.grad = torch.zeros(total, device=self.device, dtype=self.dtype)
        for (_, p), off, size in zip(named, self.offsets, self.sizes, strict=True):
            p.data = self.x[off:off + size].view_as(p)
            p.grad = self.grad[off:off + size].view_as(p)

    def __len__(self) -> int:
        return self.x.numel()

    def check_finite(self, what: str = "the model's parameters") -> None:
        """Refuse non-finite parameter values by the parameter's name (bad input: the sampler has
        not stepped)."""
        for (name, _), off, size in zip(self.named, self.offsets, self.sizes, strict=True):
            if not bool(torch.isfinite(self.x[off:off + size]).all()):
                raise ValueError(f"{what} must be finite: parameter {name!r} contains non-finite values")

    def per_coordinate(self, values) -> torch.Tensor:
        """A flat tensor holding ``values[j]`` on parameter ``j``'s coordinates."""
        return torch.cat([torch.full((s,), float(val), device=self.device, dtype=self.dtype)
                          for s, val in zip(self.sizes, values, strict=True)])

    def flatten(self, value) -> torch.Tensor:
        """A flat tensor from a flat tensor or a ``{name: tensor}`` mapping (all parameters)."""
        if isinstance(value, Mapping):
            missing = [n for n, _ in self.named if n not in value]
            if missing:
                raise ValueError(f"the mapping lacks parameters {missing}")
            unknown = sorted(set(value) - self.state_names - {n for n, _ in self.named})
            if unknown:  # (buffers and frozen parameters of a state_dict are skipped)
                raise ValueError(f"the mapping names no parameter of the model: {unknown}")
            for n, p in self.named:
                shape = tuple(torch.as_tensor(value[n]).shape)
                if shape != tuple(p.shape) and shape != (p.numel(),):  # the parameter's shape, or flat
                    raise ValueError(f"the mapping's {n!r} has shape {shape}, the parameter {tuple(p.shape)}")
            flat = torch.cat([torch.as_tensor(value[n]).reshape(-1) for n, _ in self.named])
        else:
            flat = torch.as_tensor(value).reshape(-1)
        if flat.numel() != len(self):
            raise ValueError(f"expected {len(self)} parameter values, got {flat.numel()}")
        flat = flat.to(device=self.device, dtype=self.dtype)
        if not torch.isfinite(flat).all():
            raise ValueError("x_star contains non-finite values")
        return flat

    def gradient(self, loss: torch.Tensor) -> torch.Tensor:
        """``grad`` of ``loss`` in the flat gradient buffer (backward accumulates into its views)."""
        self.grad.zero_()
        loss.backward()
        for (_, p), off, size in zip(self.named, self.offsets, self.sizes, strict=True):
            if p.grad is None or p.grad.data_ptr() != self.grad[off:].data_ptr():
                # autograd replaced the view (or a user cleared it): copy and re-attach
                if p.grad is not None:
                    self.grad[off:off + size].copy_(p.grad.reshape(-1))
                else:
                    self.grad[off:off + size].zero_()
                p.grad = self.grad[off:off + size].view_as(p)
        return self.grad


def chain_streams(config: SamplerConfig, params: FlatParameters, seed: int, generator=None):
    """One chain's random sources: ``(normals, batches)``.  The path normals (and the starting
    velocity, the first draw a sampler takes from them after this) come from a ``torch.Generator``
    on the parameters' device seeded with ``seed`` (or ``generator``, already seeded); the plan's
    batches from a second generator, seeded with the first generator's first draw."""
    dev = params.device
    normals = GeneratorNormals(seed, dev, params.dtype, generator)
    plan_gen = torch.Generator(device=dev)
    plan_gen.manual_seed(int(torch.randint(2**62, (1,), generator=normals.generator, device=dev)))
    return normals, plan_batches(config.plan, config.n_data, config.effective_batch_size, plan_gen, dev)


@dataclass(frozen=True)
class QuadraticTerms:
    """The terms of the force that do not come from the data, and the localization's box:

        G(x) = scale * grad L(x; w) + curvature * x - shift                 (:meth:`linear`)

    with ``curvature = prior + 1/rho^2`` and ``shift = x*/rho^2`` under localization (``prior``,
    the prior precision per coordinate, and no shift without), ``reflect`` the elastic bounce off
    the box ``|x - x*|_inf < half_width`` (None without localization).  Built by
    :func:`quadratic_terms`; ``x`` may hold one chain ``(P,)`` or several ``(K, P)``."""

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
    """The prior of ``config`` on ``params`` and, with ``config.localization``, its ``x*`` (the
    model's parameters when the sampler is built, or the given flat tensor or mapping, which must be
    finite), precision ``1/rho^2`` and box of half width ``rho_max`` (default ``6 rho``).  The
    starting point(s) ``x`` must lie inside the box (else ``ValueError``: ``outside`` says whose)."""
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


class ModuleSampler:
    """``scheme x plan`` on the posterior over ``model``'s parameters (see the module docstring).

    ``generator``: a seeded ``torch.Generator`` on the parameters' device (default: one seeded with
    ``config.seed``) for the path noise; the batches are drawn from a second generator seeded from
    it.  ``batches`` / ``noise``: explicit sequences (iterables of index tensors / of ``(dW, J)``
    pairs of shape ``(2, P)`` each) replacing the plan's and the generator's draws (for tests).
    """

    def __init__(self, model: torch.nn.Module, config: SamplerConfig, *, generator=None,
                 batches=None, noise=None, v0=None):
        if not isinstance(config, SamplerConfig):
            raise ValueError(f"config must be a SamplerConfig, got {type(config).__name__}")
        self.model, self.config = model, config
        self.params = FlatParameters(model)  # (a model that is no nn.Module: refused naming model)
        self.x = self.params.x
        dev, dt = self.params.device, self.params.dtype
        check_sampler_fits("a ModuleSampler", self.params, config)
        self.params.check_finite()
        self.module = torch_step(config.scheme)
        self.normals, plan = chain_streams(config, self.params, config.seed, generator)
        self._batches: Iterator = iter(batches) if batches is not None else plan
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
        self._last_batch = None
        self._last_loss = None

    # ------------------------------------------------------------------------------ the force
    def _loss(self, loss_fn, batch) -> torch.Tensor:
        try:
            loss = loss_fn(self.model, batch)
        except IndexError as exc:  # the plan draws indices below n_data: the data must be at least that long
            # (on CPU; on CUDA an index beyond the data is a device-side assert torch cannot name)
            raise ValueError(f"loss_fn raised IndexError on batch indices up to {int(batch.max())}: is "
                             f"SamplerConfig.n_data={self.config.n_data} larger than the data? ({exc})") from exc
        if not isinstance(loss, torch.Tensor):
            got = type(loss).__name__
        elif loss.numel() != 1:
            got = f"a tensor of shape {tuple(loss.shape)}"
        elif not loss.requires_grad:
            got = "a tensor that does not depend on the parameters"
        else:
            return loss.reshape(())
        raise ValueError(f"loss_fn(model, indices) must return a one-element tensor computed from the model's "
                         f"parameters (the summed loss of the batch), got {got}")

    def _data_gradient(self, loss_fn, batch) -> torch.Tensor:
        loss = self._loss(loss_fn, batch)
        self._last_loss = loss.detach()
        return self.params.gradient(loss)

    def _reference_gradient(self, loss_fn, batch) -> torch.Tensor:
        """``grad L(x*; batch)``: the parameters visit ``x*`` and come back."""
        here = self.x.detach().clone()
        with torch.no_grad():
            self.x.copy_(self.x_star)
        grad = self.params.gradient(self._loss(loss_fn, batch)).clone()
        with torch.no_grad():
            self.x.copy_(here)
        return grad

    def full_reference_gradient(self, loss_fn) -> torch.Tensor:
        """``sum_i grad f_i(x*)`` over the whole data set, in batches of ``batch_size``."""
        n, b = self.config.n_data, self.config.effective_batch_size
        total = torch.zeros_like(self.x)
        for start in range(0, n, b):
            idx = torch.arange(start, min(start + b, n), device=self.x.device)
            total += self._reference_gradient(loss_fn, idx)
        return total

    def force(self, loss_fn, batch) -> torch.Tensor:
        """``G(x, batch)`` at the current parameters (a new tensor)."""
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
        """The plan's next batch indices (what the data loader should load)."""
        try:
            return next(self._batches)
        except StopIteration:
            raise ValueError(f"the explicit batch sequence ran out at step {self.k + 1}") from None

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
        """First-same-as-last schemes: the force at the starting point with the first batch
        (``step`` calls this itself when needed)."""
        batch = self.next_batch() if batch is None else batch
        self.g = self.force(loss_fn, batch)
        self._last_batch = batch

    def step_size(self, k: int) -> float:
        return self.config.step_size(k)

    def step(self, loss_fn) -> StepInfo:
        """Advance one step; ``loss_fn(model, indices)`` returns the sum of the per-datum losses
        of the batch ``indices``."""
        if self.module.FSAL and self.g is None:
            self.prime(loss_fn)
        k = self.k + 1
        h = self.step_size(k)
        coef = tuple(float(c) for c in self.module.coefficients(h, self.config.gamma))
        dW, J = self._path(h)
        batch = self.next_batch()

        def force(x):
            return self.force(loss_fn, batch)

        g = self.g if self.g is not None else torch.zeros_like(self.x)
        with torch.no_grad():
            self.g = self.module.step(self.x, self.v, g, coef, dW, J, force, self.reflect)
        self.k = k
        record_divergence(self.diverged_at, k, self.x, self.g)
        if k % self.config.check_every == 0:
            self.check_finite()
        self._last_batch = batch
        return StepInfo(step=k, h=h, batch=batch, loss=self._last_loss)

    def check_finite(self) -> None:
        """Raise :class:`SamplerDiverged` naming the first step whose parameters or force were
        not finite, if there was one (one read from the device; see :mod:`integrators.divergence`)."""
        at = int(self.diverged_at)
        if at != NOT_DIVERGED:
            raise SamplerDiverged(at, "a parameter" if not bool(torch.isfinite(self.x).all()) else "the force")

    def metadata(self) -> dict:
        """Run metadata: the configuration, the device, the dtype and the torch version."""
        return run_metadata(self.config, self.x, n_chains=1)

    def boundary_fraction(self) -> float | None:
        """The fraction of the parameters sitting on the localization box's wall
        (:func:`boundary_fraction`; None without localization): large when the step is too large
        for the posterior and the bounces, not the posterior, hold the parameters."""
        return self.terms.boundary_fraction(self.x)

    @property
    def state(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x, v)``: the flat parameters (views of the model's) and velocities."""
        return self.x, self.v
