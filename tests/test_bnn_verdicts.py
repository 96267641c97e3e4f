"""experiments.bnn._verdicts: the paired t test, Holm's correction and the verdicts, on synthetic runs of known
effect (simulated in bulk with numpy: power, size and family-wise rate) and end to end on fake runs."""

import numpy as np
import pytest
from scipy import stats

from experiments.bnn import _verdicts as verdicts

pytestmark = pytest.mark.torch  # experiments.bnn._verdicts imports experiments.bnn._figures

DRAWS = 20_000
LEVEL = verdicts.LEVEL


def _rate_bound(rate, draws, z=4.0):
    """``rate`` plus ``z`` binomial standard errors of a rate estimated from ``draws`` draws."""
    return rate + z * np.sqrt(rate * (1 - rate) / draws)


def _runs(rng, n_runs, effect, draws=DRAWS):
    """``(draws, n_runs)`` paired differences method - reference of a lower-is-better metric: both
    have standard deviation 1 over runs, independent, the method lower by ``effect``."""
    return rng.normal(-effect, 1.0, (draws, n_runs)) - rng.normal(0.0, 1.0, (draws, n_runs))


def test_paired_t_matches_scipy_on_one_sample():
    d = np.random.default_rng(1).normal(0.3, 1.0, 12)
    test = verdicts.paired_t(d)
    ref = stats.ttest_1samp(d, 0.0)
    assert test["p"] == pytest.approx(ref.pvalue, rel=1e-10) and test["t"] == pytest.approx(ref.statistic, rel=1e-12)
    assert test["df"] == 11
    lo, hi = ref.confidence_interval(1 - LEVEL)
    assert (test["low"], test["high"]) == pytest.approx((lo, hi), rel=1e-10)


def test_a_true_difference_of_one_standard_deviation_is_found_with_32_runs():
    """Power at 32 paired runs (31 d.f.): the exact power of the two-sided t test is the noncentral
    t's mass beyond the critical value (noncentrality 1 / sqrt(2) * sqrt(32) = 4: the difference of
    two independent runs has s.d. sqrt(2)); the simulated rate of 'better' matches it and is >= 0.9."""
    rng = np.random.default_rng(2)
    test = verdicts.paired_t(_runs(rng, 32, 1.0))
    called = [verdicts.decide(m, p, True) for m, p in zip(test["mean"], test["p"], strict=True)]
    power = np.mean([c == verdicts.BETTER for c in called])
    crit = stats.t.ppf(1 - LEVEL / 2, 31)
    exact = stats.nct.sf(crit, 31, 4.0) + stats.nct.cdf(-crit, 31, 4.0)
    se = np.sqrt(exact * (1 - exact) / DRAWS)
    assert exact > 0.95 and power >= 0.9
    assert abs(power - exact) < 4 * se, (power, exact, se)
    assert not any(c == verdicts.WORSE for c in called)


@pytest.mark.parametrize("n_runs", [8, 32])
def test_under_the_null_the_rejection_rate_is_the_stated_level(n_runs):
    """No difference: the rate of any call is ``level`` within 4 binomial s.e. (not above it, and
    not far below it either, which would say the p-values are wrong)."""
    test = verdicts.paired_t(_runs(np.random.default_rng(3 + n_runs), n_runs, 0.0))
    rate = np.mean(test["p"] < LEVEL)
    se = np.sqrt(LEVEL * (1 - LEVEL) / DRAWS)
    assert abs(rate - LEVEL) < 4 * se, rate


def test_the_interval_covers_the_true_difference_at_its_stated_rate():
    test = verdicts.paired_t(_runs(np.random.default_rng(5), 8, 0.5))  # true mean difference -0.5
    cover = np.mean((test["low"] <= -0.5) & (-0.5 <= test["high"]))
    assert abs(cover - (1 - LEVEL)) < 4 * np.sqrt(LEVEL * (1 - LEVEL) / DRAWS), cover


def test_holm_matches_its_definition_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4 * 0.005, 3 * 0.01, 2 * 0.03, max(0.06, 1 * 0.04)
    np.testing.assert_allclose(verdicts.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    np.testing.assert_allclose(verdicts.holm([0.5, 0.9]), [1.0, 1.0])
    assert verdicts.holm([]).size == 0


def test_holm_controls_the_family_wise_rate_of_a_claim():
    """A claim of 18 tests (3 metrics x 2 references x 3 sizes) on 32 runs: 12 true nulls, 6 with a
    true difference. Without correction some null is called in about 1 - 0.95^12 = 46% of draws;
    with Holm the rate of any false call is at most ``level`` (within 4 s.e.); the true ones are
    still found."""
    rng = np.random.default_rng(6)
    draws = 5000
    effects = np.array([0.0] * 12 + [1.5] * 6)
    d = np.stack([_runs(rng, 32, e, draws) for e in effects], axis=1)  # (draws, tests, runs)
    p = verdicts.paired_t(d)["p"]
    null = effects == 0
    raw_fwer = np.mean((p[:, null] < LEVEL).any(axis=1))
    adjusted = verdicts.holm(p)
    fwer = np.mean((adjusted[:, null] < LEVEL).any(axis=1))
    assert raw_fwer > 0.3
    assert fwer <= _rate_bound(LEVEL, draws), fwer
    assert np.mean(adjusted[:, ~null] < LEVEL) > 0.9


def _fake_runs(n, shift, seed=0):
    """Runs whose method "B" puts ``shift`` more probability on the true class than "A" (the
    reference), with run-to-run spread."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=40)
    runs = []
    for i in range(n):
        p = rng.uniform(0.55, 0.8, size=40)
        a = np.where(labels == 1, p, 1 - p)
        b = np.clip(np.where(labels == 1, p + shift, 1 - p - shift), 0.01, 0.99)
        runs.append({"seed": i, "labels": labels.tolist(), "methods": {
            "A": {"probs": np.stack([1 - a, a], 1).tolist()}, "B": {"probs": np.stack([1 - b, b], 1).tolist()}}})
    return runs


def test_paired_verdicts_call_only_with_seven_degrees_of_freedom_and_name_the_correction():
    rows = verdicts.paired_verdicts("d", _fake_runs(16, 0.1), ["B"], references=("A",))
    by = {(r["size"], r["metric"]): r for r in rows}
    assert {s for s, _ in by} == {1, 2, 4}
    # 16 runs: sizes 1 and 2 have 15 and 7 d.f. and are tested; size 4 has 3 d.f. and calls nothing
    assert by[1, "nll"]["verdict"] == verdicts.BETTER and by[1, "nll"]["df"] == 15 and by[1, "nll"]["diff"] < 0
    assert by[2, "ace_top_label"]["df"] == 7 and by[2, "ace_top_label"]["p_holm"] != ""
    assert by[4, "nll"]["verdict"] == "not tested: 3 d.f. < 7" and by[4, "nll"]["p_holm"] == ""
    assert by[4, "nll"]["low"] < by[4, "nll"]["diff"] < by[4, "nll"]["high"]  # shown, not called
    # the claim's family: nll and both ACE readings at sizes 1 and 2 against one reference
    claim = by[1, "nll"]
    assert claim["correction"] == "Holm over 6 tests" and claim["p_holm"] >= claim["p"]
    assert by[1, "accuracy"]["correction"] == "Holm over 2 tests"
    assert verdicts.claim_holds(rows, "d", "B") in {"holds", "holds in part"}
    assert verdicts.claim_holds(rows, "d", "nobody") == "not measured"
    few = verdicts.paired_verdicts("d", _fake_runs(6, 0.3), ["B"], references=("A",))
    assert all(r["verdict"].startswith(verdicts.NOT_TESTED) for r in few)
    assert verdicts.claim_holds(few, "d", "B") == verdicts.NOT_TESTED


def test_paired_verdicts_say_worse_and_not_distinguishable():
    worse = {(r["size"], r["metric"]): r for r in
             verdicts.paired_verdicts("d", _fake_runs(16, -0.1), ["B"], references=("A",))}
    assert worse[1, "nll"]["verdict"] == verdicts.WORSE and worse[1, "accuracy"]["verdict"] == verdicts.WORSE
    same = verdicts.paired_verdicts("d", _fake_runs(16, 0.0), ["B"], references=("A",), sizes=(1,))
    assert {r["verdict"] for r in same} == {verdicts.SAME}
    assert verdicts.claim_holds(same, "d", "B") == "does not hold"


def test_regime_markdown_names_both_ace_readings_the_correction_and_the_claim():
    rows = verdicts.paired_verdicts("d", _fake_runs(16, 0.1), ["B"], references=("A",))
    text = verdicts.regime_markdown("d", [], rows, ["A", "B"], "s", [])
    assert "ACE (top-label)" in text and "ACE (class-wise)" in text and "Holm" in text
    assert "| B | A | 4 | 3 |" in text and "not tested: 3 d.f. < 7" in text
    assert "under ACE (top-label) holds" in text or "under ACE (top-label) holds in part" in text
