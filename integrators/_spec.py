"""One run described once: :class:`RunSpec` and the option objects it nests.

A spec names the target, the scheme and plan, the step size and friction, the chains, steps,
burn-in and seed, and groups what belongs together in option objects: :class:`Observers` (what is
recorded), :class:`Box` (the elastic bounce), :class:`ControlVariate` and the backend,
:class:`Numba` or :class:`Torch`.  It is frozen and checks itself when made: every field against
its declared constraint (:mod:`integrators._validation`), then the fields against each other and
against the backend (an option a backend cannot honour is refused by name, never ignored).
Nothing compiles or allocates before that; then :meth:`RunSpec.run` hands the spec to the
backend's adapter (:mod:`integrators._chains` for Numba, :mod:`integrators.torch._chains` for
torch), which returns the same :class:`integrators._result.SampleResult`.

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
from dataclasses import dataclass, field, fields, replace

import numpy as np

from integrators._backends import BACKEND, Numba, Torch
from integrators._bounce import make_box
from integrators._memory import check_fits
from integrators._options import Box, ControlVariate, Observers, set_fields
from integrators._validation import (
    BOOLEAN,
    POSITIVE,
    SEED,
    PowerOfTwo,
    Registered,
    at_least,
    batch_size_for,
    check_parameters,
    divergence_bound_for,
    finite_array,
    initial_state,
    instance_of,
    optional,
    step_over_friction,
    steps,
)
from integrators.plans import FULL, check_for_run, kernel_code, resolve_plan
from integrators.schemes import resolve_scheme
from integrators.targets import Target

MAX_PATH_REFINE = 2**20  # fine intervals per step: beyond this a run does nothing but draw its path


# ------------------------------------------------------------------ the sampler part
# What every description of a sampler takes alike, declared once: RunSpec here, module mode's
# SamplerConfig (its scheme and plan narrowed to those the torch backend runs), weak_order and
# verify read these.  Across fields, the same two rules follow: step_over_friction(h, gamma) and
# batch_size_for(n_data, batch_size, plan=...).
SAMPLER = {
    "scheme": Registered(resolve_scheme, "a registered scheme's name or a scheme object"),
    "plan": Registered(resolve_plan, "a registered plan's name or a plan object"),
    "h": POSITIVE, "gamma": POSITIVE, "seed": SEED, "batch_size": optional(at_least(1)),
}


# ------------------------------------------------------------------ the spec
@dataclass(frozen=True, eq=False)
class RunSpec:
    """One run of ``n_chains`` independent chains of ``scheme x plan`` on ``target``, described once.

    The spec is frozen and checks itself when made (see the module docstring): every field
    against its declared constraint (:attr:`CONSTRAINTS`), then the fields against each other
    and against the backend (an option a backend cannot honour is refused by name, never
    ignored), and the memory the run needs, before anything compiles or allocates.  Every backend
    accepts the same spec; :meth:`run` returns a :class:`integrators._result.SampleResult`.

    Parameters
    ----------
    target : Target
        The potential, e.g. a :class:`integrators.GaussianTarget`.
    scheme : str or Scheme, default "ubu"
        A registered scheme's name or a scheme object (kept as given).
    plan : str or Plan, default "sms"
        A registered plan's name or a plan object (kept as given); it must declare a batch rule
        the kernel can run.
    h : float, default 0.1
        Step size, positive.
    gamma : float, default 1.0
        Friction, positive, with ``h / gamma >= 1e-12`` (below, positions would not move).
    n_chains : int, default 100
        Independent chains, at least 1.
    n_steps : int, default 1000
        Steps per chain, at least 1 and at most ``2**48``.
    burn_in : int, default 0
        Steps excluded from the statistics, smaller than ``n_steps``.
    seed : int, default 0
        An integer in ``[0, 2**64)``; chain ``c`` has its own path, batch and velocity streams.
    batch_size : int or None, default None
        Batch size ``N_b`` in ``[1, n_data]``; required except for ``plan="full"``, which uses all
        the data (and records that as its batch size; one given is still checked).
    x0, v0 : array_like or None, default None
        Initial positions and velocities, shape ``(d,)`` for every chain or ``(n_chains, d)``
        (default: ``target.initial_point()`` and standard normal velocities).
    control_variate : ControlVariate or None, default None
        The force's control variate.
    box : Box or None, default None
        The elastic bounce; ``x0`` must lie inside the box.
    observers : Observers, default Observers()
        What the run records beyond the per-chain moments.
    path_refine : int, default 1
        A power of two up to ``2**20``: drive the run with the Brownian path of
        ``h / path_refine`` (coarsened exactly to ``h``).
    divergence_bound : float or None, default None
        A chain is diverged at the first step where a coordinate of ``x`` or ``v`` is not finite
        or beyond it in absolute value (default ``target.divergence_bound()``;
        :mod:`integrators._divergence`).
    backend : Numba or Torch, default Numba()
        Where the run runs.

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each field (:mod:`integrators._validation`).

    Raises
    ------
    ValueError
        Naming the argument, if a field breaks its constraint; ``burn_in >= n_steps``; ``h / gamma``
        is too small; ``batch_size`` is missing or larger than the data; the backend cannot run
        an option; the arrays would not fit in memory; ``x0`` or ``v0`` has the wrong shape, is
        not finite or lies beyond ``divergence_bound``; ``x0`` lies outside the box; or ``x_ref``
        has the wrong shape.
    """

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
        **SAMPLER,
        "n_chains": at_least(1), "n_steps": steps(1), "burn_in": steps(0),
        "control_variate": optional(instance_of(ControlVariate, "None or ControlVariate(x_ref)")),
        "box": optional(instance_of(Box, "None or Box(half_width, center)")),
        "observers": instance_of(Observers, "Observers(keep, full_moments, ...)"),
        "path_refine": PowerOfTwo(MAX_PATH_REFINE),
        "backend": BACKEND,
    }

    def __post_init__(self):
        values = check_parameters({f.name: getattr(self, f.name) for f in fields(self)}, self.CONSTRAINTS)
        target = values["target"]
        code = kernel_code(values["plan"])  # a plan with no batch rule runs in the exact oracle only
        if values["burn_in"] >= values["n_steps"]:
            raise ValueError(f"burn_in must be smaller than n_steps={values['n_steps']}, got {values['burn_in']}")
        step_over_friction(values["h"], values["gamma"])
        batch_size = values["batch_size"]
        if code == FULL:  # (from KIND) a batch size given for every plan of a loop is checked, then
            if batch_size is not None:  # the spec records what runs: all the data
                batch_size_for(target, batch_size)
            batch_size = target.n_data
        values["batch_size"] = batch_size_for(target, batch_size, plan=values["plan"].NAME)
        check_for_run(values["plan"], target.n_data, values["batch_size"])  # its user code, at this run's sizes
        values["divergence_bound"] = divergence_bound_for(target, values["divergence_bound"])
        del values["scheme"], values["plan"]  # kept as given: a registered name, or the object itself
        x0, v0 = values.pop("x0"), values.pop("v0")
        object.__setattr__(self, "_given_states", (x0, v0))  # for replace(): a default is made anew
        set_fields(self, **values)
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
                # no x0 given: the start the user never wrote is named, with the way out
                start = ("x0" if self._given_states[0] is not None
                         else f"the default start target.initial_point() = {target.initial_point().tolist()}")
                raise ValueError(f"{start} lies outside the box |x - box_center|_inf < box_half_width "
                                 f"(box_center={center.tolist()}, box_half_width={half_width.tolist()})"
                                 + ("; give x0 inside it" if self._given_states[0] is None else ""))
        if self.control_variate is not None and self.control_variate.x_ref is not None:
            x_ref = finite_array("x_ref", self.control_variate.x_ref, booleans=False)
            if x_ref.ndim > 1 or x_ref.reshape(-1).shape != (dim,):
                raise ValueError(f"x_ref must have shape {(dim,)}, got {x_ref.shape}")
        set_fields(self, x0=x0, v0=v0)

    # ---------------------------------------------------------------- derived
    @property
    def scheme_module(self):
        """The scheme itself (a :class:`integrators.Scheme`, or a user's object with its attributes), resolved
        from its name."""
        return resolve_scheme(self.scheme)

    @property
    def plan_module(self):
        """The plan itself (a :class:`integrators.Plan`, or a user's object with its attributes), resolved from
        its name."""
        return resolve_plan(self.plan)

    def box_arrays(self) -> tuple:
        """The box as the kernels take it.

        Returns
        -------
        tuple
            ``(center, half_width, active)`` for the target's dimension (inactive without a box).
        """
        return make_box(self.target.dim) if self.box is None else self.box.arrays(self.target.dim)

    def memory_bytes(self) -> float:
        """About how many bytes of arrays the run holds on its backend.

        Returns
        -------
        float
            The backend's estimate (``Numba.memory_bytes`` or ``Torch.memory_bytes``).
        """
        return self.backend.memory_bytes(self)

    def check_memory(self) -> None:
        """Refuse a run whose arrays cannot fit in the backend's memory, naming what sized them.

        Raises
        ------
        ValueError
            If :meth:`memory_bytes` exceeds the backend's memory limit (counts beyond the float
            range included); the message names the chains, dimension and observers.
        """
        obs = self.observers
        try:
            n_bytes = self.memory_bytes()
        except OverflowError:  # counts beyond the float range: more than any memory
            n_bytes = math.inf
        check_fits(f"n_chains={self.n_chains} with d={self.target.dim}, keep={obs.keep}, "
                   f"full_moments={obs.full_moments}, n_test_functions={obs.n_test_functions} and "
                   f"{obs.n_bins} histogram bins on the {self.backend.NAME} backend",
                   n_bytes, limit=self.backend.memory_limit())

    def refuse_for(self, loop: str, *, unread: tuple = ()) -> None:
        """Refuse, by name, what a loop over chains (coupled, GHMC) does not run.

        Such a loop runs on the Numba kernel with the path at ``h`` and draws its own initial
        velocities; ``unread`` names further options it does not read (``"box"``,
        ``"observers"``: every observer; ``"test_functions"``: only these observers).

        Parameters
        ----------
        loop : str
            The loop's name, for the message.
        unread : tuple of str, default ()
            Options the loop does not read, refused when set.

        Raises
        ------
        ValueError
            If the backend is not Numba, ``v0`` is given, ``path_refine != 1``, observers other
            than test functions are set, or an option of ``unread`` is set.
        """
        obs = self.observers
        refused = {
            "backend": not isinstance(self.backend, Numba),
            "v0": self._given_states[1] is not None,
            "path_refine": self.path_refine != 1,
            "keep": obs.keep != 0, "full_moments": obs.full_moments, "histogram": obs.histogram is not None,
            "box": "box" in unread and self.box is not None,
            "test_functions": "observers" in unread and obs.test_functions is not None,
        }
        named = [name for name, set_ in refused.items() if set_]
        if named:
            raise ValueError(f"{loop} runs on the Numba backend with its own velocities and observers: it cannot "
                             f"run {', '.join(named)} (leave {'it' if len(named) == 1 else 'them'} at the default)")

    def replace(self, **changes) -> RunSpec:
        """A copy with some fields changed, checked anew.

        Initial states that were left to their defaults are made anew (for the new target or
        number of chains).

        Parameters
        ----------
        **changes : object
            New values of fields, by name.

        Returns
        -------
        RunSpec
            The new spec.

        Raises
        ------
        ValueError
            If the changed spec fails its checks.
        """
        x0, v0 = self._given_states
        return replace(self, **{"x0": x0, "v0": v0, **changes})

    def run(self):
        """Run the spec on its backend.

        Returns
        -------
        SampleResult
            What the run observed (:class:`integrators._result.SampleResult`).
        """
        return self.backend.run([self])[0]

    # ---------------------------------------------------------------- from sample()'s keywords
    @classmethod
    def from_options(cls, target, scheme="ubu", plan="sms", *, h=0.1, gamma=1.0, n_chains=100, n_steps=1000,
                     burn_in=0, seed=0, batch_size=None, x0=None, v0=None, control_variate=False, x_ref=None,
                     box_center=None, box_half_width=None, keep=0, full_moments=False, test_functions=None,
                     n_test_functions=0, test_data=(), path_refine=1, threads=None, divergence_bound=None,
                     histogram=None, backend=None) -> RunSpec:
        """The spec of :func:`integrators.sample`'s flat keywords (the one place they are grouped).

        ``control_variate`` and ``x_ref`` become a :class:`ControlVariate`, ``box_center`` and
        ``box_half_width`` a :class:`Box`, the observers' keywords an :class:`Observers`, and
        ``threads`` a :class:`Numba` backend.

        Parameters
        ----------
        target, scheme, plan : object
            What runs, as in :func:`integrators.sample` (which documents every keyword).
        h, gamma, n_chains, n_steps, burn_in, seed, batch_size, x0, v0 : object
            The run's numbers and initial states, as in :func:`integrators.sample`.
        control_variate, x_ref : object
            The control variate (``control_variate`` a bool), as in :func:`integrators.sample`.
        box_center, box_half_width : object
            The elastic bounce, as in :func:`integrators.sample`.
        keep, full_moments, test_functions, n_test_functions, test_data, histogram : object
            The observers, as in :func:`integrators.sample`.
        path_refine, threads, divergence_bound, backend : object
            As in :func:`integrators.sample`.

        Returns
        -------
        RunSpec
            The checked spec.

        Raises
        ------
        ValueError
            If ``control_variate`` is not a bool, ``x_ref`` is given without the control variate,
            ``box_center`` without ``box_half_width``, ``threads`` with a backend, or the spec
            fails its checks.
        """
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


SPEC = instance_of(RunSpec, "a RunSpec (RunSpec.from_options(target, scheme, plan, h=..., ...))")
"""The declared constraint of a loop's ``spec`` argument (``coupled_run``, ``telescoping_bias``, ``sms_ghmc``,
``strong_order``)."""
