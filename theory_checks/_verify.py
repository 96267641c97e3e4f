"""``verify(scheme)``: is a scheme what it declares?  The harness for anyone's integrator.

Given a scheme (a registered name, or an :class:`integrators.Scheme`, built-in or built in
user code), on Gaussian targets whose data terms do not commute (by default three,
:func:`default_targets`: 2-D at batch size 1, 3-D with unequal scales at batch size 2 (``...@3d``)
and 7-D with five unequal terms at batch size 2 (``...@7d``, exact checks only), each at a friction
where no coefficient degenerates, :data:`DEFAULT_FRICTIONS`):

* ``probe_affine``: the compiled step is affine in the state and the path data (read off by
  probing, :mod:`theory_checks._probe`); a step that is not (or draws its own randomness) fails here;
* ``declared_map``: for a scheme that declares ``affine_ops``, the exact stationary moments from
  the declared map equal those from the probed compiled step;
* ``stationarity``: as ``h -> 0`` the exact stationary law of ``scheme x full`` tends to the
  target (error at the finest ``h`` below ``STATIONARY_TOL`` of the target's scale);
* ``weak_order[plan]``: the exact weak-bias ladder (oracle on the probed step, no Monte Carlo
  error) and its slope on the four finest ``h`` whose errors stand ``ROUNDING_MARGIN`` times above
  the oracle's rounding level, against the order declared by the scheme and the plan
  (:mod:`theory_checks._declared`); an exact law (bias at rounding level) passes.  The ladder
  (:func:`step_ladder`) comes from the friction and the target's frequencies, so that the fit lies
  in the asymptotic regime (:func:`asymptotic_rate`); where it cannot (at large friction the
  regime lies below the rounding level), or a given ladder does not reach it, the claim is
  inconclusive and the check says why;
* ``box`` (first target, :mod:`theory_checks._box`): every position stays in an active box where
  the bounce fires; ``sweep[plan]`` and ``plan_strong_order[plan]`` (:mod:`theory_checks._sweeps`):
  a declared symmetric sweep read from the declaration, and the plan's strong order measured with
  UBU where the scheme's own cannot see it;
* ``strong_order[plan]``: the pathwise error ladder on a shared Brownian path against
  full-gradient UBU at a much finer step (:func:`theory_checks.orders.strong_order`), slope at
  least the declared order minus ``STRONG_SLACK``;
* ``monte_carlo[plan]``: the kernel's Monte Carlo moments against the exact oracle of the probed
  step within a family-wise z of their standard errors (the kernel is the step the probe read);
* ``target_law[plan]``: coupled chains at ``h``, ``h/2``, ``h/4`` extrapolated with the declared
  weak order, against the target's own law (no probe: the scheme against the target);
  :mod:`theory_checks._monte_carlo` states both rules.

On a target without an exact law (by default the double well of
:func:`default_nonlinear_targets`, checks named ``...@well``; or a ``LogisticTarget`` given as
``target=``) the force is not affine and there is nothing to probe: coupled ``h / h/2`` chains on
a telescoping ladder give ``weak_order[plan]`` (the slope of the level differences, with its
interval) and, where the target knows its expectations, ``limit[plan]``
(:mod:`theory_checks._nonlinear`).  They see a step that is exact for affine forces and wrong for
others, which every Gaussian check passes.

A plan whose orders are only observed (``THEOREM = False``, e.g. ``rr``) is measured and reported
but asserts nothing (:func:`theory_checks._declared.plan_asserts`).  Every claim ends passed,
failed or inconclusive (not checked, or not enough evidence, with the reason); the work is set
in chains and steps, not seconds, so a seed gives the same verdicts on a busy machine and an idle
one, and an optional wall-clock cap (``max_seconds``) leaves the claims it cuts inconclusive.
The result is a :class:`VerifyReport`: a table, a plot, a verdict per check, and ``ok`` (every
claim checked and passed).
"""

from __future__ import annotations

import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from integrators import RunSpec
from integrators._validation import (
    BOOLEAN,
    POSITIVE,
    InstanceOf,
    ListOf,
    Optional,
    Registered,
    at_least,
    batch_size_for,
    check_parameters,
    declares,
    int_at_least,
    one_line,
)
from integrators.plans import PLANS, kernel_code, n_batches, resolve_plan
from integrators.schemes import resolve_scheme
from integrators.targets import GaussianTarget, Target
from theory_checks._checks import Check, VerifyReport
from theory_checks._declared import asserted, expected_strong_order, expected_weak_order
from theory_checks._monte_carlo import MC_ALPHA as MC_ALPHA  # the adapters read the same level
from theory_checks._monte_carlo import PROBE_EXPECTED, TARGET_EXPECTED, probe_law_check, target_law_check
from theory_checks._probe import probe_backend, probe_step_map
from theory_checks.oracle import NonFiniteStepError, UnstableStepError, stationary_moments
from theory_checks.orders import describe_local_slopes, fit_slope, ladder, strong_order

WEAK_TOL = 0.15         # |slope - declared weak order| allowed (exact oracle: no Monte Carlo error)
STRONG_SLACK = 0.25     # a strong slope down to the declared order minus this holds (error <= C h^q)
STATIONARY_TOL = 0.02   # error of the law at the finest h, relative to the target's scale
EXACT_LEVEL = 1e-11     # a weak error below this (relative) at every h is an exact law
ROUNDING_MARGIN = 20.0  # a fitted weak error stands at least this far above the oracle's rounding level
ASYMPTOTIC = 0.25       # the fit is asymptotic when its coarsest h has h * asymptotic_rate at most this
LADDER_STEPS = (-4, 12)  # step_ladder: h = ASYMPTOTIC / rate * 2^(-k/2), k from 4 above the regime to 12 in it
FIT_POINTS = 4
STRONG_HS = tuple(2.0 ** -np.arange(3, 8))


TERM_SCALES = (0.5, 1.0, 2.0)  # the 3-D default target's data terms: curvatures (and means) this far apart


def default_target() -> GaussianTarget:
    """Three Gaussian data terms in 2-D whose precisions do not commute, with a prior.

    Returns
    -------
    GaussianTarget
        The target :func:`verify` checks first.
    """
    from theory_checks.orders import anisotropic_gaussian
    return anisotropic_gaussian(2, n_data=3)


def unequal_scales_target(d: int = 3, scales=TERM_SCALES, seed: int = 1) -> GaussianTarget:
    """Gaussian data terms in ``d`` dimensions whose precisions do not commute (random rotations of a
    spectrum over ``[1, 2]``) and whose scales differ (term ``i``'s precision times ``scales[i]``, its
    mean times ``1 / sqrt(scales[i])``), so a batch's force depends on its terms; prior precision 0.1."""
    d = int_at_least("d", d, 1)
    scales = np.asarray(scales, dtype=float)
    if scales.ndim != 1 or scales.size < 1 or not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError(f"scales must be a list of positive numbers, got {scales!r}")
    rng = np.random.default_rng([seed, d])
    spectrum = np.linspace(1.0, 2.0, d) / scales.size  # conditioned so the exact fit stays above rounding
    precs, means = [], []
    for s in scales:
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        precs.append(s * (q @ np.diag(spectrum) @ q.T))
        means.append(rng.normal(size=d) / math.sqrt(s))
    return GaussianTarget(np.array(means), np.array(precs), prior_precision=0.1 * np.eye(d))


# Frictions at which no common coefficient degenerates (see generic_friction): at gamma = 1,
# ``/ gamma``, ``* gamma`` and ``sqrt(2 gamma) = sqrt(2)`` are identities; at 2, ``sqrt(2 gamma) = gamma``.
DEFAULT_FRICTIONS = {"": 1.7, "3d": 0.6, "7d": 2.6}
DIMENSION_SCALES = (0.5, 0.8, 1.0, 1.5, 2.0)  # the 7-D target's five data terms (batch size 2: 2 + 2 + 1)
EXACT_ONLY = ("7d",)  # targets that get the exact checks only (their Monte Carlo would double the cost)
# plans a target leaves out: at 7-D, iid's and rr's batch rules pick indices as in 3-D (a scheme's
# dimension bug shows under full), and their oracles would triple the exact level's time
LEFT_OUT = {"7d": ("iid", "rr")}
COINCIDENCE = 0.05  # two expressions closer than this (relative) are one for a check


def friction_expressions(gamma: float) -> dict[str, float]:
    """The expressions of the friction a step's coefficients are made of, and the constants a slip
    turns them into (``sqrt(2)`` for ``sqrt(2 gamma)``, ``1`` for ``1 / gamma``, ...)."""
    g = float(gamma)
    return {"1": 1.0, "2": 2.0, "1/2": 0.5, "sqrt(2)": math.sqrt(2.0), "gamma": g, "1/gamma": 1 / g,
            "2 gamma": 2 * g, "gamma/2": g / 2, "sqrt(gamma)": math.sqrt(g), "sqrt(2 gamma)": math.sqrt(2 * g),
            "sqrt(gamma/2)": math.sqrt(g / 2), "sqrt(2/gamma)": math.sqrt(2 / g), "1/sqrt(gamma)": 1 / math.sqrt(g),
            "gamma^2": g * g, "1/(2 gamma)": 1 / (2 * g)}


def generic_friction(gamma: float) -> list[tuple[str, str]]:
    """The pairs of :func:`friction_expressions` that coincide at ``gamma`` (within
    :data:`COINCIDENCE`): a step that writes one for the other is the right step there, so no check
    at that friction can see it.  Empty for a generic friction (every one of
    :data:`DEFAULT_FRICTIONS`); ``gamma = 1`` gives eight pairs, ``gamma = 2`` twelve."""
    items = list(friction_expressions(gamma).items())
    return [(a, b) for i, (a, x) in enumerate(items) for b, y in items[i + 1:]
            if abs(math.log(x / y)) < COINCIDENCE]


def dimension_target() -> GaussianTarget:
    """Five Gaussian data terms of unequal scales (:data:`DIMENSION_SCALES`) in 7-D with a
    non-diagonal covariance (:func:`unequal_scales_target`): past three coordinates, so a loop bound
    or an index written for three (``min(d, 3)``, ``a % 3``) is seen, and five terms at batch size 2
    cut into uneven batches."""
    return unequal_scales_target(7, DIMENSION_SCALES)


def default_targets() -> list[tuple[str, GaussianTarget, int]]:
    """What :func:`verify` checks by default: ``(key, target, batch size)``, each at its friction
    :data:`DEFAULT_FRICTIONS` ``[key]``.

    ``("", default_target(), 1)``: three non-commuting terms in 2-D at batch size 1 (its checks
    keep their plain names); ``("3d", unequal_scales_target(), 2)``: three non-commuting terms of
    unequal scales in 3-D at batch size 2 (uneven batches of 2 and 1; checks named ``...@3d``);
    ``("7d", dimension_target(), 2)``: five terms of unequal scales in 7-D at batch size 2 (batches
    of 2, 2 and 1; checks named ``...@7d``; the exact checks only, :data:`EXACT_ONLY`, without the
    plans of :data:`LEFT_OUT`).  Each finds
    what the ones before cannot: a step whose indexing is right only in 2-D (or 3-D), a force that
    scales the batch mean where it should scale the sum (equal at batch size 1), and, at its own
    friction, a coefficient that degenerates at another (:func:`generic_friction`).

    Returns
    -------
    list of (str, GaussianTarget, int)
        The key of each target's checks, the target and its batch size.
    """
    return [("", default_target(), 1), ("3d", unequal_scales_target(), 2), ("7d", dimension_target(), 2)]


NONLINEAR_PLANS = ("full", "sms")  # the double well's default plans (see default_nonlinear_targets)


def default_nonlinear_targets() -> list[tuple[str, object, int, tuple[str, ...]]]:
    """What :func:`verify` checks by default with Monte Carlo beside :func:`default_targets`:
    ``(key, target, batch size, plans)``.  The tilted 1-D double well's force is not affine, so a step
    exact only for affine forces is seen; ``iid`` is left out (its gradient noise drowns the level
    differences; the Gaussian targets check it), and ``rr`` asserts nothing."""
    from integrators.targets import DoubleWellTarget
    return [("well", DoubleWellTarget(), 1, NONLINEAR_PLANS)]


def law_error(moments, target: GaussianTarget) -> float:
    """``|mean - mu| + |covariance - Sigma|_F`` of an oracle law against the target."""
    return float(np.linalg.norm(moments.mean - target.mean)
                 + np.linalg.norm(moments.covariance - target.covariance))


def exact_x_declared(scheme, plan) -> bool:
    """Whether ``scheme x plan`` declares its law exact on Gaussian targets: the scheme's
    ``EXACT_GAUSSIAN_X`` (e.g. BAOAB), with full gradients."""
    return resolve_plan(plan).NAME == "full" and bool(getattr(resolve_scheme(scheme), "EXACT_GAUSSIAN_X", False))


def target_scale(target: GaussianTarget) -> float:
    """``|Sigma|_F + |mu|``: what an error of a law (or of one of its statistics) is relative to."""
    return float(np.linalg.norm(target.covariance) + np.linalg.norm(target.mean))


def is_exact_law(hs, errors, scale: float, fit_points: int = 4, levels=None) -> bool:
    """A weak-error ladder (``nan`` where unstable) of an exact law: every finite error below
    ``EXACT_LEVEL`` relative to ``scale`` (or, where the ladder's rounding ``levels`` are known,
    below ``ROUNDING_MARGIN`` times its own level: at small friction the stationary law amplifies
    rounding far beyond ``EXACT_LEVEL``), and the ``fit_points`` finest ``h`` stable."""
    hs, errors = np.asarray(hs, dtype=float), np.asarray(errors, dtype=float)
    bound = np.full(errors.shape, EXACT_LEVEL * scale)
    if levels is not None:
        bound = np.maximum(bound, ROUNDING_MARGIN * np.nan_to_num(np.asarray(levels, dtype=float)))
    ok = np.isfinite(errors)
    finest = errors[np.argsort(hs)[:fit_points]]
    return bool(ok.any() and np.all(errors[ok] < bound[ok]) and np.all(np.isfinite(finest)))


def weak_order_verdict(hs, errors, expected: float | None, scale: float, *, exact_declared: bool = False,
                       fit_points: int = 4, levels=None) -> tuple[bool | None, str]:
    """The one rule for a weak-order ladder, ``(passed, measured)``, shared by :func:`verify` and the
    claims table.  An exact law (:func:`is_exact_law`) passes with no slope fitted; otherwise the
    slope on the ``fit_points`` finest ``h`` passes within ``WEAK_TOL`` of ``expected``; a law declared
    exact that is not fails; ``expected=None`` gives ``passed=None``."""
    if is_exact_law(hs, errors, scale, fit_points, levels):
        return (None if expected is None and not exact_declared else True), "exact (error at rounding level)"
    slope = fit_slope(hs, errors, fit_points)
    measured = _fmt_slopes(hs, errors, fit_points)
    if exact_declared:
        finite = np.asarray(errors, dtype=float)
        finite = finite[np.isfinite(finite)]
        worst = f"{np.max(finite) / scale:.2e}" if finite.size else "nan"
        return False, f"{measured}; not exact (max error {worst} relative), declared exact"
    passed = None if expected is None else bool(np.isfinite(slope) and abs(slope - expected) <= WEAK_TOL)
    return passed, measured


def largest_frequency(target: GaussianTarget, batch_size: int) -> float:
    """``omega``: the square root of the largest curvature a step's force has on ``target``, the
    full precision's or a minibatch's (prior + number of batches x its ``batch_size`` data
    terms; bounded by the terms' largest eigenvalues)."""
    _, precisions, prior, _ = target.arrays
    largest = sorted((float(np.max(np.abs(np.linalg.eigvalsh(p)))) for p in precisions), reverse=True)
    batch = float(np.max(np.abs(np.linalg.eigvalsh(prior)))) + n_batches(target.n_data, batch_size) * sum(
        largest[:batch_size])
    return math.sqrt(max(float(np.max(np.linalg.eigvalsh(target.precision))), batch))


def asymptotic_rate(target: GaussianTarget, gamma: float, batch_size: int) -> float:
    """``max(gamma, omega, omega^2 / gamma)``: a weak-error ladder is in its asymptotic regime where
    ``h`` times this is small, i.e. the step resolves the friction (``gamma h``), the fastest
    oscillation (``omega h``) and the overdamped drift (``omega^2 h / gamma``, which also bounds
    Euler-Maruyama's stability at small friction)."""
    omega = largest_frequency(target, batch_size)
    return max(gamma, omega, omega * omega / gamma)


def step_ladder(target: GaussianTarget, gamma: float, batch_size: int = 1) -> np.ndarray:
    """The step sizes :func:`verify` uses by default: ``sqrt(2)`` apart, from four times the edge of
    the asymptotic regime (``h = ASYMPTOTIC / asymptotic_rate``) to 64 times below it.  Close
    spacing keeps four fit points inside the regime while their errors stay above the oracle's
    rounding level, which at large friction is only a narrow window."""
    edge = ASYMPTOTIC / asymptotic_rate(target, gamma, batch_size)
    lo, hi = LADDER_STEPS
    return edge * 2.0 ** (-0.5 * np.arange(lo, hi + 1))


def rounding_level(moments, period: int, scale: float) -> float:
    """What rounding alone makes of an oracle law's error: the one-step maps carry relative errors
    of a unit roundoff, which the stationary law amplifies by ``1 / (1 - rho)`` (``rho`` the
    spectral radius per step); measured errors at the rounding floor lie a few times below this."""
    per_step = float(moments.radius) ** (1.0 / period)
    return float(np.finfo(float).eps) * scale / max(1.0 - per_step, float(np.finfo(float).eps))


def _ladder(target, module, plan, hs, gamma, batch_size, maps="probed", backend=None, non_finite=None):
    """Errors of the law along ``hs`` (``nan`` where unstable, or where the step gives non-finite
    numbers: its message is appended to ``non_finite``) and their rounding levels."""
    period = resolve_plan(plan).period(target.n_data, batch_size or target.n_data)
    scale = target_scale(target)
    errors, levels = [], []
    for h in hs:
        try:
            moments = stationary_moments(target, module, plan, h, gamma, batch_size, maps=maps, backend=backend)
        except (UnstableStepError, NonFiniteStepError) as exc:
            if isinstance(exc, NonFiniteStepError) and non_finite is not None:
                non_finite.append(str(exc))
            errors.append(float("nan"))
            levels.append(float("nan"))
            continue
        errors.append(law_error(moments, target))
        levels.append(rounding_level(moments, period, scale))
    return np.array(errors), np.array(levels)


def _weak_check(hs, errors, levels, expected, scale, exact_declared, rate) -> tuple[bool | None, str, str]:
    """``(passed, measured, skipped)`` of a weak-order ladder: :func:`weak_order_verdict` on the
    :data:`FIT_POINTS` finest step sizes whose errors stand :data:`ROUNDING_MARGIN` times above
    their rounding level; no claim (and ``skipped`` says why) where those are not in the
    asymptotic regime or too few stand above rounding.  Exact laws, laws declared exact and
    ladders unstable at their finest steps go to the rule on the whole ladder."""
    hs, errors, levels = np.asarray(hs, float), np.asarray(errors, float), np.asarray(levels, float)
    finest = np.argsort(hs)[:FIT_POINTS]
    if exact_declared or is_exact_law(hs, errors, scale, FIT_POINTS, levels) or not np.all(np.isfinite(errors[finest])):
        return (*weak_order_verdict(hs, errors, expected, scale, exact_declared=exact_declared, levels=levels), "")
    above = np.isfinite(errors) & np.isfinite(levels) & (errors >= ROUNDING_MARGIN * levels)
    fit = np.argsort(np.where(above, hs, np.inf))[:FIT_POINTS]
    fit = fit[above[fit]]
    if fit.size < FIT_POINTS:
        return (None, _fmt_slopes(hs, errors, FIT_POINTS),
                f"not checked: fewer than {FIT_POINTS} step sizes have errors {ROUNDING_MARGIN:g} times above "
                f"the oracle's rounding level, so no asymptotic regime can be fitted")
    keep = np.sort(fit)
    passed, measured = weak_order_verdict(hs[keep], errors[keep], expected, scale)
    coarsest = float(np.max(hs[keep]))
    measured += f" on h in [{float(np.min(hs[keep])):.3g}, {coarsest:.3g}]"
    if coarsest * rate > ASYMPTOTIC * (1 + 1e-9):
        floor = bool(np.any(np.isfinite(errors) & ~above & (hs < np.min(hs[keep]))))
        return (None, measured,
                f"not checked: not in the asymptotic regime, h max(gamma, omega, omega^2/gamma) = "
                f"{coarsest * rate:.2g} > {ASYMPTOTIC:g} at the coarsest fitted h; "
                + ("the errors at smaller h are at the oracle's rounding level" if floor else "give smaller hs"))
    return passed, measured, ""


def _fmt_slopes(hs, errors, fit_points: int = 4) -> str:
    return f"slope {fit_slope(hs, errors, fit_points):.3f} (local: {describe_local_slopes(hs, errors)})"


# What verify and theory_checks.adapters.measure_adapter take alike, declared once (each adjusts
# what it may leave to a default).
SHARED_CONSTRAINTS = {
    "plans": Optional(ListOf(Registered(resolve_plan, "a registered plan's name or a plan object"), min_len=1)),
    "gamma": POSITIVE, "batch_size": at_least(1), "n_chains": at_least(2),
}
VERIFY_CONSTRAINTS = {
    **SHARED_CONSTRAINTS,
    "target": Optional(InstanceOf(Target, "a Target (a GaussianTarget for the exact checks, or any other for the "
                                          "Monte Carlo weak orders)")),
    "batch_size": Optional(at_least(1)), "max_seconds": Optional(POSITIVE), "budget": Optional(POSITIVE),
    "gamma": Optional(POSITIVE), "strong": BOOLEAN, "monte_carlo": BOOLEAN,  # "False" would read as true
}


@declares(VERIFY_CONSTRAINTS, {"scheme": "ubu", "plans": ["full"], "target": None, "gamma": 1.0, "batch_size": 1,
                               "max_seconds": 60.0, "budget": None, "n_chains": 4})
def verify(scheme, *, plans=None, target: GaussianTarget | None = None, gamma: float | None = None,
           batch_size: int | None = None, hs=None, strong_hs=STRONG_HS, max_seconds: float | None = None,
           strong: bool = True, monte_carlo: bool = True, n_chains: int = 256, seed: int = 0,
           backend: str | None = None, budget: float | None = None) -> VerifyReport:
    """Check a scheme against what it declares, with every plan: is it the scheme it says it is?

    On each target (by default the three of :func:`default_targets`, each at its friction of
    :data:`DEFAULT_FRICTIONS`), the checks
    ``probe_affine``, ``declared_map``, ``stationarity``, then ``weak_order``, ``strong_order``
    and ``monte_carlo`` per plan, each rule as the module docstring states it.  Checks on the
    second default target are named with the suffix ``@3d`` (``stationarity@3d``).  A plan whose
    orders are not claims (``THEOREM = False``: ``rr``) is measured and asserts nothing.  Every
    claim ends passed, failed or inconclusive (with the reason); the work is fixed by the chains
    and steps, so a seed's verdicts do not depend on how busy the machine is.

    Parameters
    ----------
    scheme : str or Scheme
        A registered scheme's name, or an :class:`integrators.Scheme`.
    plans : list or None, default None
        Plans (names or objects) to check the scheme with; ``None``: every registered plan (on a
        target without an exact law, :data:`NONLINEAR_PLANS`).
    target : Target or None, default None
        ``None``: both of :func:`default_targets` (every check) and, for the Monte Carlo checks,
        :func:`default_nonlinear_targets` (the double well, plans ``full`` and ``sms``).  A
        :class:`GaussianTarget` gets every check on it alone; any other target (a
        ``LogisticTarget``, a ``DoubleWellTarget``, one of your own) has no exact law and gets
        the Monte Carlo weak orders of :mod:`theory_checks._nonlinear` (``weak_order[plan]``, and
        ``limit[plan]`` where it knows its expectations), by default on the plans of
        :data:`NONLINEAR_PLANS`.
    gamma : float or None, default None
        Friction, positive, for every target; ``None``: each default target at its own friction
        (:data:`DEFAULT_FRICTIONS`, chosen so that no coefficient degenerates: see
        :func:`generic_friction`), a given target and the double well at the first of them.
    batch_size : int or None, default None
        Batch size of the minibatch plans, in ``[1, n_data]`` of every target; ``None``: each
        default target's own (1 and 2), or ``min(2, n_data)`` for a given target.
    hs : sequence of float or None, default None
        The weak-order ladder, at least 4 distinct positive steps (default: :func:`step_ladder`
        for this friction, target and batch size, so that the fit lies in the asymptotic regime).
    strong_hs : sequence of float, default 2**-3 ... 2**-7
        The strong-order ladder, at least 2 distinct positive steps.
    max_seconds : float or None, default None
        A wall-clock cap: once it is passed, the checks not yet run are reported inconclusive
        ("not run: the wall-clock cap ... was reached") and the report is not ``ok``.  ``None``:
        no cap, every check runs.  The cap is read between checks: it stops the next check from
        starting, not a running one, and cannot stop compiled user code that never returns (nor can
        Ctrl-C); bound such a run in a process of its own with a timeout (the sampling guide, "User
        code that never returns").
    strong, monte_carlo : bool, default True
        Run the strong-order checks; run the Monte Carlo checks (``monte_carlo``, ``target_law``
        and every check on a target without an exact law, the default double well's included).
        Switched off, they are listed as skipped and are not claims of this run.
    n_chains, seed : int, default 256 and 0
        Chains (at least 2) and seed of the strong-order and Monte Carlo runs (coupled pairs per
        level on a target without an exact law).  Fewer chains keep the verdicts calibrated and
        lower their sensitivity.
    backend : {"numba", "torch"} or None, default None
        ``"numba"`` checks the scheme's Numba step, ``"torch"`` its tensor step (probed and run on
        the torch backend; the strong order, measured on the Numba kernel, is then inconclusive);
        default Numba, torch for a scheme written only in torch (``step=None``, ``TORCH_STEP``
        given).
    budget : float or None, default None
        The former name of ``max_seconds`` (the same wall-clock cap).

    Returns
    -------
    VerifyReport
        Every check with its expected and measured values and verdict; ``ok`` when every claim
        was checked and passed (``failed`` and ``inconclusive`` name the others).

    Raises
    ------
    ValueError
        If the scheme or a plan is unknown or badly declared, ``plans`` is a string or empty,
        ``target`` is not a Target (or is a non-Gaussian one with ``monte_carlo=False``: nothing
        would be checked), ``backend`` is unknown, both ``max_seconds`` and ``budget`` are given,
        or a number is out of range.
    """
    t0 = time.time()
    values = check_parameters(locals(), VERIFY_CONSTRAINTS)
    gamma, batch_size, n_chains = values["gamma"], values["batch_size"], values["n_chains"]
    strong, monte_carlo = values["strong"], values["monte_carlo"]
    module = resolve_scheme(scheme)
    backend = probe_backend(module, backend)
    plan_modules = [resolve_plan(p) for p in PLANS] if plans is None else values["plans"]
    if budget is not None and max_seconds is not None:
        raise ValueError(f"give max_seconds or its former name budget, not both (got {max_seconds!r} and {budget!r})")
    cap = values["max_seconds"] if budget is None else values["budget"]
    first = DEFAULT_FRICTIONS[""] if gamma is None else gamma
    if target is None:
        runs = [(key, t, bs, None, DEFAULT_FRICTIONS[key] if gamma is None else gamma)
                for key, t, bs in default_targets()]
        runs += [(key, t, bs, only, first) for key, t, bs, only in default_nonlinear_targets()]
    elif isinstance(target, GaussianTarget):
        runs = [("", target, min(2, target.n_data), None, first)]
    else:  # no exact law: by default the plans whose differences resolve
        runs = [("", target, min(2, target.n_data), NONLINEAR_PLANS if plans is None else None, first)]
    if not isinstance(target, (GaussianTarget, type(None))):
        if not monte_carlo:
            raise ValueError(f"a {type(target).__name__} has no exact law: its checks are all Monte Carlo, and "
                             f"monte_carlo=False leaves nothing to check")
        if hs is not None:  # the telescoping ladder is theory_checks._nonlinear's own
            raise ValueError(f"hs is the exact weak-order ladder of a GaussianTarget; a {type(target).__name__}'s "
                             f"ladder is set by theory_checks._nonlinear.default_h0, got hs={hs!r}")
    if batch_size is not None:
        for _, t, _, _, _ in runs[:1 if target is not None else len(default_targets())]:
            batch_size_for(t, batch_size)
        # the default double well has two data terms: a larger batch is its full batch
        runs = [(key, t, min(batch_size, t.n_data), only, g) for key, t, _, only, g in runs]
    given_hs = None if hs is None else ladder("hs", hs, minimum=FIT_POINTS)
    strong_hs = ladder("strong_hs", strong_hs)

    def capped() -> str:
        if cap is not None and time.time() - t0 > cap:
            return f"not run: the wall-clock cap max_seconds={cap:g} was reached"
        return ""

    options = dict(given_hs=given_hs, strong_hs=strong_hs, n_chains=n_chains, seed=seed, backend=backend,
                   capped=capped)
    checks, used = [], []
    guard = KernelGuard(module.NAME)
    if backend != "torch":
        guard.compile_first(module, runs[0][1] if isinstance(runs[0][1], GaussianTarget) else default_target())
    for key, t, bs, only, g in runs:
        with threadpool_limits(1, user_api="blas"):  # small matrices: threads only contend (50x on a busy machine)
            found = _verify_run(module, plan_modules, key, t, bs, only, g, target, strong, monte_carlo, guard, used,
                                options)
        checks += [_named(c, key) for c in found]
    label = module.NAME + (" (torch step)" if backend == "torch" else "")
    described = "; ".join(f"{t.name} (d={t.dim}, {t.n_data} data terms, batch size {bs}, gamma {g:g})"
                          + (f" [@{key}]" if key else "") for key, t, bs, g in used)
    return VerifyReport(label, described, checks, time.time() - t0)


def _verify_run(module, plan_modules, key, t, bs, only, g, target, strong, monte_carlo, guard, used,
                options) -> list[Check]:
    """The checks of one of :func:`verify`'s runs (a target at a batch size and a friction)."""
    plans_here = [p for p in plan_modules if (only is None or p.NAME in only)
                  and not (target is None and p is PLANS.get(p.NAME) and p.NAME in LEFT_OUT.get(key, ()))]
    if not plans_here:  # the default double well runs none of the plans asked for
        return []
    used.append((key, t, bs, g))
    exact_only = target is None and key in EXACT_ONLY
    if isinstance(t, GaussianTarget):
        return _verify_target(module, plans_here, t, bs, gamma=g, strong=strong and not exact_only,
                              monte_carlo=monte_carlo and not exact_only, box=not used[:-1], guard=guard,
                              listed=not exact_only, **options)
    return _verify_nonlinear(module, plans_here, t, bs, gamma=g, monte_carlo=monte_carlo, guard=guard, **options)


def _verify_nonlinear(module, plan_modules, target, batch_size, *, gamma, monte_carlo, n_chains, seed, backend,
                      capped, guard, **_) -> list[Check]:
    """The Monte Carlo weak orders (and limits) of :mod:`theory_checks._nonlinear` on a target
    without an exact law; not claims of a run with ``monte_carlo=False``, inconclusive on the
    torch step (the coupled chains run on the Numba kernel)."""
    from theory_checks._nonlinear import nonlinear_checks
    if not monte_carlo or backend == "torch":  # every row listed, none run
        reason = ("monte_carlo=False" if not monte_carlo
                  else "the torch step: the coupled chains run on the Numba kernel")
        checks = nonlinear_checks(module, plan_modules, target, batch_size, gamma=gamma, n_chains=n_chains,
                                  seed=seed, capped=lambda: reason)
        for check in checks:
            check.claim = check.claim and monte_carlo  # switched off by the caller: not claims of this run
        return checks
    names = [f"{kind}[{p.NAME}]" for p in plan_modules for kind in ("weak_order", "limit")]
    return guard.run(names, "-", lambda: nonlinear_checks(module, plan_modules, target, batch_size, gamma=gamma,
                                                          n_chains=n_chains, seed=seed, capped=capped),
                     what="the coupled kernel")


def _named(check: Check, key: str) -> Check:
    if key:
        check.name = f"{check.name}@{key}"
    return check


def _not_run(name, expected, reason, claim=True) -> Check:
    return Check(name, None, expected, "-", skipped=reason, claim=claim)


def _verify_target(module, plan_modules, target, batch_size, *, gamma, given_hs, strong_hs, strong, monte_carlo,
                   n_chains, seed, backend, capped, box, guard, listed) -> list[Check]:
    """Every check of :func:`verify` on one target at one batch size, in order; ``box``: with the
    bounce check (:mod:`theory_checks._box`); ``listed``: list the strong-order and Monte Carlo
    checks it does not run (a target with the exact checks only leaves them out)."""
    rate = asymptotic_rate(target, gamma, batch_size)
    hs = step_ladder(target, gamma, batch_size) if given_hs is None else given_hs
    scale = target_scale(target)
    checks = []

    probed = probe_step_map(module, target, list(range(target.n_data)), 1.0, float(hs[0]), gamma, backend=backend)
    checks.append(Check("probe_affine", probed.affine_residual < 1e-10, "affine in (x, v, g, dW, J)",
                        f"residual {probed.affine_residual:.1e}", claim=True))
    if getattr(module, "affine_ops", None) is not None:  # at the regime's edge on the default ladder
        h0 = float(ASYMPTOTIC / rate if given_hs is None else hs[len(hs) // 2])
        try:
            a = stationary_moments(target, module, "full", h0, gamma, maps="declared")
            b = stationary_moments(target, module, "full", h0, gamma, maps="probed", backend=backend)
            gap = float(np.max(np.abs(a.second_moment - b.second_moment)) + np.max(np.abs(a.mean - b.mean)))
            # both laws carry the rounding of their maps, amplified by 1 / (1 - rho) at large friction
            tol = max(1e-9 * max(1.0, scale), 100 * rounding_level(b, 1, scale))
            checks.append(Check("declared_map", gap < tol, "declared affine_ops = compiled step",
                                f"moment gap {gap:.1e} at h={h0:g} (tolerance {tol:.1e})", claim=True))
        except UnstableStepError as exc:
            checks.append(_not_run("declared_map", "declared affine_ops = compiled step", f"not checked: {exc}"))
    else:
        checks.append(_not_run("declared_map", "-", "no affine_ops declared", claim=False))

    non_finite: list[str] = []
    full_errors, full_levels = _ladder(target, module, "full", hs, gamma, None, backend=backend, non_finite=non_finite)
    finest = float(full_errors[-1]) / scale
    checks.append(Check("stationarity", bool(np.isfinite(finest) and finest < STATIONARY_TOL),
                        f"error at h={hs[-1]:g} < {STATIONARY_TOL:g} (relative)",
                        f"{finest:.2e}" if np.isfinite(finest) else
                        f"non-finite step at h={hs[-1]:g}: see finite_step" if non_finite else
                        f"unstable at h={hs[-1]:g} (no stationary law): choose smaller hs",
                        list(hs), list(full_errors), claim=True))

    for plan in plan_modules:
        name = f"weak_order[{plan.NAME}]"
        expected = expected_weak_order(module, plan)
        claim = (asserted(module, plan) and expected is not None) or exact_x_declared(module, plan)
        exp_txt = "-" if expected is None else f"{expected:g}" + ("" if claim else " (observed, not a claim)")
        reason = capped()
        if reason:
            checks.append(_not_run(name, exp_txt, reason, claim))
            continue
        errors, levels = (full_errors, full_levels) if plan.NAME == "full" else \
            _ladder(target, module, plan, hs, gamma, batch_size, backend=backend, non_finite=non_finite)
        passed, measured, why = _weak_check(hs, errors, levels, expected if claim else None, scale,
                                            exact_x_declared(module, plan), rate)
        checks.append(Check(name, passed, exp_txt, measured, list(hs), list(errors), skipped=why, claim=claim))

    if non_finite:  # named once here; the ladders read those steps as unstable
        checks.append(Check("finite_step", False, "finite numbers from finite inputs at every h",
                            non_finite[0], claim=True))
    if box:
        from theory_checks._box import box_check
        checks.append(box_check(module, target, float(hs[0]), gamma, backend))
    from theory_checks._sweeps import reference_order_check, sweep_check
    checks += [c for c in (sweep_check(plan, target.n_data, batch_size) for plan in plan_modules) if c is not None]
    if not listed:
        return checks

    for plan in plan_modules:
        name = f"strong_order[{plan.NAME}]"
        expected = expected_strong_order(module, plan)
        claim = asserted(module, plan) and expected is not None
        exp_txt = "-" if expected is None else f">= {expected - STRONG_SLACK:g}"
        reason = _kernel_reason(plan) or ("the torch step: the strong order is measured on the Numba kernel"
                                          if backend == "torch" else "")
        if not strong:  # the caller left these out of the run: not its claims
            checks.append(_not_run(name, exp_txt, reason or "strong=False", claim=False))
            continue
        reason = reason or capped()
        if reason:
            checks.append(_not_run(name, exp_txt, reason, claim))
            continue
        def measure(plan=plan, name=name, exp_txt=exp_txt, expected=expected, claim=claim):
            fit = strong_order(RunSpec.from_options(target, module, plan, gamma=gamma,
                                                    batch_size=None if plan.NAME == "full" else batch_size,
                                                    n_chains=n_chains, seed=seed), strong_hs, sweeps=4, n_boot=100)
            passed = bool(fit.slope >= expected - STRONG_SLACK) if claim else None
            return Check(name, passed, exp_txt, f"slope {fit.slope:.3f} (95% CI [{fit.ci[0]:.2f}, {fit.ci[1]:.2f}])",
                         list(fit.hs), list(fit.errors), claim=claim)
        checks += guard.run([name], exp_txt, measure, what="the strong-order kernel")
    if strong and backend != "torch":  # the plan's own orders, seen by a scheme whose strong order can see them
        for plan in plan_modules:
            reason = _kernel_reason(plan) or capped()
            checks += [c for c in guard.run(
                [f"plan_strong_order[{plan.NAME}]"], "-",
                lambda plan=plan, reason=reason: [reference_order_check(
                    module, plan, target, batch_size, gamma, strong_hs, n_chains, seed, reason)],
                what="the strong-order kernel of the reference scheme") if c is not None]

    for plan in plan_modules:
        name = f"monte_carlo[{plan.NAME}]"
        if not monte_carlo:
            checks.append(_not_run(name, PROBE_EXPECTED, "monte_carlo=False", claim=False))
            continue
        reason = _kernel_reason(plan) or capped()
        if reason:
            checks.append(_not_run(name, PROBE_EXPECTED, reason))
            continue
        checks += guard.run([name], PROBE_EXPECTED, lambda plan=plan: probe_law_check(
            module, plan, target, gamma, batch_size, n_chains, seed, len(plan_modules), backend), what="the kernel")

    for plan in plan_modules:
        name = f"target_law[{plan.NAME}]"
        expected = expected_weak_order(module, plan)
        claim = asserted(module, plan) and expected is not None
        if not monte_carlo:
            checks.append(_not_run(name, TARGET_EXPECTED, "monte_carlo=False", claim=False))
            continue
        reason = _kernel_reason(plan) or ("the torch step: the coupled chains run on the Numba kernel"
                                          if backend == "torch" else "") or capped()
        if reason:
            checks.append(_not_run(name, TARGET_EXPECTED, reason, claim))
            continue
        checks += guard.run([name], TARGET_EXPECTED, lambda plan=plan, expected=expected, claim=claim: target_law_check(
            module, plan, target, gamma, batch_size, n_chains, seed, len(plan_modules), h=float(ASYMPTOTIC / rate),
            order=expected, claim=claim), what="the coupled kernel")
    return checks


class KernelGuard:
    """Runs the checks that need a compiled kernel (strong order, Monte Carlo, coupled chains) for
    one scheme: a step that cannot run there (a compile error, e.g. a step that allocates where
    the kernel runs without Numba's runtime, or an error the step raises) fails the check it was
    running with one line naming the scheme and what went wrong, every later kernel check fails
    with that line without compiling again, and every verdict computed so far stays."""

    def __init__(self, scheme_name: str):
        self.scheme_name = scheme_name
        self.error = ""

    def compile_first(self, module, target) -> None:
        """Compile ``module``'s step as the kernels run it (without Numba's runtime, unless the step
        declares ``allocates``) before any check: a step that cannot run there is known at once, and
        each kernel check then fails with its line instead of compiling."""
        try:
            _kernel_caller(module, target)
        except Exception as exc:  # noqa: BLE001  (user code in a kernel: any error is the step's)
            self.error = f"scheme {self.scheme_name!r}: its step cannot run in a kernel: {one_line(exc)}"

    def run(self, names, expected, measure, *, what: str) -> list[Check]:
        """``measure()`` (a check or a list of checks), or a failed check per name in ``names``."""
        if not self.error:
            try:
                found = measure()
                return found if isinstance(found, list) else [found]
            except Exception as exc:  # noqa: BLE001  (user code in a kernel: any error is the step's)
                self.error = f"scheme {self.scheme_name!r}: its step cannot run in {what}: {one_line(exc)}"
        return [Check(name, False, expected, self.error, claim=True) for name in names]


def _kernel_caller(module, target) -> None:
    """One step of ``module`` on ``target`` through a caller compiled as the kernels are (kept on disk)."""
    from integrators._bounce import make_box
    from integrators._kernel import step_caller
    from integrators._user_code import guarded
    from integrators.targets._force import force_data, lane_force_for

    step = guarded(module.step, f"scheme {module.NAME!r}: step")
    call = step_caller(step, lane_force_for(target), runtime=bool(getattr(step, "allocates", False)))
    d, n = target.dim, 1
    batch = np.zeros((max(1, target.n_data), n), dtype=np.int32)
    call(np.zeros((n, d)), np.zeros((n, d)), np.zeros((n, d)), np.asarray(module.coefficients(0.1, 1.0), dtype=float),
         np.zeros((2, d, n)), np.zeros((2, d, n)), batch, 1, 1.0, force_data(target, False, None), make_box(d))


def _kernel_reason(plan) -> str:
    try:
        kernel_code(plan)
    except ValueError:
        return "not checked: the plan has no kernel batch rule"
    return ""
