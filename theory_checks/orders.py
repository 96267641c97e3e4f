"""Weak and strong orders in the step size, measured.

* :func:`weak_order`: the bias of a stationary statistic against the exact target, computed by
  the exact oracle (no Monte Carlo error) over a ladder of step sizes, with the least-squares
  slope on the finest points and the local slopes between neighbours (a first-order sampler is
  still pre-asymptotic at large ``h``; the local slopes show it).
* :func:`strong_order`: the pathwise L2 error at the end of a whole number of sweeps against
  full-gradient UBU at a much finer step driven by the same Brownian path (exact coarsening:
  ``sample(..., path_refine=...)``), with a bootstrap confidence interval over chains.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from integrators import RunSpec
from integrators._spec import SAMPLER, SPEC
from integrators._user_code import describe
from integrators._validation import (
    MAX_STEPS,
    Either,
    at_least,
    check_parameters,
    declares,
    instance_of,
    int_at_least,
    one_of,
    optional,
    scalar,
    shown,
)
from integrators.plans import n_batches
from integrators.seeds import derive
from integrators.targets import GaussianTarget
from theory_checks.oracle import OracleMoments, UnstableStepError, stationary_moments

__all__ = ["OrderFit", "anisotropic_gaussian", "fit_slope", "ladder", "local_slopes", "logistic_example",
           "strong_order", "weak_order"]


@dataclass
class OrderFit:
    """Errors against step sizes, the fitted slope and local slopes.

    Parameters
    ----------
    hs : numpy.ndarray
        The step sizes, largest first.
    errors : numpy.ndarray
        The error at each step size; nan where the sampler is unstable.
    slope : float
        The least-squares slope of log(error) against log(h) (``fit_slope``).
    local_slopes : numpy.ndarray
        The slopes between consecutive step sizes (:func:`local_slopes`).
    fit_points : int
        The number of smallest step sizes the slope is fitted on.
    ci : tuple of (float, float) or None, default None
        The bootstrap interval of the slope (strong order).
    unstable : list of float, default []
        The step sizes where the sampler is unstable.
    """

    hs: np.ndarray
    errors: np.ndarray                 # nan where the sampler is unstable
    slope: float
    local_slopes: np.ndarray           # between consecutive step sizes
    fit_points: int
    ci: tuple[float, float] | None = None   # bootstrap interval of the slope (strong order)
    unstable: list[float] = field(default_factory=list)

    @property
    def ci_half_width(self) -> float:
        """Half the width of the slope's interval (nan without one)."""
        return float("nan") if self.ci is None else 0.5 * (self.ci[1] - self.ci[0])


def ladder(name: str, values, *, minimum: int = 2, integer: bool = False) -> np.ndarray:
    """A ladder of values (step sizes, epochs, dimensions), checked and sorted from largest to smallest.

    A slope through repeated or single points is no slope: the values must be pairwise distinct.

    Parameters
    ----------
    name : str
        The argument's name, for messages.
    values : array_like
        The values: finite and positive.
    minimum : int, default 2
        The fewest distinct values.
    integer : bool, default False
        Whether the values must be integers.

    Returns
    -------
    numpy.ndarray
        The values as floats, largest first.

    Raises
    ------
    ValueError
        Naming ``name``, if the values are not a 1-D list of finite positive numbers (integers
        where ``integer``), or fewer than ``minimum`` distinct ones.
    """
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of numbers, got {values!r}") from None
    if arr.ndim != 1 or isinstance(values, str):
        raise ValueError(f"{name} must be a list of numbers, got {values!r}")
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"{name} must be positive and finite, got {values!r}")
    if integer and not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must be integers, got {values!r}")
    if np.unique(arr).size != arr.size or arr.size < minimum:
        raise ValueError(f"{name} must hold at least {minimum} distinct values (a slope needs them), got {values!r}")
    return np.sort(arr)[::-1]


def fit_slope(hs, errors, fit_points: int = 4) -> float:
    """Least-squares slope of log(error) against log(h) on the ``fit_points`` smallest ``h``.

    Parameters
    ----------
    hs : array_like
        The step sizes.
    errors : array_like
        The error at each step size, of the same length.
    fit_points : int, default 4
        The number of smallest step sizes the slope is fitted on (at least 2).

    Returns
    -------
    float
        The slope; nan where one of the fitted errors is not a positive number (an unstable step
        size).

    Raises
    ------
    ValueError
        If ``hs`` and ``errors`` differ in length, ``fit_points`` is below 2, or the fitted step
        sizes are not distinct positive numbers.
    """
    hs = np.asarray(hs, dtype=float)
    errors = np.asarray(errors, dtype=float)
    if hs.ndim != 1 or hs.shape != errors.shape:
        raise ValueError(f"hs and errors must be lists of the same length, got shapes {hs.shape} and {errors.shape}")
    fit_points = int_at_least("fit_points", fit_points, 2)
    order = np.argsort(hs)[:fit_points]
    ladder("the fitted step sizes", hs[order])
    if np.any(~np.isfinite(errors[order])) or np.any(errors[order] <= 0):
        return float("nan")
    return float(np.polyfit(np.log(hs[order]), np.log(errors[order]), 1)[0])


def local_slopes(hs, errors) -> np.ndarray:
    """Slopes of log(error) against log(h) between neighbours of the ladder ``hs``.

    Parameters
    ----------
    hs : array_like
        The step sizes.
    errors : array_like
        The error at each step size, of the same length.

    Returns
    -------
    numpy.ndarray
        ``len(hs) - 1`` slopes (nan or inf where an error is zero or not finite).

    Raises
    ------
    ValueError
        If ``hs`` and ``errors`` are not 1-D lists of the same length.
    """
    hs, errors = np.asarray(hs, float), np.asarray(errors, float)
    if hs.ndim != 1 or hs.shape != errors.shape:
        raise ValueError(f"hs and errors must be lists of the same length, got shapes {hs.shape} and {errors.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(errors[:-1] / errors[1:]) / np.log(hs[:-1] / hs[1:])


def format_slope(slope: float, why: str = "") -> str:
    """A slope as a table shows it: two decimals, or the word ``undefined`` (with ``why``, in parentheses)
    where it is not a finite number, never a raw ``nan`` or ``inf``."""
    if math.isfinite(slope):
        return f"{slope:.2f}"
    return f"undefined ({why})" if why else "undefined"


def describe_local_slopes(hs, errors) -> str:
    """The local slopes (:func:`local_slopes`) in words, for a table cell: each to two decimals, and where one
    is undefined, why: ``undefined (unstable h)`` beside a step size whose error is not finite (the step is
    unstable, or its run diverged), ``undefined (zero error)`` beside an error of exactly zero."""
    errors = np.asarray(errors, float)
    words = []
    for i, slope in enumerate(local_slopes(hs, errors)):
        why = "unstable h" if not np.all(np.isfinite(errors[i:i + 2])) else "zero error"
        words.append(format_slope(slope, why))
    return ", ".join(words)


_STATISTICS: dict[str, Callable] = {
    "variance": lambda m, t: float(np.trace(m.covariance) - np.trace(t.covariance)),
    "mean": lambda m, t: float(np.linalg.norm(m.mean - t.mean)),
    "second_moment": lambda m, t: float(np.trace(m.second_moment)
                                        - np.trace(t.covariance + np.outer(t.mean, t.mean))),
}


def _fit_points_within(fit_points: int, hs) -> None:
    """Refuse a fit on more step sizes than the ladder has (the fit would quietly use them all)."""
    if fit_points > len(hs):
        raise ValueError(f"fit_points must be at most the number of step sizes, len(hs) = {len(hs)}, "
                         f"got {fit_points}")


def _statistic_value(stat: Callable, moments, target, h: float) -> float:
    """A user statistic's value at ``h``, refused by name unless a finite real number (a NaN would
    become a NaN error and slope with no word said)."""
    value = scalar(stat(moments, target))
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"statistic {describe(stat)!r} must return a finite real number, got {shown(value)} "
                         f"at h={h:g}")
    return float(value)


WEAK_ORDER_CONSTRAINTS = {
    "target": instance_of(GaussianTarget, "a GaussianTarget (the exact oracle's law)"),
    **{name: SAMPLER[name] for name in ("scheme", "plan", "gamma", "batch_size")},
    "statistic": Either(one_of(_STATISTICS), instance_of(Callable, "a function f(moments, target)")),
    "fit_points": optional(at_least(2)),
}


@declares(WEAK_ORDER_CONSTRAINTS)
def weak_order(target: GaussianTarget, scheme: str, plan: str, hs, gamma: float = 1.0,
               batch_size: int | None = None, statistic: str | Callable = "variance",
               fit_points: int | None = None) -> OrderFit:
    """Claim checked: the bias of stationary averages of ``scheme x plan`` is ``O(h^p)`` with
    ``p`` the sampler's weak order (the design's claims table; the paper's Section 3 and Fig. 1).

    Measured with the exact oracle: ``|statistic(oracle moments) - statistic(target)|`` for each
    ``h``; ``statistic`` is ``"variance"`` (bias of the trace of the covariance), ``"mean"``,
    ``"second_moment"`` or a function ``f(OracleMoments, target) -> float`` (any quadratic test
    function).  Unstable step sizes give ``nan`` and are listed in ``unstable``.

    Parameters
    ----------
    target : GaussianTarget
        The Gaussian target (the oracle is exact on it).
    scheme : str
        A registered scheme's name.
    plan : str
        A registered plan's name.
    hs : array_like
        The step sizes (:func:`ladder`).
    gamma : float, default 1.0
        The friction.
    batch_size : int or None, default None
        The batch size; None (plan ``full`` only): all the data.
    statistic : str or callable, default "variance"
        ``"variance"``, ``"mean"``, ``"second_moment"`` or ``f(OracleMoments, target) -> float``.
    fit_points : int or None, default None
        The number of smallest step sizes the slope is fitted on, at most ``len(hs)`` (``None``:
        4, or all of a shorter ladder).

    Returns
    -------
    OrderFit
        The errors, the fitted slope and the local slopes.

    Raises
    ------
    ValueError
        If ``statistic`` is unknown or a function that returns anything but a finite real number,
        ``hs`` is not a ladder, ``fit_points`` is below 2 or above ``len(hs)``, or the oracle refuses
        the sampler's options.
    """
    values = check_parameters(locals(), WEAK_ORDER_CONSTRAINTS)  # scheme and plan go on as given (name or object)
    gamma, batch_size, fit_points = values["gamma"], values["batch_size"], values["fit_points"]
    stat = _STATISTICS[statistic] if isinstance(statistic, str) else statistic
    hs = ladder("hs", hs)
    if fit_points is None:
        fit_points = min(4, len(hs))
    _fit_points_within(fit_points, hs)
    errors, unstable = [], []
    for h in hs:
        try:
            moments: OracleMoments = stationary_moments(target, scheme, plan, h, gamma, batch_size)
            errors.append(abs(stat(moments, target) if isinstance(statistic, str)
                              else _statistic_value(stat, moments, target, h)))
        except UnstableStepError:
            errors.append(np.nan)
            unstable.append(float(h))
    errors = np.array(errors)
    return OrderFit(hs, errors, fit_slope(hs, errors, fit_points), local_slopes(hs, errors), fit_points,
                    unstable=unstable)


STRONG_ORDER_CONSTRAINTS = {"spec": SPEC, "sweeps": at_least(1), "ref_levels": at_least(0), "n_boot": at_least(1),
                            "fit_points": optional(at_least(2))}


@declares(STRONG_ORDER_CONSTRAINTS)
def strong_order(spec: RunSpec, hs, *, sweeps: int = 8, ref_levels: int = 3, n_boot: int = 300,
                 fit_points: int | None = None) -> OrderFit:
    """Claim checked: the pathwise (strong) L2 error of ``scheme x plan`` against the
    full-gradient dynamics is ``O(h^q)``: ``q = 2`` for UBU with full gradients and for SMS-UBU at
    sweep ends (the paper's main theorem), 1 for EM and BAOAB, 1/2 under ``iid`` (Thm. SG-UBU).

    Measured: every run starts from the same ``(x0, v0)`` and is driven by the same Brownian path;
    the reference is UBU x full at ``min(hs) / 2**ref_levels``.  The horizon is ``sweeps`` whole
    periods of the plan (two epochs) at the largest ``h``, hence a whole number of sweeps at every
    ``h``.  Error: ``sqrt(mean over chains |x_h(T) - x_ref(T)|^2)``; slope on all (or the
    ``fit_points`` finest) step sizes, with a percentile bootstrap interval over chains.

    Parameters
    ----------
    spec : RunSpec
        Target, scheme, plan, friction, chains (at least 2), seed, batch size, ``x0`` and the
        rest of each run; each run is ``spec.replace(...)`` with a step of ``hs``, its steps to
        the horizon, no burn-in and the ladder's shared initial velocities (so the spec's ``h``,
        ``n_steps``, ``burn_in`` and ``path_refine`` are not read, and ``v0`` is refused).
    hs : array_like
        The step sizes, largest first, each a power of two times the finest.
    sweeps : int, default 8
        Periods of the plan at the largest ``h`` (the horizon).
    ref_levels : int, default 3
        The reference runs at ``min(hs) / 2**ref_levels``.
    n_boot : int, default 300
        Bootstrap resamples of the chains for the slope's interval.
    fit_points : int or None, default None
        Fit the slope on the ``fit_points`` finest step sizes (``None``: all).

    Returns
    -------
    OrderFit
        Errors, slope, local slopes, bootstrap interval and the unstable step sizes.

    Raises
    ------
    ValueError
        On a bad option, ``v0`` given, fewer than 2 chains, ``fit_points`` above ``len(hs)``, a
        ``ref_levels`` whose reference would take more than ``2**48`` steps, or step sizes that are
        not powers of two times the finest.
    RuntimeError
        When the reference diverges.

    Examples
    --------
    >>> from integrators import GaussianTarget, RunSpec
    >>> spec = RunSpec.from_options(GaussianTarget.one_d_example(), "ubu", "full", n_chains=8)
    >>> round(strong_order(spec, [0.2, 0.1, 0.05], n_boot=5).slope)
    2
    """
    values = check_parameters(locals(), STRONG_ORDER_CONSTRAINTS)
    sweeps, ref_levels, n_boot, fit_points = (values[k] for k in ("sweeps", "ref_levels", "n_boot", "fit_points"))
    hs = ladder("hs", hs)
    if fit_points is not None:
        _fit_points_within(fit_points, hs)
    int_at_least("n_chains", spec.n_chains, 2)
    if spec.v0 is not None:
        raise ValueError("strong_order draws the ladder's shared initial velocities: leave v0 out of the spec")
    target = spec.target
    steps_per_sweep = 2 * n_batches(target.n_data, spec.batch_size)
    # the reference takes (horizon / min(hs)) 2**ref_levels steps, which must fit in a run
    finest_steps = sweeps * steps_per_sweep * hs[0] / hs[-1]
    most_levels = max(0, math.floor(math.log2(MAX_STEPS / finest_steps)))
    if ref_levels > most_levels:
        raise ValueError(f"ref_levels must be at most {most_levels} for these hs and sweeps (the reference at "
                         f"min(hs) / 2**ref_levels would take more than 2**48 steps), got {ref_levels}")
    h_ref = hs[-1] / 2**ref_levels
    ratios = hs / h_ref
    if not np.allclose(ratios, np.round(ratios)) or any(int(round(r)) & (int(round(r)) - 1) for r in ratios):
        raise ValueError("step sizes must be powers of two times the finest one")
    n_chains, seed = spec.n_chains, spec.seed
    horizon = sweeps * steps_per_sweep * hs[0]
    v0 = np.random.default_rng(derive(seed, "strong_order", "velocity")).standard_normal((n_chains, target.dim))
    ref = spec.replace(scheme="ubu", plan="full", h=h_ref, n_steps=int(round(horizon / h_ref)), burn_in=0,
                       path_refine=1, v0=v0).run()
    if ref.diverged:
        raise RuntimeError(f"the reference (UBU x full at h={h_ref:g}) diverged at step {ref.first_divergence_step}: "
                           f"the target is not one these step sizes can sample")
    sq, unstable = [], []
    for h, r in zip(hs, ratios, strict=True):
        run = spec.replace(h=h, n_steps=int(round(horizon / h)), burn_in=0, path_refine=int(round(r)), v0=v0).run()
        if run.diverged:  # an error of nan, listed as unstable (as weak_order does)
            unstable.append(float(h))
            sq.append(np.full(n_chains, np.nan))
        else:
            sq.append(np.sum((run.x - ref.x) ** 2, axis=1))
    sq = np.array(sq)  # (n_h, n_chains)
    errors = np.sqrt(sq.mean(axis=1))
    k = fit_points or len(hs)
    slope = fit_slope(hs, errors, k)
    rng = np.random.default_rng(derive(seed, "strong_order", "bootstrap"))
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, n_chains, n_chains)
        boots.append(fit_slope(hs, np.sqrt(sq[:, idx].mean(axis=1)), k))
    ci = (float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5)))
    return OrderFit(hs, errors, slope, local_slopes(hs, errors), k, ci=ci, unstable=unstable)


def anisotropic_gaussian(d: int, n_data: int = 4, seed: int = 0,
                         pattern=(1.0, 2.5, 5.0, 10.0)) -> GaussianTarget:
    """Gaussian data terms whose precisions do not commute.

    Each is a random rotation of a spectrum that repeats ``pattern`` (so every block of
    ``len(pattern)`` dimensions is equally hard, and the sampler's law is not a product of
    one-dimensional problems).

    Parameters
    ----------
    d : int
        The dimension, at least 1.
    n_data : int, default 4
        The number of data terms, at least 1.
    seed : int, default 0
        The seed of the rotations and means.
    pattern : sequence of float, default (1.0, 2.5, 5.0, 10.0)
        The spectrum, repeated to ``d`` values (divided by ``n_data``).

    Returns
    -------
    GaussianTarget
        The target, with prior precision ``0.1 * I``.

    Raises
    ------
    ValueError
        If ``d`` or ``n_data`` is not an integer >= 1.
    """
    d = int_at_least("d", d, 1)
    n_data = int_at_least("n_data", n_data, 1)
    rng = np.random.default_rng([seed, d])
    spectrum = np.resize(np.asarray(pattern, dtype=float), d) / n_data
    precs, means = [], []
    for _ in range(n_data):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        precs.append(q @ np.diag(spectrum) @ q.T)
        means.append(rng.normal(size=d))
    return GaussianTarget(np.array(means), np.array(precs), prior_precision=0.1 * np.eye(d))


def logistic_example(n_data: int = 64, dim: int = 3, seed: int = 0, prior_precision: float = 1.0):
    """A small binary logistic regression (non-Gaussian target) with synthetic features.

    Parameters
    ----------
    n_data : int, default 64
        The number of data points.
    dim : int, default 3
        The number of features.
    seed : int, default 0
        The seed of the features, weights and labels.
    prior_precision : float, default 1.0
        The Gaussian prior's precision.

    Returns
    -------
    LogisticTarget
        The target, its features scaled by ``1 / sqrt(dim)``.
    """
    from integrators import LogisticTarget
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n_data, dim))
    w = rng.normal(size=dim)
    labels = (rng.random(n_data) < 1 / (1 + np.exp(-feats @ w))).astype(float)
    return LogisticTarget(feats / math.sqrt(dim), labels, prior_precision=prior_precision)
