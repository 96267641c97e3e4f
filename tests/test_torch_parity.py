"""The tensor backend is the Numba kernel's mathematics: driven by identical path data and batch
orders, torch (float64, CPU) and Numba trajectories agree to 1e-12 relative over 1,000 steps for
every scheme x plan, on the 1-D example, a d = 3 Gaussian with non-commuting data terms and
multinomial logistic regression (hypothesis over h, gamma, seeds and batch sizes, uneven last
batches included)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from replay import replay  # noqa: E402

from integrators import PLANS, SCHEMES, GaussianTarget, MultinomialLogisticTarget, batch_sequence  # noqa: E402
from integrators._brownian import draw_pairs  # noqa: E402
from integrators.torch._chains import sample_given as torch_sample  # noqa: E402  (given noise and batches)

pytestmark = [pytest.mark.slow, pytest.mark.torch, pytest.mark.usefixtures("one_torch_thread")]  # tests/conftest.py

N_STEPS = 1000
N_CHAINS = 2


def gaussian_3d() -> GaussianTarget:
    """Five data terms whose precisions do not commute (random rotations of different spectra)."""
    rng = np.random.default_rng(3)
    precs = []
    for _ in range(5):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        precs.append(q @ np.diag(rng.uniform(0.2, 1.0, 3)) @ q.T)
    precs = np.array(precs)
    assert not np.allclose(precs[0] @ precs[1], precs[1] @ precs[0])
    return GaussianTarget(rng.normal(size=(5, 3)), precs, prior_precision=0.1 * np.eye(3))


def multinomial() -> MultinomialLogisticTarget:
    rng = np.random.default_rng(5)
    feats = rng.normal(size=(7, 2))
    return MultinomialLogisticTarget(feats, rng.integers(0, 3, 7), n_classes=3, prior_precision=1.0)


TARGETS = {"1d": GaussianTarget.one_d_example, "gauss3": gaussian_3d, "mlogit": multinomial}


def trajectories(target, scheme, plan, h, gamma, batch_size, seed, control_variate=False):
    rng = np.random.default_rng(seed)
    n, d = N_CHAINS, target.dim
    dW, J = draw_pairs(rng, gamma, h / 2, (N_STEPS, 2, d, n))
    x0 = target.initial_point() + 0.3 * rng.normal(size=(n, d))
    v0 = rng.normal(size=(n, d))
    # every chain its own batch order: columns from independent plan streams
    seqs = [batch_sequence(plan, target.n_data, batch_size, N_STEPS + 1, seed=seed * 10 + c) for c in range(n)]
    batches = [np.stack([s[k] for s in seqs], axis=1) for k in range(N_STEPS + 1)]
    batches = batches if SCHEMES[scheme].FSAL else batches[:N_STEPS]
    xs, vs = replay(target, scheme, plan, h, gamma, x0, v0, dW, J, batches, batch_size=batch_size,
                    control_variate=control_variate)
    res = torch_sample(target, scheme, plan, h=h, gamma=gamma, n_chains=n, n_steps=N_STEPS, batch_size=batch_size,
                       x0=x0, v0=v0, keep=N_STEPS, noise=(dW, J), batches=batches, divergence_bound=1e300,
                       control_variate=control_variate)
    return xs, vs, res


def assert_relative(numba_path, torch_path, tol=1e-12):
    scale = np.abs(numba_path).reshape(len(numba_path), -1).max(axis=1)
    err = np.abs(numba_path - torch_path).reshape(len(numba_path), -1).max(axis=1)
    worst = float(np.max(err / np.maximum(scale, 1e-300)))
    assert worst <= tol, f"relative difference {worst:.3g} exceeds {tol:g}"


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@settings(max_examples=1)
@given(h=st.floats(0.01, 0.1), gamma=st.floats(0.5, 2.0), seed=st.integers(0, 10**6), bs=st.integers(1, 7))
def test_torch_trajectories_equal_numba_on_identical_noise_and_batches(scheme, plan, name, h, gamma, seed, bs):
    target = TARGETS[name]()
    bs = min(bs, target.n_data)
    xs, vs, res = trajectories(target, scheme, plan, h, gamma, bs, seed)
    assume(np.all(np.isfinite(xs)) and np.abs(xs).max() < 1e100)
    x_torch = np.swapaxes(res.samples, 0, 1)  # (steps, chains, d)
    assert_relative(xs, x_torch)
    assert_relative(vs[-1:], res.v[None])


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_torch_control_variate_equals_numba(scheme):
    target = gaussian_3d()
    xs, _, res = trajectories(target, scheme, "sms", 0.05, 1.0, 2, seed=11, control_variate=True)
    assert_relative(xs, np.swapaxes(res.samples, 0, 1))


def test_uneven_last_batch_is_exercised():
    seq = batch_sequence("sms", 7, 3, 6, seed=0)
    assert [len(b) for b in seq] == [3, 3, 1, 1, 3, 3]
    assert math.ceil(7 / 3) == 3
