"""Each Numba step equals a plain-numpy reference step on random states and noise, and each
scheme declares its orders."""

import numpy as np
import pytest
from helpers import gaussian_batch_force, reference_step
from hypothesis import given
from hypothesis import strategies as st

from integrators._bounce import make_box
from integrators.schemes import SCHEMES
from integrators.targets import GaussianTarget, LogisticTarget
from integrators.targets._force import force_data, force_for, lane_force_for


def random_target(rng, d, n):
    means = rng.normal(size=(n, d))
    roots = rng.normal(size=(n, d, d))
    return GaussianTarget(means, roots @ np.swapaxes(roots, 1, 2) + 0.2 * np.eye(d),
                          prior_precision=0.3 * np.eye(d), prior_mean=rng.normal(size=d))


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@given(d=st.integers(1, 4), n=st.integers(1, 12), h=st.floats(1e-3, 0.5), gamma=st.floats(0.05, 20.0),
       seed=st.integers(0, 2**31), scale=st.sampled_from([1.0, 2.0, 3.5]), chains=st.integers(1, 5),
       cv=st.booleans())
@pytest.mark.slow
def test_numba_step_matches_numpy_reference(scheme, d, n, h, gamma, seed, scale, chains, cv):
    """A block of chains, each with its own state, noise and batch: every chain's step equals the
    reference step (so chains never leak into each other)."""
    rng = np.random.default_rng(seed)
    target = random_target(rng, d, n)
    n_b = int(rng.integers(1, n + 1))
    batches = np.array([rng.choice(n, size=n_b, replace=False) for _ in range(chains)], dtype=np.int64)
    x, v, g0 = rng.normal(size=(chains, d)), rng.normal(size=(chains, d)), rng.normal(size=(chains, d))
    dW, J = rng.normal(size=(2, chains, d)) * 0.3, rng.normal(size=(2, chains, d)) * 0.3
    x_ref = rng.normal(size=d) if cv else None
    module = SCHEMES[scheme]
    xs, vs, gs = x.copy(), v.copy(), g0.copy()
    module.step(xs, vs, gs, module.coefficients(h, gamma), np.ascontiguousarray(dW.transpose(0, 2, 1)),
                np.ascontiguousarray(J.transpose(0, 2, 1)), lane_force_for(target),
                np.ascontiguousarray(batches.T), n_b, scale, force_data(target, cv, x_ref), make_box(d))
    for c in range(chains):
        want = reference_step(scheme, x[c], v[c], g0[c], h, gamma, dW[:, c], J[:, c],
                              lambda y, c=c: gaussian_batch_force(target, y, batches[c], scale, x_ref))
        for got, ref in zip((xs[c], vs[c], gs[c]), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_lane_force_of_a_generic_target_matches_the_chain_force():
    """Targets without a vectorized gradient get the chain-by-chain lane force (logistic here)."""
    rng = np.random.default_rng(1)
    target = LogisticTarget(rng.normal(size=(7, 3)), rng.integers(0, 2, size=7), prior_precision=2.0)
    tdata = force_data(target, control_variate=True, x_ref=rng.normal(size=3))
    x = rng.normal(size=(4, 3))
    batches = np.array([rng.choice(7, size=3, replace=False) for _ in range(4)], dtype=np.int64)
    lanes = np.zeros((4, 3))
    lane_force_for(target)(x, lanes, np.ascontiguousarray(batches.T), 3, 2.5, tdata)
    for c in range(4):
        one = np.zeros(3)
        force_for(target)(x[c], one, batches[c], 3, 2.5, tdata)
        np.testing.assert_array_equal(lanes[c], one)
