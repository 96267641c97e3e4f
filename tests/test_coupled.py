"""Coupled h / h/2 chains: exact marginals, variance reduction, and the telescoping estimator."""

import numba as nb
import numpy as np
import pytest

from bias._coupled import COUPLINGS, coupled_run
from bias._telescoping import telescoping_bias, variance_reduction
from integrators import GaussianTarget, RunSpec, sample
from integrators.plans import PLANS, Plan, register_plan, shuffle_lanes, unregister_plan
from theory_checks.oracle import stationary_moments

T1 = GaussianTarget.one_d_example()


@pytest.mark.parametrize("scheme,plan,coupling", [
    ("ubu", "sms", "shared"), ("baoab", "iid", "shared"), ("em", "rr", "independent"),
    ("obabo", "sms", "independent"), ("ubu", "full", "shared"), ("baoab", "rr", "shared"),
])
@pytest.mark.slow
def test_each_chain_of_a_coupled_pair_has_its_own_law(scheme, plan, coupling):
    h = 0.125
    res = coupled_run(RunSpec.from_options(T1, scheme, plan, h=h, n_chains=48, n_steps=12_000, burn_in=400,
                                           batch_size=1, seed=3), coupling=coupling)
    for which, step in (("fine", h / 2), ("coarse", h)):
        exact = stationary_moments(T1, scheme, plan, step, 1.0, batch_size=1)
        want = np.array([exact.mean[0], exact.second_moment[0, 0]])
        assert np.all(np.abs(res.mean(which) - want) < 4 * res.se(which)), (which, res.mean(which), want)
    exact_diff = (stationary_moments(T1, scheme, plan, h / 2, 1.0, batch_size=1).second_moment[0, 0]
                  - stationary_moments(T1, scheme, plan, h, 1.0, batch_size=1).second_moment[0, 0])
    assert abs(res.difference[1] - exact_diff) < 4 * res.difference_se[1]


@pytest.mark.slow
def test_the_uncoupled_baselines_coarse_chain_has_its_own_law():
    """With ``independent_paths`` the coarse chain runs on another seed's path: chunk averages of
    the same law as the coupled pair's (once divided by the chunk length, not twice)."""
    h = 0.125
    res = coupled_run(RunSpec.from_options(T1, "ubu", "sms", h=h, n_chains=48, n_steps=12_000, burn_in=400,
                                           batch_size=1, seed=3), independent_paths=True)
    for which, step in (("fine", h / 2), ("coarse", h)):
        exact = stationary_moments(T1, "ubu", "sms", step, 1.0, batch_size=1)
        want = np.array([exact.mean[0], exact.second_moment[0, 0]])
        assert np.all(np.abs(res.mean(which) - want) < 4 * res.se(which)), (which, res.mean(which), want)


@pytest.mark.slow
def test_coupling_reduces_the_level_variance_at_least_tenfold(capsys):
    out = variance_reduction(RunSpec.from_options(T1, "ubu", "sms", h=0.125, batch_size=1, n_chains=32, n_steps=4000,
                                                  burn_in=400))
    with capsys.disabled():
        print(f"\nvariance of the level difference (x, x^2): coupled {out['shared']}, "
              f"independent chains {out['independent_chains']}, reduction "
              f"{out['reduction_vs_independent_chains']}; shared vs independent batches "
              f"{out['shared_vs_independent_batches']}")
    assert np.all(out["reduction_vs_independent_chains"] >= 10)


@pytest.mark.slow
def test_shared_batches_help_under_iid():
    out = variance_reduction(RunSpec.from_options(T1, "baoab", "iid", h=0.125, batch_size=1, n_chains=32, n_steps=4000,
                                                  burn_in=400))
    assert out["shared_vs_independent_batches"][1] > 1.2


@pytest.mark.slow
def test_telescoping_sum_matches_the_oracle():
    res = telescoping_bias(RunSpec.from_options(T1, "ubu", "sms", h=0.25, batch_size=1, n_chains=32), levels=3,
                           base_epochs=400)
    hs = [0.25 * 2.0**-k for k in range(5)]
    exact = [stationary_moments(T1, "ubu", "sms", h, 1.0, batch_size=1) for h in hs]
    for level in range(4):
        want = np.array([exact[level].mean[0] - exact[-1].mean[0],
                         exact[level].second_moment[0, 0] - exact[-1].second_moment[0, 0]])
        assert np.all(np.abs(res.bias[level] - want) < 4 * res.bias_se[level]), (level, res.bias[level], want)
    assert np.all(res.floor == np.abs(res.differences[-1]))


def test_coupled_bad_input():
    with pytest.raises(ValueError, match="coupling"):
        coupled_run(RunSpec.from_options(T1, "ubu", "sms", h=0.1, batch_size=1, n_chains=64, n_steps=10_000,
                                         burn_in=1000), coupling="psychic")
    with pytest.raises(ValueError, match="levels"):
        telescoping_bias(RunSpec.from_options(T1, "ubu", "sms", h=0.1, batch_size=1, n_chains=32), levels=-1)


@pytest.mark.slow
def test_coupled_chains_take_the_callers_divergence_bound_and_box():
    """The coupled kernel reports divergence at the caller's bound (not a fixed 1e8) and bounces
    in the caller's box, like ``sample``."""
    from integrators import GaussianTarget

    target = GaussianTarget.one_d_example()
    loose = coupled_run(RunSpec.from_options(target, "ubu", "sms", h=0.1, gamma=1.0, n_chains=8, n_steps=200,
                                             burn_in=10, seed=1, batch_size=1))
    tight = coupled_run(RunSpec.from_options(target, "ubu", "sms", h=0.1, gamma=1.0, n_chains=8, n_steps=200,
                                             burn_in=10, seed=1, batch_size=1, divergence_bound=1e-3))
    assert np.all(loose.diverged_at < 0) and np.all(tight.diverged_at == 1)
    boxed = coupled_run(RunSpec.from_options(target, "ubu", "sms", h=0.1, gamma=1.0, n_chains=8, n_steps=400,
                                             burn_in=10, seed=1, batch_size=1, box_center=target.mean,
                                             box_half_width=0.05, x0=target.mean))
    mean_fine = boxed.mean("fine")[0]
    assert abs(mean_fine - target.mean[0]) < 0.05  # E x stays in the box
    with pytest.raises(ValueError, match="divergence_bound"):
        coupled_run(RunSpec.from_options(target, "ubu", "sms", h=0.1, divergence_bound=-1.0, batch_size=1, n_chains=64,
                                         n_steps=10_000, burn_in=1000))
    with pytest.raises(ValueError, match="box"):
        coupled_run(RunSpec.from_options(target, "ubu", "sms", h=0.1, batch_size=1, box_center=target.mean,
                                         box_half_width=0.05, x0=target.mean + 1.0, n_chains=64, n_steps=10_000,
                                         burn_in=1000))


# ------------------------------------------------------- plans with their own Numba batch rule
@nb.njit(nogil=True)
def every_datum_rule(plan_code, perm, position, batch_size, states, out, source, u):
    """A rule of the test's own: every data term, every step (the law of ``full``)."""
    n_data, n = perm.shape
    for i in range(n_data):
        for c in range(n):
            out[i, c] = i
    return n_data


@nb.njit(nogil=True)
def sms_copy_rule(plan_code, perm, position, batch_size, states, out, source, u):
    """``sms`` written again in the test: at a new period the permutations are shuffled, or
    copied from ``source`` when it is not empty (the coarse chains of a shared coupling)."""
    n_data, n = perm.shape
    m = (n_data + batch_size - 1) // batch_size
    p = position[0]
    if p == 0:
        if source.shape[0] > 0:
            for i in range(n_data):
                for c in range(n):
                    perm[i, c] = source[i, c]
        else:
            shuffle_lanes(perm, states, u)
    j = p if p < m else 2 * m - 1 - p
    position[0] = (p + 1) % (2 * m)
    start = j * batch_size
    stop = min(start + batch_size, n_data)
    for i in range(start, stop):
        for c in range(n):
            out[i - start, c] = perm[i, c]
    return stop - start


@pytest.fixture
def rule_plans():
    full, sms = PLANS["full"], PLANS["sms"]
    plans = (Plan("every_datum", full.outcomes, full.force_scale, full.period, WEAK_ORDER=None,
                  BATCH_RULE=every_datum_rule),
             Plan("sms_rule_copy", sms.outcomes, sms.force_scale, sms.period, WEAK_ORDER=2.0, STRONG_ORDER=2.0,
                  BATCH_RULE=sms_copy_rule))
    yield plans
    for p in plans:
        if p.NAME in PLANS:
            unregister_plan(p.NAME)


def _same_coupled(a, b):
    for f in ("fine", "coarse", "diverged_at"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f, strict=True)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["ubu"])
def test_a_plan_with_its_own_batch_rule_runs_in_the_coupled_chains(rule_plans, scheme):
    """A plan defined in this test with its own Numba ``BATCH_RULE`` drives both chains of the
    pairs: a rule giving every datum equals ``full`` bit for bit (a rule ignored would fall back
    to another sequence), and a copy of the ``sms`` rule equals ``sms`` bit for bit under both
    couplings (the coarse chains get the fine permutations through the rule's ``source``)."""
    every_datum, sms_copy = rule_plans
    target = GaussianTarget(np.array([[-1.0, 0.5], [0.3, 2.0], [1.2, -0.4]]), np.stack([np.eye(2)] * 3) * 0.7,
                            prior_precision=0.2 * np.eye(2))
    kw = dict(n_chains=11, n_steps=60, burn_in=5, seed=2)
    _same_coupled(coupled_run(RunSpec.from_options(target, scheme, every_datum, h=0.2, batch_size=3, **kw), n_chunks=3),
                  coupled_run(RunSpec.from_options(target, scheme, "full", h=0.2, **kw), n_chunks=3))
    register_plan(sms_copy)  # by name, as a registered plan, too
    for coupling in COUPLINGS:
        _same_coupled(coupled_run(RunSpec.from_options(target, scheme, "sms_rule_copy", h=0.2, batch_size=2, **kw),
                                  coupling=coupling, n_chunks=3),
                      coupled_run(RunSpec.from_options(target, scheme, "sms", h=0.2, batch_size=2, **kw),
                                  coupling=coupling, n_chunks=3))


@pytest.mark.slow
@pytest.mark.parametrize("scheme,plan", [("ubu", "sms"), ("baoab", "iid")])
def test_the_fine_chain_of_a_pair_is_samples_chain_at_half_the_step(scheme, plan):
    """One stepping core: the fine chains are ``sample``'s chains at ``h / 2`` with the same seed
    (path, batches, initial velocities), observed at every other step."""
    h, n_coarse, burn = 0.2, 40, 4
    pairs = coupled_run(RunSpec.from_options(T1, scheme, plan, h=h, n_chains=9, n_steps=n_coarse, burn_in=burn, seed=5,
                                             batch_size=1), n_chunks=1)
    res = sample(T1, scheme=scheme, plan=plan, h=h / 2, n_chains=9, n_steps=2 * n_coarse, burn_in=2 * burn,
                 keep=n_coarse - burn, seed=5, batch_size=1)
    x = res.samples[:, :, 0]  # fine steps 2 burn + 2, 2 burn + 4, ...: the coarse steps observed
    np.testing.assert_allclose(pairs.fine[:, 0, 0], x.mean(axis=1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pairs.fine[:, 0, 1], (x * x).mean(axis=1), rtol=1e-12, atol=1e-14)


def test_more_chunks_than_observed_steps_are_refused():
    """An empty chunk would be averaged in as zeros: the mean and its error would be wrong."""
    spec = RunSpec.from_options(T1, "ubu", "sms", h=0.1, n_chains=4, n_steps=200, burn_in=20, batch_size=1, seed=1)
    with pytest.raises(ValueError, match=r"n_chunks must be at most .* = 180, got 1000"):
        coupled_run(spec, n_chunks=1000)
    with pytest.raises(ValueError, match=r"n_chunks must be at most .* = 90, got 91"):
        coupled_run(spec, n_chunks=91, test_every=2)
    assert coupled_run(spec, n_chunks=180).fine.shape == (4, 180, 2)
    # telescoping_bias passes n_chunks to each level's run: refused by level 0's, the shortest, before any runs
    with pytest.raises(ValueError, match=r"n_chunks must be at most the steps level 0 observes \(\d+: "
                                         r"base_epochs=1 .*got 1000000"):
        telescoping_bias(spec, levels=1, base_epochs=1, n_chunks=10**6)
