"""Order estimation, dimension scaling, contraction, the variance lemma and the claims table."""

import csv

import numpy as np
import pytest
from helpers import draw_files

from integrators import GaussianTarget
from reports import tab_claims
from theory_checks.claims import FAILS, HOLDS, HOLDS_FASTER, claims_table
from theory_checks.contraction import contraction_check
from theory_checks.lemmas import variance_lemma_check
from theory_checks.orders import anisotropic_gaussian, fit_slope, local_slopes, strong_order, weak_order
from theory_checks.scaling import dimension_scaling, gaussian_w2

T1 = GaussianTarget.one_d_example()


def test_fit_slope_recovers_power_laws():
    hs = 2.0 ** -np.arange(2, 8)
    assert fit_slope(hs, 3 * hs**1.5) == pytest.approx(1.5)
    np.testing.assert_allclose(local_slopes(hs, hs**2), 2.0)
    assert np.isnan(fit_slope(hs, np.full(hs.size, np.nan)))


def test_weak_order_reports_unstable_steps():
    fit = weak_order(T1, "em", "full", 2.0 ** -np.arange(2, 10))
    assert fit.unstable == [0.25] and np.isnan(fit.errors[0])
    assert fit.slope == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("scheme,plan,order", [("ubu", "full", 2.0), ("ubu", "sms", 2.0),
                                               ("em", "full", 1.0), ("baoab", "full", 1.0)])
@pytest.mark.slow
def test_strong_orders_on_the_1d_example(scheme, plan, order):
    fit = strong_order(T1, scheme, plan, 2.0 ** -np.arange(3, 8), batch_size=1, n_chains=400, sweeps=4)
    assert fit.slope == pytest.approx(order, abs=0.25)
    assert fit.ci[0] < fit.slope < fit.ci[1]


def test_sg_ubu_strong_order_half_with_tight_interval():
    fit = strong_order(T1, "ubu", "iid", 2.0 ** -np.arange(3, 8), batch_size=1, n_chains=2000)
    assert fit.slope == pytest.approx(0.5, abs=0.25)
    assert fit.ci_half_width < 0.1


def test_strong_order_rejects_bad_ladders():
    with pytest.raises(ValueError, match="powers of two"):
        strong_order(T1, "ubu", "full", [0.1, 0.03])
    with pytest.raises(ValueError, match="batch_size"):
        strong_order(T1, "ubu", "sms", [0.1, 0.05])


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
    assert {r["verdict"] for r in rows} <= {HOLDS, HOLDS_FASTER, FAILS, "not asserted by the paper"}
    with open(tmp_path / "claims.csv") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows)
    text = (tmp_path / "claims.md").read_text()
    assert "| claim |" in text and "hold" in text
    with pytest.raises(ValueError, match="preset"):
        claims_table("huge")


@pytest.mark.slow
def test_strong_order_lists_diverged_step_sizes_instead_of_reporting_nan_silently():
    fit = strong_order(T1, "em", "full", [4.0, 2.0, 1.0 / 64, 1.0 / 128], n_chains=8, n_boot=5)
    assert fit.unstable == [4.0, 2.0]
    assert np.all(np.isnan(fit.errors[:2])) and np.all(np.isfinite(fit.errors[2:]))
