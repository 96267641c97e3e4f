"""R-hat (integrators._diagnostics) against hand-computed values, ArviZ, and its defining properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators._diagnostics import (
    gelman_rubin_rhat,
    rank_normalized_split_rhat,
    rhat_from_moments,
    split_rhat,
)


def test_classic_rhat_matches_hand_computation():
    # chain means 2 and 5, within variances 1: W = 1, B = 3 * 4.5, var+ = 2/3 + 4.5
    assert gelman_rubin_rhat([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]) == pytest.approx(math.sqrt(2 / 3 + 4.5), rel=1e-12)


def test_split_rhat_matches_hand_computation():
    # halves [1,2] [5,6] [3,4] [7,8]: W = 1/2, B = 2 * 20/3, var+ = W/2 + B/2
    expected = math.sqrt((0.25 + 20 / 3) / 0.5)
    assert split_rhat([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]) == pytest.approx(expected, rel=1e-12)
    # an odd chain drops its middle draw
    assert split_rhat([[1.0, 2.0, 99.0, 3.0, 4.0], [5.0, 6.0, -99.0, 7.0, 8.0]]) == pytest.approx(expected)


def test_rank_normalized_rhat_matches_hand_computation():
    from scipy.stats import norm, rankdata

    draws = np.array([[0.3, -1.2, 2.5, 0.1], [4.0, 3.1, 5.2, 3.3], [0.9, 0.2, -0.4, 1.7]])

    def classic(chains):
        n = chains.shape[1]
        w = chains.var(axis=1, ddof=1).mean()
        b = n * chains.mean(axis=1).var(ddof=1)
        return math.sqrt(((n - 1) / n * w + b / n) / w)

    def z(a):
        return norm.ppf((rankdata(a).reshape(a.shape) - 0.375) / (a.size + 0.25))

    def split(a):
        return np.concatenate([a[:, :2], a[:, 2:]])

    bulk = classic(z(split(draws)))
    tail = classic(z(split(np.abs(draws - np.median(draws)))))
    assert rank_normalized_split_rhat(draws) == pytest.approx(max(bulk, tail), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gelman_rubin_rhat", "split_rhat", "rank_normalized_split_rhat"])
def test_rhat_agrees_with_arviz(name):
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(3)
    draws = rng.standard_normal((4, 101)) + np.array([0.0, 0.1, 0.5, 0.0])[:, None]
    ours = {"gelman_rubin_rhat": gelman_rubin_rhat, "split_rhat": split_rhat,
            "rank_normalized_split_rhat": rank_normalized_split_rhat}[name](draws)
    method = {"gelman_rubin_rhat": "identity", "split_rhat": "split", "rank_normalized_split_rhat": "rank"}[name]
    assert ours == pytest.approx(float(az.rhat(az.convert_to_dataset(draws), method=method)["x"]), rel=1e-10)


def test_coordinates_are_independent_rhats():
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((3, 40, 2))
    draws[1, :, 1] += 3.0
    for fn in (gelman_rubin_rhat, split_rhat, rank_normalized_split_rhat):
        per = fn(draws)
        assert per.shape == (2,)
        assert per[0] == pytest.approx(fn(draws[:, :, 0]))
        assert per[1] == pytest.approx(fn(draws[:, :, 1]))
        assert per[1] > 1.5 > 1.1 > per[0]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shift=st.floats(0.0, 10.0), scale=st.floats(1e-3, 1e3))
def test_rhat_is_affine_invariant_and_grows_with_disagreement(seed, shift, scale):
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((4, 200))
    for fn in (gelman_rubin_rhat, split_rhat):
        assert fn(scale * draws + shift) == pytest.approx(fn(draws), rel=1e-9)
    # ranks are invariant too, up to rounding that splits the folded tie of the two middle draws
    assert rank_normalized_split_rhat(scale * draws + shift) == pytest.approx(
        rank_normalized_split_rhat(draws), rel=1e-3)
    apart = draws + np.array([0.0, 0.0, 0.0, 5.0])[:, None]
    assert gelman_rubin_rhat(apart) > 1.5 and split_rhat(apart) > 1.5 and rank_normalized_split_rhat(apart) > 1.5
    # independent chains of one law: R-hat close to 1 (its deviation is O(1 / n_draws))
    assert abs(gelman_rubin_rhat(draws) - 1) < 0.05


def test_split_rhat_sees_a_trend_within_chains_that_classic_misses():
    trend = np.tile(np.linspace(-3, 3, 200), (4, 1))
    assert gelman_rubin_rhat(trend) == pytest.approx(math.sqrt(199 / 200), rel=1e-9)
    assert split_rhat(trend) > 1.5


def test_rhat_from_moments_equals_rhat_of_the_draws():
    rng = np.random.default_rng(1)
    draws = rng.standard_normal((5, 30, 2)) + rng.standard_normal((5, 1, 2))
    got = rhat_from_moments(draws.mean(axis=1), (draws**2).mean(axis=1), 30)
    assert np.allclose(got, gelman_rubin_rhat(draws), rtol=1e-10)


def test_constant_draws_give_nan_and_constant_disagreeing_chains_give_inf():
    assert math.isnan(gelman_rubin_rhat(np.ones((3, 5))))
    assert math.isnan(rank_normalized_split_rhat(np.ones((3, 5))))
    assert gelman_rubin_rhat([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]) == math.inf


@pytest.mark.parametrize("fn", [gelman_rubin_rhat, split_rhat, rank_normalized_split_rhat])
@pytest.mark.parametrize("bad, word", [
    (np.zeros(10), "shape"), (np.zeros((2, 3, 4, 5)), "shape"), ([["a", "b"], ["c", "d"]], "real numbers"),
    (np.array([[1.0, np.nan, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]]), "non-finite"), (np.zeros((2, 1)), "draws per chain"),
    (np.zeros((2, 4, 0)), "coordinate"), (np.ones((2, 4), dtype=bool), "real numbers"),
])
def test_bad_draws_raise_value_error_naming_them(fn, bad, word):
    with pytest.raises(ValueError, match=word):
        fn(bad)


def test_classic_rhat_needs_two_chains():
    with pytest.raises(ValueError, match="at least 2 chains"):
        gelman_rubin_rhat(np.zeros((1, 10)))
    assert split_rhat(np.arange(10.0)[None, :]) > 1.5  # one chain split in two halves is allowed
