"""Plans: batch usage, palindromic order, uniformity, exact sweep averages of the force, and the
reference walk of every plan against the outcomes it declares."""

import itertools
import math
from collections import Counter

import numba as nb
import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from integrators.plans import (
    FULL,
    IID,
    PLANS,
    SMS,
    Plan,
    batch_sequence,
    force_scale,
    kernel_code,
    n_batches,
    plan_rule,
    register_plan,
    unregister_plan,
)
from integrators.plans._walk import period_batches
from integrators.targets import GaussianTarget
from integrators.targets._force import force_data, force_for

sizes = st.integers(1, 23).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n)))


@pytest.mark.slow
@given(sizes=sizes, seed=st.integers(0, 10_000), periods=st.integers(1, 3))
def test_sms_is_palindromic_partition_used_twice(sizes, seed, periods):
    n_data, bs = sizes
    m = n_batches(n_data, bs)
    steps = PLANS["sms"].SWEEPS * m  # a period: the partition forward, then backward
    seq = batch_sequence("sms", n_data, bs, steps * periods, seed)
    for p in range(periods):
        block = seq[steps * p: steps * (p + 1)]
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
    steps = n_batches(n_data, bs) * PLANS[plan].SWEEPS
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


SMALL = [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 2), (4, 3), (5, 2)]  # (n_data, batch_size)


def walked_law(plan, n_data, batch_size, array):
    """``{period's batch sequence: probability}`` of the reference walk, over every outcome of
    the plan's randomness (each permutation for a partition plan, each index tuple for iid),
    batches as sorted tuples (how ``outcomes`` writes them)."""
    kind = plan_rule(plan).kind
    draws = (itertools.permutations(range(n_data)) if kind == "partition" else
             itertools.product(range(n_data), repeat=batch_size) if kind == "iid" else [tuple(range(n_data))])
    law = Counter()
    draws = list(draws)
    for draw in draws:
        batches = period_batches(plan, n_data, batch_size, array(draw))
        law[tuple(tuple(sorted(int(i) for i in b)) for b in batches)] += 1 / len(draws)
    return law


def declared_law(plan, n_data, batch_size):
    law = Counter()
    for prob, seq in plan.outcomes(n_data, batch_size):
        law[tuple(tuple(sorted(b)) for b in seq)] += prob
    return law


def walkable_plans():
    """Every registered plan whose batches every backend walks (a Numba-only rule is not walked)."""
    out = []
    for plan in PLANS.values():
        try:
            plan_rule(plan)
        except ValueError:
            continue
        out.append(plan)
    return out


def assert_walk_matches_outcomes(array, plans):
    for plan in plans:
        for n_data, bs in SMALL:
            bs = n_data if plan_rule(plan).kind == "full" else bs
            walked, declared = walked_law(plan, n_data, bs, array), declared_law(plan, n_data, bs)
            assert walked.keys() == declared.keys(), (plan.NAME, n_data, bs)
            for seq, prob in declared.items():
                assert math.isclose(walked[seq], prob, rel_tol=1e-12), (plan.NAME, n_data, bs, seq)


def test_the_walk_of_every_plan_has_the_law_its_outcomes_declare_on_numpy_arrays():
    """For every registered plan and small sizes, the reference walk over every draw of the plan's
    randomness gives exactly the batch sequences (and probabilities) the plan's ``outcomes`` enumerate."""
    plans = walkable_plans()
    assert {"full", "iid", "rr", "sms"} <= {p.NAME for p in plans}
    assert_walk_matches_outcomes(lambda draw: np.array(draw, dtype=np.int64), plans)


def test_the_walk_of_every_plan_has_the_law_its_outcomes_declare_on_torch_tensors():
    import torch

    assert_walk_matches_outcomes(lambda draw: torch.tensor(draw, dtype=torch.int64), walkable_plans())


def test_the_walk_follows_a_user_plans_declared_sweeps():
    """A partition plan declared in user code (three sweeps: forward, backward, forward) is walked
    by its own rule, and its outcomes agree with the walk."""
    from integrators.plans._partitions import partition_plan_functions

    @nb.njit
    def there_and_back_and_there(position, n_batches):
        sweep, k = divmod(position, n_batches)
        return n_batches - 1 - k if sweep == 1 else k

    fs, period, count, outcomes = partition_plan_functions(3, there_and_back_and_there)
    plan = Plan("thrice", outcomes, fs, period, count_orders=count, batch_index=there_and_back_and_there, SWEEPS=3)
    assert_walk_matches_outcomes(lambda draw: np.array(draw, dtype=np.int64), [plan])
    batches = period_batches(plan, 4, 2, np.array([3, 1, 0, 2]))
    assert [b.tolist() for b in batches] == [[3, 1], [0, 2], [0, 2], [3, 1], [3, 1], [0, 2]]


def test_a_plan_declared_by_its_kind_alone_runs_the_kernels_built_in_rule():
    """``KIND`` (with ``batch_index`` and ``SWEEPS`` for a partition) is the whole declaration: the
    kernel's code follows from it, and the batches are those of the built-in plan it copies."""
    full, iid, sms = PLANS["full"], PLANS["iid"], PLANS["sms"]
    copies = {FULL: Plan("full_kind", full.outcomes, full.force_scale, full.period, KIND=full.KIND),
              IID: Plan("iid_kind", iid.outcomes, iid.force_scale, iid.period, KIND=iid.KIND),
              SMS: Plan("sms_kind", sms.outcomes, sms.force_scale, sms.period, KIND=sms.KIND,
                        batch_index=sms.batch_index, SWEEPS=sms.SWEEPS)}
    for code, copy in copies.items():
        original = {FULL: full, IID: iid, SMS: sms}[code]
        assert kernel_code(copy) == code == kernel_code(original)
        assert plan_rule(copy) == plan_rule(original)
        bs = 5 if code == FULL else 2
        for a, b in zip(batch_sequence(copy, 5, bs, 9, seed=3), batch_sequence(original, 5, bs, 9, seed=3),
                        strict=True):
            np.testing.assert_array_equal(a, b)
    # the run spec reads the kind too: a full plan needs no batch size and records all the data
    from integrators._spec import RunSpec
    target = GaussianTarget.one_d_example()
    for batch_size in (None, 1):
        spec = RunSpec(target, "ubu", copies[FULL], h=0.1, n_chains=2, n_steps=4, batch_size=batch_size)
        assert spec.batch_size == target.n_data


def test_a_partition_plan_with_a_rule_of_its_own_gets_no_built_in_code():
    sms = PLANS["sms"]

    @nb.njit
    def backward(position, n_batches):
        return n_batches - 1 - position

    own = Plan("backward", sms.outcomes, sms.force_scale, sms.period, batch_index=backward)
    assert kernel_code(own) == -1 and plan_rule(own).kind == "partition" and plan_rule(own).sweeps == 1
    once = Plan("sms_once", sms.outcomes, sms.force_scale, sms.period, batch_index=sms.batch_index, SWEEPS=1)
    assert kernel_code(once) == -1  # sms's rule over one sweep is not the kernel's sms


@pytest.mark.parametrize(("fields", "message"), [
    ({"KIND": "shuffled"}, "KIND must be one of"),
    ({"KIND": "partition"}, "a partition plan declares batch_index"),
])
def test_a_plan_whose_kind_is_not_a_rule_is_refused_by_name(fields, message):
    full = PLANS["full"]
    with pytest.raises(ValueError, match=f"plan 'bad_kind': {message}"):
        register_plan(Plan("bad_kind", full.outcomes, full.force_scale, full.period, **fields))


def _plan_with(name, *, rule=None, scale=None):
    """A copy of rr with its batch_index or force_scale replaced (user code under test)."""
    rr = PLANS["rr"]
    return Plan(name, rr.outcomes, rr.force_scale if scale is None else scale, rr.period,
                batch_index=rr.batch_index if rule is None else rule, SWEEPS=rr.SWEEPS)


def test_a_batch_index_wrong_only_at_the_runs_number_of_batches_is_refused_before_the_run():
    """Registration checks a rule at 1, 2, 3 and 5 batches; at the run's 4 it returns 1004, an empty batch
    every fourth step that ran silently: the run's own period is checked, naming plan, position and index."""
    from integrators._spec import RunSpec

    @nb.njit
    def wrong_at_four(position, n_batches):
        return 1004 if n_batches == 4 and position == 3 else position % n_batches

    plan = _plan_with("wrong_at_four", rule=wrong_at_four)
    register_plan(plan)
    try:
        target = GaussianTarget(np.arange(4.0), np.ones(4))
        with pytest.raises(ValueError, match=r"plan 'wrong_at_four': batch_index\(3, 4\) must be an integer in "
                                             r"\[0, 4\).*got 1004"):
            RunSpec(target, "ubu", "wrong_at_four", h=0.1, n_chains=2, n_steps=4, batch_size=1)
        RunSpec(target, "ubu", "wrong_at_four", h=0.1, n_chains=2, n_steps=4, batch_size=2)  # 2 batches: fine
        with pytest.raises(ValueError, match=r"plan 'wrong_at_four': batch_index\(3, 4\)"):
            period_batches(plan, 4, 1)  # the walk of the other backends
    finally:
        unregister_plan("wrong_at_four")


@pytest.mark.parametrize("value", [-2.0, "2", math.nan, math.inf, 0.0, True, None])
def test_a_plans_force_scale_that_is_not_a_finite_positive_number_is_refused_by_name(value):
    """-2 sampled silently, "2" was converted, NaN read as a divergence: each is refused, naming the plan."""
    from integrators._spec import RunSpec

    plan = _plan_with("odd_scale", scale=lambda n_data, batch_size: value)
    target = GaussianTarget(np.arange(4.0), np.ones(4))
    with pytest.raises(ValueError, match=r"plan 'odd_scale': force_scale\(4, 1\) must be a finite positive real"):
        RunSpec(target, "ubu", plan, h=0.1, n_chains=2, n_steps=4, batch_size=1)
    with pytest.raises(ValueError, match=r"plan 'odd_scale': force_scale\(4, 2\)"):
        force_scale(plan, 4, 2)
