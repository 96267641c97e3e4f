"""Coupled h / h/2 chains: exact marginals, variance reduction, and the telescoping estimator."""

import numpy as np
import pytest

from bias.coupled import coupled_run
from bias.telescoping import telescoping_bias, variance_reduction
from integrators import GaussianTarget
from theory_checks.oracle import stationary_moments

T1 = GaussianTarget.one_d_example()


@pytest.mark.parametrize("scheme,plan,coupling", [
    ("ubu", "sms", "shared"), ("baoab", "iid", "shared"), ("em", "rr", "independent"),
    ("obabo", "sms", "independent"), ("ubu", "full", "shared"), ("baoab", "rr", "shared"),
])
def test_each_chain_of_a_coupled_pair_has_its_own_law(scheme, plan, coupling):
    h = 0.125
    res = coupled_run(T1, scheme, plan, h, n_chains=48, n_coarse_steps=12_000, burn_in=400, batch_size=1,
                      coupling=coupling, seed=3)
    for which, step in (("fine", h / 2), ("coarse", h)):
        exact = stationary_moments(T1, scheme, plan, step, 1.0, batch_size=1)
        want = np.array([exact.mean[0], exact.second_moment[0, 0]])
        assert np.all(np.abs(res.mean(which) - want) < 4 * res.se(which)), (which, res.mean(which), want)
    exact_diff = (stationary_moments(T1, scheme, plan, h / 2, 1.0, batch_size=1).second_moment[0, 0]
                  - stationary_moments(T1, scheme, plan, h, 1.0, batch_size=1).second_moment[0, 0])
    assert abs(res.difference[1] - exact_diff) < 4 * res.difference_se[1]


def test_coupling_reduces_the_level_variance_at_least_tenfold(capsys):
    out = variance_reduction(T1, "ubu", "sms", 0.125, batch_size=1, n_chains=32, n_coarse_steps=4000,
                             burn_in=400)
    with capsys.disabled():
        print(f"\nvariance of the level difference (x, x^2): coupled {out['shared']}, "
              f"independent chains {out['independent_chains']}, reduction "
              f"{out['reduction_vs_independent_chains']}; shared vs independent batches "
              f"{out['shared_vs_independent_batches']}")
    assert np.all(out["reduction_vs_independent_chains"] >= 10)


def test_shared_batches_help_under_iid():
    out = variance_reduction(T1, "baoab", "iid", 0.125, batch_size=1, n_chains=32, n_coarse_steps=4000,
                             burn_in=400)
    assert out["shared_vs_independent_batches"][1] > 1.2


def test_telescoping_sum_matches_the_oracle():
    res = telescoping_bias(T1, "ubu", "sms", 0.25, levels=3, batch_size=1, base_epochs=400, n_chains=32)
    hs = [0.25 * 2.0**-k for k in range(5)]
    exact = [stationary_moments(T1, "ubu", "sms", h, 1.0, batch_size=1) for h in hs]
    for level in range(4):
        want = np.array([exact[level].mean[0] - exact[-1].mean[0],
                         exact[level].second_moment[0, 0] - exact[-1].second_moment[0, 0]])
        assert np.all(np.abs(res.bias[level] - want) < 4 * res.bias_se[level]), (level, res.bias[level], want)
    assert np.all(res.floor == np.abs(res.differences[-1]))


def test_coupled_bad_input():
    with pytest.raises(ValueError, match="coupling"):
        coupled_run(T1, "ubu", "sms", 0.1, batch_size=1, coupling="psychic")
    with pytest.raises(ValueError, match="levels"):
        telescoping_bias(T1, "ubu", "sms", 0.1, levels=-1, batch_size=1)


def test_coupled_chains_take_the_callers_divergence_bound_and_box():
    """The coupled kernel reports divergence at the caller's bound (not a fixed 1e8) and bounces
    in the caller's box, like ``sample``."""
    from integrators import GaussianTarget

    target = GaussianTarget.one_d_example()
    loose = coupled_run(target, "ubu", "sms", 0.1, 1.0, n_chains=8, n_coarse_steps=200, burn_in=10, seed=1,
                        batch_size=1)
    tight = coupled_run(target, "ubu", "sms", 0.1, 1.0, n_chains=8, n_coarse_steps=200, burn_in=10, seed=1,
                        batch_size=1, divergence_bound=1e-3)
    assert np.all(loose.diverged_at < 0) and np.all(tight.diverged_at == 1)
    boxed = coupled_run(target, "ubu", "sms", 0.1, 1.0, n_chains=8, n_coarse_steps=400, burn_in=10, seed=1,
                        batch_size=1, box_center=target.mean, box_half_width=0.05, x0=target.mean)
    mean_fine = boxed.mean("fine")[0]
    assert abs(mean_fine - target.mean[0]) < 0.05  # E x stays in the box
    with pytest.raises(ValueError, match="divergence_bound"):
        coupled_run(target, "ubu", "sms", 0.1, divergence_bound=-1.0, batch_size=1)
    with pytest.raises(ValueError, match="box"):
        coupled_run(target, "ubu", "sms", 0.1, batch_size=1, box_center=target.mean, box_half_width=0.05,
                    x0=target.mean + 1.0)
