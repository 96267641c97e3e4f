"""The option objects a run spec nests (:class:`integrators.spec.RunSpec`): what is recorded
(:class:`Observers`), the elastic bounce (:class:`Box`), the control variate
(:class:`ControlVariate`), and module mode's localization and cyclical step size
(:class:`Localization`, :class:`CyclicalSchedule`).  Each checks its fields when made."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from integrators.bounce import make_box
from integrators.validation import BOOLEAN, HISTOGRAM, POSITIVE, at_least, check_parameters, test_functions_and_data


def set_fields(obj, **values) -> None:
    """Set checked values on a frozen dataclass (from its ``__post_init__``)."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)


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
        set_fields(self, **values)

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
