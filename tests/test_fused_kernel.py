"""The fused Triton chain kernel (:mod:`integrators.torch._fused`) against the torch backend's tensor
step on the same counter streams: every built-in scheme and plan, dimensions past two (an indexing
bug shows from the third coordinate), uneven batches, the control variate, a prior, divergence and
every observer. Without a GPU the kernel runs in Triton's interpreter (``TRITON_INTERPRET=1``, set
by the conftest), so sizes are small.

Tolerance: both sides make the same float64 operations in the same order except the Box-Muller
angle (a polynomial here, the library's cos and sin there: a few ulp) and the order of the sums in
the Gaussian force's matrix products, over a few tens of steps of contracting maps: 1e-12 relative
to the values' scale is some thousand ulp, far below any indexing or coefficient error (>= 1e-3).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from integrators import sample, sample_together  # noqa: E402
from integrators._backends import Torch  # noqa: E402
from integrators.plans import PLANS, SMALL_SHUFFLE, plan_rule  # noqa: E402
from integrators.targets import GaussianTarget, LogisticTarget  # noqa: E402
from integrators.torch.schemes import TORCH_STEPS  # noqa: E402

RULED_PLANS = sorted(name for name in PLANS if plan_rule(name) is not None)
TOL = 1e-12


def random_target(rng, d, n_data, with_prior):
    means = rng.normal(size=(n_data, d))
    roots = rng.normal(size=(n_data, d, d)) / np.sqrt(d)
    precisions = roots @ roots.transpose(0, 2, 1) + 0.5 * np.eye(d)
    prior = dict(prior_precision=np.eye(d) * 0.7, prior_mean=rng.normal(size=d)) if with_prior else {}
    return GaussianTarget(means, precisions, **prior)


def both(target, scheme, plan, **options):
    fused = sample(target, scheme, plan, backend=Torch(kernel="triton"), **options)
    tensor = sample(target, scheme, plan, backend=Torch(kernel="torch"), **options)
    return fused, tensor


def assert_close(a, b, what):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, what
    assert np.array_equal(np.isnan(a), np.isnan(b)), what
    scale = max(1.0, float(np.nanmax(np.abs(b), initial=0.0)))
    assert np.nanmax(np.abs(a - b), initial=0.0) <= TOL * scale, what


def assert_same_run(fused, tensor):
    assert fused.meta["kernel"] == "triton" and tensor.meta["kernel"].startswith("torch step")
    for field in ("x", "v", "chain_mean", "chain_second_moment", "chain_outer", "samples", "histogram_tails"):
        if getattr(tensor, field) is not None:
            assert_close(getattr(fused, field), getattr(tensor, field), field)
    np.testing.assert_array_equal(fused.diverged_at, tensor.diverged_at)
    if tensor.histogram is not None:  # exact integer counts
        np.testing.assert_array_equal(fused.histogram, tensor.histogram)


@settings(max_examples=15)  # the interpreter runs a few seconds an example
@given(scheme=st.sampled_from(sorted(TORCH_STEPS)), plan=st.sampled_from(RULED_PLANS),
       d=st.integers(1, 3), n_data=st.integers(2, SMALL_SHUFFLE), batch=st.integers(1, 4),
       control_variate=st.booleans(), prior=st.booleans(), h=st.floats(0.05, 0.5), gamma=st.floats(0.3, 3.0),
       seed=st.integers(0, 2**31 - 1))
def test_fused_kernel_follows_the_tensor_step(scheme, plan, d, n_data, batch, control_variate, prior, h, gamma, seed):
    target = random_target(np.random.default_rng(seed), d, n_data, prior)
    fused, tensor = both(target, scheme, plan, h=h, gamma=gamma, n_steps=12, burn_in=4, n_chains=5, seed=seed,
                         batch_size=min(batch, n_data), control_variate=control_variate, keep=3,
                         full_moments=True, histogram=(-3.0, 3.0, 17))
    assert_same_run(fused, tensor)


def test_a_chains_numbers_do_not_depend_on_the_chains_beside_it():
    """Chain c of a run of 3 equals chain c of a run of 70 (two blocks of the kernel's grid)."""
    target = GaussianTarget.one_d_example()
    options = dict(h=0.25, gamma=1.0, n_steps=10, burn_in=2, seed=11, batch_size=1)
    few = sample(target, "ubu", "sms", n_chains=3, backend=Torch(kernel="triton"), **options)
    many = sample(target, "ubu", "sms", n_chains=70, backend=Torch(kernel="triton"), **options)
    np.testing.assert_array_equal(few.x, many.x[:3])
    np.testing.assert_array_equal(few.chain_mean, many.chain_mean[:3])


def test_samplers_together_in_one_launch_equal_their_own_runs():
    """sample_together on the torch backend: a scheme's plans and its full-gradient run in one launch of
    the fused kernel (one path), each result the same as its own sample() call."""
    target = random_target(np.random.default_rng(5), 3, 5, True)
    options = dict(h=0.2, gamma=1.3, n_steps=9, burn_in=3, n_chains=6, seed=8, control_variate=True,
                   histogram=(-2.0, 2.0, 9), keep=2)
    samplers = [("baoab", plan) for plan in RULED_PLANS]
    together = sample_together(target, samplers, batch_size=2, backend=Torch(kernel="triton"), **options)
    for (scheme, plan), joint in zip(samplers, together, strict=True):
        alone = sample(target, scheme, plan, batch_size=None if plan == "full" else 2, backend=Torch(kernel="triton"),
                       **options)
        np.testing.assert_array_equal(joint.x, alone.x)
        np.testing.assert_array_equal(joint.chain_second_moment, alone.chain_second_moment)
        np.testing.assert_array_equal(joint.histogram, alone.histogram)
        np.testing.assert_array_equal(joint.samples, alone.samples)


def test_runs_of_other_steps_seeds_and_lengths_in_one_launch_equal_their_own_runs():
    """Runs of one scheme that differ in step size, friction, seed, steps, burn-in, bound and plan share a
    launch (each its own streams and counts), each equal to its own run."""
    from integrators import RunSpec

    target = GaussianTarget.one_d_example()
    backend = Torch(kernel="triton")
    specs = [RunSpec.from_options(target, "ubu", plan, h=h, gamma=gamma, n_steps=steps, burn_in=burn, seed=seed,
                                  n_chains=5, batch_size=None if plan == "full" else 1, divergence_bound=bound,
                                  histogram=(-3.0, 3.0, 13), backend=backend)
             for plan, h, gamma, steps, burn, seed, bound in [("sms", 0.25, 1.0, 12, 4, 1, 50.0),
                                                             ("iid", 0.125, 0.7, 7, 0, 2, 50.0),
                                                             ("full", 0.5, 2.0, 10, 9, 3, 1.5)]]
    joint = backend.run(specs)
    for spec, result in zip(specs, joint, strict=True):
        alone = backend.run([spec])[0]
        np.testing.assert_array_equal(result.x, alone.x)
        np.testing.assert_array_equal(result.diverged_at, alone.diverged_at)
        np.testing.assert_array_equal(result.histogram, alone.histogram)
        np.testing.assert_array_equal(result.chain_mean, alone.chain_mean)
    assert (joint[2].diverged_at >= 0).any()  # the tight bound of the third run is its own


@pytest.mark.parametrize(("scheme", "h", "bound"), [("em", 0.2, 5.0), ("baoab", 0.3, 4.0)])
def test_divergence_is_marked_and_parked_as_on_the_tensor_step(scheme, h, bound):
    """A bound that some chains cross: the same steps marked, the same chains NaN, the rest unchanged."""
    fused, tensor = both(GaussianTarget.one_d_example(), scheme, "iid", h=h, gamma=0.5, n_steps=30, burn_in=5,
                         n_chains=16, seed=2, batch_size=1, divergence_bound=bound, histogram=(-3.0, 3.0, 11))
    assert 0 < (tensor.diverged_at >= 0).sum() < 16  # the test means something
    assert_same_run(fused, tensor)


def test_what_the_kernel_cannot_run_is_named():
    logistic = LogisticTarget(np.eye(3, 2), [0, 1, 1], prior_precision=1.0)
    one_d = GaussianTarget.one_d_example()
    with pytest.raises(ValueError, match="float32"):
        sample(one_d, "ubu", "sms", backend=Torch(dtype="float32", kernel="triton"), n_steps=2, n_chains=2,
               batch_size=1)
    big = GaussianTarget(np.zeros((SMALL_SHUFFLE + 1, 1)), np.ones(SMALL_SHUFFLE + 1))
    with pytest.raises(ValueError, match="partition of 9 data"):
        sample(big, "ubu", "rr", backend=Torch(kernel="triton"), n_steps=2, n_chains=2, batch_size=3)
    with pytest.raises(ValueError, match="LogisticTarget"):
        sample(logistic, "ubu", "iid", backend=Torch(kernel="triton"), n_steps=2, n_chains=2, batch_size=1)
    with pytest.raises(ValueError, match="kernel must be one of"):
        Torch(kernel="cuda-graph")
    auto = sample(one_d, "ubu", "sms", backend=Torch(), n_steps=2, n_chains=2, batch_size=1)
    assert auto.meta["kernel"] == "torch step (not on cuda)"


def test_a_user_scheme_without_a_kernel_step_is_refused_by_name():
    """A scheme from user code with a tensor step: ``auto`` runs its tensor step, ``triton`` names it."""
    from user_schemes import ABOBA_BOTH

    with pytest.raises(ValueError, match="scheme 'aboba_both' has no fused kernel step"):
        sample(GaussianTarget.one_d_example(), ABOBA_BOTH, "sms", backend=Torch(kernel="triton"), n_steps=2,
               n_chains=2, batch_size=1)


def test_every_built_in_scheme_has_a_kernel_step():
    from integrators.torch._fused import FUSED_STEPS

    assert set(FUSED_STEPS) == set(TORCH_STEPS)
