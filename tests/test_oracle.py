"""The exact oracle: agreement with the Monte Carlo kernels for every scheme x plan, the
order claims on the 1-D example, and instability reporting."""

import math

import numpy as np
import pytest
from helpers import family_z
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from integrators import SCHEMES, GaussianTarget, sample
from integrators.plans import period
from theory_checks._declared import asserted, expected_weak_order, registered_pairs
from theory_checks.oracle import (
    UnstableStepError,
    count_orders,
    spectral_radius,
    stationary_covariance,
    stationary_full,
    stationary_moments,
)

T1 = GaussianTarget.one_d_example()
PAIRS = registered_pairs()
# every sampler with a claimed weak order, except an x-marginal declared exact (its own test)
SLOPES = [(s, p, expected_weak_order(s, p)) for s, p in PAIRS if expected_weak_order(s, p) is not None
          and asserted(s, p) and not (p == "full" and getattr(SCHEMES[s], "EXACT_GAUSSIAN_X", False))]


def random_target(rng, d, n):
    means = rng.normal(size=(n, d))
    roots = rng.normal(size=(n, d, d)) / math.sqrt(d)
    precs = roots @ np.swapaxes(roots, 1, 2) + 0.3 * np.eye(d)
    return GaussianTarget(means, precs, prior_precision=0.5 * np.eye(d))


@pytest.mark.parametrize("scheme,plan", PAIRS)
@settings(max_examples=8)
@given(d=st.integers(1, 4), n=st.integers(2, 3), frac=st.floats(0.1, 0.6), gamma=st.floats(0.5, 3.0),
       seed=st.integers(0, 10_000), bs=st.integers(1, 2))
@pytest.mark.slow
def test_oracle_matches_monte_carlo_within_4_se(scheme, plan, d, n, frac, gamma, seed, bs):
    rng = np.random.default_rng(seed)
    target = random_target(rng, d, n)
    bs = min(bs, n)
    big = np.linalg.eigvalsh(target.precision).max() * (n if plan != "full" else 1)
    h = frac / math.sqrt(big) * (0.3 if scheme == "em" else 1.0)
    try:
        exact = stationary_moments(target, scheme, plan, h, gamma, batch_size=bs)
    except UnstableStepError:
        assume(False)
    small = np.linalg.eigvalsh(target.precision).min()
    relax = 5.0 * max(1.0 / gamma, gamma / small) / h
    per = period(plan, n, bs)
    burn = per * int(relax / per + 1)
    steps = burn + per * int(3000 / per + 1)
    res = sample(target, scheme, plan, h=h, gamma=gamma, n_chains=256, n_steps=steps, burn_in=burn,
                 batch_size=bs, seed=seed, full_moments=True, x0=target.mean)
    z = family_z(d + d * (d + 1) // 2)  # 4.3-5.0 standard errors for the d means and second moments
    mean_err = np.abs(res.mean - exact.mean)
    assert np.all(mean_err < z * res.mean_se), (mean_err / res.mean_se, z)
    outer = res.chain_outer
    est = outer.mean(axis=0)
    se = outer.std(axis=0, ddof=1) / math.sqrt(outer.shape[0])
    iu = np.triu_indices(d)
    assert np.all(np.abs(est - exact.second_moment)[iu] < z * se[iu] + 1e-12)


LADDER = 2.0 ** -np.arange(2, 10)


def oracle_biases(scheme, plan):
    out = []
    for h in LADDER:
        try:
            m = stationary_moments(T1, scheme, plan, h, 1.0, batch_size=1)
            out.append(abs(m.variance[0] - T1.covariance[0, 0]))
        except UnstableStepError:
            out.append(np.nan)
    return np.array(out)


@pytest.mark.parametrize("scheme,plan,order", SLOPES)
def test_oracle_bias_slopes_on_the_1d_example(scheme, plan, order):
    bias = oracle_biases(scheme, plan)
    slope = np.polyfit(np.log(LADDER[-4:]), np.log(bias[-4:]), 1)[0]
    assert slope == pytest.approx(order, abs=0.1)


def test_baoab_full_has_exact_x_variance_and_em_is_unstable_at_quarter():
    bias = oracle_biases("baoab", "full")
    assert np.all(bias < 1e-12)
    assert np.isnan(oracle_biases("em", "full")[0])
    with pytest.raises(UnstableStepError, match="em"):
        stationary_moments(T1, "em", "full", 0.25, 1.0)
    assert spectral_radius("em", T1.precision, 0.25, 1.0) > 1
    with pytest.raises(UnstableStepError, match="em"):
        stationary_full("em", T1, 0.25, 1.0)


def test_full_plan_agrees_with_lyapunov_helper():
    hess = np.array([[3.0, 1.0], [1.0, 2.0]])
    target = GaussianTarget(np.zeros((1, 2)), hess[None])
    for scheme in SCHEMES:
        cov = stationary_covariance(scheme, hess, 0.1, 1.5)
        moments = stationary_moments(target, scheme, "full", 0.1, 1.5)
        np.testing.assert_allclose(moments.second_moment, cov[:2, :2], rtol=1e-10, atol=1e-14)


def test_enumeration_limit_is_a_clear_error():
    target = GaussianTarget(np.zeros((12, 1)), np.ones((12, 1, 1)))
    assert count_orders("sms", 12, 1) == math.factorial(12)
    with pytest.raises(ValueError, match="orders"):
        stationary_moments(target, "ubu", "sms", 0.1, 1.0, batch_size=1)
    assert count_orders("rr", 5, 2) == 30  # 5! / (2! 2! 1!)


def test_oracle_bad_input():
    with pytest.raises(ValueError, match="scheme"):
        stationary_moments(T1, "rk4", "full", 0.1)
    with pytest.raises(ValueError, match="batch_size"):
        stationary_moments(T1, "ubu", "sms", 0.1)
    with pytest.raises(ValueError, match="h"):
        stationary_moments(T1, "ubu", "full", -0.1)
