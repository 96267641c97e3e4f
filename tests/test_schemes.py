"""Each Numba step equals a plain-numpy reference step on random states and noise, and each
scheme declares its orders."""

import numpy as np
import pytest
from helpers import gaussian_batch_force, reference_step
from hypothesis import given
from hypothesis import strategies as st

from integrators.bounce import make_box
from integrators.schemes import SCHEMES
from integrators.targets import GaussianTarget, force_data, force_for


def random_target(rng, d, n):
    means = rng.normal(size=(n, d))
    roots = rng.normal(size=(n, d, d))
    return GaussianTarget(means, roots @ np.swapaxes(roots, 1, 2) + 0.2 * np.eye(d),
                          prior_precision=0.3 * np.eye(d), prior_mean=rng.normal(size=d))


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@given(d=st.integers(1, 4), n=st.integers(1, 6), h=st.floats(1e-3, 0.5), gamma=st.floats(0.05, 20.0),
       seed=st.integers(0, 2**31), scale=st.sampled_from([1.0, 2.0, 3.5]))
def test_numba_step_matches_numpy_reference(scheme, d, n, h, gamma, seed, scale):
    rng = np.random.default_rng(seed)
    target = random_target(rng, d, n)
    batch = rng.choice(n, size=rng.integers(1, n + 1), replace=False).astype(np.int64)
    x, v, g0 = rng.normal(size=d), rng.normal(size=d), rng.normal(size=d)
    dW, J = rng.normal(size=(2, d)) * 0.3, rng.normal(size=(2, d)) * 0.3
    module = SCHEMES[scheme]
    xs, vs, gs = x.copy(), v.copy(), g0.copy()
    module.step(xs, vs, gs, module.coefficients(h, gamma), dW, J, force_for(target), batch,
                len(batch), scale, force_data(target), make_box(d))
    want = reference_step(scheme, x, v, g0, h, gamma, dW, J,
                          lambda y: gaussian_batch_force(target, y, batch, scale))
    for got, ref in zip((xs, vs, gs), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_declared_orders():
    expected = {"em": (1, 1), "baoab": (2, 1), "ubu": (2, 2), "obabo": (2, 1)}
    for name, (weak, strong) in expected.items():
        assert (SCHEMES[name].WEAK_ORDER, SCHEMES[name].STRONG_ORDER) == (weak, strong)
    assert SCHEMES["baoab"].FSAL and SCHEMES["obabo"].FSAL
    assert not SCHEMES["ubu"].FSAL and not SCHEMES["em"].FSAL
