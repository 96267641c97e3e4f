"""integrators._result: a SampleResult's statistics are those of the chains that did not diverge
(pooled by integrators._chain_summary, tested in tests/test_chain_summary.py), built here by hand."""

import numba as nb
import numpy as np
import pytest

from integrators import GaussianTarget, sample
from integrators._result import SampleResult


def result(diverged_at, chain_mean, chain_second_moment, chain_tests=None):
    n, d = np.shape(chain_mean)
    nan = np.full((n, d), np.nan)
    return SampleResult("ubu", "sms", 0.1, 1.0, 110, 10, 0, np.asarray(chain_mean, float),
                        np.asarray(chain_second_moment, float), None, chain_tests, None,
                        np.asarray(diverged_at), nan, nan)


def test_statistics_read_only_the_chains_that_did_not_diverge():
    res = result([-1, 40, -1], [[1.0], [np.nan], [3.0]], [[2.0], [np.nan], [10.0]],
                 chain_tests=np.array([[0.5], [np.nan], [1.5]]))
    assert res.ok.tolist() == [True, False, True] and res.n_diverged == 1 and res.diverged
    assert res.first_divergence_step == 40
    np.testing.assert_allclose(res.mean, [2.0])
    np.testing.assert_allclose(res.second_moment, [6.0])
    np.testing.assert_allclose(res.variance, [6.0 - 4.0])
    np.testing.assert_allclose(res.test_means, [1.0])
    assert np.all(np.isfinite(res.mean_se)) and res.mean_se[0] > 0
    assert "ubu x sms" in res.summary()


def test_a_result_whose_chains_all_diverged_names_the_first_step_instead_of_an_estimate():
    res = result([7, 3], [[np.nan], [np.nan]], [[np.nan], [np.nan]])
    assert res.n_diverged == 2 and res.first_divergence_step == 3
    for statistic in ("mean", "variance", "mean_se"):
        with pytest.raises(RuntimeError, match=r"every chain diverged in ubu x sms at h=0.1 \(first at step 3\)"):
            getattr(res, statistic)


@nb.njit
def half_nan_tests(x, out, test_data):
    out[0] = x[0]
    out[1] = np.nan if x[0] > 0 else np.inf


def test_a_test_function_that_writes_non_finite_values_is_warned_of():
    """Its means were NaN with no warning: a reader took them for estimates."""
    res = sample(GaussianTarget.one_d_example(), "ubu", "sms", h=0.1, batch_size=1, n_chains=4, n_steps=50, seed=0,
                 test_functions=half_nan_tests, n_test_functions=2)
    assert np.isfinite(res.test_means[0]) and not np.isfinite(res.test_means[1])
    warning = [w for w in res.warnings if "half_nan_tests" in w]
    assert len(warning) == 1 and "gave non-finite means" in warning[0] and "at indices [1] of out" in warning[0]
    assert "WARNING: test function" in res.summary()
    fine = result([-1, -1], [[1.0], [3.0]], [[2.0], [10.0]], chain_tests=np.array([[0.5], [1.5]]))
    assert not any("test function" in w for w in fine.warnings)
