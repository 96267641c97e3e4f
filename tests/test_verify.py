"""The verification harness: built-in schemes pass ``verify`` with their declared orders,
planted bugs are caught by named checks, a user's three-line test works, and the strategies
draw what they promise."""



import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planted_bugs import (
    BAOAB_SQRT_ONE_MINUS_ETA,
    SMS_BATCH_MEAN,
    SMS_NOT_REVERSED,
    UBU_BLOCK_FAST_PATH,
    UBU_HALF_KICK,
    UBU_INDEPENDENT_J,
    UBU_NOISE_2_PERCENT_HOT,
    UBU_NOISE_INDEX_MOD_2,
)
from unusual_schemes import UNUSUAL
from user_schemes import ABOBA, AOBOA, aboba_coefficients, aboba_step

from integrators import SCHEMES, Scheme
from theory_checks._checks import Check, VerifyReport
from theory_checks._monte_carlo import extrapolation_weights
from theory_checks._verify import default_target, default_targets, unequal_scales_target, verify
from theory_checks.testing import assert_verified, frictions, gaussian_targets, is_allowed, partitions, step_sizes

STRONG_HS = tuple(2.0 ** -np.arange(3, 7))
QUICK = dict(n_chains=64, strong_hs=STRONG_HS)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_every_builtin_scheme_passes_verify_with_its_declared_orders(scheme):
    """The exact and strong-order levels (the Monte Carlo checks have tests of their own below)."""
    report = verify(scheme, monte_carlo=False, **QUICK)
    assert report.ok, report.table()
    names = [c.name for c in report.checks]
    for plan in ("full", "iid", "rr", "sms"):
        for key in ("", "@3d"):
            assert f"weak_order[{plan}]{key}" in names and f"strong_order[{plan}]{key}" in names
    assert report.check("weak_order[rr]").status == "no claim"  # rr declares no theorem: measured only
    assert report.check("declared_map").passed and report.check("probe_affine").passed
    assert report.check("strong_order[sms]").passed and report.check("box").passed


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


@pytest.mark.slow
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
    for name in ("strong", "monte_carlo"):  # a string such as "False" would read as true
        with pytest.raises(ValueError, match=f"{name} must be True or False, got 'False'"):
            verify("ubu", **{name: "False"}, max_seconds=1.0, budget=1.0)  # (both: refused fast without the check)


@pytest.mark.slow
def test_a_batch_size_of_3_is_the_default_double_wells_full_batch():
    """The Gaussian defaults have three data terms; the double well two (it takes min(3, 2))."""
    report = verify("ubu", batch_size=3, plans=["sms"], strong=False, monte_carlo=False)
    assert report.ok, report.table()
    assert "batch size 3" in report.target and "double_well (d=1, 2 data terms, batch size 2," in report.target


# ------------------------------------------------------------------ a user's scheme and test


@pytest.mark.slow
def test_a_user_scheme_in_three_lines():
    assert_verified(ABOBA)


@pytest.mark.slow
def test_a_user_scheme_with_a_wrong_declared_order_fails(verify_scheme):
    wrong = Scheme("aboba_claims_1", aboba_step, aboba_coefficients, WEAK_ORDER=1.0, STRONG_ORDER=1.0)
    with pytest.raises(AssertionError, match=r"weak_order\[full\]"):
        verify_scheme(wrong, strong=False, monte_carlo=False)


@pytest.mark.slow
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


@pytest.mark.slow
def test_verify_wants_distinct_step_sizes_and_says_when_they_are_unstable():
    with pytest.raises(ValueError, match="hs must hold at least 4 distinct"):
        verify("ubu", hs=[0.1] * 4, plans=["sms"], strong=False, monte_carlo=False)
    with pytest.raises(ValueError, match="strong_hs must hold at least 2"):
        verify("ubu", strong_hs=[], plans=["sms"], monte_carlo=False)
    with pytest.raises(ValueError, match="^batch_size must be None or an integer >= 1, got 1.5"):
        verify("ubu", batch_size=1.5, plans=["sms"], strong=False, monte_carlo=False)
    report = verify("em", hs=[100, 50, 25, 12], plans=["full"], strong=False, monte_carlo=False)
    stationarity = next(c for c in report.checks if c.name == "stationarity")
    assert stationarity.passed is False and "unstable at h=12" in stationarity.measured


def test_package_import_of_verify_is_the_function_not_its_module():
    import theory_checks
    import theory_checks._verify  # noqa: F401  (importing the submodule again must not rebind the name)
    from theory_checks import verify as from_package
    from theory_checks._verify import verify as from_module

    assert callable(from_package) and from_package is from_module is theory_checks.verify


# ------------------------------------------------------------------ defaults that find the common bugs


def test_the_default_targets_include_a_3d_one_with_unequal_scales_at_batch_size_2():
    (_, old, old_batch), (key, new, batch), _ = default_targets()
    assert (old.dim, old_batch) == (2, 1) and key == "3d" and new.dim >= 3 and batch >= 2
    cov = new.covariance
    assert np.abs(cov - np.diag(np.diag(cov))).max() > 1e-3  # not diagonal
    scales = [np.linalg.eigvalsh(p).max() for p in new.arrays[1]]
    assert max(scales) / min(scales) >= 2  # the data terms' scales differ


@pytest.mark.slow
def test_a_noise_index_taken_modulo_2_fails_by_name_at_the_defaults():
    """Right in 2-D: the old default (2-D target) passed it; the 3-D default target fails it."""
    report = verify(UBU_NOISE_INDEX_MOD_2, strong=False, monte_carlo=False)
    assert {"stationarity@3d", "weak_order[full]@3d", "weak_order[sms]@3d"} <= set(report.failed), report.table()
    assert all(name.endswith(("@3d", "@7d")) for name in report.failed), report.table()
    old = verify(UBU_NOISE_INDEX_MOD_2, target=default_target(), batch_size=1, strong=False, monte_carlo=False)
    assert old.ok, old.table()


@pytest.mark.slow
def test_a_force_that_scales_the_batch_mean_fails_by_name_at_the_defaults(registered):
    """Equal to the right force at batch size 1 (the old default passed it); caught at batch size 2
    once the plan is registered, with verify's every default."""
    registered(SMS_BATCH_MEAN)
    report = verify("ubu", strong=False, monte_carlo=False)
    assert set(report.failed) == {"weak_order[sms_batch_mean]@3d", "weak_order[sms_batch_mean]@7d"}, report.table()
    old = verify("ubu", target=default_target(), batch_size=1, plans=[SMS_BATCH_MEAN], strong=False,
                 monte_carlo=False)
    assert old.ok, old.table()


# ------------------------------------------------------------------ verdicts that never pass by omission


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from([True, False, None]), st.booleans()), max_size=6))
def test_a_report_is_ok_only_when_every_claim_was_checked_and_passed(outcomes):
    checks = [Check(f"c{i}", passed, "-", "-", claim=claim) for i, (passed, claim) in enumerate(outcomes)]
    report = VerifyReport("s", "t", checks, 0.0)
    claims = [c for c in checks if c.claim]
    assert report.ok == (all(c.passed is True for c in claims) and not any(c.passed is False for c in checks)
                         and any(c.passed is True for c in checks))  # a report that checked nothing is not ok
    assert set(report.inconclusive) == {c.name for c in claims if c.passed is None}
    assert {c.status for c in checks} <= {"passed", "failed", "inconclusive", "no claim"}


def test_the_printed_table_keeps_a_cell_holding_pipes_in_one_column():
    report = VerifyReport("s", "t", [Check("box", True, "|x - c|/w < 1", "|x - c|/w = 0.3", claim=True)], 0.0)
    row = report.table().splitlines()[-1]
    assert row == r"| box | \|x - c\|/w < 1 | \|x - c\|/w = 0.3 | pass |", row
    assert len(re.split(r"(?<!\\)\|", row)) == 6, row  # four cells between unescaped pipes


@pytest.mark.slow
def test_a_wall_clock_cap_gives_the_same_verdicts_or_inconclusive_never_ok():
    """Whatever the cap cuts (all but the probe, or wherever half the run's time falls), the
    verdicts that remain are the uncapped run's, and the report is ok only if nothing was cut:
    the old budget reported ok with every strong-order and Monte Carlo check skipped."""
    kw = dict(plans=["full", "sms"], n_chains=16, strong_hs=STRONG_HS, seed=3)
    full = verify("ubu", **kw)
    assert not full.failed, full.table()  # 16 chains: the Monte Carlo passes are underpowered, inconclusive
    for cap in (1e-6, full.seconds / 2):
        capped = verify("ubu", max_seconds=cap, **kw)
        assert not capped.failed, capped.table()
        assert capped.ok == (not capped.inconclusive), capped.table()
        for a, b in zip(full.checks, capped.checks, strict=True):
            assert a.name == b.name and b.status in (a.status, "inconclusive"), capped.table()
            if b.status == "inconclusive" and a.status != "inconclusive":
                assert "wall-clock cap" in b.skipped
    capped = verify("ubu", max_seconds=1e-6, **kw)
    assert not capped.ok and "INCONCLUSIVE:" in capped.table() and "monte_carlo[sms]@3d" in capped.inconclusive
    with pytest.raises(ValueError, match="not both"):
        verify("ubu", max_seconds=1.0, budget=1.0)


def test_assert_verified_fails_on_an_inconclusive_claim_unless_allowed_by_name():
    kw = dict(plans=["full"], strong=False, monte_carlo=False, max_seconds=1e-6)
    with pytest.raises(AssertionError, match=r"inconclusive.*weak_order\[full\]"):
        assert_verified("ubu", **kw)
    report = assert_verified("ubu", allow_inconclusive=["weak_order"], **kw)
    assert report.inconclusive == ["weak_order[full]", "weak_order[full]@3d", "weak_order[full]@7d"]
    assert_verified("ubu", allow_inconclusive=["weak_order[full]"], **kw)  # one check, on every target
    with pytest.raises(AssertionError, match=r"weak_order\[full\]@3d"):
        assert_verified("ubu", allow_inconclusive=["weak_order[full]@"], **kw)  # not a name: allows nothing
    with pytest.raises(ValueError, match="allow_inconclusive must be a list"):
        assert_verified("ubu", allow_inconclusive="weak_order", **kw)


def test_is_allowed_matches_names_and_families_only():
    assert is_allowed("strong_order[sms]@3d", ["strong_order"])
    assert is_allowed("strong_order[sms]@3d", ["strong_order[sms]"])
    assert is_allowed("stationarity@3d", ["stationarity@3d"]) and is_allowed("stationarity", ["stationarity"])
    assert not is_allowed("strong_order[sms]", ["strong"]) and not is_allowed("stationarity", ["monte_carlo"])


# ------------------------------------------------------------------ Monte Carlo against the target's law


@given(p=st.sampled_from([1.0, 2.0, 0.5, 3.0]), m0=st.floats(-3, 3), a=st.floats(-5, 5), c=st.floats(-5, 5),
       h=st.floats(1e-3, 0.5))
@settings(max_examples=60, deadline=None)
def test_the_extrapolation_recovers_the_limit_of_the_declared_bias_model(p, m0, a, c, h):
    """m(h) = m0 + a h^p + c h^(p+1) at h, h/2, h/4: the weights give m0 to rounding, for any h."""
    def m(step):
        return m0 + a * step**p + c * step ** (p + 1)
    alpha, beta = extrapolation_weights(p)
    limit = m(h) - alpha * (m(h / 2) - m(h)) - beta * (m(h / 4) - m(h / 2))
    assert abs(limit - m0) <= 1e-12 * (1 + abs(m0) + abs(a) + abs(c))


@pytest.mark.slow
def test_a_noise_2_percent_hot_passes_the_probe_law_check_and_fails_against_the_target():
    """The probe reads the hot step, so the kernel agrees with its oracle (monte_carlo passes);
    against the target the extrapolated variances are 4 % high, about 8 standard errors."""
    report = verify(UBU_NOISE_2_PERCENT_HOT, target=unequal_scales_target(), plans=["full"], strong=False)
    assert report.check("monte_carlo[full]").passed, report.table()
    assert report.check("target_law[full]").passed is False, report.table()


@pytest.mark.slow
def test_a_kernel_fast_path_the_probe_never_runs_fails_both_monte_carlo_checks():
    """Blocks of 32 chains or more take a wrong fast path: every exact check passes (the probe
    runs a block of 25), the chains do not follow the oracle, nor the target."""
    report = verify(UBU_BLOCK_FAST_PATH, target=unequal_scales_target(), plans=["full"], strong=False)
    for name in ("probe_affine", "stationarity", "weak_order[full]"):
        assert report.check(name).passed, report.table()
    assert report.check("monte_carlo[full]").passed is False
    assert report.check("target_law[full]").passed is False, report.table()
    assert set(report.failed) == {"monte_carlo[full]", "target_law[full]"}


@pytest.mark.slow
def test_the_target_law_check_asserts_nothing_for_rr_and_is_inconclusive_on_the_torch_step():
    report = verify("ubu", target=unequal_scales_target(), plans=["rr"], strong=False, n_chains=16)
    assert report.check("target_law[rr]").status == "no claim", report.table()
    torch = verify("ubu", target=unequal_scales_target(), plans=["full"], strong=False, n_chains=16,
                   backend="torch")
    assert torch.check("target_law[full]").status == "inconclusive"
    assert "Numba kernel" in torch.check("target_law[full]").skipped


# ------------------------------------------------------------------ no false alarm on correct schemes


CORRECT = {**{name: name for name in sorted(SCHEMES)}, "aboba": ABOBA, "aoboa": AOBOA, **UNUSUAL}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_schemes_raise_no_false_alarm_at_the_exact_level(name):
    """verify's exact level at its defaults (the three Gaussian targets at their frictions, the box,
    the sweeps): every claim checked and passed for the built-in schemes, the README's ABOBA, the
    tour's AOBOA and correct schemes written in unusual ways.  Its verdicts do not depend on the
    seed; the Monte Carlo levels' false-alarm rate over seeds is measured by
    ``benchmarks/bench_verify.py --level default --seeds 20`` (benchmarks/RESULTS.md)."""
    report = verify(CORRECT[name], strong=False, monte_carlo=False)
    assert report.ok, report.table()


@pytest.mark.slow
def test_a_correct_scheme_raises_no_false_alarm_at_every_default_check():
    """One scheme with every default check, Monte Carlo included, at a seed other than 0: every claim
    passed, and every Monte Carlo pass states a detectable effect within the declared resolution."""
    report = verify("ubu", seed=1)
    assert report.ok, report.table()
    assert all("detects a relative error" in c.measured for c in report.checks
               if c.name.startswith(("monte_carlo", "target_law", "limit")) and c.claim), report.table()
