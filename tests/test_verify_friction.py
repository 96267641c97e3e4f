"""``verify`` at any friction: its step ladder comes from the friction and the target's frequencies,
so the weak-order fit sits in the asymptotic regime (``h * max(gamma, omega, omega^2 / gamma)``
small) on errors well above the exact oracle's rounding level, or the check says that it cannot
(and the claim is inconclusive).  Every built-in scheme passes at gamma from 0.1 to 100 (at 1000,
nothing fails and what cannot be checked is inconclusive), and a scheme that
declares the wrong order is still caught there."""

import numpy as np
import pytest

from integrators import SCHEMES, Scheme
from theory_checks._verify import verify

GAMMAS = (0.1, 1.0, 10.0, 100.0, 1000.0)
EXACT = dict(strong=False, monte_carlo=False)
# Euler-Maruyama's step declaring second order: a first-order bias at every friction
EM_AS_SECOND_ORDER = Scheme("em_as_second_order", SCHEMES["em"].step, SCHEMES["em"].coefficients,
                            WEAK_ORDER=2.0, STRONG_ORDER=1.0)


def weak_checks(report):
    """The exact weak-order checks (the double well's are Monte Carlo: skipped at this level)."""
    return [c for c in report.checks if c.name.startswith("weak_order[") and not c.name.endswith("@well")]


@pytest.mark.slow
@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_every_builtin_scheme_passes_verify_at_every_friction(scheme, gamma):
    report = verify(scheme, gamma=gamma, **EXACT)
    assert not report.failed, report.table()
    assert report.check("stationarity").passed and report.check("stationarity@3d").passed, report.table()
    for check in weak_checks(report):
        if check.skipped:  # a claim that cannot be checked is inconclusive and says why
            assert check.status == ("inconclusive" if check.claim else "no claim"), report.table()
            assert "asymptotic regime" in check.skipped and "rounding" in check.skipped, report.table()
        if gamma <= 100:  # up to gamma = 100 every declared order is checked, none left inconclusive
            assert not check.skipped, report.table()
    assert report.ok == (not report.inconclusive)


@pytest.mark.slow
@pytest.mark.parametrize("gamma", GAMMAS)
def test_a_wrong_declared_order_is_caught_at_every_friction(gamma):
    report = verify(EM_AS_SECOND_ORDER, plans=["full", "sms"], gamma=gamma, **EXACT)
    assert report.check("weak_order[full]").passed is False, report.table()
    assert report.check("weak_order[sms]").passed is False, report.table()
    assert report.check("weak_order[full]").measured.startswith("slope 1.0"), report.table()


@pytest.mark.slow
def test_the_reported_failures_at_large_friction_no_longer_fail():
    """The issue's two cases: BAOAB x sms at gamma = 100 (slope 1.84 on the fixed ladder) passes;
    UBU x full at gamma = 1000 (slope 1.64) does not fail, and since its asymptotic regime lies
    below the oracle's rounding level the claim is inconclusive, not passed by omission."""
    report = verify("baoab", plans=["full", "sms"], gamma=100, **EXACT)
    assert report.ok and report.check("weak_order[sms]").passed, report.table()
    report = verify("ubu", plans=["full"], gamma=1000, **EXACT)
    assert not report.failed and not report.ok, report.table()
    assert "weak_order[full]" in report.inconclusive, report.table()
    assert "asymptotic regime" in report.check("weak_order[full]").skipped


def test_a_ladder_given_into_the_rounding_floor_is_fitted_above_it():
    """Step sizes down to 2^-24: the oracle's errors there are rounding, and a slope through them
    is noise; the fit takes the finest step sizes whose errors stand well above rounding."""
    report = verify("ubu", plans=["sms"], hs=2.0 ** -np.arange(6, 25), **EXACT)
    assert report.check("weak_order[sms]").passed, report.table()


def test_a_ladder_given_outside_the_asymptotic_regime_says_so():
    """The old fixed ladder 2^-2 .. 2^-10 at gamma = 1000 has gamma h >= 1: the claim is
    inconclusive, with a reason, and the report is not ok (it said ok when nothing was checked)."""
    report = verify("ubu", plans=["full"], gamma=1000, hs=2.0 ** -np.arange(2, 11), **EXACT)
    check = report.check("weak_order[full]")
    assert check.passed is None and "asymptotic regime" in check.skipped, report.table()
    assert check.status == "inconclusive" and check.verdict.startswith("INCONCLUSIVE"), report.table()
    assert not report.ok and not report.failed and "weak_order[full]" in report.inconclusive
    assert "INCONCLUSIVE: weak_order[full]" in report.table()


def test_an_empty_plan_list_is_refused():
    with pytest.raises(ValueError, match="plans"):
        verify("ubu", plans=[], **EXACT)
    with pytest.raises(ValueError, match="plans"):
        verify("ubu", plans=(), **EXACT)


@pytest.mark.parametrize("scheme", ["baoab", "ubu"])
def test_an_exact_law_stays_exact_where_small_friction_amplifies_rounding(scheme):
    """At gamma = 0.01 the stationary law amplifies rounding by 1 / (1 - rho) far beyond a fixed
    relative level: BAOAB's exact x-marginal must still read as exact (it read "not exact, declared
    exact" when exactness ignored the ladder's rounding levels), and UBU's order still passes."""
    report = verify(scheme, plans=["full", "sms"], gamma=0.01, **EXACT)
    assert report.ok, report.table()
    if scheme == "baoab":
        assert report.check("weak_order[full]").measured == "exact (error at rounding level)", report.table()
