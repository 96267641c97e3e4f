"""Other libraries' samplers behind the adapter protocol: the protocol on a toy, every adapter
steps with independent chains and the toolkit's gradient, the plans' batches, the measurement
on a genuine sampler, the planted bug caught by the limit check, and refusals by name.
Budgets are tiny and seeds fixed: chain counts are given, so results do not depend on timing."""

import importlib.util
import re
import sys

import numpy as np
import pytest
from helpers import ToyULA
from hypothesis import assume, given
from hypothesis import strategies as st

from integrators.plans import PLANS, batch_sequence, n_batches
from integrators.targets import GaussianTarget
from theory_checks._verify import default_target
from theory_checks.adapters import ADAPTERS, AdapterProblem, check_adapter, checked_positions, measure_adapter
from theory_checks.adapters._analysis import expected_order
from theory_checks.adapters._measure import resolve_adapter
from theory_checks.adapters._runs import PlanBatches
from theory_checks.testing import assert_verified

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
    with pytest.raises(ValueError, match="^plans must be None or a list or tuple of"):
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
    period = [sms.next() for _ in range(PLANS["sms"].SWEEPS * m)]  # forward, then backward
    for c in range(n):
        forward = [tuple(b[c]) for b in period[:m]]
        assert sorted(i for b in forward for i in b) == list(range(n_data))  # an epoch is a partition
        assert forward == [tuple(b[c]) for b in period[m:]][::-1]           # then the same batches reversed
    assert [len(b) for b in batch_sequence("sms", n_data, bs, len(period))] == [b.shape[1] for b in period]
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
    from integrators._install import install_command
    for name in ("posteriors.sgld", "blackjax.sgld"):  # the command that works where the tests run
        with pytest.raises(ImportError, match=re.escape(install_command("adapters"))):
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
    from theory_checks.adapters._planted import NOISY_SGHMC
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


def test_chain_count_follows_the_detectable_effect_and_the_report_writes_its_table_csv_and_plot(tmp_path):
    """Tiny: a pilot of 32 chains asks for the chains that detect a 0.04 limit error, capped at the
    level's 512, which cannot: the limit claims say so (inconclusive), never pass."""
    from theory_checks.adapters._conformance import conformance_table
    from theory_checks.adapters._runs import LEVELS
    report = measure_adapter(ToyULA(), plans=["full", "sms"], level="tiny", seed=0)
    assert all(m.n_chains[0] == LEVELS["tiny"].max_chains for m in report.measurements.values())
    assert "cannot detect a limit error of 0.04" in report.check("limit[sms]").verdict, report.table()
    assert not report.ok and "limit[full]" in report.inconclusive
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


# ------------------------------------------------------------------ sensitivity (issue 35, item 5)
def _fitted(b0, se, n=1000):
    from theory_checks.adapters._runs import PlanMeasurement
    m = PlanMeasurement("full", np.array([0.1, 0.05, 0.025]), [n] * 3, [(1, 1)] * 3, [np.zeros((2, 5))] * 3,
                        np.zeros((3, 5)), np.zeros((3, 5)), np.zeros(3), np.zeros(3), 0.0)
    m.intercept, m.intercept_se = np.array(b0, float), np.full(5, se)
    return m


def test_the_limit_tolerance_follows_the_standard_error_and_the_detectable_effect():
    """The same b0 = 0.04 fails with se small enough to detect it, is inconclusive ("cannot detect")
    when se is too large, and b0 = 0 passes only when a 0.04 error would have been detected; the
    chains asked for bring se to the detectable level (se ~ 1/sqrt(n))."""
    from theory_checks.adapters._analysis import DETECTABLE_LIMIT, chains_to_detect, detectable_se, limit_check
    names = [f"c{k}" for k in range(5)]
    small = detectable_se(5)
    hot = [0, 0, DETECTABLE_LIMIT, 0, DETECTABLE_LIMIT]
    assert limit_check(_fitted(hot, small), 1.0, names).passed is False
    assert limit_check(_fitted([0] * 5, small), 1.0, names).passed is True
    blind = limit_check(_fitted([0] * 5, 3 * small), 1.0, names)
    assert blind.passed is None and blind.claim and "cannot detect a limit error of 0.04" in blind.verdict
    assert limit_check(_fitted(hot, 3 * small), 1.0, names).passed is None
    assert chains_to_detect(np.full(5, 3 * small), 1000) in (9000, 9001)
    assert chains_to_detect(np.full(5, small), 1000) == 1000


def test_step_sizes_outside_the_asymptotic_range_are_refused_naming_the_range():
    from theory_checks.adapters._runs import asymptotic_edge, critical_friction
    target = default_target()
    edge = asymptotic_edge(target, critical_friction(target), 1, ToyULA.DYNAMICS)
    with pytest.raises(ValueError, match=rf"hs must lie in \(0, {edge:.4g}\].*got 0.2, 0.1 outside it"):
        measure_adapter(ToyULA(), plans=["full"], level="tiny", hs=(0.2, 0.1, 0.05))
    from theory_checks.adapters.blackjax_adapter import BlackJAXSGHMC  # a call of L steps: the range is L times shorter
    assert asymptotic_edge(target, 1.0, 1, "kinetic", BlackJAXSGHMC().STEPS_PER_CALL) == \
        pytest.approx(asymptotic_edge(target, 1.0, 1, "kinetic") / 10)


def test_a_ladder_longer_than_the_level_allows_is_inconclusive_not_run():
    from theory_checks.adapters._runs import Level
    report = measure_adapter(ToyULA(), plans=["full"], level=Level("short", 3, 32, 64, 10, max_calls=10), seed=0)
    assert not report.measurements and not report.failed
    assert "the level allows 10" in report.check("limit[full]").verdict and "limit[full]" in report.inconclusive


def test_blackjax_sghmc_stationary_law_tends_to_temperature_l_over_l_minus_1():
    from theory_checks.adapters._runs import Whitening
    from theory_checks.adapters.blackjax_adapter import BlackJAXSGHMC
    target = default_target()
    w = Whitening.of(target)
    for steps in (2, 3, 10):
        cov = BlackJAXSGHMC(steps).stationary_covariance(target, 1e-5, 2.0)
        assert np.allclose(w.inv_chol @ cov @ w.inv_chol.T, steps / (steps - 1) * np.eye(2), atol=1e-3)


@needs_blackjax
def test_blackjax_sghmc_fitted_limit_is_its_computed_limit(monkeypatch):
    """BlackJAX's sghmc refreshes its momentum every call and its last Euler gradient never reaches
    the position: at fixed L its law tends to the target at temperature L / (L - 1).  On the range
    the call length sets (h L small), b0 of the fitted b0 + a h is that limit, 0.5 for L = 3,
    within its interval (the limit check fails), and the bias at each h is the exact stationary
    law's (Lyapunov equation) within its family-wise interval.  Chains start at the target and
    relax fast at these h: a shorter burn-in and window keep the test cheap."""
    from theory_checks.adapters import _runs as runs
    from theory_checks.adapters._analysis import family_z, limit_z
    from theory_checks.adapters._runs import Whitening, asymptotic_edge, critical_friction
    from theory_checks.adapters.blackjax_adapter import BlackJAXSGHMC
    monkeypatch.setattr(runs, "BURN_IN", 3.0)
    monkeypatch.setattr(runs, "WINDOW", 5.0)
    target, adapter = GaussianTarget.one_d_example(), BlackJAXSGHMC(num_integration_steps=3)
    edge = asymptotic_edge(target, critical_friction(target), 1, "kinetic", 3)
    report = measure_adapter(adapter, target=target, plans=["full"], n_chains=2000, seed=5, hs=(edge, edge / 2))
    m = report.measurements["full"]
    limit = np.array([0.0, 0.5])  # E z, E z^2 - 1
    assert np.all(np.abs(m.intercept - limit) < limit_z(2) * m.intercept_se), (m.intercept, m.intercept_se)
    assert report.check("limit[full]").passed is False, report.table()
    assert report.check("stationary[full]").passed, report.table()
    w = Whitening.of(target)
    exact = np.array([w.inv_chol[0, 0] ** 2 * adapter.stationary_covariance(target, h, report.gamma)[0, 0] - 1
                      for h in m.hs])
    assert np.all(np.abs(m.bias[:, 1] - exact) < family_z(1e-4, len(m.hs)) * m.se[:, 1]), (m.bias[:, 1], exact)


@needs_posteriors
def test_a_sampler_two_percent_too_hot_fails_the_limit_at_quick_and_the_genuine_one_passes():
    """Noise x1.02 (limit error 0.0404, the detectable effect): the chains the quick level asks
    for detect it by name; the genuine sampler's limit check passes (not inconclusive)."""
    from theory_checks.adapters._planted import HOT_SGHMC
    hot = measure_adapter(HOT_SGHMC, plans=["full"], level="quick", seed=11)
    assert "limit[full]" in hot.failed, hot.table()
    genuine = measure_adapter("posteriors.sghmc", plans=["full"], level="quick", seed=11)
    assert genuine.check("limit[full]").passed is True, genuine.table()


# ------------------------------------------- a method that raises is named with its adapter (issue 49, row 12)
class Raising(ToyULA):
    """ToyULA whose ``method`` raises a KeyError."""

    def __init__(self, method):
        self.raising = method

    def __getattribute__(self, name):
        if name in ("build", "init", "step", "positions") and name == object.__getattribute__(self, "raising"):
            def fail(*args):
                raise KeyError("user state lost")
            return fail
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("method", ["build", "init", "step", "positions"])
def test_an_adapter_method_that_raises_is_named_with_its_adapter_and_the_cause_kept(method):
    from theory_checks.adapters import AdapterFailed
    with pytest.raises(AdapterFailed, match=rf"adapter Raising \('toy.ula'\): {method}\(\) raised KeyError: "
                                            r"'user state lost'") as err:
        measure_adapter(Raising(method), plans=["full"], level="tiny", n_chains=40, seed=0)
    assert isinstance(err.value.__cause__, KeyError)
