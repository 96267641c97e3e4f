"""Weak orders on targets without an exact law (logistic regression, a double well), measured with
coupled ``h`` / ``h/2`` chains (:func:`bias._coupled.coupled_run`) on the telescoping ladder
``h_l = h_0 2^-l``, ``l = 0 .. L``.

What is measured, per plan.  For test functions ``phi`` (``x_a`` and ``x_a^2`` for the first one
or two coordinates) each level gives ``Delta_l = E_{h_l/2} phi - E_{h_l} phi`` with its standard
error over replicates (chains x time chunks).  Under the bias model ``E_h phi = b_0 + a h^p`` of
a scheme of weak order ``p``, ``|Delta_l| = |a| (1 - 2^-p) h_l^p``, so the slope of
``log |Delta_l|`` against ``log h_l`` is ``p``:

* ``weak_order[plan]``: the least-squares slope of each resolved test function, with a bootstrap
  confidence interval (each level's replicates resampled, the levels being independent runs;
  percentile interval at family-wise level :data:`ORDER_ALPHA` over the test functions).  A test
  function is *resolved* when every ``|Delta_l|`` stands :data:`RESOLVED_Z` standard errors above
  zero with one sign.  The claim is "weak order at least ``p``" (a bias ``O(h^p)``): it passes when
  every resolved function's interval reaches ``p - ORDER_SLACK`` and at least one interval lies
  above ``p - 1``, so that the next lower order is excluded at that level (what the pass could have
  caught); it fails when an interval lies below ``p - ORDER_SLACK`` (a lower order than declared).
  A slope above ``p`` is no failure: where a test function's ``h^p`` coefficient is small, the next
  term steepens the ladder (UBU x sms on logistic regression: 2.4 for ``x0^2``); a declared order
  too low is what the exact Gaussian checks catch.  When no test function is resolved but every
  ``|Delta_l| + RESOLVED_Z se`` lies below :data:`BELOW_RESOLUTION` of its statistic's scale
  (:func:`statistic_scales`), the bias is too small to fit at these steps, like an exact law on the
  Gaussian targets: the claim passes with that bound (ABOBA and BAOAB on the double well).
  Otherwise (no test function resolved and the bound larger, or no interval above ``p - 1``) the
  ladder is run again at :data:`SECOND_LOOK` times the chains, which halves every standard error
  (OBABO x sms on the double well needs it about one seed in four), and the verdict is that look's;
  the intervals' level is split between the two looks.  It is inconclusive when the second look is
  too.
* ``limit[plan]``, where the target knows its expectations (``exact_expectations``, e.g.
  :class:`integrators.targets.DoubleWellTarget`): the bias model's limit at the finest level,
  ``b_0 = E_{h_L} phi + Delta_L 2^p / (2^p - 1)`` (Richardson extrapolation with the declared
  order), per chain, against the exact ``E_pi phi`` within the family-wise Student-t critical
  value over the test functions and plans (:func:`theory_checks._monte_carlo.family_critical`, the
  level of ``verify``'s other Monte Carlo checks) of its standard error.  A step that is
  exact for affine forces but converges to the wrong law on nonlinear ones fails here even
  when its slope looks right.

The ladder: ``h_0 = H0_SCALE / max(gamma, omega, omega^2 / gamma)`` with ``omega^2`` the largest
curvature of a step's force (the full gradient's or a minibatch's, :func:`largest_curvature`,
estimated by finite differences at the mode and one standard deviation from it), i.e. the
ladder starts where the step resolves friction, oscillation and drift, and every level
simulates the same time :data:`LEVEL_TIME` (in units of ``max(1, 1/gamma)``).

Standard errors and bootstrap resamples are over chains (each chain's time chunks averaged).
The burn-in (:data:`BURN_FRACTION` of each level) and the level's length follow ``gamma`` only,
not the target's relaxation time: on a target far slower than ``max(1, 1/gamma)`` give more
``LEVEL_TIME`` (the double well and the logistic targets here relax in a few time units).

Cost: about ``3 * 15 * LEVEL_TIME / h_0`` force evaluations per chain (some 1e8 per plan at the
defaults), and :data:`SECOND_LOOK` times that again for a plan that takes a second look.
Sensitivity on the default double well with UBU: the slope's interval is about +-0.1
wide, so an order change of 1 is resolved many times over, and a relative bias of the limit above
about 2% is caught.  Stochastic-gradient plans (``iid``) couple less tightly and resolve less: an
inconclusive verdict says so.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from scipy.stats import norm

from bias._coupled import coupled_run
from bias._telescoping import level_seed
from integrators import RunSpec
from integrators.plans import kernel_code, n_batches
from integrators.targets._force import target_function
from theory_checks._checks import INCONCLUSIVE, Check
from theory_checks._declared import asserted, expected_weak_order
from theory_checks._monte_carlo import family_critical
from theory_checks._power import detectable, powered

__all__ = ["default_h0", "nonlinear_checks"]

LEVELS = 3            # the finest level L: four coupled pairs, h_0 ... h_0 / 8
H0_SCALE = 1.0        # h_0 times max(gamma, omega, omega^2 / gamma)
LEVEL_TIME = 400.0    # simulated time per level, in units of max(1, 1 / gamma)
N_CHUNKS = 4          # time chunks per chain (replicates of the standard errors)
BURN_FRACTION = 0.1
RESOLVED_Z = 3.0      # every |Delta_l| this many standard errors above zero: the function is resolved
ORDER_SLACK = 0.3     # a slope interval reaching p - slack is consistent with order at least p
ORDER_ALPHA = 0.01    # family-wise level of the slope intervals (over the test functions)
BELOW_RESOLUTION = 0.005  # unresolved differences bounded below this (relative) at every level: a bias too small to fit
SECOND_LOOK = 4       # an inconclusive weak order is measured once more at this many times the chains
LOOKS = 2             # looks at a weak order: the slope intervals' level is split between them
N_BOOT = 400
N_COORDINATES = 2     # test functions on the first this many coordinates


@nb.njit(nogil=True)
def leading_coordinates(x, out, data):
    """Test functions ``x_0 .. x_{k-1}`` then ``x_0^2 .. x_{k-1}^2`` with ``k = len(out) // 2``."""
    k = out.shape[0] // 2
    for a in range(k):
        out[a] = x[a]
        out[k + a] = x[a] * x[a]


def test_function_names(dim: int) -> list[str]:
    """Names of :func:`leading_coordinates`' values on a ``dim``-dimensional target."""
    k = min(dim, N_COORDINATES)
    if dim == 1:
        return ["x", "x^2"]
    return [f"x{a}" for a in range(k)] + [f"x{a}^2" for a in range(k)]


def _python_test_functions() -> list:
    """:func:`leading_coordinates` of a one-dimensional target, as Python functions of a float."""
    return [lambda x: x, lambda x: x * x]


def largest_curvature(target, batch_size: int) -> float:
    """``omega^2``: the largest curvature of a step's force, the full gradient's or a minibatch's
    (prior + number of batches x the sum of the ``batch_size`` largest terms' curvatures), from
    central differences of the terms' gradients along each coordinate (up to 10) at the mode and
    at one standard deviation (:meth:`Target.typical_scale`) either side of it."""
    prior_grad = target_function(type(target), "prior_grad_add")
    datum_grad = target_function(type(target), "datum_grad_add")
    mode = np.asarray(target.mode(), dtype=float)
    scale = target.typical_scale()
    sd = 1.0 if scale is None else max(float(scale[1]), 1e-3)
    d = target.dim
    coords = range(min(d, 10))
    points = [mode] + [mode + s * sd * np.eye(d)[a] for a in coords for s in (-1.0, 1.0)]
    eps = 1e-4 * sd
    worst_full, worst_batch = 0.0, 0.0
    for p in points:
        per_term = np.zeros(target.n_data)
        prior_c = 0.0
        for a in coords:
            e = eps * np.eye(d)[a]
            lo, hi = np.ascontiguousarray(p - e), np.ascontiguousarray(p + e)
            g_lo, g_hi = np.zeros(d), np.zeros(d)
            prior_grad(hi, target.arrays, g_hi)
            prior_grad(lo, target.arrays, g_lo)
            prior_c = max(prior_c, abs(float(g_hi[a] - g_lo[a])) / (2 * eps))
            for i in range(target.n_data):
                g_lo[:], g_hi[:] = 0.0, 0.0
                datum_grad(hi, i, 1.0, target.arrays, g_hi)
                datum_grad(lo, i, 1.0, target.arrays, g_lo)
                per_term[i] = max(per_term[i], abs(float(g_hi[a] - g_lo[a])) / (2 * eps))
        worst_full = max(worst_full, prior_c + float(per_term.sum()))
        largest = np.sort(per_term)[::-1]
        batch = prior_c + n_batches(target.n_data, batch_size) * float(largest[:batch_size].sum())
        worst_batch = max(worst_batch, batch)
    return max(worst_full, worst_batch, 1e-12)


def default_h0(target, gamma: float, batch_size: int) -> float:
    """The coarsest step of the ladder, ``H0_SCALE / max(gamma, omega, omega^2 / gamma)``, where the
    step resolves friction, oscillation and drift (``omega^2``: :func:`largest_curvature`).

    Parameters
    ----------
    target : Target
        The target.
    gamma : float
        Friction.
    batch_size : int
        Batch size of the minibatch plans (a batch's curvature counts).

    Returns
    -------
    float
        ``h_0``.
    """
    omega2 = largest_curvature(target, batch_size)
    omega = math.sqrt(omega2)
    return H0_SCALE / max(gamma, omega, omega2 / gamma)


def _fit(hs, deltas) -> float:
    return float(np.polyfit(np.log(hs), np.log(np.abs(deltas)), 1)[0])


def _slope_ci(hs, reps, j, level_alpha, rng) -> tuple[float, float]:
    """The slope of test function ``j`` plus or minus the normal quantile of ``level_alpha`` times
    its bootstrap standard error (chains resampled, each level apart): at a family-wise level of
    1e-2 over a few functions the tail quantiles of :data:`N_BOOT` draws would be single draws."""
    boot = np.empty(N_BOOT)
    for b in range(N_BOOT):
        d = np.array([r[rng.integers(0, len(r), len(r)), j].mean() for r in reps])
        boot[b] = _fit(hs, d) if np.all(d != 0) else np.nan
    boot = boot[np.isfinite(boot)]
    slope = _fit(hs, np.array([r[:, j].mean() for r in reps]))
    half = float(norm.isf(level_alpha / 2)) * float(np.std(boot, ddof=1)) if boot.size > 1 else math.inf
    return slope - half, slope + half


def chain_replicates(run, values) -> np.ndarray:
    """``(n_chains_ok, n_tests)``: each finite chain's average over its time chunks (chunks of one
    chain are correlated, chains are independent: the replicates of every standard error here)."""
    return values[run.ok].mean(axis=1)


def nonlinear_checks(module, plan_modules, target, batch_size, *, gamma: float = 1.0, n_chains: int = 256,
                     seed: int = 0, capped=lambda: "", levels: int = LEVELS, h0: float | None = None) -> list[Check]:
    """The weak-order (and, where the target knows its expectations, limit) checks of a scheme on a
    target without an exact law; see the module docstring for the rules and their cost.

    Parameters
    ----------
    module : Scheme
        The scheme, resolved (:func:`integrators.schemes.resolve_scheme`).
    plan_modules : list
        The plans, resolved (:func:`integrators.plans.resolve_plan`).
    target : Target
        Any target (e.g. ``LogisticTarget``, ``DoubleWellTarget``); one with
        ``exact_expectations`` (and ``dim == 1``) also gets ``limit`` checks.
    batch_size : int
        Batch size of the minibatch plans, in ``[1, n_data]``.
    gamma : float, default 1.0
        Friction.
    n_chains, seed : int, default 256 and 0
        Coupled pairs per level and the seed (level ``l`` runs on
        :func:`bias._telescoping.level_seed`).
    capped : callable, default no cap
        Returns a reason when a wall-clock cap was reached ("" otherwise); the checks not yet run
        are then inconclusive with that reason.
    levels : int, default 3
        The finest level ``L`` of the ladder ``h_0 2^-l``.
    h0 : float or None, default None
        The coarsest step (default :func:`default_h0`).

    Returns
    -------
    list of Check
        ``weak_order[<plan>]`` for every plan, then ``limit[<plan>]`` for every plan where the
        target has exact expectations; plans whose order is not a claim (``rr``) are measured
        and assert nothing.
    """
    names = test_function_names(target.dim)
    n_tests = len(names)
    has_exact = hasattr(target, "exact_expectations") and target.dim == 1
    z_limit = family_critical(n_tests * len(plan_modules), n_chains)
    ladder = {}  # h_0's ladder, the start and the exact values: computed when a plan first runs

    def prepared():
        if not ladder:
            start = default_h0(target, gamma, batch_size) if h0 is None else float(h0)
            ladder["hs"] = start * 2.0 ** -np.arange(levels + 1)
            ladder["x0"] = np.asarray(target.mode(), dtype=float)
            ladder["exact"] = (np.asarray(target.exact_expectations(_python_test_functions()), dtype=float)
                               if has_exact else None)
        return ladder["hs"], ladder["x0"], ladder["exact"]

    weak, limits = [], []
    for plan in plan_modules:
        wname, lname = f"weak_order[{plan.NAME}]", f"limit[{plan.NAME}]"
        expected = expected_weak_order(module, plan)
        claim = asserted(module, plan) and expected is not None
        exp_txt = "-" if expected is None else f"{expected:g}" + ("" if claim else " (observed, not a claim)")
        lim_txt = f"Richardson limit within {z_limit:.1f} s.e. of E_pi ({', '.join(names)})"
        reason = capped()
        if not reason:
            try:
                kernel_code(plan)
            except ValueError:
                reason = "not checked: the plan has no kernel batch rule"
        if reason:
            weak.append(Check(wname, None, exp_txt, "-", skipped=reason, claim=claim))
            if has_exact:
                limits.append(Check(lname, None, lim_txt, "-", skipped=reason, claim=claim))
            continue
        hs, x0, exact = prepared()
        bs = None if plan.NAME == "full" else batch_size

        runs, diverged = _ladder_runs(module, plan, target, hs, x0, bs, n_chains, gamma=gamma, seed=seed)
        if not diverged:
            check = _weak_check(wname, exp_txt, hs, runs, names, expected if claim else None, claim, seed)
            if check.status == INCONCLUSIVE and not capped():
                # noise-limited: a second look at SECOND_LOOK times the chains (the first look's chains
                # among them: a chain depends only on the seed and its index) halves every standard error
                runs, diverged = _ladder_runs(module, plan, target, hs, x0, bs, SECOND_LOOK * n_chains,
                                              gamma=gamma, seed=seed)
                if not diverged:
                    check = _weak_check(wname, exp_txt, hs, runs, names, expected if claim else None, claim, seed)
                    check.measured += f" (second look: {SECOND_LOOK * n_chains} chains a level)"
        if diverged:
            weak.append(Check(wname, None, exp_txt, "-", list(hs), skipped=diverged, claim=claim))
            if has_exact:
                limits.append(Check(lname, None, lim_txt, "-", skipped=diverged, claim=claim))
            continue
        weak.append(check)
        if has_exact:
            limits.append(_limit_check(lname, lim_txt, runs[-1], names, exact, expected, claim, z_limit))
    return weak + limits


def _ladder_runs(module, plan, target, hs, x0, batch_size, n_chains, *, gamma, seed) -> tuple[list, str]:
    """The coupled runs of the ladder ``hs`` at ``n_chains`` pairs a level, each simulating
    :data:`LEVEL_TIME`, and the reason the ladder stopped ("" when every chain stayed finite)."""
    epoch = n_batches(target.n_data, batch_size or target.n_data)
    n_tests = len(test_function_names(target.dim))
    runs = []
    for level, h in enumerate(hs):
        steps = epoch * max(1, math.ceil(LEVEL_TIME * max(1.0, 1.0 / gamma) / (h * epoch)))
        spec = RunSpec.from_options(target, module, plan, h=float(h), gamma=gamma, n_chains=n_chains, n_steps=steps,
                                    burn_in=int(BURN_FRACTION * steps), seed=level_seed(seed, level),
                                    batch_size=batch_size, test_functions=leading_coordinates,
                                    n_test_functions=n_tests, x0=x0)
        res = coupled_run(spec, n_chunks=N_CHUNKS)
        if not np.all(res.ok):
            return runs, f"not checked: chains diverged at h={h:.3g}"
        runs.append(res)
    return runs, ""


def statistic_scales(run) -> np.ndarray:
    """The scale of each test function of :func:`leading_coordinates` under the chains' law:
    ``sd(x_a)`` for ``x_a`` and ``2 sd(x_a) (|E x_a| + sd(x_a))`` for ``x_a^2`` (from the coarse
    chains' means of ``x_a`` and ``x_a^2``)."""
    means = chain_replicates(run, run.coarse).mean(axis=0)
    k = means.size // 2
    sd = np.sqrt(np.maximum(means[k:] - means[:k] ** 2, 1e-300))
    return np.concatenate([sd, 2.0 * sd * (np.abs(means[:k]) + sd)])


def _weak_check(name, exp_txt, hs, runs, names, expected, claim, seed) -> Check:
    reps = [chain_replicates(r, r.fine - r.coarse) for r in runs]
    deltas = np.array([r.mean(axis=0) for r in reps])
    ses = np.array([r.std(axis=0, ddof=1) / math.sqrt(r.shape[0]) for r in reps])
    zs = np.abs(deltas) / np.maximum(ses, 1e-300)
    rng = np.random.default_rng([seed, 35])
    resolved = [j for j in range(len(names))
                if np.all(zs[:, j] >= RESOLVED_Z) and len(set(np.sign(deltas[:, j]))) == 1]
    h_txt = f"h in [{hs[-1]:.3g}, {hs[0]:.3g}]"
    errors = list(np.abs(deltas[:, resolved[0]])) if resolved else []
    if not resolved:
        worst = ", ".join(f"{n}: min |Delta|/se {zs[:, j].min():.1f}" for j, n in enumerate(names))
        bound = float(np.max((np.abs(deltas) + RESOLVED_Z * ses) / statistic_scales(runs[-1])))
        measured = (f"order not measured: no test function resolved on {h_txt} ({worst}); bias bounded: every "
                    f"|Delta| + {RESOLVED_Z:g} s.e. below {bound:.1e} of its statistic's scale")
        if expected is not None and bound <= BELOW_RESOLUTION:
            # like an exact law on the Gaussian targets: no slope to fit, a bias bounded far below what
            # a lower order than declared leaves at these steps (the curvature shortcut: resolved at 30+ s.e.)
            return Check(name, True, f">= {expected - ORDER_SLACK:g}", measured, list(hs), errors, claim=True)
        return Check(name, None, exp_txt, measured, list(hs), errors,
                     skipped=f"not enough evidence: the level differences are neither resolved above their noise "
                             f"(every |Delta| >= {RESOLVED_Z:g} s.e. with one sign) nor bounded below "
                             f"{BELOW_RESOLUTION:g} of the statistics' scale; use more chains or a larger h0",
                     claim=claim)
    level = ORDER_ALPHA / (LOOKS * len(resolved))  # family-wise over the functions and both looks
    parts, verdicts, lows = [], [], []
    for j in resolved:
        slope = _fit(hs, deltas[:, j])
        lo, hi = _slope_ci(hs, reps, j, level, rng)
        parts.append(f"{names[j]}: slope {slope:.2f} ({100 * (1 - ORDER_ALPHA):g}% CI [{lo:.2f}, {hi:.2f}])")
        lows.append(lo)
        if expected is not None:
            verdicts.append(hi >= expected - ORDER_SLACK)
    unresolved = [n for j, n in enumerate(names) if j not in resolved]
    measured = "; ".join(parts) + f" on {h_txt}" + (f" ({', '.join(unresolved)} not resolved)" if unresolved else "")
    if expected is None:
        return Check(name, None, exp_txt, measured, list(hs), errors, claim=False)
    if not all(verdicts):
        return Check(name, False, f">= {expected - ORDER_SLACK:g}", measured, list(hs), errors, claim=True)
    if max(lows) <= expected - 1:
        return Check(name, None, f">= {expected - ORDER_SLACK:g}", measured, list(hs), errors,
                     skipped=f"not enough evidence: no slope interval lies above {expected - 1:g}, so order "
                             f"{expected:g} is not told from {expected - 1:g}",
                     claim=True)
    return Check(name, True, f">= {expected - ORDER_SLACK:g}", measured, list(hs), errors, claim=True)


def _limit_check(name, lim_txt, run, names, exact, expected, claim, z) -> Check:
    if expected is None:
        return Check(name, None, lim_txt, "-", skipped="no declared order to extrapolate with", claim=False)
    factor = 2.0**expected / (2.0**expected - 1.0)
    coarse = chain_replicates(run, run.coarse)
    reps = coarse + factor * chain_replicates(run, run.fine - run.coarse)
    est = reps.mean(axis=0)
    se = reps.std(axis=0, ddof=1) / math.sqrt(reps.shape[0])
    dev = np.abs(est - exact) / np.maximum(se, 1e-300)
    worst = int(np.argmax(dev))
    measured = "; ".join(f"{n}: {e:.4f} +- {s:.1e} vs {x:.4f}"
                         for n, e, s, x in zip(names, est, se, exact, strict=True))
    measured += f" (worst {dev[worst]:.1f} s.e., {names[worst]}) at h={run.h:.3g}"
    effect = detectable(se, statistic_scales(run), z)
    return powered(name, lim_txt, float(dev[worst]), z, effect, measured, claim=claim)
