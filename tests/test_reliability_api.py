"""The library side of reliability: missing samples are NaN, divergence is judged on the target's own
scale, disagreeing chains are flagged, and bad input is a ValueError naming it (never a Numba
TypingError, a numpy error or a silent change)."""

import math

import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators import SCHEMES, GaussianTarget, LogisticTarget, MultinomialLogisticTarget, sample
from integrators.backends import THREADS_VARIABLE
from integrators.result import RHAT_WARN
from integrators.targets import DIVERGENCE_SDS

T1 = GaussianTarget.one_d_example()


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(keep=st.integers(41, 200), scheme=st.sampled_from(sorted(SCHEMES)))
def test_samples_never_taken_are_nan_not_zero(keep, scheme):
    res = sample(T1, scheme, "sms", h=0.1, batch_size=1, n_chains=2, n_steps=50, burn_in=10, keep=keep, seed=1)
    assert res.samples.shape == (2, keep, 1)
    assert np.all(np.isfinite(res.samples[:, :40])), "the 40 post-burn-in steps are all kept"
    assert np.all(np.isnan(res.samples[:, 40:])), "entries past the run must be NaN, never 0.0"


@pytest.mark.slow
def test_samples_of_a_diverged_chain_stop_at_its_divergence():
    res = sample(T1, "em", "full", h=0.25, n_chains=3, n_steps=4000, keep=4000, seed=0)
    assert res.n_diverged == 3
    for c, step in enumerate(res.diverged_at):
        assert np.all(np.isfinite(res.samples[c, : step - 1])) and np.all(np.isnan(res.samples[c, step - 1:]))


@pytest.mark.slow
def test_default_divergence_bound_is_the_targets_scale():
    centre, sd = abs(T1.mean[0]), math.sqrt(T1.covariance[0, 0])
    assert T1.divergence_bound() == pytest.approx(centre + DIVERGENCE_SDS * max(sd, 1.0))
    wide = GaussianTarget(means=[[3.0]], precisions=[[[1e-6]]])  # sd 1000: the bound grows with it
    assert wide.divergence_bound() == pytest.approx(3.0 + DIVERGENCE_SDS * 1000.0)
    rng = np.random.default_rng(0)
    feats, labels = rng.normal(size=(30, 3)), rng.integers(0, 2, 30)
    logit = LogisticTarget(feats, labels.astype(float), prior_precision=4.0)
    mode = logit.mode()
    radius, sd = logit.typical_scale()
    assert np.linalg.norm(mode) <= radius and sd == 0.5  # the mode lies within the bound's centre radius


@pytest.mark.slow
def test_chains_on_their_way_out_are_reported_diverged():
    """The issue's repro: EM x iid at h = 0.21 printed mean 1039, var 6.5e11 as an estimate."""
    res = sample(T1, "em", "iid", batch_size=1, h=0.21, n_chains=400, n_steps=3000, seed=5)
    assert res.n_diverged > 300
    assert "diverged" in res.summary() and "WARNING" in res.summary()
    frozen_friction = sample(T1, "em", "full", h=0.1, gamma=1e-8, n_chains=50, n_steps=3000, seed=5)
    assert frozen_friction.diverged  # EM without friction gains energy every step: flagged, not var 3.8e7
    ok = sample(T1, "ubu", "sms", h=0.1, batch_size=1, n_chains=200, n_steps=3000, burn_in=300, seed=5)
    assert not ok.diverged and ok.warnings == [] and "WARNING" not in ok.summary()


@pytest.mark.slow
def test_chains_that_disagree_beyond_their_errors_are_flagged():
    x0 = np.linspace(-30, 30, 40)[:, None]  # chains far apart that have no time to meet
    res = sample(T1, "ubu", "full", h=0.001, n_chains=40, n_steps=100, x0=x0, seed=2)
    assert not res.diverged
    assert res.rhat[0] > RHAT_WARN
    assert any("R-hat" in w for w in res.warnings) and "WARNING" in res.summary()
    long = sample(T1, "ubu", "full", h=0.1, n_chains=40, n_steps=4000, burn_in=400, x0=x0, seed=2)
    assert long.rhat[0] < RHAT_WARN and long.warnings == []


def test_friction_that_freezes_the_chains_is_refused():
    with pytest.raises(ValueError, match="gamma"):
        sample(T1, "ubu", "full", h=0.1, gamma=1e300, n_chains=2, n_steps=10)


@nb.njit
def _two_moments(x, out, test_data):
    out[0] = x[0]
    out[1] = x[0] * x[0]


@nb.njit
def _two_args(x, out):
    out[0] = x[0]


@nb.njit
def _bad_body(x, out, test_data):
    out[0] = test_data[0][0].nonexistent


@pytest.mark.slow
def test_test_functions_with_the_documented_signature_work():
    res = sample(T1, "ubu", "full", h=0.1, n_chains=20, n_steps=400, burn_in=40, seed=0,
                 test_functions=_two_moments, n_test_functions=2)
    assert np.allclose(res.test_means, [res.mean[0], res.second_moment[0]])


@pytest.mark.parametrize("kwargs,match", [
    ({"test_functions": _two_args, "n_test_functions": 1}, "three positional arguments"),
    ({"test_functions": _two_moments.py_func, "n_test_functions": 2}, "Numba function"),
    ({"test_functions": _two_moments, "n_test_functions": 2, "test_data": [np.zeros(2)]}, "tuple"),
    ({"test_functions": _two_moments, "n_test_functions": 2, "test_data": ("abc",)}, r"test_data\[0\]"),
    ({"test_functions": _two_moments, "n_test_functions": 0}, "n_test_functions"),
    ({"test_functions": _bad_body, "n_test_functions": 1, "test_data": (np.zeros(2),)}, "could not be compiled"),
])
@pytest.mark.slow
def test_bad_test_functions_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sample(T1, "ubu", "full", h=0.1, n_chains=2, n_steps=10, **kwargs)


@pytest.mark.parametrize("make,match", [
    (lambda: MultinomialLogisticTarget(np.zeros((0, 3)), np.zeros(0, int)), "at least one row"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array(["a", "b"])), "labels must be integers"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 1e18])), "n_classes"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 1]), n_classes=10**12), "weights"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 1]), n_classes="3"), "n_classes"),
    (lambda: LogisticTarget(np.zeros((0, 2)), np.zeros(0)), "at least one row"),
    (lambda: LogisticTarget(np.ones((2, 2)), ["a", "b"]), "labels"),
    (lambda: LogisticTarget(np.ones((2, 2)), [0, 1], prior_precision="x"), "prior_precision"),
])
def test_bad_targets_raise_value_error_naming_the_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_explicit_n_classes_allows_unseen_classes():
    target = MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 9]), n_classes=10)
    assert target.dim == 30


@pytest.mark.parametrize("kwargs,match", [
    ({"scheme": ["ubu"]}, "scheme"), ({"plan": {"sms": 1}}, "plan"),
    ({"histogram": (0.0, 1.0, 2.7)}, "n_bins"), ({"histogram": (0.0, 1.0)}, "histogram"),
    ({"histogram": "abc"}, "histogram"),
])
def test_unhashable_or_inexact_options_raise_value_error(kwargs, match):
    args = {"scheme": "ubu", "plan": "sms", "h": 0.1, "n_chains": 2, "n_steps": 10, "batch_size": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        sample(T1, **args)


def test_bad_thread_variable_is_named(monkeypatch):
    monkeypatch.setenv(THREADS_VARIABLE, "abc")
    with pytest.raises(ValueError, match=THREADS_VARIABLE):
        sample(T1, "ubu", "full", h=0.1, n_chains=2, n_steps=10)
    monkeypatch.setenv(THREADS_VARIABLE, "1")
    assert sample(T1, "ubu", "full", h=0.1, n_chains=2, n_steps=10).x.shape == (2, 1)
