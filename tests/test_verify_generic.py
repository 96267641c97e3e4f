"""``verify`` at generic settings: no default check runs where a coefficient, an index, a loop or
the box degenerates.  Each planted bug below is bit for bit the right step at friction 1, in three
dimensions or fewer, with an inactive box, or verified with a scheme of strong order 1; at the
defaults each fails by name, the friction, dimension and sweep-order ones at the exact level."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from planted_bugs import (
    BAOAB_NOISE_SQRT_2,
    SMS_NOT_REVERSED,
    SMS_OFF_BY_ONE,
    UBU_FORGETS_FIRST_REFLECT,
    UBU_FORGETS_OVER_GAMMA,
    UBU_INDEX_MOD_3,
    UBU_NOISE_LOOP_MIN_D_3,
    UBU_SCRATCH,
)
from user_schemes import ABOBA, AOBOA

from integrators import PLANS, SCHEMES
from integrators.schemes import resolve_scheme
from integrators.targets import DoubleWellTarget
from theory_checks._box import box_check
from theory_checks._checks import Check, VerifyReport
from theory_checks._sweeps import sweep_check
from theory_checks._verify import (
    DEFAULT_FRICTIONS,
    default_target,
    default_targets,
    friction_expressions,
    generic_friction,
    verify,
)

EXACT = dict(strong=False, monte_carlo=False)


def test_the_default_frictions_are_generic_and_1_and_2_are_not():
    for gamma in DEFAULT_FRICTIONS.values():
        assert generic_friction(gamma) == [], gamma
    assert ("sqrt(2)", "sqrt(2 gamma)") in generic_friction(1.0)
    assert ("gamma", "sqrt(2 gamma)") in generic_friction(2.0)  # the first suggestion
    assert generic_friction(0.7) != []  # and its second: 1/gamma = sqrt(2) within 1 %


@given(st.floats(0.05, 20.0))
def test_a_friction_is_generic_exactly_when_no_two_expressions_are_close(gamma):
    values = friction_expressions(gamma)
    close = {(a, b) for a in values for b in values
             if list(values).index(a) < list(values).index(b) and abs(np.log(values[a] / values[b])) < 0.05}
    assert set(generic_friction(gamma)) == close


def test_the_default_targets_reach_past_three_dimensions_with_uneven_batches():
    frictions = {DEFAULT_FRICTIONS[key] for key, _, _ in default_targets()}
    assert len(frictions) >= 2 and 1.0 not in frictions
    big = [(t, bs) for _, t, bs in default_targets() if t.dim >= 5]
    assert big, "no target of dimension 5 or more"
    t, bs = big[0]
    cov = t.covariance
    assert np.abs(cov - np.diag(np.diag(cov))).max() > 1e-3  # not diagonal
    scales = [np.linalg.eigvalsh(p).max() for p in t.arrays[1]]
    assert max(scales) / min(scales) >= 2 and t.n_data % bs != 0


@pytest.mark.parametrize("scheme", [*sorted(SCHEMES), ABOBA, AOBOA], ids=lambda s: getattr(s, "NAME", s))
def test_correct_steps_keep_every_position_in_an_active_box_and_the_bounce_fires(scheme):
    check = box_check(resolve_scheme(scheme), default_target(), 0.2, 1.7, "numba")
    assert check.passed is True, check.measured
    assert "fired in 0 " not in check.measured


def test_a_step_that_forgets_a_reflect_fails_the_box_check():
    check = box_check(UBU_FORGETS_FIRST_REFLECT, default_target(), 0.2, 1.7, "numba")
    assert check.passed is False and "at a force evaluation" in check.measured, check.measured


def test_a_symmetric_sweep_is_checked_from_its_declaration():
    assert sweep_check(PLANS["sms"], 5, 2).passed is True
    bad = sweep_check(SMS_OFF_BY_ONE, 5, 2)
    assert bad.passed is False and "not a palindrome" in bad.measured, bad.measured
    assert "1 2 3 2 1 3" in bad.measured or "1 2 1 2" in bad.measured, bad.measured
    for name in ("full", "iid", "rr"):  # no symmetric sweep declared: no row
        assert sweep_check(PLANS[name], 5, 2) is None
    assert sweep_check(SMS_NOT_REVERSED, 5, 2) is None  # a batch rule of its own declares no sweep


def test_a_report_that_checked_no_claim_is_not_ok():
    report = VerifyReport("s", "t", [Check("a", None, "-", "-", claim=False)], 0.0)
    assert not report.ok and report.verdict_line() == "NO CLAIM CHECKED"
    assert not VerifyReport("s", "t", [], 0.0).ok


@pytest.mark.slow
@pytest.mark.parametrize("bug", [UBU_FORGETS_OVER_GAMMA, BAOAB_NOISE_SQRT_2], ids=lambda s: getattr(s, "NAME", s))
def test_a_friction_identity_fails_by_name_at_the_exact_level(bug):
    report = verify(bug, **EXACT)
    for key in ("", "@3d", "@7d"):
        assert {f"stationarity{key}", f"weak_order[full]{key}"} <= set(report.failed), report.table()
    assert verify(bug, target=default_target(), gamma=1.0, **EXACT).ok  # bit for bit right at friction 1


@pytest.mark.slow
@pytest.mark.parametrize("bug", [UBU_NOISE_LOOP_MIN_D_3, UBU_INDEX_MOD_3], ids=lambda s: getattr(s, "NAME", s))
def test_a_fourth_coordinate_bug_fails_by_name_at_the_exact_level_on_the_7d_target_only(bug):
    report = verify(bug, **EXACT)
    assert {"stationarity@7d", "weak_order[full]@7d"} <= set(report.failed), report.table()
    assert all(name.endswith("@7d") for name in report.failed), report.table()


@pytest.mark.slow
def test_a_missing_reflect_fails_by_name_at_the_exact_level():
    report = verify(UBU_FORGETS_FIRST_REFLECT, **EXACT)
    assert report.failed == ["box"], report.table()


@pytest.mark.slow
def test_a_sweep_off_by_one_verified_with_baoab_fails_by_its_declaration_and_with_ubu():
    """BAOAB's strong order 1 cannot see the sweep (its weak slopes stay 2); the declaration and
    UBU's strong order x the plan do."""
    report = verify("baoab", plans=["full", SMS_OFF_BY_ONE], monte_carlo=False, n_chains=64)
    assert report.check("weak_order[sms_off_by_one]").passed, report.table()
    assert report.check("strong_order[sms_off_by_one]").passed, report.table()
    for key in ("", "@3d", "@7d"):
        assert report.check(f"sweep[sms_off_by_one]{key}").passed is False, report.table()
    assert report.check("plan_strong_order[sms_off_by_one]").passed is False, report.table()
    ok = verify("baoab", plans=["sms"], monte_carlo=False, n_chains=64)
    assert ok.check("plan_strong_order[sms]").passed and ok.check("sweep[sms]").passed, ok.table()


@pytest.mark.slow
def test_no_claim_checked_is_not_ok():
    report = verify("ubu", target=DoubleWellTarget(), plans=["rr"], n_chains=16)
    assert not report.ok and not report.failed, report.table()


@pytest.mark.slow
def test_a_step_that_allocates_fails_in_one_line_naming_the_scheme_and_keeps_the_verdicts():
    report = verify(UBU_SCRATCH, plans=["full"], n_chains=16)
    assert report.check("stationarity").passed and report.check("box").passed, report.table()
    failed = [report.check(name) for name in report.failed]
    assert failed and all("scheme 'ubu_scratch'" in c.measured and "\n" not in c.measured for c in failed)
    assert any("empty" in c.measured for c in failed), report.table()


def test_a_step_that_turns_non_finite_at_small_h_fails_by_name():
    from integrators import Scheme
    from integrators.schemes import ubu

    def coefficients(h, gamma):
        c = np.asarray(ubu.coefficients(h, gamma), dtype=float)
        return c * np.nan if h < 0.004 else c  # finite where the scheme's own checks look

    scheme = Scheme("nan_at_small_h", ubu.step, coefficients, 2.0, 2.0)
    report = verify(scheme, target=default_target(), plans=["full"], **EXACT)
    check = report.check("finite_step")
    assert check.passed is False and "'nan_at_small_h'" in check.measured and "h=" in check.measured, report.table()
    assert "see finite_step" in report.check("stationarity").measured


def _measurement(stable):
    from theory_checks.adapters._runs import PlanMeasurement
    n = len(stable)
    return PlanMeasurement("full", 0.1 * 2.0 ** -np.arange(n), [8] * n, [(1, 1)] * n,
                           [np.zeros((8, 2)) if ok else None for ok in stable], np.zeros((n, 2)), np.ones((n, 2)),
                           np.zeros(n), np.ones(n), 0.0)


@pytest.mark.parametrize("stable", [(True, True, False), (False, True, True, True)])
def test_an_adapter_chain_that_turns_nan_at_a_chosen_step_size_fails_the_claim(stable):
    from theory_checks.adapters._measure import stable_fit
    check = stable_fit(Check("weak_order[full]", True, "2", "slope 2.0", claim=True), _measurement(stable),
                       chosen=True)
    assert check.passed is False and "non-finite chains at h = " in check.measured, check.measured
    given = stable_fit(Check("limit[full]", True, "-", "b0", claim=True), _measurement(stable), chosen=False)
    assert given.passed is (None if sum(stable) < 3 else True), given.measured


def test_an_order_or_limit_fit_needs_three_stable_step_sizes():
    from theory_checks.adapters._measure import stable_fit
    two = stable_fit(Check("limit[full]", True, "-", "b0", claim=True), _measurement((True, True)), chosen=True)
    assert two.passed is None and "fewer than 3 stable" in two.skipped
    three = stable_fit(Check("limit[full]", True, "-", "b0", claim=True), _measurement((True,) * 3), chosen=True)
    assert three.passed is True
