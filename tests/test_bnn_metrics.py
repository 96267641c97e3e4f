"""bnn._metrics: hand-computed cases and properties of the calibration metrics and ensembles."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bnn import _metrics as metrics

pytestmark = pytest.mark.torch


def test_hand_computed_two_points():
    probs = np.array([[0.8, 0.2], [0.4, 0.6]])
    labels = np.array([0, 0])
    assert metrics.accuracy(probs, labels) == 0.5
    assert metrics.nll(probs, labels) == pytest.approx(-(np.log(0.8) + np.log(0.4)) / 2)
    # Brier: (0.2^2 + 0.2^2 + 0.6^2 + 0.6^2) / 2; RPS (K = 2): ((0.8 - 1)^2 + (0.4 - 1)^2) / 2
    assert metrics.brier(probs, labels) == pytest.approx((0.08 + 0.72) / 2)
    assert metrics.rps(probs, labels) == pytest.approx((0.04 + 0.36) / 2)
    # ECE, 15 bins: confidences 0.8 (correct) and 0.6 (wrong) in separate bins -> (0.2 + 0.6) / 2
    assert metrics.ece(probs, labels) == pytest.approx(0.4)


def test_nll_clips_log_probabilities_at_minus_100():
    assert metrics.nll(np.array([[1.0, 0.0]]), np.array([1])) == 100.0


def _calibrated(counts):
    """Groups of m points whose predicted probabilities are the groups' label frequencies."""
    probs, labels = [], []
    for c in counts:
        m = c.sum()
        for k, n_k in enumerate(c):
            labels += [k] * int(n_k)
            probs += [c / m] * int(n_k)
    return np.array(probs), np.array(labels)


@given(st.integers(2, 5), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_both_aces_and_ece_vanish_for_predictions_calibrated_by_construction(n_classes, m_factor, seed):
    rng = np.random.default_rng(seed)
    m = 5 * m_factor
    counts = [rng.multinomial(m, rng.dirichlet(np.ones(n_classes))) for _ in range(20)]  # 20 groups = 20 ACE bins
    probs, labels = _calibrated(counts)
    # a stable sort keeps each group contiguous, so every equal-count bin is one group
    assert metrics.ace_classwise(probs, labels) == pytest.approx(0.0, abs=1e-12)
    assert metrics.ace_top_label(probs, labels) == pytest.approx(0.0, abs=1e-12)
    assert metrics.ece(probs, labels) == pytest.approx(0.0, abs=1e-12)


def test_both_aces_are_positive_for_overconfident_predictions():
    probs, labels = _calibrated([np.array([3, 2])] * 20)
    sharp = np.where(probs > 0.5, 0.9, 0.1)
    # top label: confidence 0.9, accuracy 0.6 in every bin; class-wise: 0.3 for both probabilities of both classes
    assert metrics.ace_top_label(sharp, labels) == pytest.approx(0.3, abs=1e-12)
    assert metrics.ace_classwise(sharp, labels) > 0.1 and metrics.ece(sharp, labels) > 0.1


def _equal_count_chunks(keys, n_bins):
    """Indices sorted by (key, index), cut into min(n_bins, n) runs, the first n % B one longer."""
    order = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    b = min(n_bins, len(order))
    sizes = [len(order) // b + (1 if j < len(order) % b else 0) for j in range(b)]
    starts = [sum(sizes[:j]) for j in range(b)]
    return [order[s:s + z] for s, z in zip(starts, sizes, strict=True)]


def _slow_ace_top_label(probs, labels, n_bins):
    conf = [max(row) for row in probs]
    hit = [float(list(row).index(max(row)) == y) for row, y in zip(probs, labels, strict=True)]
    errs = [abs(sum(hit[i] for i in c) / len(c) - sum(conf[i] for i in c) / len(c))
            for c in _equal_count_chunks(conf, n_bins)]
    return sum(errs) / len(errs)


def _slow_ace_classwise(probs, labels, n_bins):
    errs = []
    for k in range(len(probs[0])):
        pk = [row[k] for row in probs]
        for c in _equal_count_chunks(pk, n_bins):
            errs.append(abs(sum(labels[i] == k for i in c) / len(c) - sum(pk[i] for i in c) / len(c)))
    return sum(errs) / len(errs)


@given(st.integers(1, 70), st.integers(2, 5), st.integers(1, 25), st.booleans(), st.integers(0, 2**31 - 1))
def test_both_aces_match_a_slow_reading_of_their_definitions(n, n_classes, n_bins, rounded, seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(n_classes), size=n)
    if rounded:  # ties in the sorted probabilities and in the argmax
        probs = np.round(probs, 1)
        probs[:, -1] = 1.0 - probs[:, :-1].sum(axis=1)
        probs = np.clip(probs, 0.0, 1.0)
        probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, size=n)
    assert metrics.ace_top_label(probs, labels, n_bins=n_bins) == pytest.approx(
        _slow_ace_top_label(probs.tolist(), labels.tolist(), n_bins), abs=1e-12)
    assert metrics.ace_classwise(probs, labels, n_bins=n_bins) == pytest.approx(
        _slow_ace_classwise(probs.tolist(), labels.tolist(), n_bins), abs=1e-12)


def test_the_two_aces_order_two_ten_class_predictors_oppositely():
    """Ten classes, 80% of the argmax labels right, the wrong ones on the next class. P: top label
    calibrated (0.8), its remaining 0.2 on a class that is never the label; Q: overconfident (0.95),
    the rest spread thin. Top-label ACE prefers P; class-wise ACE, where Q's near-zero probabilities
    of the nine other classes fill 18 of every class's 20 bins, prefers Q."""
    rng = np.random.default_rng(0)
    k, n = 10, 2000
    pred = rng.integers(0, k, n)
    labels = np.where(rng.random(n) < 0.8, pred, (pred + 1) % k)
    rows = np.arange(n)
    p_ = np.zeros((n, k))
    p_[rows, pred], p_[rows, (pred + 2) % k] = 0.8, 0.2
    q_ = np.full((n, k), 0.05 / (k - 1))
    q_[rows, pred] = 0.95
    top = {name: _slow_ace_top_label(x.tolist(), labels.tolist(), 20) for name, x in (("P", p_), ("Q", q_))}
    cw = {name: _slow_ace_classwise(x.tolist(), labels.tolist(), 20) for name, x in (("P", p_), ("Q", q_))}
    assert top["P"] < top["Q"] and cw["P"] > cw["Q"]  # the construction does what it says
    assert metrics.ace_top_label(p_, labels) == pytest.approx(top["P"], abs=1e-12)
    assert metrics.ace_top_label(q_, labels) == pytest.approx(top["Q"], abs=1e-12)
    assert metrics.ace_classwise(p_, labels) == pytest.approx(cw["P"], abs=1e-12)
    assert metrics.ace_classwise(q_, labels) == pytest.approx(cw["Q"], abs=1e-12)


def test_evaluate_names_both_ace_readings():
    probs, labels = _calibrated([np.array([3, 2])] * 20)
    scores = metrics.evaluate(np.where(probs > 0.5, 0.9, 0.1), labels)
    assert {"ace_top_label", "ace_classwise"} <= set(scores) and "ace" not in scores
    assert scores["ace_top_label"] == pytest.approx(0.3, abs=1e-12)


@given(st.integers(1, 30), st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_rps_and_brier_match_their_definitions(n, n_classes, seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(n_classes), size=n)
    labels = rng.integers(0, n_classes, size=n)
    rps = brier = 0.0
    for p, y in zip(probs, labels, strict=True):
        for k in range(n_classes):
            rps += (sum(p[: k + 1]) - (1.0 if y <= k else 0.0)) ** 2 / (n_classes - 1)
            brier += (p[k] - (1.0 if y == k else 0.0)) ** 2
    assert metrics.rps(probs, labels) == pytest.approx(rps / n, rel=1e-12)
    assert metrics.brier(probs, labels) == pytest.approx(brier / n, rel=1e-12)


@given(st.integers(1, 6), st.integers(1, 20), st.integers(0, 2**31 - 1))
def test_ensemble_nll_is_minus_log_mean_probability_of_true_class(m, n, seed):
    rng = np.random.default_rng(seed)
    run_probs = rng.dirichlet(np.ones(3), size=(m, n))
    labels = rng.integers(0, 3, size=n)
    expected = -np.mean([np.log(np.mean([run_probs[j, i, labels[i]] for j in range(m)])) for i in range(n)])
    assert metrics.nll(metrics.ensemble_probs(run_probs), labels) == pytest.approx(expected, rel=1e-12)


def test_ensemble_scores_use_disjoint_groups():
    rng = np.random.default_rng(0)
    run_probs = rng.dirichlet(np.ones(2), size=(8, 50))
    labels = rng.integers(0, 2, size=50)
    scores = {(s.size, s.metric): s for s in metrics.ensemble_scores(run_probs, labels)}
    assert sorted({s for s, _ in scores}) == [1, 2, 4, 8]
    pair = [metrics.nll(run_probs[2 * g:2 * g + 2].mean(0), labels) for g in range(4)]
    assert scores[2, "nll"].mean == pytest.approx(np.mean(pair))
    assert scores[2, "nll"].std == pytest.approx(np.std(pair, ddof=1))
    assert scores[8, "nll"].n_groups == 1 and np.isnan(scores[8, "nll"].std)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="labels outside"):
        metrics.accuracy(np.array([[0.5, 0.5]]), np.array([2]))
    with pytest.raises(ValueError, match="run_probs"):
        metrics.ensemble_probs(np.ones((2, 3)))
    with pytest.raises(ValueError, match="ensemble size 3"):
        metrics.ensemble_scores(np.full((2, 4, 2), 0.5), np.zeros(4, int), sizes=[3])
