"""The verification harness: built-in schemes pass ``verify`` with their declared orders,
planted bugs are caught by named checks, a user's three-line test works, and the strategies
draw what they promise."""


import numpy as np
import pytest
from hypothesis import given, settings
from planted_bugs import BAOAB_SQRT_ONE_MINUS_ETA, SMS_NOT_REVERSED, UBU_HALF_KICK, UBU_INDEPENDENT_J
from user_schemes import ABOBA, aboba_coefficients, aboba_step

from integrators import SCHEMES, Scheme
from theory_checks.testing import assert_verified, frictions, gaussian_targets, partitions, step_sizes
from theory_checks.verify import verify

STRONG_HS = tuple(2.0 ** -np.arange(3, 7))
QUICK = dict(n_chains=64, strong_hs=STRONG_HS)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_every_builtin_scheme_passes_verify_with_its_declared_orders(scheme):
    report = verify(scheme, budget=120, **QUICK)
    assert report.ok, report.table()
    names = [c.name for c in report.checks]
    for plan in ("full", "iid", "rr", "sms"):
        assert f"weak_order[{plan}]" in names and f"strong_order[{plan}]" in names
    assert report.check("declared_map").passed and report.check("probe_affine").passed
    assert report.check("strong_order[sms]").passed and report.check("monte_carlo[sms]").passed


@pytest.mark.slow
def test_ubu_whose_j_is_independent_of_dw_fails_the_strong_order():
    """J from the other half step has J's law but not its correlation with dW: the stationary
    law stays second order (the weak checks pass), the pathwise error does not."""
    report = verify(UBU_INDEPENDENT_J, plans=["full"], monte_carlo=False, **QUICK)
    assert report.check("weak_order[full]").passed
    assert report.check("strong_order[full]").passed is False, report.table()


@pytest.mark.slow
def test_baoab_with_sqrt_one_minus_eta_noise_fails_stationarity():
    report = verify(BAOAB_SQRT_ONE_MINUS_ETA, plans=["full"], strong=False, monte_carlo=False)
    assert report.check("stationarity").passed is False, report.table()
    assert report.check("weak_order[full]").passed is False
    assert not report.ok and "stationarity" in report.failed


@pytest.mark.slow
def test_ubu_whose_kick_uses_half_h_fails_stationarity():
    report = verify(UBU_HALF_KICK, plans=["full", "sms"], strong=False, monte_carlo=False)
    assert report.check("stationarity").passed is False, report.table()
    assert report.check("weak_order[sms]").passed is False


@pytest.mark.slow
def test_sms_whose_backward_sweep_is_not_reversed_fails_the_strong_order():
    """Declared second order like sms; the time-averaged stationary law is still second order
    (weak check passes), the pathwise error at sweep ends is not (strong check fails)."""
    report = verify("ubu", plans=[SMS_NOT_REVERSED], monte_carlo=False, **QUICK)
    assert report.check("weak_order[sms_not_reversed]").passed
    assert report.check("strong_order[sms_not_reversed]").passed is False, report.table()


def test_report_table_csv_and_plot(tmp_path):
    report = verify("ubu", plans=["full", "iid"], strong=False, monte_carlo=False)
    assert "| weak_order[iid] | 1 |" in report.table() and str(report) == report.table()
    text = report.write_csv(tmp_path / "verify.csv").read_text()
    assert text.startswith("check,expected,measured,verdict,hs,errors") and "stationarity" in text
    assert report.plot(tmp_path / "verify.png").stat().st_size > 0
    with pytest.raises(KeyError, match="no check named"):
        report.check("nope")


def test_verify_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown scheme"):
        verify("rk4")
    with pytest.raises(ValueError, match="budget"):
        verify("ubu", budget=0)
    with pytest.raises(ValueError, match="hs"):
        verify("ubu", hs=(0.1, 0.05))
    with pytest.raises(ValueError, match="batch_size"):
        verify("ubu", batch_size=7)


# ------------------------------------------------------------------ a user's scheme and test


@pytest.mark.slow
def test_a_user_scheme_in_three_lines():
    assert_verified(ABOBA)


@pytest.mark.slow
def test_a_user_scheme_with_a_wrong_declared_order_fails(verify_scheme):
    wrong = Scheme("aboba_claims_1", aboba_step, aboba_coefficients, WEAK_ORDER=1.0, STRONG_ORDER=1.0)
    with pytest.raises(AssertionError, match=r"weak_order\[full\]"):
        verify_scheme(wrong, strong=False, monte_carlo=False)


def test_registered_fixture_adds_and_removes(registered):
    registered(Scheme("aboba_tmp", aboba_step, aboba_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0))
    assert "aboba_tmp" in SCHEMES


def test_registered_fixture_cleaned_up():
    assert "aboba_tmp" not in SCHEMES


@settings(max_examples=20)
@given(target=gaussian_targets(), part=partitions(), h=step_sizes(), gamma=frictions())
def test_strategies_draw_what_they_promise(target, part, h, gamma):
    n_data, batch_size = part
    assert 1 <= batch_size <= n_data and 1e-3 <= h <= 0.5 + 1e-12 and 0.05 - 1e-12 <= gamma <= 20.0 + 1e-9
    assert np.all(np.linalg.eigvalsh(target.precision) > 0)
    if target.dim > 1 and target.n_data > 1:  # random rotations: the data terms do not commute
        p0, p1 = target.arrays[1][0], target.arrays[1][1]
        assert np.abs(p0 @ p1 - p1 @ p0).max() > 1e-9


def test_verify_wants_distinct_step_sizes_and_says_when_they_are_unstable():
    with pytest.raises(ValueError, match="hs must hold at least 4 distinct"):
        verify("ubu", hs=[0.1] * 4, plans=["sms"], strong=False, monte_carlo=False)
    with pytest.raises(ValueError, match="strong_hs must hold at least 2"):
        verify("ubu", strong_hs=[], plans=["sms"], monte_carlo=False)
    with pytest.raises(ValueError, match="batch_size must be an integer"):
        verify("ubu", batch_size=1.5, plans=["sms"], strong=False, monte_carlo=False)
    report = verify("em", hs=[100, 50, 25, 12], plans=["full"], strong=False, monte_carlo=False)
    stationarity = next(c for c in report.checks if c.name == "stationarity")
    assert stationarity.passed is False and "unstable at h=12" in stationarity.measured


def test_package_import_of_verify_is_the_function_not_its_module():
    import theory_checks
    import theory_checks.verify  # noqa: F401  (importing the submodule again must not rebind the name)
    from theory_checks import verify as from_package
    from theory_checks.verify import verify as from_module

    assert callable(from_package) and from_package is from_module is theory_checks.verify
