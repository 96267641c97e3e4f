"""The option objects a run spec nests (:class:`integrators._spec.RunSpec`): what is recorded
(:class:`Observers`), the elastic bounce (:class:`Box`), the control variate
(:class:`ControlVariate`), and module mode's localization and cyclical step size
(:class:`Localization`, :class:`CyclicalSchedule`).  Each checks its fields when made."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, fields

from integrators._bounce import make_box
from integrators._validation import (
    BOOLEAN,
    HISTOGRAM,
    POSITIVE,
    at_least,
    check_parameters,
    finite_array,
    optional,
    steps,
    test_functions_and_data,
)


def set_fields(obj, **values) -> None:
    """Set checked values on a frozen dataclass (from its ``__post_init__``)."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)


@dataclass(frozen=True, eq=False)
class Observers:
    """What a run records besides the per-chain first and second moments.

    Every statistic streams over the steps after burn-in; nothing grows with ``n_steps`` except
    the ``keep`` thinned samples.  The fields are checked against :attr:`CONSTRAINTS` when the
    object is made.

    Parameters
    ----------
    keep : int, default 0
        Thinned samples kept per chain (``SampleResult.samples``), at least 0.
    full_moments : bool, default False
        Also average ``x x^T`` per chain (``SampleResult.chain_outer``).
    test_functions : numba function or None, default None
        A Numba function (``@numba.njit``) ``f(x, out, test_data)`` writing
        ``n_test_functions`` values into ``out``, averaged per chain (``SampleResult.chain_tests``);
        Numba backend only.  It is given a copy of the chain's state; it is compiled bounds-checked,
        the Numba functions it calls are not (unless compiled with ``boundscheck=True`` or
        ``NUMBA_BOUNDSCHECK=1`` is set: :func:`integrators.sample`).
    n_test_functions : int, default 0
        How many values ``test_functions`` writes; required (``>= 1``) with it.
    test_data : tuple of numpy.ndarray, default ()
        Arrays of numbers passed through to ``test_functions`` (only with ``test_functions``).
    histogram : tuple (lo, hi, n_bins) or None, default None
        A histogram of the first coordinate after burn-in, with ``lo < hi`` finite and bins of a
        finite positive width (``SampleResult.histogram`` and ``histogram_tails``).

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each checked field (:mod:`integrators._validation`).

    Raises
    ------
    ValueError
        If a field breaks its constraint, ``test_functions`` is not a Numba function of three
        positional arguments, ``test_functions`` and ``n_test_functions`` are not given together,
        ``test_data`` is given without ``test_functions``, or ``test_data`` is not a tuple of
        numpy arrays of numbers.
    """

    keep: int = 0
    full_moments: bool = False
    test_functions: object = None
    n_test_functions: int = 0
    test_data: tuple = ()
    histogram: tuple | None = None

    CONSTRAINTS = {"keep": at_least(0), "full_moments": BOOLEAN, "n_test_functions": at_least(0),
                   "histogram": HISTOGRAM}
    VALID_EXAMPLE = {"keep": 2, "histogram": (-1.0, 1.0, 4)}

    def __post_init__(self):
        values = check_parameters({f.name: getattr(self, f.name) for f in fields(self)}, self.CONSTRAINTS)
        values["test_data"] = test_functions_and_data(self.test_functions, values["n_test_functions"],
                                                      self.test_data)
        set_fields(self, **values)

    @property
    def n_bins(self) -> int:
        """The number of histogram bins (0 without a histogram)."""
        return 0 if self.histogram is None else self.histogram[2]


@dataclass(frozen=True, eq=False)
class Box:
    """The elastic bounce: positions stay in the box ``|x - center|_inf < half_width``.

    Leaving the box triggers an elastic bounce in each coordinate separately: the position is
    reflected back in (folding handles several widths) and that velocity component changes sign
    once per reflection (the paper's Section 4).  The fields are checked for a target's dimension
    by :meth:`arrays`, when a run spec is made.

    Parameters
    ----------
    half_width : float or array_like
        Half the width of the box, positive: one number for every coordinate or one per
        coordinate.
    center : float or array_like or None, default None
        Centre of the box (``None``: the origin), one number or one per coordinate.
    """

    half_width: object
    center: object = None

    def arrays(self, dim: int) -> tuple:
        """The box as the kernels take it, checked for ``dim`` coordinates.

        Parameters
        ----------
        dim : int
            The target's dimension.

        Returns
        -------
        tuple
            ``(center, half_width, active)``: float arrays of length ``dim`` and a one-element
            boolean array (true: the box is on).

        Raises
        ------
        ValueError
            If ``center`` or ``half_width`` has the wrong shape, holds booleans or is not
            finite, or a half width is not positive.
        """
        for name, value in (("box_center", self.center), ("box_half_width", self.half_width)):
            if value is not None:  # a bound of True is a mistake, not the number 1
                finite_array(name, value, booleans=False)
        return make_box(dim, self.center, self.half_width)


@dataclass(frozen=True, eq=False)
class ControlVariate:
    """The force's control variate at a reference point ``x_ref`` (the paper's eq. SG1).

    The minibatch force becomes
    ``G(x, w) = grad f_0(x) + sum_i grad f_i(xh) + N_m * sum_{i in w} (grad f_i(x) - grad f_i(xh))``
    with ``xh = x_ref``: unbiased like the plain minibatch force, with a variance that vanishes
    as ``x`` approaches ``x_ref``.

    Parameters
    ----------
    x_ref : array_like or None, default None
        The reference point, shape ``(d,)`` (``None``: the mode found by L-BFGS).
    """

    x_ref: object = None


@dataclass(frozen=True)
class Localization:
    """The localized posterior of module mode and ensembles (the paper's Section 4).

    :class:`integrators.torch.ModuleSampler` adds the term ``|x - x*|^2 / (2 rho^2)`` to the potential and
    keeps the parameters in the box ``|x - x*|_inf < rho_max`` by elastic bounces; the paper's
    friction for it is ``gamma = 1 / rho``.

    Parameters
    ----------
    rho : float
        Width of the localizing Gaussian term, positive.
    rho_max : float or None, default None
        Half width of the box, positive (``None``: ``6 rho``, the paper's choice).
    x_star : torch.Tensor or mapping or None, default None
        Centre of the localization: ``None`` for the model's parameters when the sampler is
        built, else a flat tensor in the sampler's parameter order or a ``{name: tensor}``
        mapping.

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each checked field (:mod:`integrators._validation`).

    Raises
    ------
    ValueError
        If ``rho`` or ``rho_max`` is not a positive finite number.

    Warns
    -----
    UserWarning
        If ``rho_max < rho``: allowed (a small box exercises the bounces), but then the box, not
        the localizing term, confines the parameters, which is not the paper's localized posterior.
    """

    rho: float
    rho_max: float | None = None
    x_star: object = None

    CONSTRAINTS = {"rho": POSITIVE, "rho_max": optional(POSITIVE)}
    VALID_EXAMPLE = {"rho": 0.1, "rho_max": 0.6}

    def __post_init__(self):
        set_fields(self, **check_parameters({"rho": self.rho, "rho_max": self.rho_max}, self.CONSTRAINTS))
        if self.rho_max is not None and self.rho_max < self.rho:
            # not refused: a box inside the Gaussian's scale is a valid constrained target (and tests the bounces),
            # but the posterior the paper localizes (box 6 rho, Section 4) is then cut to a near-uniform box
            warnings.warn(f"Localization: rho_max = {self.rho_max:g} is less than rho = {self.rho:g}, so the box "
                          f"|x - x*|_inf < rho_max, not the localizing term, confines the parameters (the paper's "
                          f"box is rho_max = 6 rho)", UserWarning, stacklevel=3)

    @property
    def half_width(self) -> float:
        """Half the width of the box: ``rho_max``, or ``6 rho`` when it is not given."""
        return 6.0 * self.rho if self.rho_max is None else float(self.rho_max)


@dataclass(frozen=True)
class CyclicalSchedule:
    """The cyclical step size of cSG-MCMC (Zhang et al., ICLR 2020), for module mode and ensembles.

    Step ``k`` (counted from 1) has size ``h_k = h * (cos(pi * ((k - 1) mod C) / C) + 1) / 2`` with
    cycle length ``C = ceil(n_steps / n_cycles)``: each cycle starts at ``h`` and decays towards 0.

    Parameters
    ----------
    n_steps : int
        Steps of the whole run, at least 1 and at most ``2**48``.
    n_cycles : int
        Number of cycles, at least 1 and at most ``n_steps``.

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each field (:mod:`integrators._validation`).

    Raises
    ------
    ValueError
        If ``n_steps`` or ``n_cycles`` is not an integer ``>= 1``, ``n_steps > 2**48``, or
        ``n_cycles > n_steps``.
    """

    n_steps: int
    n_cycles: int

    CONSTRAINTS = {"n_steps": steps(1), "n_cycles": at_least(1)}
    VALID_EXAMPLE = {"n_steps": 10, "n_cycles": 2}

    def __post_init__(self):
        set_fields(self, **check_parameters({"n_steps": self.n_steps, "n_cycles": self.n_cycles}, self.CONSTRAINTS))
        if self.n_cycles > self.n_steps:
            raise ValueError(f"n_cycles={self.n_cycles} exceeds n_steps={self.n_steps}")

    def factor(self, k: int) -> float:
        """The factor ``h_k / h`` of step ``k``.

        Parameters
        ----------
        k : int
            The step, counted from 1.

        Returns
        -------
        float
            ``(cos(pi * ((k - 1) mod C) / C) + 1) / 2``, in ``(0, 1]``.
        """
        length = math.ceil(self.n_steps / self.n_cycles)
        return 0.5 * (math.cos(math.pi * ((k - 1) % length) / length) + 1.0)
