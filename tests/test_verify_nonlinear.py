"""Weak orders on a target without an exact law (theory_checks._nonlinear) and the double well's
quadrature: correct schemes pass, affine-exact bugs (invisible on Gaussian targets) fail by name."""

import mpmath
import numpy as np
import pytest
from planted_bugs import UBU_CURVATURE_SHORTCUT, UBU_STENCIL_FORCE

from integrators.plans import resolve_plan
from integrators.schemes import resolve_scheme
from integrators.targets import DoubleWellTarget, LogisticTarget
from theory_checks import verify
from theory_checks._checks import FAILED, PASSED
from theory_checks._nonlinear import nonlinear_checks

FULL = [resolve_plan("full")]


def _checks(scheme, seed=0, plans=FULL):
    return {c.name: c for c in nonlinear_checks(scheme, plans, DoubleWellTarget(), 1, n_chains=64, seed=seed)}


def test_double_well_expectations_match_50_digit_quadrature():
    t = DoubleWellTarget(depth=0.7, tilt=0.4, prior_precision=0.3)
    mpmath.mp.dps = 50

    def f(x):
        return 0.15 * x**2 + 0.7 * (x**2 - 1) ** 2 + 0.4 * mpmath.log(1 + mpmath.exp(-x))

    inf = mpmath.inf
    z = mpmath.quad(lambda x: mpmath.exp(-f(x)), [-inf, -1, 0, 1, inf])
    want = [float(mpmath.quad(lambda x, j=j: x**j * mpmath.exp(-f(x)), [-inf, -1, 0, 1, inf]) / z)
            for j in (1, 2, 3, 4)]
    np.testing.assert_allclose(t.moments(4), want, rtol=1e-11, atol=1e-13)
    assert abs(want[0]) > 0.05  # the tilt breaks the symmetry: odd moments are not zero


def test_double_well_gradients_match_the_potential():
    t = DoubleWellTarget(depth=0.7, tilt=0.4, prior_precision=0.3)
    for x in (-2.0, -0.3, 0.0, 1.1, 2.5):
        num = (t.value(np.array([x + 1e-6])) - t.value(np.array([x - 1e-6]))) / 2e-6
        assert abs(t.full_grad(np.array([x]))[0] - num) < 1e-6


@pytest.mark.parametrize("kwargs, word", [({"depth": 0.0}, "depth"), ({"depth": float("nan")}, "depth"),
                                          ({"tilt": -1.0}, "tilt"), ({"prior_precision": "a"}, "prior_precision")])
def test_double_well_bad_parameters_are_refused_by_name(kwargs, word):
    with pytest.raises(ValueError, match=word):
        DoubleWellTarget(**kwargs)


def test_exact_expectations_refuses_non_callables():
    with pytest.raises(ValueError, match="test_functions"):
        DoubleWellTarget().exact_expectations([1.0])


@pytest.mark.slow  # compiles a third coupled kernel; the slow seeds below cover ubu too
def test_ubu_passes_weak_order_and_limit_on_the_double_well():
    checks = _checks(resolve_scheme("ubu"))
    assert checks["weak_order[full]"].status == PASSED, checks["weak_order[full]"].measured
    assert checks["limit[full]"].status == PASSED, checks["limit[full]"].measured


@pytest.mark.slow
def test_curvature_shortcut_fails_weak_order_by_name():
    checks = _checks(UBU_CURVATURE_SHORTCUT)
    assert checks["weak_order[full]"].status == FAILED, checks["weak_order[full]"].measured


@pytest.mark.slow
def test_stencil_force_fails_limit_by_name():
    checks = _checks(UBU_STENCIL_FORCE)
    assert checks["limit[full]"].status == FAILED, checks["limit[full]"].measured


def test_capped_run_is_inconclusive():
    checks = nonlinear_checks(resolve_scheme("ubu"), FULL, DoubleWellTarget(), 1, capped=lambda: "cap reached")
    assert [c.status for c in checks] == ["inconclusive", "inconclusive"]
    assert all(c.skipped == "cap reached" for c in checks)


@pytest.mark.slow
@pytest.mark.parametrize("bug, caught", [(UBU_CURVATURE_SHORTCUT, "weak_order[full]@well"),
                                         (UBU_STENCIL_FORCE, "limit[full]@well")])
def test_affine_exact_bugs_pass_every_gaussian_check_and_fail_by_name_at_the_defaults(bug, caught):
    """verify's defaults: the Gaussian targets (exact and Monte Carlo checks) see UBU, since the
    bug is exact for affine forces; the double well (@well) names it.  The box check fails too: the
    stencil evaluates the force a unit away from the position, outside an active box."""
    report = verify(bug, plans=["full"], strong=False)
    gaussian = [c for c in report.checks if c.claim and not c.name.endswith("@well") and c.name != "box"]
    assert gaussian and all(c.status == PASSED for c in gaussian), report.table()
    assert report.failed == ["box", caught], report.table()
    assert "at a force evaluation" in report.check("box").measured, report.table()


def _logistic():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(8, 2))
    labels = (features @ np.array([1.0, -0.5]) + 0.5 * rng.normal(size=8) > 0).astype(float)
    return LogisticTarget(features, labels, prior_precision=1.0)


@pytest.mark.slow
def test_verify_on_logistic_regression_measures_weak_orders_with_no_exact_law():
    report = verify("ubu", target=_logistic(), plans=["full", "rr"], n_chains=64)
    assert [c.name for c in report.checks] == ["weak_order[full]", "weak_order[rr]"]
    assert report.check("weak_order[full]").passed, report.table()
    assert report.check("weak_order[rr]").status == "no claim"
    with pytest.raises(ValueError, match="monte_carlo=False leaves nothing"):
        verify("ubu", target=_logistic(), monte_carlo=False)
    with pytest.raises(ValueError, match="hs is the exact weak-order ladder"):
        verify("ubu", target=_logistic(), hs=[0.1, 0.05, 0.025, 0.0125])
    with pytest.raises(ValueError, match="target must be None or a Target"):
        verify("ubu", target=np.eye(2))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ubu", "baoab", "em"])
@pytest.mark.parametrize("seed", [1])
def test_builtin_schemes_pass_on_the_double_well(name, seed):
    """Every claim passes (BAOAB's bias on the well is below resolution: the weak order passes with
    its bound, as an exact law does on the Gaussian targets)."""
    checks = _checks(resolve_scheme(name), seed=seed, plans=[resolve_plan("full"), resolve_plan("sms")])
    for c in checks.values():
        assert c.status == PASSED, (c.name, c.measured, c.skipped)
