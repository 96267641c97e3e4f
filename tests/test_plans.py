"""Plans: batch usage, palindromic order, uniformity, and exact sweep averages of the force."""

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from integrators.plans import batch_sequence, force_scale, n_batches
from integrators.targets import GaussianTarget, force_data, force_for

sizes = st.integers(1, 23).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n)))


@pytest.mark.slow
@given(sizes=sizes, seed=st.integers(0, 10_000), periods=st.integers(1, 3))
def test_sms_is_palindromic_partition_used_twice(sizes, seed, periods):
    n_data, bs = sizes
    m = n_batches(n_data, bs)
    seq = batch_sequence("sms", n_data, bs, 2 * m * periods, seed)
    for p in range(periods):
        block = seq[2 * m * p: 2 * m * (p + 1)]
        forward, backward = block[:m], block[m:]
        for j in range(m):
            np.testing.assert_array_equal(forward[j], backward[m - 1 - j])
        np.testing.assert_array_equal(np.sort(np.concatenate(forward)), np.arange(n_data))
        assert all(len(b) == bs for b in forward[:-1]) and 1 <= len(forward[-1]) <= bs


@pytest.mark.slow
@given(sizes=sizes, seed=st.integers(0, 10_000))
def test_rr_uses_every_datum_once_per_epoch(sizes, seed):
    n_data, bs = sizes
    m = n_batches(n_data, bs)
    seq = batch_sequence("rr", n_data, bs, 3 * m, seed)
    for e in range(3):
        np.testing.assert_array_equal(np.sort(np.concatenate(seq[e * m:(e + 1) * m])), np.arange(n_data))


@pytest.mark.slow
def test_partitions_are_fresh_each_period():
    seq = batch_sequence("sms", 20, 5, 16, seed=1)
    assert not all(np.array_equal(a, b) for a, b in zip(seq[:8], seq[8:], strict=True))


@pytest.mark.slow
def test_iid_is_uniform_chi_square():
    n_data, bs, steps = 7, 3, 20_000
    seq = np.concatenate(batch_sequence("iid", n_data, bs, steps, seed=5))
    counts = np.bincount(seq, minlength=n_data)
    _, p_value = scipy.stats.chisquare(counts)
    assert p_value > 1e-3, counts


@pytest.mark.slow
@pytest.mark.parametrize("n_data", [6, 11])  # the masked-pass shuffle (<= 8 data) and the gather one
def test_permutations_are_uniform_chi_square(n_data):
    """The shuffle puts every datum in the first batch equally often."""
    seq = batch_sequence("rr", n_data, 1, n_data * 3000, seed=9)
    first = np.concatenate(seq[0::n_data])
    _, p_value = scipy.stats.chisquare(np.bincount(first, minlength=n_data))
    assert p_value > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("n_data", [3, 4])
def test_every_permutation_is_equally_likely(n_data):
    """All n! orders of a shuffled epoch appear equally often (chi-square over the orders)."""
    from itertools import permutations

    n_periods = 400 * math.factorial(n_data)
    seq = batch_sequence("rr", n_data, 1, n_data * n_periods, seed=4)
    index = {p: k for k, p in enumerate(permutations(range(n_data)))}
    orders = [index[tuple(int(b[0]) for b in seq[t:t + n_data])] for t in range(0, len(seq), n_data)]
    _, p_value = scipy.stats.chisquare(np.bincount(orders, minlength=len(index)))
    assert p_value > 1e-3


def random_gaussian_target(rng, d, n):
    means = rng.normal(size=(n, d))
    roots = rng.normal(size=(n, d, d))
    precs = roots @ np.swapaxes(roots, 1, 2) + 0.1 * np.eye(d)
    return GaussianTarget(means, precs, prior_precision=np.eye(d) * 0.5)


@pytest.mark.parametrize("plan", ["rr", "sms"])
@given(d=st.integers(1, 3), sizes=sizes, seed=st.integers(0, 1000), cv=st.booleans())
def test_sweep_average_force_is_full_gradient(plan, d, sizes, seed, cv):
    n_data, bs = sizes
    rng = np.random.default_rng(seed)
    target = random_gaussian_target(rng, d, n_data)
    force = force_for(target)
    tdata = force_data(target, control_variate=cv, x_ref=rng.normal(size=d) if cv else None)
    scale = force_scale(plan, n_data, bs)
    x = rng.normal(size=d)
    steps = n_batches(n_data, bs) * (2 if plan == "sms" else 1)
    total = np.zeros(d)
    out = np.zeros(d)
    for batch in batch_sequence(plan, n_data, bs, steps, seed):
        force(x, out, batch, len(batch), scale, tdata)
        total += out
    want = target.full_grad(x)
    np.testing.assert_allclose(total / steps, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())


def test_iid_force_is_unbiased():
    rng = np.random.default_rng(0)
    target = random_gaussian_target(rng, 2, 5)
    force, tdata = force_for(target), force_data(target)
    x = rng.normal(size=2)
    steps = 40_000
    draws = np.empty((steps, 2))
    out = np.zeros(2)
    for k, batch in enumerate(batch_sequence("iid", 5, 2, steps, seed=3)):
        force(x, out, batch, len(batch), force_scale("iid", 5, 2), tdata)
        draws[k] = out
    se = draws.std(axis=0) / math.sqrt(steps)
    assert np.all(np.abs(draws.mean(axis=0) - target.full_grad(x)) < 4 * se)


def test_unknown_plan():
    with pytest.raises(ValueError, match="plan"):
        batch_sequence("nope", 4, 2, 1)
