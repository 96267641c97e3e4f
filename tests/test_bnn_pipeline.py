"""bnn.pipeline and the reports module on a very small configuration (seconds)."""

import csv

import numpy as np
import pytest
from helpers import draw_files

from bnn import pipeline, presets

pytestmark = pytest.mark.torch

SMALL = pipeline.RunConfig("digits", "fashion_mnist", width=0.125, n_train=300, n_test=120, batch_size=100,
                           epochs_train=1, epochs_swa=1, epochs_burn=0, epochs_sample=2, h=1e-3,
                           samplers=("SMS-UBU", "SG-HMC"), n_eval_batches=1)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def two_runs(one_thread):
    return [pipeline.run(SMALL, seed) for seed in (0, 1)]


@pytest.mark.slow
def test_run_gives_predictives_for_every_method(two_runs):
    res = two_runs[0]
    assert list(res["methods"]) == ["Adam", "SWA", "SMS-UBU", "SG-HMC"]
    for name, m in res["methods"].items():
        p = np.array(m["probs"])
        assert p.shape == (120, 10), name
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    assert len(res["methods"]["SMS-UBU"]["trace"]) == 2 and all(np.isfinite(res["methods"]["SMS-UBU"]["trace"]))
    assert not np.allclose(res["methods"]["Adam"]["probs"], res["methods"]["SWA"]["probs"])
    assert two_runs[1]["methods"]["SWA"]["probs"] != res["methods"]["SWA"]["probs"]  # independent runs


def test_diverging_sampler_is_reported_with_its_step():
    cfg = pipeline.with_overrides(SMALL, samplers=("SG-HMC",), h=50.0, epochs_sample=3)
    m = pipeline.run(cfg, 0)["methods"]["SG-HMC"]
    assert m["probs"] is None and isinstance(m["diverged"], int) and m["diverged"] >= 1


@pytest.mark.slow
def test_reports_module_draws_csv_markdown_and_figures(two_runs, tmp_path):
    from reports import fig_bnn

    info = draw_files(fig_bnn, [({"dataset": "digits", "run": i}, r) for i, r in enumerate(two_runs)], "tiny",
                      tmp_path)
    for name in info["files"]:
        assert (tmp_path / name).exists(), name
    rows = list(csv.DictReader(open(tmp_path / "bnn_ensembles.csv")))
    assert {r["method"] for r in rows} == {"Adam", "SWA", "SMS-UBU", "SG-HMC"}
    assert {r["size"] for r in rows} == {"1", "2"}
    assert "SMS-UBU" in (tmp_path / "bnn_ensembles.md").read_text()
    assert "ensembles of 1: SMS-UBU nll" in info["measured"]


def test_absent_data_is_reported_not_replaced(tmp_path):
    from reports import fig_bnn

    info = draw_files(fig_bnn, [({"dataset": "celeba", "run": 0}, {"missing": "x: file not found"})], "full", tmp_path)
    assert "celeba: data absent (x: file not found)" in info["measured"]


@pytest.mark.parametrize("change,match", [
    ({"h": 0.0}, "h must be"), ({"samplers": ("HMC",)}, "unknown sampler"), ({"dataset": "mnist"}, "unknown dataset"),
    ({"epochs_burn": -1}, "epochs_burn"), ({"network": "vgg"}, "unknown network"), ({"h_panel": (-1.0,)}, "h_panel"),
    ({"chains": 0}, "chains must be"), ({"chains": 2.0}, "chains must be")])
def test_run_config_validates(change, match):
    with pytest.raises(ValueError, match=match):
        pipeline.with_overrides(SMALL, **change)


def test_presets_cover_every_level_and_the_paper_tables():
    assert presets.LEVELS == ("tiny", "quick", "full", "regime", "regime-tiny")
    for level in presets.LEVELS:
        for exp in presets.experiments(level):
            assert presets.run_config(level, exp.name, 0).dataset == exp.config.dataset
    assert presets.PAPER_TABLES["chest_xray"].h == 5e-4 and presets.PAPER_TABLES["celeba"].rho == 0.2
    with pytest.raises(ValueError, match="unknown BNN preset"):
        presets.experiments("huge")


def test_registry_runs_tiny_as_quick_except_where_a_module_has_its_own_tiny():
    from reports import fig_bnn, fig_demo, registry

    assert "tiny" in registry.PRESETS
    assert registry.module_preset(fig_demo, "tiny") == "quick"
    assert registry.module_preset(fig_bnn, "tiny") == "tiny"
    assert registry.module_preset(fig_bnn, "quick") == "quick" and registry.module_preset(fig_demo, "full") == "full"
    assert {u["dataset"] for u in fig_bnn.units("quick")} == {"xray_subset"}


@pytest.fixture(scope="module")
def swa_point(one_thread):
    """The SWA point and two perturbed starts of SMALL, converted to float64 (network and images)."""
    import dataclasses

    import torch

    from bnn import models

    torch.manual_seed(0)
    data = pipeline.tensors(pipeline.load(SMALL), SMALL, "cpu", 0)
    net = models.build(SMALL.network, width=SMALL.width, in_shape=data.in_shape, n_classes=data.n_classes)
    gen = torch.Generator().manual_seed(1)
    swa, _ = pipeline.train(net, data, SMALL, gen, {})
    starts = [pipeline.perturbed(swa, SMALL.rho, gen) for _ in range(2)]
    data = dataclasses.replace(data, x=data.x.double(), x_test=data.x_test.double())
    return data, swa.double(), [s.double() for s in starts]


# Chains at once against single chains, in float64.  The two evaluate the same arithmetic in
# different orders (a vmap'd, batched convolution against one network's), so they differ by
# rounding only, amplified along the 6 steps (2 epochs of 3 batches), through BatchNorm and the
# softmax.  That amplification was measured with this test in float32 (torch 2.13; oneDNN at
# AVX-512, AVX2, SSE4.1): the probabilities apart by up to 9.7e-4 = 8.1e3 float32 epsilons
# (2**-23; 1.4e-5 at AVX2, 1.8e-4 at SSE4.1), the trace by up to 2.8e-5 relative = 235 epsilons.
# In float64 (epsilon 2**-52 = 2.2e-16) the same factors give 1.8e-12 and 5.2e-14; measured
# at all three: 3.7e-15 and 3.4e-16 (float64 convolutions are not oneDNN's).  The tolerances
# are 550 and 190 times the amplified rounding (room for other torches' orders) and far below
# what a fault in the ensemble moves (measured by injecting it there only): the chains given
# another seed 1.7e-2 (trace; 0.38 in the probabilities), two chains' batches swapped 3.3e-2,
# h rounded to float32 7e-9 (trace).  In float32 the comparison would need 1e-3.
ENSEMBLE_PROBS_ATOL = 1e-9
ENSEMBLE_TRACE_RTOL = 1e-11


@pytest.mark.slow
@pytest.mark.parametrize("label", ["SMS-UBU", "SG-UBU (rr)"])
def test_chains_at_once_follow_the_single_chain_trajectories(swa_point, label):
    """The multi-chain mode (one vmap over stacked parameters) gives chain k the noise, batches and
    evaluation subsets of the single chain seeded chain_seed(seed, k): the same trajectory, so the
    same loss trace and predictive up to float64 rounding (the tolerances are derived above)."""
    from integrators.torch.ensemble import chain_seed

    data, swa, starts = swa_point
    spec = pipeline.SAMPLERS[label]
    together = pipeline.run_chains(starts, swa, spec, data, SMALL, h=1e-3, seed=5, epochs_burn=1, epochs_sample=1)
    for k, (start, ens) in enumerate(zip(starts, together, strict=True)):
        one = pipeline.run_chain(start, swa, spec, data, SMALL, h=1e-3, seed=chain_seed(5, k), epochs_burn=1,
                                 epochs_sample=1)
        assert ens.diverged is None and one.diverged is None
        np.testing.assert_allclose(ens.trace, one.trace, rtol=ENSEMBLE_TRACE_RTOL, atol=0)
        np.testing.assert_allclose(ens.probs, one.probs, rtol=0, atol=ENSEMBLE_PROBS_ATOL)
    # and the two chains are not one chain twice
    assert not np.allclose(together[0].probs, together[1].probs, atol=1e-3)


def test_run_with_several_chains_per_sampler_averages_them(one_thread):
    cfg = pipeline.with_overrides(SMALL, samplers=("SMS-UBU",), epochs_sample=1, chains=2, trace_chains=2,
                                  trace_epochs=2)
    res = pipeline.run(cfg, 3)
    m = res["methods"]["SMS-UBU"]
    assert m["chains"] == 2 and m["diverged"] is None and len(m["trace"]) == 1
    np.testing.assert_allclose(np.array(m["probs"]).sum(axis=1), 1.0, atol=1e-5)
    assert len(res["traces"]) == 2 and all(len(t["trace"]) == 2 for t in res["traces"])
    assert res["traces"][0]["trace"] != res["traces"][1]["trace"]
    assert "SMS-UBU epoch (2 chains at once)" in res["timings"]


@pytest.mark.slow
def test_verdicts_use_only_ensemble_sizes_with_a_standard_deviation(tmp_path):
    """Four runs give ensembles of 1, 2 and 4; one group of 4 has no standard deviation, so the
    measured verdicts speak of sizes 1 and 2 only."""
    from reports import fig_bnn

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=40)

    def fake(seed):
        methods = {m: {"probs": rng.dirichlet(np.ones(3), size=40).tolist(), "h": None, "diverged": None}
                   for m in ("Adam", "SWA", "SMS-UBU")}
        config = {**SMALL.to_dict(), "h_panel": ()}
        return {"config": config, "seed": seed, "data": "fake", "n_parameters": 10, "labels": labels.tolist(),
                "methods": methods, "hessian": {}}

    info = draw_files(fig_bnn, [({"dataset": "fake", "run": i}, fake(i)) for i in range(4)], "quick", tmp_path)
    assert "ensembles of 1: SMS-UBU nll" in info["measured"] and "ensembles of 2: SMS-UBU nll" in info["measured"]
    assert "ensembles of 4" not in info["measured"]
