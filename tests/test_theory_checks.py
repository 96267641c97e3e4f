"""Order estimation, dimension scaling, contraction, the variance lemma and the claims table."""

import csv

import numpy as np
import pytest
from helpers import draw_files

from experiments.claims import EXPERIMENT as tab_claims
from integrators import GaussianTarget, RunSpec
from theory_checks import _declared as declared
from theory_checks._claims import FAILS, HOLDS, HOLDS_FASTER, claims_table
from theory_checks._contraction import contraction_check
from theory_checks._lemmas import variance_lemma_check
from theory_checks._probe import probe_step_map
from theory_checks._scaling import dimension_scaling, gaussian_w2
from theory_checks._verify import verify
from theory_checks.oracle import affine_force, spectral_radius, stationary_covariance, stationary_moments
from theory_checks.orders import (
    anisotropic_gaussian,
    describe_local_slopes,
    fit_slope,
    local_slopes,
    logistic_example,
    strong_order,
    weak_order,
)

T1 = GaussianTarget.one_d_example()


def test_fit_slope_recovers_power_laws():
    hs = 2.0 ** -np.arange(2, 8)
    assert fit_slope(hs, 3 * hs**1.5) == pytest.approx(1.5)
    np.testing.assert_allclose(local_slopes(hs, hs**2), 2.0)
    assert np.isnan(fit_slope(hs, np.full(hs.size, np.nan)))


def test_an_undefined_local_slope_reads_as_a_word_saying_why_never_nan():
    hs = 2.0 ** -np.arange(2, 6)
    em_like = np.array([np.nan, 0.3 * hs[1], 0.3 * hs[2], 0.3 * hs[3]])  # EM unstable at h = 1/4
    assert describe_local_slopes(hs, em_like) == "undefined (unstable h), 1.00, 1.00"
    exact_tail = np.array([4e-2, 1e-2, 0.0, 0.0])
    assert describe_local_slopes(hs, exact_tail) == "2.00, undefined (zero error), undefined (zero error)"
    from theory_checks._verify import weak_order_verdict
    measured = weak_order_verdict(2.0 ** -np.arange(2, 10), 0.3 * 2.0 ** -np.arange(2, 10) * [np.nan, *[1] * 7],
                                  1.0, 1.0)[1]
    assert "local: undefined (unstable h), 1.00" in measured and "nan" not in measured, measured


@pytest.mark.slow
def test_weak_order_reports_unstable_steps():
    fit = weak_order(T1, "em", "full", 2.0 ** -np.arange(2, 10))
    assert fit.unstable == [0.25] and np.isnan(fit.errors[0])
    assert fit.slope == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("scheme,plan,order", [("ubu", "full", 2.0), ("ubu", "sms", 2.0),
                                               ("em", "full", 1.0), ("baoab", "full", 1.0)])
@pytest.mark.slow
def test_strong_orders_on_the_1d_example(scheme, plan, order):
    fit = strong_order(RunSpec.from_options(T1, scheme, plan, batch_size=1, n_chains=400), 2.0 ** -np.arange(3, 8),
                       sweeps=4)
    assert fit.slope == pytest.approx(order, abs=0.25)
    assert fit.ci[0] < fit.slope < fit.ci[1]


@pytest.mark.slow
def test_sg_ubu_strong_order_half_with_tight_interval():
    fit = strong_order(RunSpec.from_options(T1, "ubu", "iid", batch_size=1, n_chains=2000), 2.0 ** -np.arange(3, 8))
    assert fit.slope == pytest.approx(0.5, abs=0.25)
    assert fit.ci_half_width < 0.1


def test_strong_order_rejects_bad_ladders():
    with pytest.raises(ValueError, match="powers of two"):
        strong_order(RunSpec.from_options(T1, "ubu", "full", n_chains=2000), [0.1, 0.03])
    with pytest.raises(ValueError, match="batch_size"):
        strong_order(RunSpec.from_options(T1, "ubu", "sms", n_chains=2000), [0.1, 0.05])


def test_a_user_statistic_must_return_a_finite_number():
    for bad, shown in ((lambda m, t: "x", "'x'"), (lambda m, t: float("nan"), "nan"), (lambda m, t: None, "None")):
        with pytest.raises(ValueError, match=rf"statistic '.*<lambda>' must return a finite real number, got {shown} "
                                             r"at h=0.2"):
            weak_order(T1, "ubu", "full", [0.2, 0.1, 0.05, 0.025], statistic=bad)
    fit = weak_order(T1, "ubu", "full", [0.2, 0.1], statistic=lambda m, t: np.array(m.covariance[0, 0] - 1.0))
    assert np.all(np.isfinite(fit.errors)) and fit.fit_points == 2  # the default: 4, or all of a shorter ladder


def test_fit_points_and_ref_levels_must_fit_the_ladder():
    with pytest.raises(ValueError, match=r"fit_points must be at most the number of step sizes, len\(hs\) = 4, "
                                         r"got 10"):
        weak_order(T1, "ubu", "full", [0.2, 0.1, 0.05, 0.025], fit_points=10)
    spec = RunSpec.from_options(T1, "ubu", "full", n_chains=8)
    with pytest.raises(ValueError, match=r"fit_points must be at most .* = 4, got 5"):
        strong_order(spec, [0.2, 0.1, 0.05, 0.025], fit_points=5)
    # the reference's steps, not a derived n_steps, are named
    for levels in (50, 2000):
        with pytest.raises(ValueError, match=rf"ref_levels must be at most \d+ .*2\*\*48 steps\), got {levels}"):
            strong_order(spec, [0.2, 0.1, 0.05, 0.025], ref_levels=levels)


def test_gaussian_w2_closed_forms():
    assert gaussian_w2([0.0], [[1.0]], [3.0], [[1.0]]) == pytest.approx(3.0)
    assert gaussian_w2([0.0], [[4.0]], [0.0], [[1.0]]) == pytest.approx(1.0)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    assert gaussian_w2(np.zeros(2), cov, np.zeros(2), cov) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.slow
def test_dimension_scaling_of_full_ubu_is_sqrt_d():
    """Exact UBU's bias is a sum over equally hard blocks: W2 grows exactly like sqrt(d)."""
    res = dimension_scaling("ubu", "full", dims=(4, 8, 16), h=0.05)
    assert res.exponent == pytest.approx(0.5, abs=0.02)


def test_anisotropic_targets_do_not_commute():
    target = anisotropic_gaussian(3, n_data=2)
    a, b = target.arrays[1]
    assert np.abs(a @ b - b @ a).max() > 1e-3


@pytest.mark.slow
def test_contraction_beats_the_bound_under_the_conditions():
    res = contraction_check(anisotropic_gaussian(2, n_data=2), h=0.05, n_chains=4, epochs=(2, 4, 8))
    assert res.conditions_hold and res.holds
    assert np.all(np.diff(res.distances) < 0)


def test_variance_lemma_ratio_below_five_halves():
    res = variance_lemma_check(n_datasets=4, n_mc=400)
    assert res.holds and res.max_ratio > 0


@pytest.mark.slow
def test_quick_claims_table(tmp_path):
    rows = claims_table("quick")
    draw_files(tab_claims, [({}, {"rows": rows})], "quick", tmp_path)
    by_claim = {r["claim"]: r for r in rows}
    for key in ("weak order of UBU x full", "weak order of UBU x sms", "weak order of BAOAB x sms",
                "weak order of EM x full", "strong order of UBU x full (1-D",
                "strong order of UBU x sms (1-D",
                "EM diverges", "BAOAB x full: x-variance exact"):
        match = [r for c, r in by_claim.items() if c.startswith(key)]
        assert match and all(r["verdict"].startswith(HOLDS) for r in match), (key, match)
    assert {r["verdict"] for r in rows} <= {HOLDS, HOLDS_FASTER, FAILS, "measured, not a claim"}
    with open(tmp_path / "claims.csv") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows)
    text = (tmp_path / "claims.md").read_text()
    assert "| claim |" in text and "hold" in text
    with pytest.raises(ValueError, match="preset"):
        claims_table("huge")


@pytest.mark.slow
def test_strong_order_lists_diverged_step_sizes_instead_of_reporting_nan_silently():
    fit = strong_order(RunSpec.from_options(T1, "em", "full", n_chains=8), [4.0, 2.0, 1.0 / 64, 1.0 / 128], n_boot=5)
    assert fit.unstable == [4.0, 2.0]
    assert np.all(np.isnan(fit.errors[:2])) and np.all(np.isfinite(fit.errors[2:]))


# -------------------------------------------------------------------------------------
# Bad input to the theory checks (theory_checks: orders, contraction, lemmas, declared, oracle,
# probe, scaling, verify): a slope through fewer than two distinct points, an impossible batch, a
# mistyped option or a non-covariance gave a number (or a verdict) instead of an error; each is a
# ValueError naming the value, before any work.  Valid but unusual input (float32 covariances, lists
# for arrays) stays accepted.
LADDER_WORDS = "must hold at least 2 distinct values"


@pytest.mark.parametrize("hs", [[0.1], [0.1, 0.1, 0.1]])
def test_a_slope_needs_two_distinct_step_sizes(hs):
    with pytest.raises(ValueError, match=LADDER_WORDS):
        fit_slope(hs, np.array(hs) ** 2)
    with pytest.raises(ValueError, match=LADDER_WORDS):
        weak_order(T1, "ubu", "sms", hs, batch_size=1)
    with pytest.raises(ValueError, match=LADDER_WORDS):
        strong_order(RunSpec.from_options(T1, "ubu", "full", n_chains=8), hs, n_boot=5)


@pytest.mark.parametrize("call, words", [
    pytest.param(lambda: weak_order(T1, "ubu", "full", []), "hs must hold at least 2", id="weak_order-empty-ladder"),
    pytest.param(lambda: weak_order(T1, "ubu", "full", "0.1"), "hs must be a list of numbers",
                 id="weak_order-string-ladder"),
    pytest.param(lambda: weak_order(T1, "ubu", "full", [0.1, -0.05]), "hs must be positive and finite",
                 id="weak_order-negative-step"),
    pytest.param(lambda: strong_order(RunSpec.from_options(T1, "ubu", "full", n_chains=8, v0=[0.0]), [0.1, 0.05]),
                 "leave v0 out of the spec", id="strong_order-v0-given"),
    pytest.param(lambda: strong_order(RunSpec.from_options(T1, "ubu", "full", n_chains=8), []),
                 "hs must hold at least 2",
                 id="strong_order-empty-ladder"),
    pytest.param(lambda: local_slopes([0.1, 0.2, 0.3], [0.01, 0.02]), "same length", id="local_slopes-lengths"),
    pytest.param(lambda: contraction_check(T1, h=0.05, epochs=(2,)), "epochs must hold at least 2",
                 id="contraction-one-epoch"),
    pytest.param(lambda: contraction_check(T1, h=0.05, epochs=()), "epochs must hold at least 2",
                 id="contraction-no-epochs"),
    pytest.param(lambda: contraction_check(T1, h=0.05, epochs=(2, 4.5)), "epochs must be integers",
                 id="contraction-fractional-epoch"),
    pytest.param(lambda: contraction_check(T1, h=0.05, batch_size=0), "batch_size must be >= 1",
                 id="contraction-batch-zero"),
    pytest.param(lambda: contraction_check(logistic_example(), h=0.05), "needs a GaussianTarget",
                 id="contraction-logistic-target"),
    pytest.param(lambda: dimension_scaling("ubu", "sms", dims=(4,)), "dims must hold at least 2",
                 id="dimension_scaling-one-dimension"),
    pytest.param(lambda: dimension_scaling("ubu", "sms", dims=(4, 4)), "dims must hold at least 2",
                 id="dimension_scaling-repeated-dimension"),
    pytest.param(lambda: dimension_scaling("ubu", "sms", dims=(0, 4)), "dims must be positive",
                 id="dimension_scaling-zero-dimension"),
    pytest.param(lambda: anisotropic_gaussian(0), "d must be >= 1", id="anisotropic_gaussian-d-zero"),
    pytest.param(lambda: variance_lemma_check(0), "n_datasets must be >= 1", id="variance_lemma-no-datasets"),
    pytest.param(lambda: variance_lemma_check(2, 1), "n_mc must be >= 2", id="variance_lemma-one-sample"),
    pytest.param(lambda: declared.limiting_source("ubu", "iid", kind="strongg"), "kind must be one of",
                 id="declared-limiting-source-kind"),
    pytest.param(lambda: declared.source("ubu", "iid", kind="strongg"), "kind must be one of",
                 id="declared-source-kind"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "full", "0.1"), "h must be a real number", id="oracle-h-string"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "full", None), "h must be a real number", id="oracle-h-none"),
    pytest.param(lambda: stationary_covariance("ubu", np.eye(1), 0.0, 1.0), "h must be positive",
                 id="oracle-covariance-h-zero"),
    pytest.param(lambda: spectral_radius("ubu", np.ones((2, 3)), 0.1, 1.0), "hess must be a symmetric square matrix",
                 id="oracle-spectral-radius-not-square"),
    pytest.param(lambda: gaussian_w2([0.0], [[-1.0]], [0.0], [[1.0]]), "cov1 must be positive semi-definite",
                 id="gaussian_w2-negative-covariance"),
    pytest.param(lambda: gaussian_w2([0.0, 1.0], [[1.0]], [0.0], [[1.0]]), "cov1 must be a symmetric 2 x 2",
                 id="gaussian_w2-shape"),
    # -5e-7 is no rounding error at a scale of 1e-6: the tolerance is relative
    pytest.param(lambda: gaussian_w2([0.0], [[-5e-7]], [0.0], [[1e-6]]), "cov1 must be positive semi-definite",
                 id="gaussian_w2-negative-beyond-a-relative-tolerance"),
    pytest.param(lambda: verify("ubu", plans="sms"), "plans must be None or a list or tuple of .*, got 'sms'",
                 id="verify-a-lone-plan-name"),
    pytest.param(lambda: verify("ubu", plans=["full"], gamma=-1),
                 "gamma must be None or a finite real number > 0, got -1",
                 id="verify-gamma-negative"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "sms", 0.1, batch_size=1.5), "batch_size must be an integer",
                 id="oracle-batch-fraction"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "sms", 0.1, batch_size=True), "batch_size must be an integer",
                 id="oracle-batch-bool"),
])
def test_theory_checks_refuse_bad_arguments_by_name(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize("batch", [[99], [-5], [], [0.5], "0"])
def test_step_maps_refuse_impossible_batches(batch):
    """An index beyond the data read no datum: the probed map had zero force, as a number."""
    with pytest.raises(ValueError, match="batch"):
        probe_step_map("ubu", T1, batch, 1.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="batch"):
        affine_force(T1, batch, 1.0)


def test_gaussian_w2_takes_float32_covariances():
    samples = np.random.default_rng(0).standard_normal((4, 50)).astype(np.float32)
    assert gaussian_w2(np.zeros(50), np.cov(samples.T), np.zeros(50), np.eye(50)) > 0


def test_affine_force_takes_a_batch_of_integral_floats_or_a_list():
    hess, _ = affine_force(T1, np.array([0.0, 1.0]), 1.0)
    np.testing.assert_allclose(hess, affine_force(T1, [0, 1], 1.0)[0])


# ------------------------------------------------------------------ one source of which orders are claims


@pytest.mark.parametrize("plan", ["full", "iid", "rr", "sms"])
def test_verify_the_claims_table_and_the_adapters_read_one_declaration_of_what_is_claimed(plan):
    """The plan's THEOREM alone says whether its orders are claims, for built-in and user schemes
    alike: rr's order 2 (observed, no theorem) was a claim for the built-in schemes in verify and
    the claims table (through their citations) and not in the adapters' conformance report."""
    from types import SimpleNamespace

    from integrators.plans import resolve_plan
    from theory_checks._claims import NOT_ASSERTED, weak_order_rows
    from theory_checks.adapters._analysis import expected_order

    claimed = bool(resolve_plan(plan).THEOREM)
    assert declared.plan_asserts(plan) is claimed
    for scheme in ("ubu", "em"):
        assert declared.asserted(scheme, plan) is claimed
        report = verify(scheme, plans=[plan], strong=False, monte_carlo=False)
        assert report.check(f"weak_order[{plan}]").claim is claimed, report.table()
        (row,) = weak_order_rows("quick", schemes=[scheme], plans=[plan])
        assert (row["verdict"] != NOT_ASSERTED) is claimed, row
    assert expected_order(SimpleNamespace(RULE_ORDER=1.0), plan)[1] is claimed


def test_a_user_plan_without_a_theorem_makes_no_claim_for_any_scheme():
    from integrators.plans import PLANS, Plan

    sms = PLANS["sms"]

    observed = Plan("sms_observed", sms.outcomes, sms.force_scale, sms.period, WEAK_ORDER=2.0, STRONG_ORDER=2.0,
                    THEOREM=False, batch_index=sms.batch_index, SWEEPS=sms.SWEEPS)
    report = verify("ubu", plans=[observed], strong=False, monte_carlo=False)
    assert report.check("weak_order[sms_observed]").status == "no claim", report.table()
    assert report.ok and "(observed, not a claim)" in report.check("weak_order[sms_observed]").expected
