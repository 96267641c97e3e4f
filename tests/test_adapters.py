"""Other libraries' samplers behind the adapter protocol: the protocol on a toy, every adapter
steps with independent chains and the toolkit's gradient, the plans' batches, the measurement
on a genuine sampler, the planted bug caught by the limit check, and refusals by name.
Budgets are tiny and seeds fixed: chain counts are given, so results do not depend on timing."""

import importlib.util
import sys

import numpy as np
import pytest
from helpers import ToyULA
from hypothesis import assume, given
from hypothesis import strategies as st

from integrators.plans import batch_sequence, n_batches
from integrators.targets import GaussianTarget
from theory_checks.adapters import ADAPTERS, AdapterProblem, check_adapter, checked_positions, measure_adapter
from theory_checks.adapters.analysis import expected_order
from theory_checks.adapters.measure import resolve_adapter
from theory_checks.adapters.runs import PlanBatches
from theory_checks.testing import assert_verified
from theory_checks.verify import default_target

pytestmark = pytest.mark.slow

HAVE_POSTERIORS = importlib.util.find_spec("posteriors") is not None
HAVE_BLACKJAX = importlib.util.find_spec("blackjax") is not None
needs_posteriors = pytest.mark.skipif(not HAVE_POSTERIORS, reason="posteriors is not installed (extra 'adapters')")
LIBRARY_AVAILABLE = {"posteriors": HAVE_POSTERIORS, "blackjax": HAVE_BLACKJAX}


class NoPositions(ToyULA):
    positions = None


class NoRuleOrder:
    NAME = "toy.incomplete"


def library_adapters():
    return [pytest.param(name, marks=pytest.mark.skipif(not LIBRARY_AVAILABLE[ADAPTERS[name].LIBRARY],
                                                        reason=f"{ADAPTERS[name].LIBRARY} is not installed"))
            for name in ADAPTERS]


def test_toy_adapter_conforms_and_is_measured_with_a_first_order_slope():
    check_adapter(ToyULA())
    report = measure_adapter(ToyULA(), plans=["full"], level="tiny", n_chains=4000, seed=1)
    full = report.measurements["full"]
    assert report.ok, report.table()
    assert np.isfinite(full.slope) and full.ci[0] < 1.0 < full.ci[1], report.table()
    assert report.check("limit[full]").passed, report.table()


def test_an_adapter_missing_a_method_or_a_declaration_is_refused_by_name():
    with pytest.raises(ValueError, match=r"positions\(\)"):
        check_adapter(NoPositions())
    with pytest.raises(ValueError, match="RULE_ORDER"):
        check_adapter(NoRuleOrder())
    with pytest.raises(ValueError, match=r"positions\(\)"):
        measure_adapter(NoPositions(), plans=["full"], level="tiny")
    with pytest.raises(ValueError, match=r"positions\(\)"):
        assert_verified(NoPositions(), plans=["full"])
    bad = ToyULA()
    bad.DYNAMICS = "underdamped"
    with pytest.raises(ValueError, match="DYNAMICS"):
        check_adapter(bad)
    with pytest.raises(ValueError, match="unknown adapter"):
        resolve_adapter("posteriors.nope")


def test_measure_refuses_bad_arguments():
    with pytest.raises(ValueError, match="list of plans"):
        measure_adapter(ToyULA(), plans="full")
    with pytest.raises(ValueError, match="unknown level"):
        measure_adapter(ToyULA(), plans=["full"], level="huge")
    from theory_checks.orders import logistic_example
    with pytest.raises(ValueError, match="GaussianTarget"):
        measure_adapter(ToyULA(), target=logistic_example(), plans=["full"])


def test_problem_gradient_is_the_toolkits_force_and_the_log_densitys_gradient():
    target = default_target()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, target.dim))
    full = AdapterProblem(target, 1.0)
    batch = np.tile(np.arange(target.n_data), (5, 1))
    assert np.allclose(full.grad_log_density(x, batch), -np.array([target.full_grad(xc) for xc in x]))
    mini = AdapterProblem(target, 3.0)
    idx = rng.integers(0, target.n_data, (5, 1))
    eps = 1e-6
    for a in range(target.dim):
        step = np.zeros(target.dim)
        step[a] = eps
        numeric = (mini.log_density(x + step, idx) - mini.log_density(x - step, idx)) / (2 * eps)
        assert np.allclose(mini.grad_log_density(x, idx)[:, a], numeric, atol=1e-6)


def test_plan_batches_follow_each_plans_rule_chain_by_chain():
    n_data, bs, n = 5, 2, 3
    m = n_batches(n_data, bs)
    sms = PlanBatches("sms", n_data, bs, n, np.random.default_rng(0))
    period = [sms.next() for _ in range(2 * m)]
    for c in range(n):
        forward = [tuple(b[c]) for b in period[:m]]
        assert sorted(i for b in forward for i in b) == list(range(n_data))  # an epoch is a partition
        assert forward == [tuple(b[c]) for b in period[m:]][::-1]           # then the same batches reversed
    assert [len(b) for b in batch_sequence("sms", n_data, bs, 2 * m)] == [b.shape[1] for b in period]
    rr = PlanBatches("rr", n_data, bs, n, np.random.default_rng(0))
    epochs = [[rr.next() for _ in range(m)] for _ in range(2)]
    assert all(sorted(np.concatenate([b[c] for b in e]).tolist()) == list(range(n_data)) for e in epochs
               for c in range(n))
    assert not all(np.array_equal(epochs[0][0][c], epochs[1][0][c]) for c in range(n))  # fresh partitions
    iid = PlanBatches("iid", n_data, bs, n, np.random.default_rng(0)).next()
    assert iid.shape == (n, bs) and iid.min() >= 0 and iid.max() < n_data
    assert PlanBatches("full", n_data, n_data, n, np.random.default_rng(0)).next().tolist() == [list(range(5))] * 3


def _positions_after(adapter, x0, batches, seed=7, h=0.05, gamma=1.5, scale=3.0):
    problem = AdapterProblem(default_target(), scale)
    sampler = adapter.build(problem, h, gamma)
    state = adapter.init(sampler, x0, seed)
    for batch in batches:
        state = adapter.step(sampler, state, batch)
    return adapter.positions(sampler, state)


@pytest.mark.parametrize("name", library_adapters())
def test_each_adapter_steps_and_its_chains_stay_independent(name):
    """Chain 0's start and batches changed: every other chain's trajectory is unchanged (same
    seed), chain 0's is not.  A thermostat shared by stacked chains would fail this."""
    adapter = ADAPTERS[name]
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(4, 2))
    batches = [rng.integers(0, 3, (4, 1)) for _ in range(5)]
    x = _positions_after(adapter, x0, batches)
    assert x.shape == (4, 2) and np.all(np.isfinite(x))
    x0b, batches_b = x0.copy(), [b.copy() for b in batches]
    x0b[0] += 1.0
    for b in batches_b:
        b[0] = (b[0] + 1) % 3
    y = _positions_after(adapter, x0b, batches_b)
    assert np.allclose(x[1:], y[1:], rtol=1e-6, atol=1e-6), name
    assert not np.allclose(x[0], y[0]), name


@needs_posteriors
def test_a_shared_thermostat_couples_stacked_chains():
    """The independence test has teeth: posteriors' sgnht on one stacked parameter (one xi for
    all chains) changes every chain when chain 0 changes; the adapter maps over chains instead."""
    from theory_checks.adapters.posteriors_adapter import PosteriorsAdapter, PosteriorsSGNHT

    class StackedSGNHT(PosteriorsAdapter):
        make_transform = PosteriorsSGNHT.make_transform

    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(4, 2))
    batches = [rng.integers(0, 3, (4, 1)) for _ in range(5)]
    x0b = x0.copy()
    x0b[0] += 1.0
    x, y = (_positions_after(StackedSGNHT(), start, batches) for start in (x0, x0b))
    assert not np.allclose(x[1:], y[1:])


@needs_posteriors
def test_posteriors_sees_the_toolkits_gradient():
    import torch

    from theory_checks.adapters.posteriors_adapter import log_posterior_for
    target = default_target()
    problem = AdapterProblem(target, 3.0)
    x = np.random.default_rng(1).normal(size=(4, 2))
    idx = np.array([[0], [1], [2], [1]])
    grad = torch.func.grad(lambda p: log_posterior_for(problem)(p, torch.from_numpy(idx))[0])(torch.tensor(x))
    assert np.allclose(grad.numpy(), problem.grad_log_density(x, idx))


def test_a_missing_library_is_named_with_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "posteriors", None)
    monkeypatch.setitem(sys.modules, "blackjax", None)
    for name in ("posteriors.sgld", "blackjax.sgld"):
        with pytest.raises(ImportError, match=r"pip install 'sms-langevin\[adapters\]'"):
            ADAPTERS[name].build(AdapterProblem(default_target()), 0.1, 1.0)


def test_expected_orders_come_from_the_rule_and_the_plan():
    assert expected_order(ADAPTERS["posteriors.baoa"], "sms") == (2.0, True)
    assert expected_order(ADAPTERS["posteriors.baoa"], "iid") == (1.0, True)
    assert expected_order(ADAPTERS["posteriors.baoa"], "rr") == (2.0, False)  # observed only
    assert expected_order(ADAPTERS["blackjax.sgld"], "sms") == (1.0, True)


@needs_posteriors
def test_genuine_sghmc_passes_and_the_noise_scaled_copy_fails_the_limit_check():
    """Noise x1.05 heats the law by 1.05^2 at every h: the extrapolated bias b0 ~ 0.10 is flagged
    (and the oracle of em disagrees), while the genuine sampler's limit is within tolerance."""
    from theory_checks.adapters.planted import NOISY_SGHMC
    target = GaussianTarget.one_d_example()
    options = dict(target=target, plans=["full"], level="tiny", n_chains=8000, seed=3)
    report = assert_verified("posteriors.sghmc", **options)
    assert report.check("limit[full]").passed, report.table()
    with pytest.raises(AssertionError, match=r"limit\[full\]") as failure:
        assert_verified(NOISY_SGHMC, **options)
    assert "oracle[full]" in str(failure.value)


needs_blackjax = pytest.mark.skipif(not HAVE_BLACKJAX, reason="blackjax is not installed (extra 'adapters')")


@needs_blackjax
def test_a_library_sampler_at_a_tiny_level_gives_a_finite_order_with_an_interval():
    report = measure_adapter("blackjax.sgld", plans=["full"], level="tiny", n_chains=20000, seed=2)
    full = report.measurements["full"]
    assert np.isfinite(full.slope) and np.all(np.isfinite(full.ci)) and full.ci[0] < full.ci[1], report.table()
    assert report.ok, report.table()
    assert report.check("documented_order[full]").passed, report.table()


@needs_blackjax
def test_blackjax_sghmc_whose_momentum_is_refreshed_every_call_misses_the_target_as_h_shrinks():
    """BlackJAX's sghmc refreshes the momentum every call and its last Euler gradient never
    reaches the position: at fixed L the law tends to the target at temperature L / (L - 1)
    (twice the variance for L = 2), which the limit check flags (benchmarks/RESULTS.md)."""
    from theory_checks.adapters.blackjax_adapter import BlackJAXSGHMC
    report = measure_adapter(BlackJAXSGHMC(num_integration_steps=2), target=GaussianTarget.one_d_example(),
                             plans=["full"], level="tiny", n_chains=2000, seed=4, hs=(0.1, 0.05))
    assert report.check("limit[full]").passed is False, report.table()
    assert report.check("stationary[full]").passed, report.table()
    assert 0.5 < report.measurements["full"].intercept[1] < 1.0  # E z^2 - 1 -> L/(L-1) - 1 = 1 as h -> 0


def test_chain_count_comes_from_the_budget_and_the_report_writes_its_table_csv_and_plot(tmp_path):
    from theory_checks.adapters.conformance import conformance_table
    from theory_checks.adapters.runs import LEVELS
    report = measure_adapter(ToyULA(), plans=["full", "sms"], level="tiny", budget=1.0, seed=0)
    assert all(min(m.n_chains) >= LEVELS["tiny"].min_chains for m in report.measurements.values())
    assert "limit[sms]" in report.table() and "toy.ula" in conformance_table([report])
    assert report.write_csv(tmp_path / "r.csv").read_text().count("\n") == len(report.checks) + 1
    assert report.plot(tmp_path / "r.png").stat().st_size > 0


# ------------------------------------------------------------------ positions() of a wrong shape
class WrongPositions(ToyULA):
    """ToyULA whose positions() returns ``make(x)`` of the true positions ``x`` (n_chains, d)."""

    def __init__(self, make):
        self.make = make

    def positions(self, sampler, state):
        return self.make(state[0])


@given(n_chains=st.integers(1, 6), d=st.integers(1, 4), shape=st.lists(st.integers(0, 7), max_size=4),
       dtype=st.sampled_from(["float64", "float32", "int64", "complex128", "bool", "object", "U1"]))
def test_positions_of_any_wrong_shape_or_kind_are_refused_naming_the_adapter_and_the_method(n_chains, d, shape,
                                                                                              dtype):
    """Every array that is not a real numeric ``(n_chains, d)`` array: a ValueError naming the adapter's
    class and positions(), with the expected shape (never broadcast, never a bare numpy error)."""
    shape = tuple(shape)
    right_kind = dtype in ("float64", "float32", "int64")
    assume(shape != (n_chains, d) or not right_kind)
    adapter = WrongPositions(lambda x: np.zeros(shape, dtype=dtype))
    expected = rf"\({n_chains}, {d}\)"
    with pytest.raises(ValueError, match=rf"WrongPositions \('toy.ula'\): positions\(\) .*{expected}") as info:
        checked_positions(adapter, None, (np.zeros((n_chains, d)), None), n_chains, d)
    if right_kind:
        assert f"got shape {shape}" in str(info.value)


def test_positions_of_the_right_shape_pass_as_float64():
    x = np.arange(6, dtype=np.int64).reshape(3, 2)
    got = checked_positions(WrongPositions(lambda _: x), None, (x, None), 3, 2)
    assert got.dtype == np.float64 and np.array_equal(got, x)


@pytest.mark.parametrize("make", [lambda x: x[:1], lambda x: x[0], lambda x: np.concatenate([x, x])],
                         ids=["(1, d)", "(d,)", "(2n, d)"])
def test_measure_adapter_refuses_positions_of_a_wrong_shape_naming_the_adapter(make):
    """The issue's three shapes through measure_adapter: (1, d) was broadcast over every chain."""
    with pytest.raises(ValueError, match=r"WrongPositions \('toy.ula'\): positions\(\) .*\(40, 2\).*got shape"):
        measure_adapter(WrongPositions(make), plans=["full"], level="tiny", n_chains=40, seed=0)
