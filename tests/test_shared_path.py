"""``sample_together``: samplers of one seed advanced on one Brownian path drawn once per step.

The property: every result equals the same sampler's own ``sample()`` call bit for bit, whatever
the mix of kinds (one scheme over several plans is one stack; several schemes are several
stacks), the options, the number of chains (tiles with padding) and threads.  Figure 1 relies on
it (its pinned numbers are checked in ``test_experiments.py``).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators import GaussianTarget, sample, sample_together

T1 = GaussianTarget.one_d_example()
FIELDS = ("chain_mean", "chain_second_moment", "chain_outer", "chain_tests", "samples", "diverged_at", "x", "v",
          "histogram", "histogram_tails")


def three_d_target():
    """Three data terms whose precisions do not commute, and a prior."""
    rng = np.random.default_rng(4)
    roots = rng.normal(size=(3, 3, 3))
    return GaussianTarget(rng.normal(size=(3, 3)), roots @ np.swapaxes(roots, 1, 2) + 0.1 * np.eye(3),
                          prior_precision=0.5 * np.eye(3))


def assert_same_as_alone(target, pairs, batch_size, options):
    together = sample_together(target, pairs, batch_size=batch_size, **options)
    assert [(r.scheme, r.plan) for r in together] == list(pairs)
    for (scheme, plan), res in zip(pairs, together, strict=True):
        alone = sample(target, scheme, plan, batch_size=None if plan == "full" else batch_size, **options)
        for name in FIELDS:
            got, want = getattr(res, name), getattr(alone, name)
            if want is None:
                assert got is None, (scheme, plan, name)
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{scheme} x {plan}: {name}")
        assert res.meta == alone.meta


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**31), h=st.floats(0.02, 0.5), gamma=st.floats(0.3, 3.0),
       n_chains=st.integers(1, 600), threads=st.sampled_from([1, 2]), keep=st.integers(0, 3),
       refine=st.sampled_from([1, 2]))
@pytest.mark.slow
def test_one_scheme_over_every_plan_equals_each_run_alone(seed, h, gamma, n_chains, threads, keep, refine):
    options = dict(h=h, gamma=gamma, n_chains=n_chains, n_steps=40, burn_in=7, seed=seed, threads=threads,
                   keep=keep, path_refine=refine, histogram=(-4.0, 4.0, 97), divergence_bound=50.0)
    assert_same_as_alone(T1, [("ubu", p) for p in ("sms", "iid", "rr", "full")], 1, options)


@pytest.mark.slow
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**31), h=st.floats(0.05, 0.4), batch_size=st.integers(1, 3))
def test_two_schemes_together_on_a_three_d_target(seed, h, batch_size):
    """Two kinds of sampler (two stacks, one of them first-same-as-last), interleaved, with full
    moments and a control variate, on non-commuting data terms."""
    pairs = [("ubu", "sms"), ("baoab", "rr"), ("ubu", "full"), ("baoab", "sms"), ("ubu", "iid")]
    options = dict(h=h, gamma=1.3, n_chains=37, n_steps=30, burn_in=5, seed=seed, threads=1, full_moments=True,
                   control_variate=True)
    assert_same_as_alone(three_d_target(), pairs, batch_size, options)


@pytest.mark.slow
def test_each_sampler_keeps_its_own_divergence_record():
    """A tight divergence bound (3.2: velocities have unit variance): some chains of each sampler
    leave it, at steps of their own."""
    options = dict(h=0.2, n_chains=64, n_steps=200, burn_in=20, seed=2, threads=1, x0=[0.0],
                   histogram=(-5.0, 5.0, 50), divergence_bound=3.2)
    ubu, baoab = sample_together(T1, [("ubu", "sms"), ("baoab", "iid")], batch_size=1, **options)
    assert 0 < ubu.n_diverged < 64 and 0 < baoab.n_diverged < 64
    assert not np.array_equal(ubu.diverged_at, baoab.diverged_at)
    assert np.all(np.isnan(ubu.x[~ubu.ok])) and np.all(np.isfinite(ubu.x[ubu.ok]))
    assert_same_as_alone(T1, [("ubu", "sms"), ("baoab", "iid")], 1, options)


@pytest.mark.parametrize("samplers,options,match", [
    ([], {}, "samplers"),
    ([("ubu",)], {}, "samplers"),
    (5, {}, "samplers"),
    ([("ubu", "sms")], {"n_chain": 4}, "n_chain"),
    ([("ubu", "sms")], {"scheme": "ubu"}, "scheme"),
    ([("ubu", "sms")], {"h": -1.0}, "h"),
    ([("rk4", "sms")], {}, "scheme"),
    ([("ubu", "sms"), ("ubu", "random")], {}, "plan"),
])
def test_bad_input_names_what_is_wrong(samplers, options, match):
    with pytest.raises(ValueError, match=match):
        sample_together(T1, samplers, batch_size=1, **{"n_chains": 2, "n_steps": 5, **options})


@pytest.mark.slow
def test_a_minibatch_plan_needs_a_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        sample_together(T1, [("ubu", "full"), ("ubu", "sms")], n_chains=2, n_steps=5)
    full, = sample_together(T1, [("ubu", "full")], n_chains=2, n_steps=5)
    assert full.meta["batch_size"] == T1.n_data
