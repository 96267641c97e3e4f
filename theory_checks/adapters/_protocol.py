"""What an adapter of another library's sampler declares and can do.

An adapter puts a sampler that lives in a library (posteriors, BlackJAX, ...) behind four calls,
so that the toolkit, not the library, chooses the target, the step size, the friction and every
minibatch, and then measures the law the sampler reaches (:mod:`theory_checks.adapters._measure`):

    sampler = adapter.build(problem, h, gamma)      # the library's sampler for this target
    state = adapter.init(sampler, x0, seed)          # x0: (n_chains, d), one row per chain
    state = adapter.step(sampler, state, batch)      # batch: (n_chains, n_b) data indices
    x = adapter.positions(sampler, state)            # (n_chains, d) numpy array

**The target** is an :class:`AdapterProblem`: the toolkit's target with the force scale of the
minibatch plan, ``log pi_w(x) = -(f_0(x) + scale * sum_{i in w} f_i(x))`` and its gradient, the
toolkit's own minibatch force (:func:`integrators.targets._force.lane_force_for`, the very Numba code
its kernel runs) with the sign of a log-density.  ``scale`` is ``N_m`` for partition plans,
``N_D / N_b`` for ``iid`` and 1 for ``full`` (the design's "Minibatch plans"); an adapter hands the
problem's log-density or gradient to its library as the library's log-posterior or gradient
estimator and never forms a gradient of its own.

**Batches: every chain has its own.**  Row ``c`` of ``batch`` is chain ``c``'s batch at this
step, drawn by the toolkit from chain ``c``'s own plan randomness (its own permutations under
``rr`` / ``sms``, its own draws under ``iid``), as the toolkit's kernel does: independent chains
stay independent, and their spread gives honest standard errors.  All rows have the same length
(the chains of a block stand at the same position of the plan's period, and partitions are cut
alike).

**Chains: one parameter array, or one library state per chain.**  An adapter may give the
library one parameter array of shape ``(n_chains, d)`` whose log-density is the sum over chains
(``CHAINS = "stacked"``): its gradient is then chain ``c``'s gradient in row ``c``, and the
chains stay independent as long as every other part of the update acts coordinate by coordinate
(friction, noise, momentum refreshment).  A rule with a quantity shared by all parameters (the
thermostat ``xi`` of SGNHT averages ``|m|^2`` over every coordinate) would couple stacked chains
into one big system with one thermostat; such an adapter maps the library's update over chains
instead (``CHAINS = "vmapped"``: ``torch.func.vmap`` / ``jax.vmap``), so each chain keeps its own.

Declarations (class attributes): ``NAME`` (``"library.sampler"``), ``LIBRARY``, ``SAMPLER``,
``DYNAMICS`` (``"overdamped"``: ``dX = -grad f dt + sqrt(2) dW``, no friction;
``"kinetic"``: the design's kinetic Langevin with friction ``gamma``), ``WEAK_ORDER`` (the weak
order for full gradients that the library's documentation or the paper it cites claims, or
``None`` when it states none) with ``CLAIM_SOURCE`` (where that claim is written),
``RULE_ORDER`` (the weak order the update rule it implements should have, from reading its
source, or ``None``) with ``RULE_SOURCE`` (the rule and why), ``EXACT_GAUSSIAN_X`` (its
position law is exact on Gaussian targets with full gradients at every stable ``h``, e.g. BAOAB),
``CHAINS`` (above).  Optional: ``STEPS_PER_CALL`` (integration steps of size ``h`` one ``step``
makes with its batch; default 1), ``MIXING_FACTOR`` (how many times longer than the
underlying Langevin dynamics the sampler takes to forget its start; default 1) and
``EQUIVALENT_SCHEME`` (a registered toolkit scheme whose step this rule is, step for step, so
that the exact oracle referees the library's chains; default ``None``), and a method
``relaxation_time(h, gamma, langevin_time)``: the time this sampler's chains take to forget their
start at step size ``h``, given ``langevin_time(friction)``, the relaxation time of the Langevin
dynamics on the target at any friction (default ``langevin_time(gamma)``; a sampler that refreshes
its momentum every few steps mixes like a more heavily damped one, a thermostat adds its own
time scale, :func:`thermostat_time`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from integrators.targets import GaussianTarget, Target
from integrators.targets._force import force_data, lane_force_for

REQUIRED_ATTRIBUTES = ("NAME", "LIBRARY", "SAMPLER", "DYNAMICS", "WEAK_ORDER", "CLAIM_SOURCE", "RULE_ORDER",
                       "RULE_SOURCE", "EXACT_GAUSSIAN_X", "CHAINS")
REQUIRED_METHODS = ("build", "init", "step", "positions")
DYNAMICS = ("overdamped", "kinetic")
CHAINS = ("stacked", "vmapped")


@runtime_checkable
class SamplerAdapter(Protocol):
    """The protocol of an adapter (see the module docstring); :func:`check_adapter` checks an object against it.

    An adapter declares the class attributes below (``NAME``, ``LIBRARY``, ``SAMPLER``,
    ``DYNAMICS``, ``WEAK_ORDER``, ``CLAIM_SOURCE``, ``RULE_ORDER``, ``RULE_SOURCE``,
    ``EXACT_GAUSSIAN_X``, ``CHAINS``) and defines the four methods.

    Raises
    ------
    TypeError
        If the protocol itself is instantiated (an adapter is a class of its own that follows it).
    """

    NAME: str
    LIBRARY: str
    SAMPLER: str
    DYNAMICS: str
    WEAK_ORDER: float | None
    CLAIM_SOURCE: str
    RULE_ORDER: float | None
    RULE_SOURCE: str
    EXACT_GAUSSIAN_X: bool
    CHAINS: str

    def build(self, problem: AdapterProblem, h: float, gamma: float) -> Any:
        """The library's sampler for ``problem`` at step size ``h`` and friction ``gamma``.

        Parameters
        ----------
        problem : AdapterProblem
            The target and the force scale.
        h : float
            The step size.
        gamma : float
            The friction.

        Returns
        -------
        object
            The library's sampler.
        """

    def init(self, sampler: Any, x0: np.ndarray, seed: int) -> Any:
        """The state of ``len(x0)`` chains at positions ``x0``.

        Velocities, thermostats and random streams as the library initialises them, seeded by
        ``seed``.

        Parameters
        ----------
        sampler : object
            What :meth:`build` returned.
        x0 : numpy.ndarray
            The positions, shape ``(n_chains, d)``.
        seed : int
            The seed.

        Returns
        -------
        object
            The library's state.
        """

    def step(self, sampler: Any, state: Any, batch: np.ndarray) -> Any:
        """One step (``STEPS_PER_CALL`` integration steps of size ``h``).

        Parameters
        ----------
        sampler : object
            What :meth:`build` returned.
        state : object
            The state.
        batch : numpy.ndarray
            The batches, shape ``(n_chains, n_b)``: chain ``c``'s is ``batch[c]``.

        Returns
        -------
        object
            The new state.
        """

    def positions(self, sampler: Any, state: Any) -> np.ndarray:
        """Positions of the chains.

        Parameters
        ----------
        sampler : object
            What :meth:`build` returned.
        state : object
            The state.

        Returns
        -------
        numpy.ndarray
            A float array of shape ``(n_chains, d)``.
        """


def _order(name: str, value) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"an adapter's {name} must be a positive number or None, got {value!r}")


def check_adapter(adapter) -> None:
    """Refuse an object that is not an adapter, naming what it lacks.

    Parameters
    ----------
    adapter : object
        The object.

    Raises
    ------
    ValueError
        If it lacks a declaration of :data:`REQUIRED_ATTRIBUTES` or a method of
        :data:`REQUIRED_METHODS`, or a declaration is of the wrong kind.
    """
    missing = [a for a in REQUIRED_ATTRIBUTES if not hasattr(adapter, a)]
    missing += [f"{m}()" for m in REQUIRED_METHODS if not callable(getattr(adapter, m, None))]
    if missing:
        raise ValueError(f"an adapter must declare {', '.join(REQUIRED_ATTRIBUTES)} and define "
                         f"{', '.join(m + '()' for m in REQUIRED_METHODS)}; {type(adapter).__name__} lacks "
                         f"{', '.join(missing)}")
    name = adapter.NAME
    if not isinstance(name, str) or not name:
        raise ValueError(f"an adapter's NAME must be a non-empty string, got {name!r}")
    if adapter.DYNAMICS not in DYNAMICS:
        raise ValueError(f"adapter {name!r}: DYNAMICS must be one of {DYNAMICS}, got {adapter.DYNAMICS!r}")
    if adapter.CHAINS not in CHAINS:
        raise ValueError(f"adapter {name!r}: CHAINS must be one of {CHAINS}, got {adapter.CHAINS!r}")
    _order("WEAK_ORDER", adapter.WEAK_ORDER)
    _order("RULE_ORDER", adapter.RULE_ORDER)
    for attr in ("STEPS_PER_CALL", "MIXING_FACTOR"):
        value = getattr(adapter, attr, 1)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 1:
            raise ValueError(f"adapter {name!r}: {attr} must be a number >= 1, got {value!r}")
    if not float(getattr(adapter, "STEPS_PER_CALL", 1)).is_integer():
        raise ValueError(f"adapter {name!r}: STEPS_PER_CALL must be an integer, got {adapter.STEPS_PER_CALL!r}")
    scheme = getattr(adapter, "EQUIVALENT_SCHEME", None)
    if scheme is not None:
        from integrators.schemes import SCHEMES
        if scheme not in SCHEMES:
            raise ValueError(f"adapter {name!r}: EQUIVALENT_SCHEME must name a registered scheme "
                             f"({', '.join(sorted(SCHEMES))}) or be None, got {scheme!r}")
    for attr in ("CLAIM_SOURCE", "RULE_SOURCE"):
        if not isinstance(getattr(adapter, attr), str):
            raise ValueError(f"adapter {name!r}: {attr} must be a string (where the claim comes from)")


def _adapter_name(adapter) -> str:
    name = getattr(adapter, "NAME", None)
    return type(adapter).__name__ + (f" ({name!r})" if isinstance(name, str) and name else "")


class AdapterFailed(RuntimeError):
    """An adapter's ``build``, ``init``, ``step`` or ``positions`` raised: the message names the adapter,
    the method and the exception (chained as ``__cause__``, with its traceback)."""


def called(adapter, method: str, *args):
    """``adapter.<method>(*args)``; an exception it raises becomes :class:`AdapterFailed` naming the adapter
    and the method (an interrupt passes through).

    Parameters
    ----------
    adapter : SamplerAdapter
        The adapter.
    method : str
        ``"build"``, ``"init"``, ``"step"`` or ``"positions"``.
    *args
        The method's arguments.

    Returns
    -------
    object
        What the method returned.

    Raises
    ------
    AdapterFailed
        When the method raised (other than :class:`LibraryMissing`, which passes through).
    """
    try:
        return getattr(adapter, method)(*args)
    except LibraryMissing:
        raise  # (an absent library is reported as absent, by the caller, not as a failure)
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0][:300]
        raise AdapterFailed(f"adapter {_adapter_name(adapter)}: {method}() raised {exc.__class__.__name__}"
                            f"{': ' + first if first else ''}") from exc


def checked_positions(adapter, sampler, state, n_chains: int, d: int) -> np.ndarray:
    """``adapter.positions(sampler, state)``, checked: every caller of an adapter reads positions here.

    Parameters
    ----------
    adapter : SamplerAdapter
        The adapter.
    sampler, state : object
        What its ``build`` and its last ``init`` or ``step`` returned.
    n_chains, d : int
        The chains the state holds and the target's dimension.

    Returns
    -------
    numpy.ndarray
        The positions as a float64 array of shape ``(n_chains, d)``.  Values are not checked for
        finiteness: a chain that left the target (``nan``, ``inf``) is the measurement's to report.

    Raises
    ------
    ValueError
        Naming the adapter's class and ``positions()`` with the expected and actual shape or type,
        when the result is not a real numeric array of shape exactly ``(n_chains, d)`` (a ``(1, d)``
        or ``(d,)`` array is not broadcast over the chains: every chain would read one position).
    AdapterFailed
        When ``positions()`` raised.
    """
    got = called(adapter, "positions", sampler, state)
    where = f"adapter {_adapter_name(adapter)}: positions() must return"
    try:
        arr = np.asarray(got)
    except Exception as exc:  # (a library object numpy cannot read)
        raise ValueError(f"{where} a numeric array of shape ({n_chains}, {d}), got {type(got).__name__} "
                         f"({type(exc).__name__}: {exc})") from None
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{where} a real numeric array of shape ({n_chains}, {d}), got {type(got).__name__} "
                         f"of dtype {arr.dtype}")
    if arr.shape != (n_chains, d):
        raise ValueError(f"{where} an array of shape (n_chains, d) = ({n_chains}, {d}), one row per chain, "
                         f"got shape {arr.shape}")
    return arr.astype(np.float64, copy=False)


def steps_per_call(adapter) -> int:
    return int(getattr(adapter, "STEPS_PER_CALL", 1))


def mixing_factor(adapter) -> float:
    return float(getattr(adapter, "MIXING_FACTOR", 1.0))


@dataclass(frozen=True, eq=False)
class AdapterProblem:
    """The target an adapter samples: the toolkit's ``target`` with the minibatch force scale
    ``scale`` of the plan that drives it (1 for ``full``).  Every method takes the positions of a
    block of chains ``x`` of shape ``(n_chains, d)`` and their batches ``batch`` of shape
    ``(n_chains, n_b)`` (row ``c`` is chain ``c``'s batch).

    Parameters
    ----------
    target : Target
        The toolkit's target.
    scale : float, default 1.0
        The minibatch force scale.
    """

    target: Target
    scale: float = 1.0

    @property
    def dim(self) -> int:
        """The target's dimension ``d``."""
        return self.target.dim

    @property
    def n_data(self) -> int:
        """The target's number of data terms."""
        return self.target.n_data

    def grad_log_density(self, x, batch) -> np.ndarray:
        """``-(grad f_0(x_c) + scale * sum_{i in batch_c} grad f_i(x_c))`` for every chain ``c``:
        the toolkit's minibatch force (its Numba lane force), negated.

        Parameters
        ----------
        x : array_like
            The positions, shape ``(n_chains, d)``.
        batch : array_like
            The batches, shape ``(n_chains, n_b)``.

        Returns
        -------
        numpy.ndarray
            Shape ``(n_chains, d)``.

        Raises
        ------
        ValueError
            If ``x`` is not of shape ``(n_chains, d)``.
        """
        x = np.ascontiguousarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.target.dim:
            raise ValueError(f"x must have shape (n_chains, {self.target.dim}), got {x.shape}")
        lanes = np.ascontiguousarray(np.asarray(batch, dtype=np.int64).reshape(x.shape[0], -1).T)
        out = np.empty_like(x)
        lane_force_for(self.target)(x, out, lanes, lanes.shape[0], float(self.scale), _force_data(self.target))
        return -out

    def log_density(self, x, batch) -> np.ndarray:
        """``-(f_0(x_c) + scale * sum_{i in batch_c} f_i(x_c))`` for every chain (exact for a
        :class:`GaussianTarget`; ``nan`` for other targets: no update rule adapted here reads the
        value, posteriors only records it).

        Parameters
        ----------
        x : array_like
            The positions, shape ``(n_chains, d)``.
        batch : array_like
            The batches, shape ``(n_chains, n_b)``.

        Returns
        -------
        numpy.ndarray
            Shape ``(n_chains,)``.
        """
        x = np.asarray(x, dtype=float)
        if not isinstance(self.target, GaussianTarget):
            return np.full(x.shape[0], np.nan)
        means, precisions, prior_precision, prior_mean = self.target.arrays
        idx = np.asarray(batch, dtype=np.int64).reshape(x.shape[0], -1)
        d0 = x - prior_mean
        value = 0.5 * np.sum(d0 * (d0 @ prior_precision), axis=1)
        terms = np.empty((x.shape[0], means.shape[0]))  # f_i(x_c) for every term, then each chain's batch
        for i in range(means.shape[0]):
            diff = x - means[i]
            terms[:, i] = 0.5 * np.sum(diff * (diff @ precisions[i]), axis=1)
        return -(value + self.scale * np.take_along_axis(terms, idx, axis=1).sum(axis=1))


_FORCE_DATA: dict = {}


def _force_data(target) -> tuple:
    """The force's ``tdata`` (no control variate) for ``target``, computed once per target
    (bounded: the last few targets)."""
    key = id(target)
    hit = _FORCE_DATA.get(key)
    if hit is None or hit[0] is not target:
        if len(_FORCE_DATA) >= 16:
            _FORCE_DATA.pop(next(iter(_FORCE_DATA)))
        hit = _FORCE_DATA[key] = (target, force_data(target))
    return hit[1]


def thermostat_time(alpha: float) -> float:
    """The relaxation time of the Nose-Hoover-Langevin thermostat of SGNHT (noise level ``alpha``,
    ``dxi = (|m|^2 / d - 1) dt``): linearised about ``xi = alpha``, ``K = |m|^2 / d = 1``,
    ``K' = -2 (alpha dK + dxi)`` and ``dxi' = dK``, so its slowest rate is the root
    ``alpha - sqrt(alpha^2 - 2)`` of ``s^2 + 2 alpha s + 2`` (``alpha`` when ``alpha^2 < 2``),
    whatever the dimension: at large ``alpha`` the thermostat is slower than the positions."""
    return 1.0 / (alpha - math.sqrt(max(alpha * alpha - 2.0, 0.0)))


class ThermostatAdapter:
    """What both libraries' SGNHT adapters share: one thermostat for every coordinate, so chains are
    mapped over (``vmapped``), and mixing as slow as the slower of the positions and the thermostat."""

    DYNAMICS = "kinetic"
    RULE_ORDER = 1.0
    CHAINS = "vmapped"
    MIXING_FACTOR = 2.0

    def relaxation_time(self, h: float, gamma: float, langevin_time) -> float:
        """The slower of the positions and the thermostat (:func:`thermostat_time`)."""
        return max(langevin_time(gamma), thermostat_time(gamma))


class LibraryMissing(ImportError):
    """An adapter's library is not installed (the conformance report skips that sampler and says so)."""


def missing_library(library: str, package: str) -> LibraryMissing:
    """The error an adapter raises when its library is not installed."""
    from integrators._install import install_command

    return LibraryMissing(f"the {library} adapters need {package}, which is not installed: "
                          f"{install_command('adapters')} (or pip install {package})")
