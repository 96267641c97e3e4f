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


# ------------------------------------------------------------------ sizes beyond the machine
HUGE = 10**12


@pytest.mark.parametrize("run, kwargs, words", [
    (sample, {"n_chains": HUGE}, "n_chains=1000000000000"),
    (sample, {"histogram": (-3.0, 3.0, HUGE)}, "1000000000000 histogram bins"),
    (sample, {"keep": HUGE}, "keep=1000000000000"),
    (chains.sample, {"n_chains": HUGE}, "n_chains=1000000000000"),
    (chains.sample, {"histogram": (-3.0, 3.0, HUGE)}, "1000000000000 histogram bins"),
])
def test_requests_beyond_the_machines_memory_are_refused_naming_them(run, kwargs, words):
    """A ValueError naming the request before anything is allocated (it was a MemoryError naming
    nothing, after seconds of allocation)."""
    with pytest.raises(ValueError, match=words + ".*GiB of arrays, more than this machine's"):
        run(ONE_D, "ubu", "sms", **{**RUN, **kwargs})


def test_coupled_ghmc_and_streaming_sizes_are_checked_too():
    from bias.wasserstein import Normal, StreamingW1
    from integrators import sms_ghmc

    with pytest.raises(ValueError, match="n_chains=1000000000000.*GiB"):
        coupled_run(ONE_D, "ubu", "sms", 0.1, n_chains=HUGE, n_coarse_steps=50, burn_in=5, batch_size=1)
    with pytest.raises(ValueError, match="n_chains=1000000000000.*GiB"):
        sms_ghmc(ONE_D, 0.1, 1, n_chains=HUGE)
    with pytest.raises(ValueError, match="n_bins=1000000000000.*GiB"):
        StreamingW1(Normal(0.0, 1.0), -1.0, 1.0, HUGE)


def test_check_fits_compares_with_the_limit_it_is_given():
    from integrators.memory import check_fits, physical_memory_bytes

    check_fits("n=1", 1.0, limit=1.0)
    with pytest.raises(ValueError, match="n=2 needs about"):
        check_fits("n=2", 2.0, limit=1.0)
    assert physical_memory_bytes() is None or physical_memory_bytes() > 2**28


def test_path_refinement_beyond_two_to_the_twenty_is_refused():
    """``path_refine=2**62`` was accepted: each step then drew 2**62 intervals (a run that never ends)."""
    sample(ONE_D, "ubu", "sms", **RUN, path_refine=2**3)
    with pytest.raises(ValueError, match=r"path_refine must be a power of two <= 2\*\*20"):
        sample(ONE_D, "ubu", "sms", **RUN, path_refine=2**21)


# ------------------------------------------------------------------ options that did nothing
@pytest.mark.parametrize("kwargs, words", [
    ({"x_ref": [0.0]}, "x_ref is given but control_variate is false"),
    ({"box_center": 0.0}, "box_center needs box_half_width"),
    ({"x0": "a"}, "x0 must be an array of numbers"),
    ({"x0": [1j]}, "x0 must be real"),
    ({"box_center": 0.0, "box_half_width": "wide"}, "box_half_width must be an array of numbers"),
])
def test_options_that_would_be_ignored_or_misread_are_refused(kwargs, words):
    for run in (sample, chains.sample):
        with pytest.raises(ValueError, match=words):
            run(ONE_D, "ubu", "sms", **RUN, **kwargs)


@pytest.mark.parametrize("kwargs, words", [
    ({"means": [[1j]], "precisions": [1.0]}, "means must be real"),
    ({"means": [[1.0]], "precisions": [1.0], "prior_mean": [2.0]}, "prior_mean needs prior_precision"),
    ({"means": [1.0, 2.0, 3.0], "precisions": np.eye(3)}, r"for one term in d=3 pass means of shape \(1, 3\)"),
])
def test_gaussian_targets_refuse_complex_data_and_a_prior_mean_without_precision(kwargs, words):
    with pytest.raises(ValueError, match=words):
        GaussianTarget(**kwargs)


def test_wasserstein_laws_and_histograms_check_their_parameters():
    from bias.wasserstein import Normal, StreamingW1

    for mean, std in ((0.0, 0.0), (0.0, -1.0), (np.nan, 1.0), ("a", 1.0), (0.0, True)):
        with pytest.raises(ValueError, match="Normal's (mean|std) must be"):
            Normal(mean, std)
    for lo, hi, n_bins, words in ((0.0, 1.0, True, "n_bins must be an integer"),
                                  (0.0, 1.0, 2.5, "n_bins must be an integer"),
                                  (0.0, np.inf, 10, "hi must be a finite real number")):
        with pytest.raises(ValueError, match=words):
            StreamingW1(Normal(0.0, 1.0), lo, hi, n_bins)
    with pytest.raises(ValueError, match="dist must be a law"):
        StreamingW1("normal", 0.0, 1.0, 10)


def test_oracle_and_coupled_run_check_counts_and_test_functions():
    from bias.coupled import first_coordinates
    from theory_checks.oracle import stationary_moments

    for value in (1.5, True):
        with pytest.raises(ValueError, match="batch_size must be an integer"):
            stationary_moments(ONE_D, "ubu", "sms", 0.1, batch_size=value)
    with pytest.raises(ValueError, match="n_test_functions must be >= 1"):
        coupled_run(ONE_D, "ubu", "sms", 0.1, n_chains=4, n_coarse_steps=50, burn_in=5, batch_size=1,
                    test_functions=first_coordinates, n_test_functions=0)


def test_torch_options_name_what_is_wrong():
    from integrators.torch.module import SamplerConfig

    with pytest.raises(ValueError, match="compile='maybe' is not a torch.compile backend"):
        chains.sample(ONE_D, "ubu", "sms", **RUN, compile="maybe")
    with pytest.raises(ValueError, match=r"seed must be < 2\*\*64"):
        SamplerConfig(h=0.1, gamma=1.0, n_data=10, batch_size=2, seed=2**64)
    with pytest.raises(ValueError, match="control_variate must be True or False"):
        SamplerConfig(h=0.1, gamma=1.0, n_data=10, batch_size=2, control_variate="yes")


def test_module_sampler_says_when_n_data_exceeds_the_data():
    import torch

    from integrators.torch.module import ModuleSampler, SamplerConfig

    data = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
    net = torch.nn.Linear(1, 1).double()

    def loss_fn(model, idx):
        return ((model(data[idx][:, None]) - 1.0) ** 2).sum()

    sampler = ModuleSampler(net, SamplerConfig(h=0.01, gamma=1.0, n_data=60, batch_size=20, seed=3))
    with pytest.raises(ValueError, match="is SamplerConfig.n_data=60 larger than the data"):
        for _ in range(3):
            sampler.step(loss_fn)


def _tiny_linear_sampler(**config):
    import torch

    from integrators.torch.module import ModuleSampler, SamplerConfig

    data = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
    net = torch.nn.Linear(1, 1).double()
    cfg = SamplerConfig(**{"h": 0.01, "gamma": 1.0, "n_data": 6, "batch_size": 2, "seed": 3, **config})
    return net, data, cfg, ModuleSampler


@pytest.mark.parametrize("loss, words", [
    (lambda model, data, idx: model(data[idx][:, None]) ** 2, r"one-element tensor .* shape \(2, 1\)"),
    (lambda model, data, idx: 1.0, "got float"),
    (lambda model, data, idx: (model(data[idx][:, None]) ** 2).sum().detach(), "does not depend on the parameters"),
])
def test_module_sampler_names_a_loss_that_is_not_a_scalar_of_the_parameters(loss, words):
    net, data, cfg, ModuleSampler = _tiny_linear_sampler()
    sampler = ModuleSampler(net, cfg)
    with pytest.raises(ValueError, match=words):
        sampler.step(lambda model, idx: loss(model, data, idx))


def test_module_sampler_checks_mapped_reference_points_and_explicit_noise():
    import torch

    from integrators.torch.module import Localization

    net, data, cfg, ModuleSampler = _tiny_linear_sampler()
    good = {"weight": torch.zeros(1, 1, dtype=torch.float64), "bias": torch.zeros(1, dtype=torch.float64)}
    for bad, words in (({**good, "typo": torch.zeros(1)}, r"names no parameter of the model: \['typo'\]"),
                       ({**good, "weight": torch.zeros(1, 1, 1, dtype=torch.float64)}, "'weight' has shape")):
        loc_cfg = _tiny_linear_sampler(localization=Localization(rho=1.0, x_star=bad))[2]
        with pytest.raises(ValueError, match=words):
            ModuleSampler(net, loc_cfg)
    sampler = ModuleSampler(net, cfg, noise=[(torch.zeros(3), torch.zeros(3))])
    with pytest.raises(ValueError, match=r"dW and J must each have shape \(2, 2\)"):
        sampler.step(lambda model, idx: (model(data[idx][:, None]) ** 2).sum())


def test_ensembles_take_numpy_integers_like_every_other_count():
    from integrators.torch.ensemble import EnsembleSampler

    net, _, cfg, _ = _tiny_linear_sampler()
    assert EnsembleSampler(net, cfg, np.int64(2)).n_chains == 2


# ------------------------------------------------------------------ valid input stays accepted
def test_unusual_but_valid_arguments_are_accepted():
    """A third probe looked for the opposite of the above: valid input the new checks refused
    (0-d arrays, numpy and torch scalars, arrays for tuples, Path objects, half-precision
    probabilities, boolean labels, state_dicts, float32 covariances)."""
    import pathlib

    import torch

    from bias.metrics import accuracy, nll
    from bias.wasserstein import Normal, StreamingW1
    from bnn.data import synthetic
    from bnn.pipeline import RunConfig
    from theory_checks.oracle import affine_force
    from theory_checks.scaling import gaussian_w2

    assert Normal(np.array(0.5), torch.tensor(2.0)) == Normal(0.5, 2.0)
    assert StreamingW1(Normal(0.0, 1.0), -5, 5, 1000.0).n_bins == 1000
    samples = np.random.default_rng(0).standard_normal((4, 50)).astype(np.float32)
    assert gaussian_w2(np.zeros(50), np.cov(samples.T), np.zeros(50), np.eye(50)) > 0
    logits = torch.tensor([[2.0, -1.0, 0.3], [0.1, 0.2, 3.0]])
    for half in (torch.bfloat16, torch.float16):
        probs = torch.softmax(logits.to(half), 1).float().numpy()
        assert np.isfinite(nll(probs, [0, 2]))
    assert accuracy([[0.3, 0.7], [0.8, 0.2]], np.array([True, False])) == 1.0
    cfg = RunConfig("digits", "fashion_mnist", h_panel=np.array([3e-4, 3e-3]), data_path=pathlib.Path("/tmp"))
    assert cfg.h_panel == (3e-4, 3e-3) and cfg.data_path == "/tmp" and cfg.to_dict()["h_panel"] == (3e-4, 3e-3)
    hess, _ = affine_force(ONE_D, np.array([0.0, 1.0]), 1.0)
    np.testing.assert_allclose(hess, affine_force(ONE_D, [0, 1], 1.0)[0])
    assert synthetic(np.array([1, 4, 4]), 3, n_train=4, n_test=2).x_train.shape == (4, 1, 4, 4)
    res = sample(ONE_D, "ubu", "sms", **RUN, x0=0.5, control_variate=True, x_ref=-0.9)
    assert not res.diverged


def test_a_state_dict_is_a_reference_point_and_integer_labels_of_any_width_are_labels():
    import torch

    from bnn import diagnostics, models
    from integrators.torch.module import Localization, ModuleSampler, SamplerConfig

    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2)).double()
    net[2].bias.requires_grad_(False)  # a frozen parameter: in the state_dict, not sampled
    cfg = SamplerConfig(0.01, 1.0, 20, batch_size=5, localization=Localization(rho=0.5, x_star=net.state_dict()))
    sampler = ModuleSampler(net, cfg)
    assert torch.equal(sampler.x_star, sampler.x)
    flat = {n: p.detach().reshape(-1) for n, p in net.named_parameters()}
    ModuleSampler(net, SamplerConfig(0.01, 1.0, 20, batch_size=5, localization=Localization(rho=0.5, x_star=flat)))
    cnn = models.build("chest_xray", width=1 / 128, in_shape=(1, 6, 6), n_classes=3)
    x, y = torch.rand(6, 1, 6, 6), torch.randint(0, 3, (6,))
    for labels in (y.int(), y.to(torch.uint8)):
        assert diagnostics.hessian_norm(cnn, x, labels, n_iter=2).value > 0


def test_review_regressions_stay_fixed():
    """From a review of the day's checks: scalars for a one-term one-dimensional Gaussian, integral
    float histogram bins in both backends, 0-d array ranges, a relative covariance tolerance, ACE
    with more bins than points, and a torch iid memory estimate without a per-datum permutation."""
    import torch

    from bias.metrics import ace
    from bias.wasserstein import Normal, StreamingW1
    from integrators import LogisticTarget
    from theory_checks.scaling import gaussian_w2

    assert GaussianTarget(0.0, 1.0).dim == 1 and GaussianTarget([0.0], 1.0).n_data == 1
    for run in (sample, chains.sample):
        assert run(ONE_D, "ubu", "sms", **RUN, histogram=(-3, 3, 10.0)).histogram.sum() > 0
    assert StreamingW1(Normal(0.0, 1.0), np.array(-1.0), torch.tensor(1.0), 10).hi == 1.0
    with pytest.raises(ValueError, match="cov1 must be positive semi-definite"):
        gaussian_w2([0.0], [[-5e-7]], [0.0], [[1e-6]])
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert ace(probs, [0, 1, 1], n_bins=3) == ace(probs, [0, 1, 1], n_bins=10**12)
    big = LogisticTarget(np.ones((200_000, 1)), np.zeros(200_000))
    from integrators.memory import check_fits

    chains.check_fits = lambda what, n_bytes, **kw: check_fits(what, n_bytes, limit=2.0**30)
    try:  # 1,000 chains x 200,000 data: a permutation each would need 4.8 GB (rr), none under iid
        with pytest.raises(ValueError, match="GiB of arrays"):
            chains.sample(big, "ubu", "rr", **{**RUN, "n_chains": 1000, "n_steps": 1, "burn_in": 0})
        chains.sample(big, "ubu", "iid", **{**RUN, "n_chains": 1000, "n_steps": 1, "burn_in": 0})
    finally:
        chains.check_fits = check_fits
