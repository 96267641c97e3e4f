"""bnn.metrics: hand-computed cases and properties of the calibration metrics and ensembles."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bnn import metrics

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
def test_ace_and_ece_vanish_for_predictions_calibrated_by_construction(n_classes, m_factor, seed):
    rng = np.random.default_rng(seed)
    m = 5 * m_factor
    counts = [rng.multinomial(m, rng.dirichlet(np.ones(n_classes))) for _ in range(20)]  # 20 groups = 20 ACE bins
    probs, labels = _calibrated(counts)
    assert metrics.ace(probs, labels) == pytest.approx(0.0, abs=1e-12)
    assert metrics.ece(probs, labels) == pytest.approx(0.0, abs=1e-12)


def test_ace_is_positive_for_overconfident_predictions():
    probs, labels = _calibrated([np.array([3, 2])] * 20)
    sharp = np.where(probs > 0.5, 0.9, 0.1)
    assert metrics.ace(sharp, labels) > 0.1 and metrics.ece(sharp, labels) > 0.1


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
