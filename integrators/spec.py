"""One run described once: :class:`RunSpec` and the option objects it nests.

A spec names the target, the scheme and plan, the step size and friction, the chains, steps,
burn-in and seed, and groups what belongs together in option objects: :class:`Observers` (what is
recorded), :class:`Box` (the elastic bounce), :class:`ControlVariate` and the backend,
:class:`Numba` or :class:`Torch`.  It is frozen and checks itself when made: every field against
its declared constraint (:mod:`integrators.validation`), then the fields against each other and
against the backend (an option a backend cannot honour is refused by name, never ignored).
Nothing compiles or allocates before that; then :meth:`RunSpec.run` hands the spec to the
backend's adapter (:mod:`integrators.chains` for Numba, :mod:`integrators.torch.chains` for
torch), which returns the same :class:`integrators.result.SampleResult`.

    >>> from integrators import GaussianTarget
    >>> spec = RunSpec(GaussianTarget.one_d_example(), "ubu", "sms", h=0.1, n_chains=100,
    ...                n_steps=2000, batch_size=1, seed=1)
    >>> spec.memory_bytes() < 2**20
    True

:func:`integrators.sample` keeps its flat keyword interface and builds a spec
(:meth:`RunSpec.from_options`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace

import numpy as np

from integrators.bounce import make_box
from integrators.memory import check_fits, device_memory_bytes
from integrators.plans import FULL, kernel_code, plan_rule, resolve_plan
from integrators.rng import STATE_WORDS
from integrators.schemes import resolve_scheme
from integrators.seeds import derive
from integrators.targets import Target
from integrators.validation import (
    BOOLEAN,
    HISTOGRAM,
    POSITIVE,
    SEED,
    Constraint,
    at_least,
    batch_size_for,
    check_parameters,
    divergence_bound_for,
    finite_array,
    initial_state,
    instance_of,
    optional,
    power_of_two,
    step_over_friction,
    test_functions_and_data,
)

MAX_PATH_REFINE = 2**20  # fine intervals per step: beyond this a run does nothing but draw its path
TILE_SIZE = 256  # about this many chains advance together in the Numba kernel (their arrays stay in L1)
THREADS_VARIABLE = "SMS_LANGEVIN_THREADS"
TORCH_DTYPES = ("float64", "float32")


def _frozen_set(obj, **values) -> None:
    for name, value in values.items():
        object.__setattr__(obj, name, value)


# ------------------------------------------------------------------ option objects
@dataclass(frozen=True, eq=False)
class Observers:
    """What a run records besides the per-chain first and second moments: ``keep`` thinned
    samples per chain, ``full_moments`` (``x x^T``), ``n_test_functions`` values of
    ``test_functions`` (a Numba function ``f(x, out, test_data)``; Numba backend), and
    ``histogram=(lo, hi, n_bins)`` of the first coordinate after burn-in."""

    keep: int = 0
    full_moments: bool = False
    test_functions: object = None
    n_test_functions: int = 0
    test_data: tuple = ()
    histogram: tuple | None = None

    CONSTRAINTS = {"keep": at_least(0), "full_moments": BOOLEAN, "n_test_functions": at_least(0),
                   "histogram": HISTOGRAM}

    def __post_init__(self):
        values = check_parameters({f.name: getattr(self, f.name) for f in fields(self)}, self.CONSTRAINTS)
        values["test_data"] = test_functions_and_data(self.test_functions, values["n_test_functions"],
                                                      self.test_data)
        _frozen_set(self, **values)

    @property
    def n_bins(self) -> int:
        return 0 if self.histogram is None else self.histogram[2]


@dataclass(frozen=True, eq=False)
class Box:
    """The elastic bounce: positions stay in ``|x - center|_inf < half_width`` (``center``
    default the origin; either may be one number for every coordinate)."""

    half_width: object
    center: object = None

    def arrays(self, dim: int) -> tuple:
        """The ``(center, half_width, active)`` tuple the kernels take, checked for ``dim``."""
        return make_box(dim, self.center, self.half_width)


@dataclass(frozen=True, eq=False)
class ControlVariate:
    """The force's control variate at ``x_ref`` (the paper's SG1; default: the L-BFGS mode)."""

    x_ref: object = None


@dataclass(frozen=True)
class Numba:
    """The Numba kernel (:mod:`integrators.chains`) on ``threads`` worker threads (default:
    ``SMS_LANGEVIN_THREADS`` or every core)."""

    threads: int | None = None
    NAME = "numba"

    def __post_init__(self):
        _frozen_set(self, threads=optional(at_least(1))("threads", self.threads))

    def resolved_threads(self) -> int:
        if self.threads is not None:
            return self.threads
        text = os.environ.get(THREADS_VARIABLE, "").strip()  # set by an executor running units side by side
        if not text:
            return os.cpu_count() or 1
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"environment variable {THREADS_VARIABLE} must be a positive integer, got {text!r}")
        return value

    def refuse(self, spec: RunSpec) -> None:
        """The kernel runs every option; a scheme written only in torch is refused by name."""
        if spec.scheme_module.step is None:
            raise ValueError(f"scheme {spec.scheme_module.NAME!r} is written only in torch (step=None, TORCH_STEP): "
                             f"the Numba backend cannot run it; pass backend=Torch()")

    def memory_bytes(self, spec: RunSpec) -> float:
        # every per-chain array about twice (the initial layout and the threads' stacks); per thread, the
        # histogram's counts and a tile's batch and permutation buffers over the data (int32, two of them)
        obs, dim = spec.observers, spec.target.dim
        per_chain = (6 * dim + (dim * dim if obs.full_moments else 0) + obs.n_test_functions + obs.keep * dim
                     + 4 * STATE_WORDS)
        per_thread = obs.n_bins + min(spec.n_chains, TILE_SIZE) * spec.target.n_data
        n_threads = min(self.resolved_threads(), math.ceil(spec.n_chains / TILE_SIZE))
        return 8.0 * (2 * spec.n_chains * per_chain + n_threads * per_thread)

    def memory_limit(self) -> float | None:
        return None  # the machine's physical memory

    def run(self, specs: list[RunSpec]) -> list:
        from integrators.chains import run_specs

        return run_specs(specs)


@dataclass(frozen=True)
class Torch:
    """The tensor backend (:mod:`integrators.torch.chains`) on ``device`` in ``dtype``
    (``"float64"`` or ``"float32"``; observers accumulate in float64); ``compile=True`` (or a
    ``torch.compile`` backend's name) runs each step compiled."""

    device: str = "cpu"
    dtype: str = "float64"
    compile: bool | str = False
    NAME = "torch"

    def __post_init__(self):
        from integrators.torch.chains import resolve_compile, resolve_device, resolve_dtype

        _frozen_set(self, device=str(resolve_device(self.device)),
                    dtype=str(resolve_dtype(self.dtype)).replace("torch.", ""),
                    compile=resolve_compile(self.compile))

    def refuse(self, spec: RunSpec) -> None:
        """Refuse, by name, what the tensor backend does not run."""
        from integrators.torch.schemes import torch_step

        torch_step(spec.scheme)  # a scheme without a tensor step, by name
        plan_rule(spec.plan)  # a plan whose batches come from a Numba rule of its own, by name
        if spec.observers.test_functions is not None:
            raise ValueError("test_functions is a Numba function: the torch backend cannot run it "
                             "(use the Numba backend, or keep=... and compute the test functions on the samples)")
        if spec.path_refine != 1:
            raise ValueError(f"path_refine={spec.path_refine} is offered by the Numba backend only")

    def memory_bytes(self, spec: RunSpec) -> float:
        # state, force, path and observers about 16 numbers per coordinate; the plan's per-chain arrays
        # (partition plans: uniforms, a permutation and its batches over the data) and the force's
        # per-datum terms of a batch (the whole data under full)
        obs, dim, n_data = spec.observers, spec.target.dim, spec.target.n_data
        kind = plan_rule(spec.plan).kind
        plan_terms = 3 * n_data if kind == "partition" else 0
        batch_terms = (n_data if kind == "full" else spec.batch_size) * dim
        per_chain = 16 * dim + plan_terms + batch_terms + obs.keep * dim + (dim * dim if obs.full_moments else 0)
        return 8.0 * (spec.n_chains * per_chain + obs.n_bins)

    def memory_limit(self) -> float | None:
        return device_memory_bytes(self.device)

    def run(self, specs: list[RunSpec]) -> list:
        from integrators.torch.chains import run_spec

        return [run_spec(spec) for spec in specs]


BACKEND = instance_of((Numba, Torch), "a backend: Numba(threads) or Torch(device, dtype, compile)")


# ------------------------------------------------------------------ module mode's options


@dataclass(frozen=True)
class Localization:
    """Module mode and ensembles (:mod:`integrators.torch.module`): the localized posterior around
    ``x_star`` (None: the model's parameters when the sampler is built; else a flat tensor in the
    sampler's parameter order or a ``{name: tensor}`` mapping): the term ``|x - x*|^2 / (2 rho^2)``
    and the box ``|x - x*|_inf < rho_max`` (default ``6 rho``, the paper's choice; the paper's
    friction is ``gamma = 1 / rho``)."""

    rho: float
    rho_max: float | None = None
    x_star: object = None

    def __post_init__(self):
        POSITIVE("rho", self.rho)
        if self.rho_max is not None:
            POSITIVE("rho_max", self.rho_max)

    @property
    def half_width(self) -> float:
        return 6.0 * self.rho if self.rho_max is None else float(self.rho_max)


@dataclass(frozen=True)
class CyclicalSchedule:
    """Module mode and ensembles: the cyclical step size of cSG-MCMC (Zhang et al., ICLR 2020):
    ``h_k = h * (cos(pi * ((k - 1) mod C) / C) + 1) / 2`` with ``C = ceil(n_steps / n_cycles)``."""

    n_steps: int
    n_cycles: int

    def __post_init__(self):
        at_least(1)("n_steps", self.n_steps)
        at_least(1)("n_cycles", self.n_cycles)
        if self.n_cycles > self.n_steps:
            raise ValueError(f"n_cycles={self.n_cycles} exceeds n_steps={self.n_steps}")

    def factor(self, k: int) -> float:
        length = math.ceil(self.n_steps / self.n_cycles)
        return 0.5 * (math.cos(math.pi * ((k - 1) % length) / length) + 1.0)



# ------------------------------------------------------------------ the spec
@dataclass(frozen=True, eq=False)
class RunSpec:
    """One run of ``n_chains`` independent chains of ``scheme x plan`` on ``target`` (see the
    module docstring).  ``batch_size`` is required except for ``plan="full"``, which uses all the
    data (and records that as its batch size, whatever was given);
    ``x0`` / ``v0`` are the initial states (``(d,)`` for every chain or ``(n_chains, d)``;
    default: ``target.initial_point()`` and standard normal velocities); ``path_refine`` (a power
    of two) drives the run with the Brownian path of ``h / path_refine``; a chain is diverged at
    the first step where a coordinate of ``x`` or ``v`` is not finite or beyond
    ``divergence_bound`` (default ``target.divergence_bound()``; :mod:`integrators.divergence`)."""

    target: Target
    scheme: object = "ubu"
    plan: object = "sms"
    h: float = 0.1
    gamma: float = 1.0
    n_chains: int = 100
    n_steps: int = 1000
    burn_in: int = 0
    seed: int = 0
    batch_size: int | None = None
    x0: object = None
    v0: object = None
    control_variate: ControlVariate | None = None
    box: Box | None = None
    observers: Observers = field(default_factory=Observers)
    path_refine: int = 1
    divergence_bound: float | None = None
    backend: Numba | Torch = field(default_factory=Numba)

    CONSTRAINTS = {
        "target": instance_of(Target, "a Target (e.g. GaussianTarget)"),
        "scheme": Constraint("a registered scheme's name or a scheme object", lambda name, v: resolve_scheme(v)),
        "plan": Constraint("a registered plan's name or a plan object", lambda name, v: resolve_plan(v)),
        "h": POSITIVE, "gamma": POSITIVE, "n_chains": at_least(1), "n_steps": at_least(1), "burn_in": at_least(0),
        "seed": SEED,
        "control_variate": optional(instance_of(ControlVariate, "None or ControlVariate(x_ref)")),
        "box": optional(instance_of(Box, "None or Box(half_width, center)")),
        "observers": instance_of(Observers, "Observers(keep, full_moments, ...)"),
        "path_refine": Constraint(f"a power of two <= {MAX_PATH_REFINE}",
                                  lambda name, v: power_of_two(name, v, MAX_PATH_REFINE)),
        "backend": BACKEND,
    }

    def __post_init__(self):
        values = check_parameters({f.name: getattr(self, f.name) for f in fields(self)}, self.CONSTRAINTS)
        target = values["target"]
        kernel_code(values["plan"])  # a plan with no batch rule runs in the exact oracle only
        if values["burn_in"] >= values["n_steps"]:
            raise ValueError(f"burn_in must be smaller than n_steps={values['n_steps']}, got {values['burn_in']}")
        step_over_friction(values["h"], values["gamma"])
        batch_size = values["batch_size"]
        if values["plan"].CODE == FULL:  # a batch size given for every plan of a loop is checked, then
            batch_size_for(target, batch_size or 1)  # the spec records what runs: all the data
            batch_size = target.n_data
        elif batch_size is None:
            raise ValueError(f"batch_size is required for plan {values['plan'].NAME!r}")
        values["batch_size"] = batch_size_for(target, batch_size)
        values["divergence_bound"] = divergence_bound_for(target, values["divergence_bound"])
        del values["scheme"], values["plan"]  # kept as given: a registered name, or the object itself
        x0, v0 = values.pop("x0"), values.pop("v0")
        object.__setattr__(self, "_given_states", (x0, v0))  # for replace(): a default is made anew
        _frozen_set(self, **values)
        self.backend.refuse(self)
        self.check_memory()  # before any array of n_chains rows exists
        n, dim = self.n_chains, target.dim
        x0 = initial_state("x0", x0, n, dim, target.initial_point())
        v0 = None if v0 is None else initial_state("v0", v0, n, dim, None)
        bound = self.divergence_bound
        if np.any(np.abs(x0) > bound) or (v0 is not None and np.any(np.abs(v0) > bound)):
            raise ValueError(f"x0 or v0 lies beyond divergence_bound={bound:g}: those chains would be diverged "
                             f"at their first step")
        if self.box is not None:
            center, half_width, _ = self.box.arrays(dim)
            if np.any(np.abs(x0 - center) >= half_width):
                raise ValueError("x0 lies outside the box |x - box_center|_inf < box_half_width")
        if self.control_variate is not None and self.control_variate.x_ref is not None:
            x_ref = finite_array("x_ref", self.control_variate.x_ref)
            if x_ref.ndim > 1 or x_ref.reshape(-1).shape != (dim,):
                raise ValueError(f"x_ref must have shape {(dim,)}, got {x_ref.shape}")
        _frozen_set(self, x0=x0, v0=v0)

    # ---------------------------------------------------------------- derived
    @property
    def scheme_module(self):
        return resolve_scheme(self.scheme)

    @property
    def plan_module(self):
        return resolve_plan(self.plan)

    def box_arrays(self) -> tuple:
        """The kernels' ``(center, half_width, active)`` (inactive without a box)."""
        return make_box(self.target.dim) if self.box is None else self.box.arrays(self.target.dim)

    def memory_bytes(self) -> float:
        """About how many bytes of arrays the run holds on its backend."""
        return self.backend.memory_bytes(self)

    def check_memory(self) -> None:
        """Refuse a run whose arrays cannot fit in the backend's memory, naming what sized them."""
        obs = self.observers
        try:
            n_bytes = self.memory_bytes()
        except OverflowError:  # counts beyond the float range: more than any memory
            n_bytes = math.inf
        check_fits(f"n_chains={self.n_chains} with d={self.target.dim}, keep={obs.keep}, "
                   f"full_moments={obs.full_moments}, n_test_functions={obs.n_test_functions} and "
                   f"{obs.n_bins} histogram bins on the {self.backend.NAME} backend",
                   n_bytes, limit=self.backend.memory_limit())

    def derive_seed(self, *labels) -> int:
        """A seed for a part of an experiment built on this run (:func:`integrators.seeds.derive`)."""
        return derive(self.seed, *labels)

    def replace(self, **changes) -> RunSpec:
        """A copy with ``changes`` (checked anew; initial states given as defaults are made anew)."""
        x0, v0 = self._given_states
        return replace(self, **{"x0": x0, "v0": v0, **changes})

    def run(self):
        """Run the spec on its backend: a :class:`integrators.result.SampleResult`."""
        return self.backend.run([self])[0]

    # ---------------------------------------------------------------- from sample()'s keywords
    @classmethod
    def from_options(cls, target, scheme="ubu", plan="sms", *, h=0.1, gamma=1.0, n_chains=100, n_steps=1000,
                     burn_in=0, seed=0, batch_size=None, x0=None, v0=None, control_variate=False, x_ref=None,
                     box_center=None, box_half_width=None, keep=0, full_moments=False, test_functions=None,
                     n_test_functions=0, test_data=(), path_refine=1, threads=None, divergence_bound=None,
                     histogram=None, backend=None) -> RunSpec:
        """The spec of :func:`integrators.sample`'s flat keywords (the one place they are grouped)."""
        control_variate = BOOLEAN("control_variate", control_variate)
        if x_ref is not None and not control_variate:  # a reference point is only read by the control variate
            raise ValueError("x_ref is given but control_variate is false: pass control_variate=True to use it")
        if box_center is not None and box_half_width is None:
            raise ValueError("box_center needs box_half_width (the box is |x - box_center|_inf < box_half_width)")
        if backend is None:
            backend = Numba(threads)
        elif threads is not None:
            raise ValueError(f"threads={threads!r} belongs to the Numba backend; with backend={backend!r} leave it "
                             f"out (Numba(threads=...) sets it)")
        return cls(target, scheme, plan, h=h, gamma=gamma, n_chains=n_chains, n_steps=n_steps, burn_in=burn_in,
                   seed=seed, batch_size=batch_size, x0=x0, v0=v0,
                   control_variate=ControlVariate(x_ref) if control_variate else None,
                   box=None if box_half_width is None else Box(box_half_width, box_center),
                   observers=Observers(keep, full_moments, test_functions, n_test_functions, test_data, histogram),
                   path_refine=path_refine, divergence_bound=divergence_bound, backend=backend)
