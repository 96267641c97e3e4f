"""The shared statistics of every result type (:mod:`integrators._chain_summary`) against direct
numpy on synthetic draws, the result types against it, and the torch backend's one divergence
detector (:mod:`integrators.torch._divergence`) through each of its callers."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bias._coupled import CoupledResult
from integrators._chain_summary import RHAT_WARN, ChainSummary
from integrators._ghmc import GHMCResult
from integrators._result import SampleResult

DIVERGED_OFFSET = 1e3  # a diverged chain's moments sit here: pooling it would move every statistic


@st.composite
def chains(draw):
    """Synthetic chains: draws ``(n_chains, n_draws, d)`` (chain ``c`` shifted by ``shift * c``),
    a divergence step per chain (-1: none) and the chains' moments (diverged ones far off)."""
    n_chains = draw(st.integers(1, 9))
    n_draws = draw(st.integers(2, 6))
    d = draw(st.integers(1, 3))
    steps = np.array(draw(st.lists(st.sampled_from([-1, -1, 3, 7, 12]), min_size=n_chains, max_size=n_chains)))
    seed = draw(st.integers(0, 2**32 - 1))
    shift = draw(st.sampled_from([0.0, 0.3, 5.0]))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_chains, n_draws, d)) + shift * np.arange(n_chains)[:, None, None]
    x[steps >= 0] += DIVERGED_OFFSET
    return x, steps


def summary_of(x, steps):
    return ChainSummary(steps, x.mean(axis=1), (x**2).mean(axis=1), x.shape[1])


def bda_rhat(x):
    """Classic R-hat from the draws (Gelman et al., BDA3 eq. 11.4), written out."""
    m, n = x.shape[:2]
    means = x.mean(axis=1)
    between = n / (m - 1) * ((means - means.mean(axis=0)) ** 2).sum(axis=0)
    within = (((x - means[:, None]) ** 2).sum(axis=1) / (n - 1)).mean(axis=0)
    return np.sqrt(((n - 1) / n * within + between / n) / within)


@given(chains())
def test_statistics_pool_exactly_the_chains_that_did_not_diverge(case):
    x, steps = case
    s = summary_of(x, steps)
    ok = steps < 0
    assert s.n_diverged == int(np.sum(~ok))
    assert s.first_divergence_step == (int(steps[~ok].min()) if np.any(~ok) else None)
    if not np.any(ok):
        for stat in ("mean", "mean_se", "variance", "variance_se"):
            with pytest.raises(RuntimeError, match=f"every chain diverged .first at step {steps.min()}.: no estimate"):
                getattr(s, stat)
        assert s.rhat is None and "DIVERGED" in s.summary("run")
        return
    kept = x[ok]
    k = kept.shape[0]
    np.testing.assert_allclose(s.mean, kept.mean(axis=(0, 1)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.second_moment, (kept**2).mean(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(s.variance, (kept**2).mean(axis=(0, 1)) - kept.mean(axis=(0, 1)) ** 2,
                               rtol=1e-9, atol=1e-9)
    if k < 2:
        assert s.rhat is None
        return
    means = kept.mean(axis=1)
    se = np.sqrt(((means - means.mean(axis=0)) ** 2).sum(axis=0) / (k - 1) / k)
    np.testing.assert_allclose(s.mean_se, se, rtol=1e-9, atol=1e-12)
    # delta method: the replicate x^2 - 2 mean x of each chain
    lin = (kept**2).mean(axis=1) - 2 * kept.mean(axis=(0, 1)) * means
    np.testing.assert_allclose(s.variance_se, np.sqrt(((lin - lin.mean(axis=0)) ** 2).sum(axis=0) / (k - 1) / k),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(s.rhat, bda_rhat(kept), rtol=1e-9)


@given(chains(), st.integers(1, 4))
def test_every_chunk_of_a_chain_that_did_not_diverge_is_a_replicate(case, n_chunks):
    x, steps = case
    values = np.repeat(x[:, :1, :], n_chunks, axis=1) + np.arange(n_chunks)[None, :, None]  # (chains, chunks, k)
    s = ChainSummary(steps)
    ok = steps < 0
    if not np.any(ok):
        with pytest.raises(RuntimeError, match="every chain diverged"):
            s.pooled_mean(values)
        return
    flat = values[ok].reshape(-1, values.shape[-1])
    assert s.replicates(values).shape == (np.sum(ok) * n_chunks, values.shape[-1])
    np.testing.assert_allclose(s.pooled_mean(values), flat.mean(axis=0), rtol=1e-12)
    if flat.shape[0] > 1:
        np.testing.assert_allclose(s.pooled_se(values), flat.std(axis=0, ddof=1) / math.sqrt(flat.shape[0]),
                                   rtol=1e-12)


def test_warnings_name_divergence_chains_that_did_not_move_and_disagreeing_chains():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 50, 1))
    assert summary_of(x, np.full(4, -1)).warnings == []
    w = summary_of(x, np.array([-1, 9, -1, 4])).warnings
    assert w == ["2 of 4 chains diverged (first at step 4); statistics pool the others"]
    apart = x + 10.0 * np.arange(4)[:, None, None]  # chains far beyond their standard errors
    s = summary_of(apart, np.full(4, -1))
    assert s.rhat[0] > RHAT_WARN and any("R-hat" in m for m in s.warnings)
    still = np.zeros((4, 5, 1))
    assert summary_of(still, np.full(4, -1)).warnings == [
        "the chains did not move (no spread within or between them): no estimate"]


def synthetic(n_chains=6, n_draws=40, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_chains, n_draws, d)) + np.arange(d)
    steps = np.full(n_chains, -1)
    steps[1] = 8
    return x.mean(axis=1), (x**2).mean(axis=1), steps, n_draws


def test_a_sample_result_reports_the_numbers_of_its_chain_summary():
    m1, m2, steps, n = synthetic()
    res = SampleResult("ubu", "sms", 0.1, 1.0, n + 10, 10, 0, m1, m2, None, m1[:, :1], None, steps,
                       np.zeros_like(m1), np.zeros_like(m1))
    s = ChainSummary(steps, m1, m2, n)
    for name in ("mean", "second_moment", "variance", "mean_se", "variance_se", "rhat", "warnings", "ok",
                 "n_diverged", "first_divergence_step"):
        np.testing.assert_array_equal(getattr(res, name), getattr(s, name), err_msg=name)
    np.testing.assert_array_equal(res.test_means, s.pooled_mean(m1[:, :1]))
    assert res.summary() == s.summary("ubu x sms, h=0.1", settings=", gamma=1")
    assert "R-hat=" in res.summary() and "1 of 6 chains diverged" in res.summary()


def test_a_ghmc_result_reports_the_numbers_of_its_chain_summary_r_hat_included():
    m1, m2, steps, n = synthetic(seed=1)
    acceptance = np.full(6, 0.8)
    res = GHMCResult(m1, m2, 0.8, acceptance, steps, np.zeros_like(m1), n)
    s = ChainSummary(steps, m1, m2, n, unit="iteration")
    for name in ("mean", "variance", "mean_se", "variance_se", "rhat", "ok"):
        np.testing.assert_array_equal(getattr(res, name), getattr(s, name), err_msg=name)
    assert res.warnings == s.warnings == ["1 of 6 chains diverged (first at iteration 8); statistics pool the others"]
    assert res.summary() == s.summary("SMS-GHMC", lead="acceptance 0.8, ")
    stuck = GHMCResult(m1, m2, 0.0, np.zeros(6), np.full(6, -1), np.zeros_like(m1), n)
    assert any("accepted no proposal" in w for w in stuck.warnings)


def test_a_coupled_result_pools_every_chunk_of_the_pairs_that_did_not_diverge():
    rng = np.random.default_rng(2)
    fine, coarse = rng.standard_normal((2, 5, 3, 2))
    steps = np.array([-1, 4, -1, -1, 2])
    res = CoupledResult(0.5, fine, coarse, steps)
    ok = steps < 0
    diff = (fine - coarse)[ok].reshape(-1, 2)
    np.testing.assert_allclose(res.difference, diff.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(res.difference_se, diff.std(axis=0, ddof=1) / math.sqrt(9), rtol=1e-12)
    np.testing.assert_allclose(res.difference_variance, diff.var(axis=0, ddof=1), rtol=1e-12)
    s = ChainSummary(steps)
    for which, values in (("fine", fine), ("coarse", coarse)):
        np.testing.assert_array_equal(res.mean(which), s.pooled_mean(values))
        np.testing.assert_array_equal(res.se(which), s.pooled_se(values))
    assert res.warnings == ["2 of 5 coupled pairs diverged (first at coarse step 2); statistics pool the others"]


# ------------------------------------------------------------------ the torch divergence detector

# per chain: finite inside the bound, NaN, inf, beyond the bound (3 > 2), finite inside again
STATES = [[0.5, -1.0], [np.nan, 0.0], [0.0, np.inf], [3.0, 0.0], [1.9, -1.9]]


def _detector(diverged_at, step, x, bound):
    from integrators.torch._divergence import mark_divergence

    mark_divergence(diverged_at, step, x, bound=bound)


def _chains_observers(diverged_at, step, x, bound):
    import torch

    from integrators.torch._chains import TensorObservers

    obs = TensorObservers(len(diverged_at), x.shape[1], "cpu", False, None, 0, 1, bound)
    obs.diverged_at.copy_(diverged_at)
    v, g = torch.zeros_like(x), torch.zeros_like(x)
    live = obs.check(step, x, v, g)
    assert torch.equal(live[:, 0], obs.diverged_at < 0) and not x[~live[:, 0]].any()  # parked at 0
    diverged_at.copy_(obs.diverged_at)


def _posterior_terms(diverged_at, step, x, bound):
    import torch

    from integrators.torch._posterior_terms import record_divergence

    record_divergence(diverged_at, step, x, torch.zeros_like(x))


@pytest.mark.parametrize("caller, bound", [(_detector, 2.0), (_detector, None), (_chains_observers, 2.0),
                                           (_posterior_terms, None)])
def test_every_torch_caller_marks_the_first_step_of_a_non_finite_or_out_of_bound_chain(caller, bound):
    import torch

    diverged_at = torch.tensor([-1, -1, -1, -1, 5])  # the last chain diverged at step 5 already
    caller(diverged_at, 9, torch.tensor(STATES, dtype=torch.float64), bound)
    beyond = 9 if bound is not None else -1  # 3 > 2: only a bound makes it a divergence
    assert diverged_at.tolist() == [-1, 9, 9, beyond, 5]
    caller(diverged_at, 11, torch.full((5, 2), np.nan, dtype=torch.float64), bound)
    assert diverged_at.tolist() == [11, 9, 9, 9 if bound is not None else 11, 5]  # the first step is kept


def test_the_torch_detector_takes_one_chain_and_several_values_of_any_shape():
    import torch

    from integrators.torch._divergence import mark_divergence

    one = torch.tensor(-1)
    mark_divergence(one, 4, torch.tensor(1.0))  # a loss: one number per chain
    assert int(one) == -1
    mark_divergence(one, 5, torch.zeros(3), torch.tensor([0.0, np.inf, 0.0]))  # a state and its force
    assert int(one) == 5
    losses = torch.tensor([0.0, np.nan, 1e300], dtype=torch.float64)
    per_chain = torch.full((3,), -1)
    mark_divergence(per_chain, 2, losses)
    assert per_chain.tolist() == [-1, 2, -1]
    mark_divergence(per_chain, 3, torch.zeros(3, 2, 2), bound=1.0)
    assert per_chain.tolist() == [-1, 2, -1]
