"""Bad input found by a probe of the public entry points: each is refused with a ValueError naming
the value before any work, and a divergence is reported at the same step by every entry point."""

import numpy as np
import pytest

from bias.coupled import CoupledResult, coupled_run
from bias.telescoping import telescoping_bias
from integrators import GaussianTarget, sample, sample_together
from integrators.torch import chains
from theory_checks.verify import verify

ONE_D = GaussianTarget.one_d_example()
RUN = dict(h=0.1, n_chains=4, n_steps=50, burn_in=5, batch_size=1)


@pytest.mark.parametrize("option, value", [("control_variate", "yes"), ("full_moments", "no"),
                                           ("control_variate", 1)])
def test_yes_no_options_take_booleans_only(option, value):
    for run in (sample, chains.sample):
        with pytest.raises(ValueError, match=f"{option} must be True or False"):
            run(ONE_D, "ubu", "sms", **RUN, **{option: value})
    if option == "control_variate":
        with pytest.raises(ValueError, match="control_variate must be True or False"):
            coupled_run(ONE_D, "ubu", "sms", 0.1, n_chains=4, n_coarse_steps=50, burn_in=5, batch_size=1,
                        control_variate=value)


def test_seeds_beyond_64_bits_are_refused_not_wrapped():
    for run in (sample, chains.sample):
        with pytest.raises(ValueError, match=r"seed must be < 2\*\*64"):
            run(ONE_D, "ubu", "sms", **RUN, seed=2**64)
    with pytest.raises(ValueError, match=r"seed must be < 2\*\*64"):
        coupled_run(ONE_D, "ubu", "sms", 0.1, n_chains=4, n_coarse_steps=50, burn_in=5, batch_size=1,
                    seed=2**64 + 5)


@pytest.mark.parametrize("kwargs, words", [({"x0": [np.nan]}, "x0 contains non-finite"),
                                           ({"x0": [1.0, 2.0]}, "x0 must have shape"),
                                           ({"test_every": 1000}, "test_every must be at most")])
def test_coupled_run_checks_its_start_and_observation_spacing(kwargs, words):
    with pytest.raises(ValueError, match=words):
        coupled_run(ONE_D, "ubu", "sms", 0.1, n_chains=4, n_coarse_steps=50, burn_in=5, batch_size=1, **kwargs)


def test_a_result_whose_pairs_all_diverged_has_no_estimate():
    values = np.full((2, 4, 2), np.nan)
    res = CoupledResult(0.5, values, values, np.array([3, 7]))
    for what in (lambda r: r.difference, lambda r: r.difference_se, lambda r: r.mean()):
        with pytest.raises(RuntimeError, match="every coupled pair diverged at h=0.5 .first at coarse step 3"):
            what(res)


@pytest.mark.parametrize("kwargs, words", [({"levels": True}, "levels must be an integer"),
                                           ({"levels": 1.5}, "levels must be an integer"),
                                           ({"levels": 100}, "levels must be at most 20"),
                                           ({"base_epochs": 2.5}, "base_epochs must be an integer")])
def test_telescoping_ladder_arguments(kwargs, words):
    with pytest.raises(ValueError, match=words):
        telescoping_bias(ONE_D, "ubu", "full", 0.1, **{"levels": 1, "base_epochs": 2, **kwargs})


def test_every_entry_point_reports_the_divergence_the_target_bound_defines():
    """EM at h = 1 on the 1-D example leaves the target's scale within a few steps: sample, the
    torch backend and the coupled chains (hence the telescoping sum) all report it (the coupled
    chains and torch used a fixed bound of 1e8 and returned differences of 1e11 as numbers)."""
    numba_run = sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3)
    assert np.all(numba_run.diverged_at > 0)
    torch_default = chains.sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3)
    torch_target = chains.sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3,
                                 divergence_bound=ONE_D.divergence_bound())
    torch_loose = chains.sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3, divergence_bound=1e8)
    assert np.all(torch_default.diverged_at > 0)
    np.testing.assert_array_equal(torch_default.diverged_at, torch_target.diverged_at)
    assert np.all(torch_loose.diverged_at > torch_default.diverged_at)  # the bound matters here
    with pytest.raises(RuntimeError, match="diverged at h=1"):
        telescoping_bias(ONE_D, "em", "full", 1.0, levels=1, base_epochs=20, n_chains=4)


def test_a_lone_name_where_a_list_is_wanted_is_refused_not_spelled_out():
    with pytest.raises(ValueError, match="plans must be a list of plans, got the string 'sms'"):
        verify("ubu", plans="sms")
    for samplers in ("ubu", {"ubu": "sms"}):
        with pytest.raises(ValueError, match="samplers must be a list of .scheme, plan. pairs"):
            sample_together(ONE_D, samplers, batch_size=1, h=0.1, n_chains=2, n_steps=10)
    with pytest.raises(ValueError, match="gamma must be positive and finite, got -1"):
        verify("ubu", plans=["full"], gamma=-1)


def test_bnn_summary_quotes_both_r_hats_and_says_when_chains_have_not_mixed():
    from reports.fig_bnn import _rhat_summary
    unmixed = _rhat_summary([{"rhat": 0.872, "rank_split_rhat": 1.64, "draws": 4}])
    assert "0.872" in unmixed and "rank-normalised split 1.640" in unmixed and "not mixed" in unmixed
    assert "4 draws per chain" in unmixed and "1 SWA point:" in unmixed
    mixed = _rhat_summary([{"rhat": 1.001, "rank_split_rhat": 1.004, "draws": 40},
                           {"rhat": 1.002, "rank_split_rhat": 1.005, "draws": 40}])
    assert "1.001..1.002" in mixed and "1.004..1.005" in mixed and "not mixed" not in mixed


def test_every_output_records_the_versions_of_the_libraries_it_ran_on():
    import sklearn
    import torch

    from integrators.metadata import LIBRARIES, metadata
    meta = metadata(0, "tiny")
    assert all(meta[name] != "absent" for name in LIBRARIES)  # the test environment has them all
    assert meta["torch"] == torch.__version__ and meta["scikit-learn"] == sklearn.__version__
