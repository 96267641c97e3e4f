"""A module-mode sampler's configuration (:class:`SamplerConfig`, checked when made), its prior
precisions by parameter (:func:`prior_precisions`), its run metadata, and the memory its buffers
take (:func:`check_sampler_fits` refuses a request that cannot fit before anything is allocated)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING

import torch

from integrators._memory import check_fits, device_memory_bytes
from integrators._options import CyclicalSchedule, Localization
from integrators._spec import SAMPLER
from integrators._validation import (
    BOOLEAN,
    DictOf,
    Either,
    Interval,
    Registered,
    at_least,
    batch_size_for,
    check_parameters,
    instance_of,
    optional,
    step_over_friction,
)
from integrators.plans import check_for_run, force_scale, plan_rule
from integrators.torch._graph import GRAPH, graph_refusal
from integrators.torch.schemes import torch_step

if TYPE_CHECKING:
    from integrators.torch._flat import FlatParameters

# what a loss function must be (ModuleSampler and EnsembleSampler refuse any other by this contract)
LOSS_FN_FORM = "loss_fn(model, indices) returning the summed loss of the batch indices (a one-element tensor)"

# a prior as SamplerConfig takes it, checked when the config is made (a callable's values when the sampler is
# built, by prior_precisions): a precision is finite and >= 0, or the posterior is not a distribution
PRECISION = Interval(float, 0, None, closed="left")
PRIOR = Either(PRECISION, DictOf(PRECISION), instance_of(Callable, "a callable (name, param) -> precision"))

# Flat parameter-sized tensors a sampler holds at its peak, per chain: the state x, v, the force g
# and the gradient buffer, the prior and the localization's curvature, shift and x*, the step's
# four normals and the path pair (dW, J) drawn from them, and the bounce's temporaries.
SAMPLER_BUFFERS = 20


LOCALIZATION_BUFFERS = 7  # of those, held only with localization: its curvature, shift, x* and the bounce's


def sampler_bytes(n_params: int, dtype: torch.dtype, config, n_chains: int = 1) -> float:
    """Bytes ``n_chains`` chains of a sampler of ``n_params`` parameters hold at their peak:
    :data:`SAMPLER_BUFFERS` flat tensors each, and each chain's plan (a permutation of the
    ``n_data`` indices as int64; the batch for ``iid``)."""
    itemsize = torch.empty((), dtype=dtype, device="meta").element_size()
    plan = config.effective_batch_size if config.plan == "iid" else config.n_data
    buffers = SAMPLER_BUFFERS - (0 if config.localization is not None else LOCALIZATION_BUFFERS)
    return float(n_chains) * (float(n_params) * buffers * itemsize + 8.0 * plan)


AUTO_CHAINS_CAP = 32  # n_chains="auto" picks at most this many (a device's throughput stops growing well before)
AUTO_CHAINS_CPU = 4  # ... and this many off CUDA (the host's cores, not its memory, bound the gain there)
AUTO_CHAINS_SHARE = 0.5  # the share of the free memory the estimated buffers may take (activations need the rest)


def chains_that_fit(free_bytes: float | None, per_chain_bytes: float, *, cap: int = AUTO_CHAINS_CAP,
                    share: float = AUTO_CHAINS_SHARE) -> int:
    """The largest ``K`` in ``[1, cap]`` with ``K * per_chain_bytes <= share * free_bytes`` (1 when not even
    one fits: the sampler's own check then refuses it by name; ``cap`` when the free memory is unknown)."""
    if free_bytes is None:
        return cap
    if per_chain_bytes <= 0:
        return cap
    return int(max(1, min(cap, math.floor(share * free_bytes / per_chain_bytes))))


def auto_chains(params: FlatParameters, config, *, extra_bytes_per_chain: float = 0.0) -> int:
    """``n_chains="auto"``: on CUDA :func:`chains_that_fit` of the device's free memory now and
    :func:`sampler_bytes` per chain (plus ``extra_bytes_per_chain``, e.g. measured activations);
    :data:`AUTO_CHAINS_CPU` elsewhere."""
    if params.device.type != "cuda":
        return AUTO_CHAINS_CPU
    per_chain = sampler_bytes(len(params), params.dtype, config) + float(extra_bytes_per_chain)
    return chains_that_fit(device_memory_bytes(params.device), per_chain)


def check_sampler_fits(request: str, params: FlatParameters, config, n_chains: int = 1, *,
                       extra_buffers: int = 0) -> None:
    """Raise ``ValueError`` naming ``request`` when ``n_chains`` chains' buffers over ``params`` (and
    ``extra_buffers`` more flat tensors each, e.g. module mode's saved state) exceed the memory free on
    their device now, before anything is allocated."""
    n, dtype, device = len(params), params.dtype, params.device
    extra = float(n_chains) * extra_buffers * n * torch.empty((), dtype=dtype, device="meta").element_size()
    check_fits(f"{request} ({n} parameters of {str(dtype).replace('torch.', '')} on {device}, "
               f"n_data={config.n_data}, plan {config.plan!r})",
               sampler_bytes(n, dtype, config, n_chains) + extra, limit=device_memory_bytes(device))


def weights_prior(precision: float = 1.0) -> Callable[[str, torch.Tensor], float]:
    """The design's BNN prior: ``precision`` on weights, none on biases.

    Parameters
    ----------
    precision : float, default 1.0
        The prior precision of every parameter whose name ends in ``weight``.

    Returns
    -------
    callable
        ``rule(name, param) -> float``: ``precision`` for a name ending in ``weight``, else 0
        (a ``SamplerConfig.prior``).
    """
    return lambda name, param: precision if name.endswith("weight") else 0.0


@dataclass(frozen=True)
class SamplerConfig:
    """Everything that defines a module-mode sampler, checked when made.

    Parameters
    ----------
    h : float
        Step size, positive.
    gamma : float
        Friction, positive, with ``h / gamma >= 1e-12`` (the paper's localized runs use
        ``gamma = 1 / rho``).
    n_data : int
        Number of data terms ``N_D``, at least 1.
    scheme : str, default "ubu"
        A registered scheme with a tensor step (keyword-only from here on).
    plan : str, default "sms"
        A registered plan with a batch rule every backend runs.
    batch_size : int or None, default None
        Batch size in ``[1, n_data]``; required except for ``plan="full"``.
    prior : float or mapping or callable, default 1.0
        A number (that precision on weights only, :func:`weights_prior`), a mapping
        ``{parameter name: precision}`` (others 0) or a callable ``(name, param) -> precision``;
        every precision finite and ``>= 0`` (a number's and a mapping's checked here, a
        callable's when the sampler is built).
    localization : Localization or None, default None
        The localized posterior and its box (module mode's constrained sampling).
    control_variate : bool, default False
        Use the control-variate force at the localization's ``x_star`` (needs ``localization``).
    schedule : CyclicalSchedule or None, default None
        A cyclical step size.
    seed : int, default 0
        An integer in ``[0, 2**64)``.
    check_every : int, default 1
        Steps between the finiteness checks, at least 1 (each one waits for the device).
    graph : True, False or "auto", default "auto"
        Replay each step from static buffers (:mod:`integrators.torch._graph`): on CUDA the whole
        step (forward, backward, update, divergence record) is captured in a CUDA graph and
        launched at once; elsewhere it is the same arithmetic as a plain call.  The trajectory is
        the eager step's (the same draws, in the same order).  ``"auto"``: on for a CUDA device
        without a schedule or a control variate (which ``True`` refuses).  The loss function is
        captured with the graph: pass the same one every step, without host reads (``.item()``).

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each checked field (:mod:`integrators._validation`).

    Raises
    ------
    ValueError
        Naming the argument, if a field breaks its constraint (an unknown scheme or plan, or
        one the tensor backend cannot run, included), ``h / gamma`` is too small, ``batch_size``
        is missing or larger than the data, or ``control_variate`` is asked without
        ``localization``.
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
    graph: bool | str = "auto"

    CONSTRAINTS = {
        **SAMPLER,  # the sampler part every description shares, with the torch backend's scheme and plan:
        # unknown, or with no tensor step / batches from a Numba rule of its own, refused by name
        "scheme": Registered(torch_step, "a scheme with a tensor step"),
        "plan": Registered(plan_rule, "a plan with a batch rule"),
        "n_data": at_least(1), "control_variate": BOOLEAN,
        "localization": optional(instance_of(Localization, "a Localization")),
        "schedule": optional(instance_of(CyclicalSchedule, "a CyclicalSchedule")),
        "check_every": at_least(1), "graph": GRAPH, "prior": PRIOR,
    }
    VALID_EXAMPLE = {"h": 0.1, "gamma": 1.0, "n_data": 10, "batch_size": 2}

    def __post_init__(self):
        values = check_parameters({name: getattr(self, name) for name in self.CONSTRAINTS}, self.CONSTRAINTS)
        for name in ("h", "gamma", "n_data", "batch_size", "control_variate", "seed", "check_every", "prior"):
            object.__setattr__(self, name, values[name])  # canonical (a 0-d array becomes its number)
        step_over_friction(self.h, self.gamma)  # the rule every backend applies
        if self.batch_size is not None or plan_rule(self.plan).kind != "full":
            batch_size_for(self.n_data, self.batch_size, plan=self.plan)
        check_for_run(self.plan, self.n_data, self.effective_batch_size)  # its user code, at this run's sizes
        if self.control_variate and self.localization is None:
            raise ValueError("control_variate needs a reference point: give localization (its x_star)")
        refused = graph_refusal(self.graph, schedule=self.schedule, control_variate=self.control_variate)
        if refused:
            raise ValueError(refused)

    @property
    def effective_batch_size(self) -> int:
        """The batch size a step uses: ``batch_size``, or ``n_data`` when it is not given."""
        return self.n_data if self.batch_size is None else self.batch_size

    def step_size(self, k: int) -> float:
        """The step size of step ``k``.

        Parameters
        ----------
        k : int
            The step, counted from 1.

        Returns
        -------
        float
            ``h``, times the schedule's factor of step ``k`` if there is a schedule.
        """
        return self.h if self.schedule is None else self.h * self.schedule.factor(k)

    @property
    def scale(self) -> float:
        """The plan's force scale for ``n_data`` and the effective batch size (``N_m`` for partitions)."""
        return force_scale(self.plan, self.n_data, self.effective_batch_size)


def checked_loss(loss, *, tracked: bool = True):
    """``loss`` as a 0-d tensor if it keeps the loss contract (:data:`LOSS_FN_FORM`), else ``ValueError``:
    one message for ModuleSampler and EnsembleSampler.  ``tracked=False`` under ``torch.func`` transforms,
    where ``requires_grad`` does not say whether the loss depends on the parameters."""
    if not isinstance(loss, torch.Tensor):
        got = type(loss).__name__
    elif loss.numel() != 1:
        got = f"a tensor of shape {tuple(loss.shape)}"
    elif not loss.dtype.is_floating_point:
        got = f"a tensor of dtype {loss.dtype} (a loss is real)"
    elif tracked and not loss.requires_grad:
        got = "a tensor that does not depend on the parameters"
    else:
        return loss.reshape(())
    raise ValueError(f"loss_fn(model, indices) must return a one-element tensor computed from the model's "
                     f"parameters (the summed loss of the batch), got {got}")


def prior_precisions(named_params, prior, frozen=()) -> list[float]:
    """Per-parameter prior precision from ``SamplerConfig.prior`` (a mapping may name ``frozen`` parameters,
    without effect; a callable returns one number per parameter)."""
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
            "control_variate": config.control_variate, "graph": config.graph,
            "schedule": None if sched is None else {"n_steps": sched.n_steps, "n_cycles": sched.n_cycles}}
