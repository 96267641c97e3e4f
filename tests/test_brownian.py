"""The path law: exact Cholesky factors, exact sample covariances, exact coarsening."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrators._brownian import BrownianPath, coarsen, draw_pairs, pair_cholesky, pair_covariance


@mp.workdps(60)  # (a local precision: other test files set mpmath's global one, in the same process)
def mp_cholesky(gamma, tau):
    g, t = mp.mpf(gamma), mp.mpf(tau)
    cov = -mp.expm1(-g * t) / g
    var_j = -mp.expm1(-2 * g * t) / (2 * g)
    l11 = mp.sqrt(t)
    l21 = cov / l11
    return l11, l21, mp.sqrt(var_j - l21**2)


@given(log_x=st.floats(math.log(1e-9), math.log(50.0)), log_gamma=st.floats(-5.0, 5.0))
def test_cholesky_matches_mpmath(log_x, log_gamma):
    gamma = math.exp(log_gamma)
    tau = math.exp(log_x) / gamma
    got = pair_cholesky(gamma, tau)
    want = mp_cholesky(gamma, tau)
    for g_val, w_val in zip(got, want, strict=True):
        assert abs(g_val - float(w_val)) <= 1e-12 * float(abs(w_val))


@pytest.mark.parametrize("x", [1e-9, 1e-4, 0.3, 0.5, 0.7, 2.0, 50.0])
def test_cholesky_edges_match_mpmath(x):
    got = pair_cholesky(1.0, x)
    want = mp_cholesky(1.0, x)
    for g_val, w_val in zip(got, want, strict=True):
        assert abs(g_val - float(w_val)) <= 1e-12 * float(abs(w_val))


def assert_covariance_within_4_se(dW, J, cov):
    """Sample second moments of zero-mean Gaussian pairs against ``cov``; for zero-mean
    Gaussians Var(X Y) = S_xx S_yy + S_xy^2."""
    n = dW.size
    pairs = [(dW, dW, 0, 0), (dW, J, 0, 1), (J, J, 1, 1)]
    for a, b, i, j in pairs:
        est = np.mean(a * b)
        se = math.sqrt((cov[i, i] * cov[j, j] + cov[i, j] ** 2) / n)
        assert abs(est - cov[i, j]) < 4 * se, (i, j, est, cov[i, j], se)


@pytest.mark.parametrize("gamma,tau", [(1.0, 0.1), (0.01, 1e-3), (10.0, 2.0), (1.0, 1e-8)])
def test_sample_covariance_matches_exact(gamma, tau):
    rng = np.random.default_rng(42)
    dW, J = draw_pairs(rng, gamma, tau, (400_000,))
    assert_covariance_within_4_se(dW, J, pair_covariance(gamma, tau))


@given(gamma=st.floats(1e-3, 30.0), tau=st.floats(1e-6, 2.0), seed=st.integers(0, 2**32))
def test_coarsening_twice_equals_by_four(gamma, tau, seed):
    path = BrownianPath(gamma, tau, n_intervals=16, shape=(3,), seed=seed)
    twice = coarsen(*coarsen(path.dW, path.J, gamma, tau, 1), gamma, 2 * tau, 1)
    by_four = path.pairs(2)
    for a, b in zip(twice, by_four, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15 * math.sqrt(tau))


def test_coarsening_by_explicit_integral():
    """J over a long interval equals the discretized exponential integral of the fine path."""
    gamma, tau, n = 0.7, 1e-5, 2**12
    path = BrownianPath(gamma, tau, n_intervals=n, seed=3)
    dW, J = path.pairs(12)
    ends = tau * np.arange(1, n + 1)
    approx = np.sum(np.exp(-gamma * (n * tau - ends)) * path.dW)
    assert dW[0] == pytest.approx(path.dW.sum(), rel=1e-12)
    assert J[0] == pytest.approx(approx, abs=3 * gamma * tau * math.sqrt(n * tau))


@pytest.mark.parametrize("gamma,tau,levels", [(1.0, 0.05, 2), (3.0, 1e-4, 3), (0.2, 0.5, 1)])
def test_coarse_pair_has_exact_law(gamma, tau, levels):
    path = BrownianPath(gamma, tau, n_intervals=2**levels, shape=(200_000,), seed=7)
    dW, J = path.pairs(levels)
    assert_covariance_within_4_se(dW, J, pair_covariance(gamma, tau * 2**levels))


def test_bad_path_arguments():
    with pytest.raises(ValueError, match="gamma"):
        draw_pairs(np.random.default_rng(0), -1.0, 0.1, (2,))
    with pytest.raises(ValueError, match="tau"):
        draw_pairs(np.random.default_rng(0), 1.0, 0.0, (2,))
    with pytest.raises(ValueError, match="odd"):
        coarsen(np.zeros(3), np.zeros(3), 1.0, 0.1, 1)
