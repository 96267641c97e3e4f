"""Elastic bounce, SMS-GHMC, and target gradients."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrators import SCHEMES, GaussianTarget, LogisticTarget, MultinomialLogisticTarget, RunSpec, sample, sms_ghmc
from integrators._bounce import make_box, reflect

T1 = GaussianTarget.one_d_example()


def reflect_by_walls(y, v, w):
    """Reference: reflect at the violated wall until inside, counting crossings."""
    crossings = 0
    while y > w or y < -w:
        y = 2 * w - y if y > w else -2 * w - y
        v, crossings = -v, crossings + 1
    return y, v, crossings


@given(d=st.integers(1, 4), seed=st.integers(0, 2**31), widths=st.floats(0.0, 7.0))
def test_reflection_lands_in_box_and_flips_once_per_crossing(d, seed, widths):
    rng = np.random.default_rng(seed)
    center, half = rng.normal(size=d), rng.uniform(0.1, 3.0, size=d)
    offsets = rng.uniform(-1, 1, size=d) * (1 + widths) * half
    x, v = center + offsets, rng.normal(size=d)
    xr, vr = x.copy()[None, :], v.copy()[None, :]  # a block of one chain
    reflect(xr, vr, make_box(d, center, half))
    xr, vr = xr[0], vr[0]
    assert np.all(np.abs(xr - center) <= half * (1 + 1e-12))
    np.testing.assert_allclose(np.abs(vr), np.abs(v), rtol=0, atol=0)
    for a in range(d):
        y, vv, _ = reflect_by_walls(offsets[a], v[a], half[a])
        assert xr[a] - center[a] == pytest.approx(y, abs=1e-9 * (1 + widths))
        assert vr[a] == vv


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_every_scheme_stays_in_box(scheme):
    """A box much narrower than the target, large steps: positions overshoot by several widths."""
    res = sample(T1, scheme, "sms", h=0.2, gamma=1.0, n_chains=20, n_steps=2000, batch_size=1,
                 box_center=[-0.9], box_half_width=[0.05], x0=[-0.9], keep=2000,
                 v0=np.full(1, 3.0))
    assert not res.diverged
    assert np.all(np.abs(res.samples + 0.9) <= 0.05 + 1e-12)


@pytest.mark.slow
def test_ghmc_acceptance_tends_to_one():
    rates = [sms_ghmc(RunSpec.from_options(T1, plan="sms", h=h, batch_size=1, n_steps=400, n_chains=8, seed=1),
                      n_sweeps=2).acceptance_rate
             for h in (0.4, 0.1, 0.02, 0.005)]
    assert all(b >= a - 0.01 for a, b in zip(rates, rates[1:], strict=False)), rates
    assert rates[-1] > 0.99


@pytest.mark.slow
def test_ghmc_matches_target_moments():
    res = sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1, n_steps=4000, burn_in=400, n_chains=64,
                                        seed=2), n_sweeps=3, alpha=0.5)
    assert abs(res.mean[0] - T1.mean[0]) < 4 * res.mean_se[0]
    assert abs(res.variance[0] - T1.covariance[0, 0]) < 4 * res.variance_se[0]
    assert 0.5 < res.acceptance_rate < 1.0


@pytest.mark.slow
def test_ghmc_that_accepts_nothing_says_so_instead_of_reporting_its_start():
    """At h = 1e6 every proposal is rejected: the chains stay at x0, and mean 0 with standard
    error 0 used to be reported as an estimate without a word."""
    stuck = sms_ghmc(RunSpec.from_options(T1, plan="sms", h=1e6, batch_size=1, n_steps=20, n_chains=4, seed=3))
    assert stuck.acceptance_rate == 0.0
    assert any("accepted no proposal" in w for w in stuck.warnings)
    assert "WARNING" in stuck.summary()
    fine = sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.05, batch_size=1, n_steps=200, n_chains=4, seed=3))
    assert fine.warnings == [] and "WARNING" not in fine.summary()


def test_ghmc_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1, n_chains=16), alpha=1.0)
    with pytest.raises(ValueError, match="batch_size"):
        sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=5, n_chains=16))
    with pytest.raises(ValueError, match="divergence_bound"):
        sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1, divergence_bound=-1.0, n_chains=16))
    with pytest.raises(TypeError):
        sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1), 2)  # options are keyword-only


@pytest.mark.slow
def test_ghmc_chains_depend_on_their_index_only_and_divergence_is_reported():
    """SMS-GHMC runs on the stepping core: chain c's numbers depend on the seed and c only (its
    own streams), and a chain beyond the divergence bound is reported at its step, parked and
    returned as NaN, as in ``sample``."""
    few = sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1, n_steps=60, n_chains=3, seed=4),
                   n_sweeps=2)
    more = sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1, n_steps=60, n_chains=7, seed=4),
                    n_sweeps=2)
    for f in ("chain_mean", "chain_second_moment", "chain_acceptance", "x"):
        np.testing.assert_array_equal(getattr(few, f), getattr(more, f)[:3], err_msg=f)
    assert few.acceptance_rate > 0.5 and np.all(few.diverged_at < 0)
    tight = sms_ghmc(RunSpec.from_options(T1, plan="sms", h=0.1, batch_size=1, n_steps=20, n_chains=4,
                                          divergence_bound=1e-3))
    assert np.all(tight.diverged_at == 1) and np.all(np.isnan(tight.x))


def finite_difference_grad(target, x, eps=1e-6):
    out = np.zeros_like(x)
    for a in range(x.size):
        e = np.zeros_like(x)
        e[a] = eps
        out[a] = (target.value(x + e) - target.value(x - e)) / (2 * eps)
    return out


@pytest.mark.slow
def test_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(20, 4))
    targets = [
        GaussianTarget(rng.normal(size=(3, 2)), np.stack([np.eye(2) * (i + 1) for i in range(3)]),
                       prior_precision=np.eye(2)),
        LogisticTarget(feats, (rng.random(20) > 0.5).astype(float), prior_precision=2.0),
        MultinomialLogisticTarget(feats, rng.integers(0, 3, size=20), n_classes=3, prior_precision=50.0),
    ]
    for target in targets:
        x = rng.normal(size=target.dim) * 0.3
        np.testing.assert_allclose(target.full_grad(x), finite_difference_grad(target, x),
                                   rtol=1e-5, atol=1e-6)


def test_gaussian_exact_posterior_and_mode():
    assert T1.mean[0] == pytest.approx((-1 * 4 + 1 * 0.25) / 4.25)
    assert T1.covariance[0, 0] == pytest.approx(1 / 4.25)
    np.testing.assert_allclose(T1.mode(), T1.mean, atol=1e-7)
    assert math.isfinite(T1.value(np.zeros(1)))
