"""A scheme and a plan declared in user code run on both backends, or are refused before any work.

``ABOBA_BOTH`` (``tests/user_schemes.py``) declares its tensor step; the plan ``backward_forward``
declares only its batch rule (``batch_index``: the partition backward, then forward) and
``SWEEPS``.  Driven by identical path data and batch orders, Numba and torch trajectories agree
to 1e-12 relative (the comparison of ``tests/test_torch_parity.py``); each backend's own plan
draws follow the declared rule; a plan whose batches come from a Numba ``BATCH_RULE`` of its own
is refused by the torch backend by name, before anything is drawn."""

from __future__ import annotations

import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from user_schemes import ABOBA_BOTH

from integrators import GaussianTarget, Plan, batch_sequence, sample
from integrators.plans import next_batches, plan_rule
from integrators.plans._partitions import n_batches, partition_plan_functions
from integrators.plans.rr import PLAN as rr_plan

torch = pytest.importorskip("torch")

from test_torch_parity import assert_relative, gaussian_3d, trajectories  # noqa: E402

from integrators._backends import Torch  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("one_torch_thread")]


@nb.njit(inline="always")
def backward_forward(position, n_batches):
    return n_batches - 1 - position if position < n_batches else position - n_batches


TWO_SWEEPS = 2  # backward, then forward over each partition
_scale, _period, _count, _outcomes = partition_plan_functions(TWO_SWEEPS, backward_forward)
BACKWARD_FORWARD = Plan("backward_forward", force_scale=_scale, period=_period, outcomes=_outcomes,
                        count_orders=_count, WEAK_ORDER=2.0, batch_index=backward_forward, SWEEPS=TWO_SWEEPS)
NUMBA_RULE_ONLY = Plan("numba_rule_only", force_scale=rr_plan.force_scale, period=rr_plan.period,
                       outcomes=rr_plan.outcomes, BATCH_RULE=next_batches)


def follows_the_rule(sequence, n_data, batch_size):
    """Whether a sequence of batches is, period by period, one partition visited backward then forward."""
    m = n_batches(n_data, batch_size)
    steps = BACKWARD_FORWARD.SWEEPS * m  # a period: backward, then forward
    for start in range(0, len(sequence) - steps + 1, steps):
        period = [sorted(int(i) for i in b) for b in sequence[start:start + steps]]
        partition = period[m:]  # the forward sweep: w_1 ... w_m
        if sorted(i for b in partition for i in b) != list(range(n_data)):
            return False
        if period[:m] != partition[::-1]:
            return False
    return True


@pytest.mark.slow
def test_both_backends_draw_the_declared_batch_order(registered):
    from integrators.torch._plans import ChainPlan
    from integrators.torch._rng import CounterNormals

    registered(BACKWARD_FORWARD)
    assert plan_rule(BACKWARD_FORWARD).kind == "partition"

    @settings(max_examples=8, deadline=None)
    @given(n_data=st.integers(2, 12), batch_size=st.integers(1, 5), seed=st.integers(0, 2**32))
    def check(n_data, batch_size, seed):
        batch_size = min(batch_size, n_data)
        steps = 3 * BACKWARD_FORWARD.SWEEPS * n_batches(n_data, batch_size)
        assert follows_the_rule(batch_sequence("backward_forward", n_data, batch_size, steps, seed=seed),
                                n_data, batch_size)
        plan = ChainPlan("backward_forward", n_data, batch_size,
                         CounterNormals(seed, 1, torch.arange(3), torch.float64), 3, "cpu")
        draws = [plan.next() for _ in range(steps)]
        for chain in range(3):
            assert follows_the_rule([d[chain].numpy() for d in draws], n_data, batch_size)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("plan", ["backward_forward", "sms"])
def test_a_registered_scheme_and_plan_give_the_same_trajectory_on_both_backends(registered, plan):
    registered(ABOBA_BOTH, BACKWARD_FORWARD)
    for target in (GaussianTarget.one_d_example(), gaussian_3d()):
        xs, vs, res = trajectories(target, "aboba_both", plan, 0.07, 1.3, 2, seed=4)
        assert_relative(xs, np.swapaxes(res.samples, 0, 1))
        assert_relative(vs[-1:], res.v[None])


@pytest.mark.slow
def test_a_registered_scheme_and_plan_run_end_to_end_on_both_backends(registered):
    """With their own draws (different streams per backend): the same target law within standard errors."""
    registered(ABOBA_BOTH, BACKWARD_FORWARD)
    target = GaussianTarget.one_d_example()
    kw = dict(h=0.1, n_chains=200, n_steps=400, burn_in=100, batch_size=1, seed=2)
    numba_run = sample(target, "aboba_both", "backward_forward", **kw)
    torch_run = sample(target, "aboba_both", "backward_forward", backend=Torch(), **kw)
    assert numba_run.plan == torch_run.plan == "backward_forward"
    gap = abs(numba_run.mean - torch_run.mean)
    assert np.all(gap < 5 * np.hypot(numba_run.mean_se, torch_run.mean_se)), (numba_run.summary(), torch_run.summary())


def test_the_torch_backend_refuses_what_it_cannot_run_before_any_work(registered):
    registered(NUMBA_RULE_ONLY)
    target = GaussianTarget.one_d_example()
    with pytest.raises(ValueError, match="plan 'numba_rule_only'.*BATCH_RULE of its own"):
        sample(target, "ubu", "numba_rule_only", batch_size=1, backend=Torch())
    sample(target, "ubu", "numba_rule_only", batch_size=1, n_chains=4, n_steps=5)  # the Numba backend runs it
    with pytest.raises(ValueError, match="path_refine=2 is offered by the Numba backend only"):
        sample(target, "ubu", "sms", batch_size=1, path_refine=2, backend=Torch())
