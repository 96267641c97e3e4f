"""What a measurement's ladders say: the slope of the bias with its bootstrap interval, the
bias extrapolated to ``h -> 0``, and the named checks (stationarity, limit, order, exactness,
agreement with the exact oracle) with their family-wise levels."""

from __future__ import annotations

import math

import numpy as np

from integrators.plans import resolve_plan
from integrators.seeds import derive
from theory_checks._checks import Check
from theory_checks._declared import plan_asserts
from theory_checks._verify import MC_ALPHA
from theory_checks.adapters._runs import PlanMeasurement, debiased_error

FIT_MARGIN = 3.0      # a step size enters the slope fit when its error is this many noise levels up
FIT_POINTS = 3        # the slope is fitted on (at most) this many of the finest such step sizes
SLOPE_TOL = 0.3       # |slope - p| allowed beyond the interval: the ladder is only near the asymptotic regime
SLOPE_CI_MAX = 1.5    # a wider 95% interval of the slope decides nothing
QUADRATIC_FROM = 4    # with this many stable step sizes the limit fit includes the h^(p+1) term
LIMIT_ALPHA = 1e-4    # family-wise level of the limit and exactness checks (per check)
DETECTABLE_LIMIT = 0.04  # the limit error the checks must detect: noise 2% off, 1.02^2 - 1 = 0.0404 in a variance
LIMIT_POWER = 0.95    # the probability of detecting it that the chain count is chosen for
LIMIT_LOOKS = 2       # the limit is tested after the pilot and after the chains it asks for (Bonferroni)
ORACLE_ALPHA = MC_ALPHA  # family-wise level of the comparison with the exact oracle (as verify's)


def fit_order(m: PlanMeasurement, exact: np.ndarray, weights: np.ndarray, n_boot: int, seed: int) -> None:
    """The slope of ``log error`` on ``log h`` over the step sizes whose error stands
    :data:`FIT_MARGIN` noise levels up, with a percentile bootstrap interval (chains resampled
    independently at each ``h``).  Sets ``m.slope``, ``m.ci``, ``m.fit`` (nan, no points: no slope)."""
    above = [j for j in range(len(m.hs)) if np.isfinite(m.errors[j]) and m.errors[j] >= FIT_MARGIN * m.noise[j]]
    fit = sorted(above, key=lambda j: m.hs[j])[:FIT_POINTS]
    m.fit = sorted(fit)
    if len(fit) < 2:
        return
    fit = m.fit
    logh = np.log(m.hs[fit])
    m.slope = float(np.polyfit(logh, np.log(m.errors[fit]), 1)[0])
    rng = np.random.default_rng(derive(seed, "adapters", "bootstrap", m.plan))
    slopes = []
    for _ in range(n_boot):
        errs = []
        for j in fit:
            y = m.samples[j]
            errs.append(debiased_error(y[rng.integers(0, y.shape[0], y.shape[0])], exact, weights)[0])
        errs = np.array(errs)
        slopes.append(float(np.polyfit(logh, np.log(errs), 1)[0]) if np.all(errs > 0) else np.nan)
    slopes = np.array(slopes)
    if np.mean(np.isfinite(slopes)) < 0.9:  # resamples whose error fell to the noise: no interval
        m.ci = (-math.inf, math.inf)
        return
    m.ci = (float(np.nanpercentile(slopes, 2.5)), float(np.nanpercentile(slopes, 97.5)))


def fit_limit(m: PlanMeasurement, p: float) -> None:
    """Each component's weighted least-squares fit ``b(h) = b0 + a h^p`` over the stable step
    sizes, ``+ c h^(p+1)`` when there are :data:`QUADRATIC_FROM` of them (the next term of the
    expansion then leaves no ``O(h^(p+1))`` remnant in ``b0``): ``m.intercept`` (``b0``) and
    ``m.intercept_se``."""
    ok = m.stable
    if ok.sum() < 2:
        return
    hs, bias, se = m.hs[ok], m.bias[ok], m.se[ok]
    powers = [0.0, p] + ([p + 1.0] if ok.sum() >= QUADRATIC_FROM else [])
    design = np.stack([hs**q for q in powers], axis=1)
    b0, sd = [], []
    for k in range(bias.shape[1]):
        w = 1.0 / np.maximum(se[:, k], 1e-300) ** 2
        cov = np.linalg.inv(design.T @ (w[:, None] * design))
        b0.append(float((cov @ design.T @ (w * bias[:, k]))[0]))
        sd.append(math.sqrt(cov[0, 0]))
    m.intercept, m.intercept_se = np.array(b0), np.array(sd)


def family_z(alpha: float, count: int) -> float:
    """Two-sided Bonferroni critical value for ``count`` comparisons at family-wise level ``alpha``."""
    from scipy.stats import norm
    return float(norm.isf(alpha / (2 * max(count, 1))))


def slope_verdict(m: PlanMeasurement, expected: float | None) -> tuple[bool | None, str, str]:
    """``(passed, measured, skipped)`` of a measured slope against ``expected``: fails when the
    whole 95% interval lies more than :data:`SLOPE_TOL` from it; no verdict without a claim, without
    two step sizes above noise, or with an interval wider than :data:`SLOPE_CI_MAX`."""
    if not np.isfinite(m.slope):
        above = len(m.fit)
        return None, f"bias above noise at {above} of {len(m.hs)} step sizes", \
            "no slope: the bias stands above Monte Carlo noise at fewer than 2 step sizes (a larger level or hs)"
    lo, hi = m.ci
    measured = f"slope {m.slope:.2f} (95% CI [{lo:.2f}, {hi:.2f}], {len(m.fit)} h)"
    if expected is None:
        return None, measured, ""
    if hi < expected - SLOPE_TOL or lo > expected + SLOPE_TOL:
        return False, measured, ""
    if hi - lo > SLOPE_CI_MAX:
        return None, measured, f"inconclusive: the interval is wider than {SLOPE_CI_MAX:g} (a larger level)"
    return True, measured, ""


def expected_order(adapter, plan) -> tuple[float | None, bool]:
    """``(p, asserted)``: the smaller of the rule's order and the plan's cap; asserted when the
    plan declares its orders claims (:func:`theory_checks._declared.plan_asserts`; ``rr``'s are
    observations)."""
    plan = resolve_plan(plan)
    if adapter.RULE_ORDER is None or plan.WEAK_ORDER is None:
        return None, False
    return float(min(adapter.RULE_ORDER, plan.WEAK_ORDER)), plan_asserts(plan)


def stationary_check(m: PlanMeasurement, names: list[str]) -> Check:
    """The halves of every chain's window agree within their family-wise interval at every ``h``."""
    name = f"stationary[{m.plan}]"
    expected = "window halves agree (chains at their stationary law)"
    ok = np.isfinite(m.drift_z).all(axis=1)
    if not ok.any():
        return Check(name, None, expected, "-", skipped="no stable step size", claim=True)
    zs = np.abs(m.drift_z[ok])
    crit = family_z(LIMIT_ALPHA, zs.size)
    j, k = np.unravel_index(int(np.argmax(zs)), zs.shape)
    h = m.hs[ok][j]
    measured = f"max |second - first half| / s.e. = {zs[j, k]:.2f} ({names[k]} at h={h:.3g}; critical {crit:.2f})"
    if zs.max() >= crit:
        measured += "; still moving: the burn-in is too short for how slowly this sampler mixes"
    return Check(name, bool(zs.max() < crit), expected, measured, claim=True)


def power_z() -> float:
    """The one-sided normal quantile of :data:`LIMIT_POWER`."""
    from scipy.stats import norm
    return float(norm.ppf(LIMIT_POWER))


def detectable_se(count: int) -> float:
    """The largest standard error of ``b0`` at which a limit error of :data:`DETECTABLE_LIMIT` is
    detected with probability :data:`LIMIT_POWER` by a two-sided family-wise test over ``count``
    components: ``(z_alpha + z_power) se <= DETECTABLE_LIMIT``."""
    return DETECTABLE_LIMIT / (limit_z(count) + power_z())


def chains_to_detect(intercept_se: np.ndarray, n_chains: int) -> int:
    """Chains (per step size) that bring every component's ``se(b0)``, measured with ``n_chains``
    chains, down to :func:`detectable_se`: ``se`` falls as ``1 / sqrt(n)``, so
    ``n = n_chains (max se / detectable se)^2``."""
    ratio = float(np.max(intercept_se)) / detectable_se(len(intercept_se))
    return int(math.ceil(n_chains * ratio * ratio))


def limit_z(count: int) -> float:
    """The limit check's critical value: family-wise level :data:`LIMIT_ALPHA` over ``count``
    components and :data:`LIMIT_LOOKS` looks."""
    return family_z(LIMIT_ALPHA, LIMIT_LOOKS * count)


def limit_significant(m: PlanMeasurement) -> bool:
    """Whether some component's ``|b0|`` exceeds ``limit_z`` standard errors."""
    return bool(np.any(np.abs(m.intercept) > limit_z(len(m.intercept)) * m.intercept_se))


def limit_check(m: PlanMeasurement, p: float, names: list[str]) -> Check:
    """``b0`` (:func:`fit_limit`) against 0: fails when some component's ``|b0|`` exceeds its
    family-wise interval ``z se`` (:func:`limit_z`); passes when none does and every
    ``se`` is small enough to detect :data:`DETECTABLE_LIMIT` (:func:`detectable_se`); else
    inconclusive ("cannot detect")."""
    name = f"limit[{m.plan}]"
    expected = f"|bias| -> 0 as h -> 0 (b0 = 0, whitened; detects |b0| >= {DETECTABLE_LIMIT:g})"
    if m.intercept is None:
        return Check(name, None, expected, "-", skipped="fewer than 2 stable step sizes", claim=True)
    z = limit_z(len(m.intercept))
    zs = np.abs(m.intercept) / np.maximum(m.intercept_se, 1e-300)
    k = int(np.argmax(zs))
    worst_se = float(np.max(m.intercept_se))
    model = f"b0 + a h^{p:g}" + (f" + c h^{p + 1:g}" if m.stable.sum() >= QUADRATIC_FROM else "")
    measured = (f"b0 = {m.intercept[k]:+.4f} +- {z * m.intercept_se[k]:.4f} ({names[k]}, z {zs[k]:.1f}, "
                f"critical {z:.2f}; fit {model}); largest se {worst_se:.4f}")
    ladder = (list(m.hs), list(m.errors))
    if zs[k] > z:
        return Check(name, False, expected, measured, *ladder, claim=True)
    need = detectable_se(len(m.intercept))
    if worst_se > need:
        return Check(name, None, expected, measured, *ladder, claim=True,
                     skipped=f"cannot detect a limit error of {DETECTABLE_LIMIT:g} with se {worst_se:.4f} "
                             f"(needs se <= {need:.4f}: about {chains_to_detect(m.intercept_se, min(m.n_chains))} "
                             f"chains; a larger level)")
    return Check(name, True, expected, measured, *ladder, claim=True)


def exact_check(m: PlanMeasurement, names: list[str]) -> Check:
    """Every component's bias within its family-wise interval at every step size."""
    name = f"weak_order[{m.plan}]"
    ok = m.stable
    if not ok.any():
        return Check(name, False, "exact law (declared)", "unstable at every h", list(m.hs), list(m.errors),
                     claim=True)
    zs = np.abs(m.bias[ok] / m.se[ok])
    crit = family_z(LIMIT_ALPHA, zs.size)
    j, k = np.unravel_index(int(np.argmax(zs)), zs.shape)
    measured = (f"max |bias| / s.e. = {zs[j, k]:.2f} ({names[k]} at h={m.hs[ok][j]:.3g}; critical {crit:.2f}); "
                f"|bias| <= {np.nanmax(np.abs(m.bias) + crit * m.se):.3f}")
    return Check(name, bool(zs.max() < crit and ok.all()), "exact law (declared)", measured, list(m.hs),
                 list(m.errors), claim=True)


def oracle_check(adapter, m: PlanMeasurement, target, gamma, batch_size, whitening, names) -> Check:
    """The Monte Carlo bias against the exact law of the adapter's ``EQUIVALENT_SCHEME x plan``."""
    from theory_checks.oracle import UnstableStepError, stationary_moments

    scheme = adapter.EQUIVALENT_SCHEME
    name = f"oracle[{m.plan}]"
    expected = f"bias = exact law of {scheme} x {m.plan}"
    zs, where = [], []
    for j, h in enumerate(m.hs):
        if m.samples[j] is None:
            continue
        try:
            law = stationary_moments(target, scheme, m.plan, float(h), gamma,
                                     None if m.plan == "full" else batch_size)
        except UnstableStepError:
            continue
        exact_bias = whitening.of_moments(law.mean, law.second_moment) - whitening.exact()
        zs.append(np.abs(m.bias[j] - exact_bias) / m.se[j])
        where.append(h)
    if not zs:
        return Check(name, None, expected, "-", skipped="no stable step size", claim=True)
    zs = np.array(zs)
    crit = family_z(ORACLE_ALPHA, zs.size)
    j, k = np.unravel_index(int(np.argmax(zs)), zs.shape)
    return Check(name, bool(zs.max() < crit), expected,
                 f"max |MC - oracle| / s.e. = {zs[j, k]:.2f} ({names[k]} at h={where[j]:.3g}; critical {crit:.2f})",
                 claim=True)
