"""Property: any valid combination of target, scheme, plan and options runs to a result whose
statistics are finite, or is reported as diverged; never an exception from Numba internals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators import SCHEMES, GaussianTarget, LogisticTarget, MultinomialLogisticTarget, sample

pytestmark = pytest.mark.slow


def make_target(kind, rng, d, n):
    if kind == "gaussian":
        roots = rng.normal(size=(n, d, d))
        return GaussianTarget(rng.normal(size=(n, d)), roots @ np.swapaxes(roots, 1, 2) + 0.1 * np.eye(d),
                              prior_precision=0.2 * np.eye(d))
    feats = rng.normal(size=(n, d))
    if kind == "logistic":
        return LogisticTarget(feats, (rng.random(n) > 0.5).astype(float), prior_precision=1.0)
    return MultinomialLogisticTarget(feats, rng.integers(0, 3, size=n), n_classes=3, prior_precision=1.0)


@settings(max_examples=30)
@given(kind=st.sampled_from(["gaussian", "logistic", "multinomial"]), scheme=st.sampled_from(sorted(SCHEMES)),
       plan=st.sampled_from(["full", "iid", "rr", "sms"]), d=st.integers(1, 3), n=st.integers(1, 9),
       bs_frac=st.floats(0.0, 1.0), h=st.floats(1e-3, 2.0), gamma=st.floats(0.1, 10.0), cv=st.booleans(),
       box=st.booleans(), seed=st.integers(0, 1000))
def test_any_valid_configuration_runs(kind, scheme, plan, d, n, bs_frac, h, gamma, cv, box, seed):
    rng = np.random.default_rng(seed)
    target = make_target(kind, rng, d, n)
    batch_size = max(1, int(round(bs_frac * n)))
    kwargs = {}
    if box:
        kwargs = {"box_center": np.zeros(target.dim), "box_half_width": np.full(target.dim, 3.0)}
    res = sample(target, scheme, plan, h=h, gamma=gamma, n_chains=3, n_steps=60, burn_in=10, seed=seed,
                 batch_size=None if plan == "full" else batch_size, control_variate=cv, keep=2, **kwargs)
    assert np.all(np.isfinite(res.chain_mean)) and np.all(np.isfinite(res.chain_second_moment))
    if res.n_diverged < 3:
        assert np.all(np.isfinite(res.mean)) and np.all(np.isfinite(res.variance))
    else:
        assert "DIVERGED" in res.summary()
    if box:
        ok = res.ok
        assert np.all(np.abs(res.samples[ok]) <= 3.0 + 1e-9)


@settings(max_examples=8)
@given(kind=st.sampled_from(["gaussian", "multinomial"]), scheme=st.sampled_from(sorted(SCHEMES)),
       plan=st.sampled_from(["full", "iid", "rr", "sms"]), coupling=st.sampled_from(["shared", "independent"]),
       d=st.integers(1, 3), n=st.integers(1, 7), h=st.floats(1e-3, 0.5), cv=st.booleans(),
       seed=st.integers(0, 1000))
def test_any_valid_coupled_configuration_runs(kind, scheme, plan, coupling, d, n, h, cv, seed):
    from bias.coupled import coupled_run
    target = make_target(kind, np.random.default_rng(seed), d, n)
    res = coupled_run(target, scheme, plan, h, n_chains=2, n_coarse_steps=40, burn_in=4, seed=seed,
                      batch_size=None if plan == "full" else max(1, n // 2), coupling=coupling,
                      control_variate=cv)
    if np.all(res.ok):
        assert np.all(np.isfinite(res.difference))
