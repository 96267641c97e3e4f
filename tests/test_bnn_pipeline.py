"""experiments.bnn._pipeline and the reports module on a very small configuration (seconds)."""

import csv
import math

import numpy as np
import pytest
import torch
from helpers import draw_files

import data_sets as data
from bias import _metrics as bias_metrics
from bnn import _augment as bnn_augment
from bnn import _diagnostics as diagnostics
from bnn import _metrics as metrics
from bnn import models
from experiments.bnn import EXPERIMENT as fig_bnn
from experiments.bnn import _pipeline as pipeline
from experiments.bnn import _presets as presets
from reports import schema

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
    for run in two_runs:
        schema.check(run, fig_bnn.RESULT)
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
    res = pipeline.run(cfg, 0)
    m = res["methods"]["SG-HMC"]
    assert m["probs"] is None and isinstance(m["diverged"], int) and m["diverged"] >= 1
    schema.check(res, fig_bnn.RESULT)  # a diverged method is a result the report draws, not a wrong file


@pytest.mark.slow
def test_reports_module_draws_csv_markdown_and_figures(two_runs, tmp_path):
    from experiments.bnn import EXPERIMENT as fig_bnn

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
    from experiments.bnn import EXPERIMENT as fig_bnn

    info = draw_files(fig_bnn, [({"dataset": "celeba", "run": 0}, {"missing": "x: file not found"})], "full", tmp_path)
    assert "celeba: data absent for 1 unit (x: file not found)" in info["measured"]


@pytest.mark.parametrize("change,match", [
    ({"h": 0.0}, "h must be"), ({"samplers": ("HMC",)}, "^samplers must be"),
    ({"dataset": "mnist"}, "^dataset must be"),
    ({"epochs_burn": -1}, "epochs_burn"), ({"network": "vgg"}, "^network must be"), ({"h_panel": (-1.0,)}, "h_panel"),
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
    from experiments.bnn import EXPERIMENT as fig_bnn
    from experiments.demo import EXPERIMENT as fig_demo
    from reports import registry

    assert "tiny" in registry.PRESETS
    assert registry.module_preset(fig_demo, "tiny") == "quick"
    assert registry.module_preset(fig_bnn, "tiny") == "tiny"
    assert registry.module_preset(fig_bnn, "quick") == "quick"
    assert registry.module_preset(fig_demo, "full") == "full"
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
    from integrators.torch._ensemble import chain_seed

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
    from experiments.bnn import EXPERIMENT as fig_bnn

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


# -------------------------------------------------------------------------------------
# Input checks of the BNN entry points: every bad value raises a ValueError naming it, before any
# data is loaded or any network trained (no training runs here: configurations, loaders and metrics on
# tiny inputs).
# ---------------------------------------------------------------------------------------------- metrics

METRIC_FUNCTIONS = [metrics.evaluate, bias_metrics.accuracy, bias_metrics.nll, bias_metrics.ace_classwise,
                    bias_metrics.rps, bias_metrics.ece, bias_metrics.brier]
GOOD_PROBS = [[0.1, 0.9], [0.4, 0.6], [0.3, 0.7]]
GOOD_LABELS = [0, 0, 1]


@pytest.mark.parametrize("fn", METRIC_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("probs,labels", [
    ([[0.9, 0.9], [0.1, 0.1]], [0, 1]),            # rows do not sum to 1
    ([[3.0, -1.0], [0.2, 2.0]], [0, 1]),           # logits
    ([[1.2, -0.2], [0.5, 0.5]], [0, 1]),           # a negative entry (rows sum to 1)
    ([[np.nan, 1.0], [0.5, 0.5]], [0, 1]),         # NaN
    ([[np.inf, 0.0], [0.5, 0.5]], [0, 1]),         # infinity
    ([[1.0], [1.0]], [0, 0]),                      # one class (K = 1)
    (np.zeros((0, 2)), np.zeros(0, dtype=int)),    # no points
    ([["a", "b"]], [0]),                           # not numbers
], ids=["row-sums", "logits", "negative", "nan", "inf", "one-class", "no-points", "strings"])
def test_metrics_refuse_what_is_not_a_predictive(fn, probs, labels):
    with pytest.raises(ValueError, match="probs"):
        fn(probs, labels)


@pytest.mark.parametrize("fn", METRIC_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("labels", [[0.5, 0, 1], ["a", "b", "c"], [np.nan, 0, 1]],
                         ids=["fractional", "strings", "nan"])
def test_metrics_refuse_bad_labels(fn, labels):
    with pytest.raises(ValueError, match="labels"):
        fn(GOOD_PROBS, labels)


@pytest.mark.parametrize("fn", [bias_metrics.ace_classwise, bias_metrics.ece], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n_bins", [0, -1, 2.5, True, None])
def test_binned_metrics_refuse_bad_bin_counts(fn, n_bins):
    with pytest.raises(ValueError, match="n_bins"):
        fn(GOOD_PROBS, GOOD_LABELS, n_bins=n_bins)


def test_metric_values_on_a_valid_three_point_example_are_unchanged():
    """From the definitions, by hand: p = (0.1, 0.9), (0.4, 0.6), (0.3, 0.7), labels 0, 0, 1."""
    expected = {
        "accuracy": 1 / 3,                                         # argmax is class 1 for all three
        "nll": -(math.log(0.1) + math.log(0.4) + math.log(0.7)) / 3,
        # 15 equal-width bins: confidences 0.9 (wrong), 0.6 (wrong), 0.7 (right), each alone in its bin
        "ece": (0.9 + 0.6 + 0.3) / 3,
        # class-wise: 20 equal-count bins per class over 3 points: every point alone; class 0 errors |1 - 0.1|,
        # |1 - 0.4|, |0 - 0.3|, class 1 |0 - 0.9|, |0 - 0.6|, |1 - 0.7|
        "ace_classwise": (0.9 + 0.6 + 0.3 + 0.9 + 0.6 + 0.3) / 6,
        # top-label: 20 equal-count bins of the largest probability, every point alone: |0.9 - 0|, |0.6 - 0|, |0.7 - 1|
        "ace_top_label": (0.9 + 0.6 + 0.3) / 3,
        "brier": ((0.9**2 + 0.9**2) + (0.6**2 + 0.6**2) + (0.3**2 + 0.3**2)) / 3,
        "rps": (0.9**2 + 0.6**2 + 0.3**2) / 3,                     # K = 2: (F_0 - O_0)^2 / (K - 1)
    }
    assert expected["nll"] == pytest.approx(1.19185, abs=1e-5) and expected["brier"] == pytest.approx(0.84)
    got = metrics.evaluate(GOOD_PROBS, GOOD_LABELS)
    assert set(got) == set(expected)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name
    # integer-valued float labels are class indices too
    assert metrics.evaluate(GOOD_PROBS, np.array(GOOD_LABELS, dtype=float)) == got


def test_metrics_accept_float32_softmax_ensembles_as_the_pipeline_stores_them():
    """Float32 softmax outputs over 10 classes, averaged over samples and runs and rounded to 7
    decimals (pipeline._probs_json): row sums off by ~1e-7, inside the tolerance."""
    rng = np.random.default_rng(0)
    logits = torch.from_numpy(rng.standard_normal((5, 400, 10)).astype(np.float32) * 8)
    probs = np.round(torch.softmax(logits, dim=2).double().mean(dim=0).numpy(), 7)
    labels = rng.integers(0, 10, size=400)
    scores = metrics.evaluate(probs, labels)
    assert all(np.isfinite(v) for v in scores.values())
    metrics.ensemble_scores(np.stack([probs] * 4), labels)


# ------------------------------------------------------------------------------------- run configuration

BASE = pipeline.RunConfig("digits", "fashion_mnist")


@pytest.mark.parametrize("change,name", [
    ({"n_train": -5}, "n_train"), ({"n_train": 0}, "n_train"), ({"n_train": 2.5}, "n_train"),
    ({"n_train": True}, "n_train"), ({"n_test": 0}, "n_test"), ({"n_test": 10.5}, "n_test"),
    ({"batch_size": 200.5}, "batch_size"), ({"n_eval_batches": 0.5}, "n_eval_batches"),
    ({"hessian_batch": 0}, "hessian_batch"), ({"hessian_batch": 2.5}, "hessian_batch"),
    ({"hessian_iters": 2, "hessian_batch": 1}, "hessian_batch"),  # batch normalization on one image
    ({"n_cycles": 0}, "n_cycles"), ({"n_cycles": 1.5}, "n_cycles"),
    ({"h_panel": (math.inf,)}, "h_panel"), ({"h_panel": (True,)}, "h_panel"),
    ({"rho_max_factor": 0.5, "trace_chains": 2, "trace_epochs": 1}, "rho_max_factor"),
    ({"rho_max_factor": 5.0, "trace_chains": 2, "trace_epochs": 1}, "rho_max_factor"),
    ({"trace_chains": 2, "trace_epochs": 0}, "trace_epochs"),
    ({"epochs_sample": 0}, "epochs_sample"),
    ({"samplers": "SMS-UBU"}, "samplers"), ({"samplers": ("SMS-UBU", "SMS-UBU")}, "samplers"),
    ({"dataset": ["digits"]}, "dataset"), ({"data_path": 3}, "data_path"),
])
def test_run_config_refuses_bad_fields(change, name):
    with pytest.raises(ValueError, match=name):
        pipeline.with_overrides(BASE, **change)


def test_run_config_keeps_its_valid_settings():
    assert BASE.n_train is None and BASE.n_test is None  # None: the whole split
    pipeline.with_overrides(BASE, n_train=1, n_test=1, rho_max_factor=0.5)  # no trace chains: any box
    pipeline.with_overrides(BASE, trace_chains=2, trace_epochs=1, rho_max_factor=5.5)
    pipeline.with_overrides(BASE, samplers=(), epochs_sample=0)  # nothing samples
    for level in presets.LEVELS:
        for exp in presets.experiments(level):
            for run in range(exp.n_runs):
                presets.run_config(level, exp.name, run)


@pytest.fixture
def no_loading(monkeypatch):
    """pipeline.run must refuse its arguments before it loads any data."""
    def load(cfg):
        raise AssertionError("data loaded before the arguments were checked")

    monkeypatch.setattr(pipeline, "load", load)


@pytest.mark.parametrize("kwargs,name", [
    ({"device": "tpu"}, "device"), ({"device": 3}, "device"), ({"device": "meta"}, "device"),
    ({"seed": -1}, "seed"), ({"seed": 0.5}, "seed"), ({"seed": True}, "seed"), ({"seed": 2**64}, "seed"),
    ({"cfg": {"dataset": "digits"}}, "cfg"),
])
def test_run_checks_its_arguments_before_loading_data(no_loading, kwargs, name):
    args = {"cfg": BASE, "seed": 0, **kwargs}
    device = args.pop("device", "cpu")
    with pytest.raises(ValueError, match=name):
        pipeline.run(args["cfg"], args["seed"], device=device)


class _Trained(Exception):
    pass


@pytest.mark.parametrize("n_train,batch_size,augment_copies,leaves", [
    (301, 300, 0, "301 training images \\(n_train=301\\) leaves a last batch of one image \\(1 of 300, then 1\\)"),
    (1, 300, 0, "1 training image \\(n_train=1\\) leaves a batch of one image"),
    (3, 4, 2, "9 training images \\(n_train=3, 2 augmented copies\\) leaves a last batch of one image "
              "\\(2 of 4, then 1\\)"),
])
def test_run_refuses_a_last_batch_of_one_before_training(monkeypatch, n_train, batch_size, augment_copies, leaves):
    """Batch normalization cannot normalize one image (torch's raw 'Expected more than 1 value per channel'); the
    batch is not dropped (a sweep must visit every datum), so the run is refused, naming batch_size and n_train."""
    def train(*args, **kwargs):
        raise _Trained

    monkeypatch.setattr(pipeline, "train", train)
    cfg = pipeline.with_overrides(BASE, width=0.25, n_train=n_train, batch_size=batch_size,
                                  augment_copies=augment_copies, samplers=("SMS-UBU",))
    with pytest.raises(ValueError, match=f"^batch_size={batch_size} with {leaves}: batch normalization needs two"):
        pipeline.run(cfg, 0)
    with pytest.raises(_Trained):  # one image more: no batch of one, the run goes on to training
        pipeline.run(pipeline.with_overrides(cfg, n_train=n_train + 1), 0)


@pytest.mark.parametrize("args,name", [(("tiny", "digits", 0.5), "run"), (("tiny", "digits", True), "run"),
                                       (("tiny", 3, 0), "dataset")])
def test_preset_run_config_checks_its_arguments(args, name):
    with pytest.raises(ValueError, match=name):
        presets.run_config(*args)


# -------------------------------------------------------------------------------------------------- data

def _image_data(n_train=6, n_test=4):
    rng = np.random.default_rng(0)
    return data.ImageData(rng.random((n_train, 1, 4, 4), dtype=np.float32), rng.integers(0, 2, n_train),
                          rng.random((n_test, 1, 4, 4), dtype=np.float32), rng.integers(0, 2, n_test), 2, "tiny")


@pytest.mark.parametrize("kwargs,name", [({"n_train": -5}, "n_train"), ({"n_train": 0}, "n_train"),
                                         ({"n_train": 2.5}, "n_train"), ({"n_train": 7}, "n_train"),
                                         ({"n_test": -1}, "n_test"), ({"n_test": 5}, "n_test"),
                                         ({"n_test": True}, "n_test")])
def test_subset_refuses_bad_counts(kwargs, name):
    with pytest.raises(ValueError, match=name):
        _image_data().subset(**kwargs)


def test_subset_keeps_the_first_images():
    d = _image_data().subset(2, 3)
    assert len(d.y_train) == 2 and len(d.y_test) == 3
    assert len(_image_data().subset().y_train) == 6


@pytest.mark.parametrize("kwargs,name", [({"n_train": 5000}, "n_train"), ({"n_train": 1797}, "n_train"),
                                         ({"n_train": -1}, "n_train"), ({"n_train": 0}, "n_train"),
                                         ({"n_train": 12.0}, "n_train"), ({"seed": -1}, "seed")])
def test_embedded_digits_refuses_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        data.embedded_digits(**kwargs)


def test_embedded_digits_keeps_a_test_set():
    d = data.embedded_digits(n_train=1796)
    assert len(d.y_train) == 1796 and len(d.y_test) == 1


def _npz(path, train_labels):
    np.savez(path, train_images=np.zeros((3, 4, 4), np.uint8), train_labels=np.asarray(train_labels).reshape(-1, 1),
             test_images=np.zeros((2, 4, 4), np.uint8), test_labels=np.array([[0], [1]]))
    return path


@pytest.mark.parametrize("labels", [[0.5, 0.0, 1.0], [np.nan, 0.0, 1.0]])
def test_load_medmnist_refuses_fractional_labels(tmp_path, labels):
    with pytest.raises(ValueError, match="labels"):
        data.load_medmnist(_npz(tmp_path / "m.npz", labels))


@pytest.mark.parametrize("kwargs,name", [({"n_classes": 0}, "n_classes"), ({"n_classes": 1}, "n_classes"),
                                         ({"n_classes": 2.5}, "n_classes"), ({"include_val": "no"}, "include_val")])
def test_load_medmnist_refuses_bad_options(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=name):
        data.load_medmnist(_npz(tmp_path / "m.npz", [0, 1, 1]), **kwargs)


def test_load_medmnist_accepts_integer_valued_float_labels(tmp_path):
    d = data.load_medmnist(_npz(tmp_path / "m.npz", [0.0, 1.0, 1.0]))
    assert d.n_classes == 2 and d.y_train.dtype == np.int64 and d.y_train.tolist() == [0, 1, 1]


@pytest.mark.parametrize("args,kwargs,name", [
    (((1, 4, 4), 0), {}, "n_classes"), (((1, 4, 4), 1), {}, "n_classes"), (((1, 4, 4), 2.5), {}, "n_classes"),
    (((1, 4.5, 4), 2), {}, "in_shape"), (((1, 4), 2), {}, "in_shape"), (((1, 0, 4), 2), {}, "in_shape"),
    (((1, 4, 4), 2), {"n_train": 0}, "n_train"), (((1, 4, 4), 2), {"n_test": 2.5}, "n_test"),
    (((1, 4, 4), 2), {"seed": -1}, "seed")])
def test_synthetic_refuses_bad_arguments(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        data.synthetic(*args, **{"n_train": 3, "n_test": 2, **kwargs})


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.bool])
def test_augment_refuses_non_floating_images(dtype):
    with pytest.raises(ValueError, match=f"images.*{str(dtype).removeprefix('torch.')}"):
        bnn_augment.augment(torch.zeros(2, 1, 8, 8, dtype=dtype), torch.Generator().manual_seed(0))


@pytest.mark.parametrize("kwargs,name", [({"min_crop": 0}, "min_crop"), ({"min_crop": 1.5}, "min_crop"),
                                         ({"brightness": -0.1}, "brightness"), ({"max_shift": math.nan}, "max_shift"),
                                         ({"max_rotation": -1}, "max_rotation")])
def test_augmentation_refuses_bad_settings(kwargs, name):
    with pytest.raises(ValueError, match=name):
        bnn_augment.Augmentation(**kwargs)


# ------------------------------------------------------------------------------------------------ models

@pytest.mark.parametrize("kwargs,name", [({"in_shape": (1, 28.5, 28)}, "in_shape"), ({"in_shape": (1, 28, True)},
                                                                                      "in_shape"),
                                         ({"n_classes": 2.5}, "n_classes"), ({"width": True}, "width")])
def test_build_refuses_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        models.build("chest_xray", **kwargs)


# ------------------------------------------------------------------------------------------- diagnostics

def _tiny_net():
    torch.manual_seed(0)
    return models.build("chest_xray", width=1 / 128, in_shape=(1, 6, 6), n_classes=3)


@pytest.mark.parametrize("prior_precision", [-1.0, math.nan, math.inf, "1"])
def test_hessian_norm_refuses_bad_prior_precision(prior_precision):
    x, y = torch.rand(4, 1, 6, 6), torch.tensor([0, 1, 2, 0])
    with pytest.raises(ValueError, match="prior_precision"):
        diagnostics.hessian_norm(_tiny_net(), x, y, prior_precision=prior_precision, n_iter=2)


@pytest.mark.parametrize("y", [torch.tensor([0, 1, 3, 0]), torch.tensor([0, -1, 2, 0]),
                               torch.tensor([0.0, 1.0, 2.0, 0.0]), torch.tensor([0, 1, 2])])
def test_hessian_norm_refuses_bad_labels(y):
    with pytest.raises(ValueError, match="y"):
        diagnostics.hessian_norm(_tiny_net(), torch.rand(4, 1, 6, 6), y, n_iter=2)


def test_power_iteration_does_not_call_a_flipping_iterate_converged():
    """Eigenvalues +3 and -3: u flips between a e1 + b e2 and -a e1 + b e2, so the Rayleigh quotient
    3 (b^2 - a^2) stands still below 3; that is no convergence. With one dominant eigenvalue (of
    either sign) the iteration still converges to its modulus."""
    for eig, dim in (((-3.0, 3.0), 2), ((-3.0, 3.0, 1.0, -2.0), 4)):
        d = torch.tensor(eig, dtype=torch.float64)
        res = diagnostics.power_iteration(lambda u, d=d: d * u, dim, n_iter=2000)
        assert not res.converged and res.value == pytest.approx(3.0, rel=1e-6), eig  # the bound |H u|
    for eig in ((-1.0, 3.0), (-3.0, 1.0), (3.0, 2.9, -1.0, 0.5)):
        d = torch.tensor(eig, dtype=torch.float64)
        res = diagnostics.power_iteration(lambda u, d=d: d * u, len(eig), n_iter=20000, tol=1e-10)
        assert res.converged and res.value == pytest.approx(3.0, rel=1e-8), eig


@pytest.mark.parametrize("kwargs,name", [({"dim": 2.5}, "dim"), ({"n_iter": 1.5}, "n_iter"), ({"seed": -1}, "seed")])
def test_power_iteration_refuses_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        diagnostics.power_iteration(lambda u: u, **{"dim": 3, **kwargs})


def test_a_config_given_numpy_values_stores_python_values_its_json_can_hold():
    import json
    from dataclasses import asdict, replace

    from experiments.bnn import _presets as presets
    cfg = replace(presets.run_config("regime-tiny", "digits", 0), control_variate=np.True_,
                  stratified_test=np.array(0.2), paper_baseline=np.bool_(False))
    assert (cfg.control_variate, cfg.stratified_test, cfg.paper_baseline) == (True, 0.2, False)
    assert type(cfg.control_variate) is bool and type(cfg.stratified_test) is float
    json.dumps(asdict(cfg))


def test_chains_auto_takes_the_most_chains_whose_run_fits_half_the_free_memory(monkeypatch):
    """RunConfig(chains="auto"): on CUDA the largest k <= 32 with run_bytes(k) <= half the free memory; 1 on a
    CPU and with the control variate; a word other than "auto" is refused by name."""
    cfg = pipeline.RunConfig(**{**pipeline.RunConfig.VALID_EXAMPLE, "chains": "auto"})
    n_params = 1e6
    five = pipeline.run_bytes(pipeline.with_overrides(cfg, chains=5), n_params)
    six = pipeline.run_bytes(pipeline.with_overrides(cfg, chains=6), n_params)
    monkeypatch.setattr(pipeline, "device_memory_bytes", lambda device: five + six)  # half of it: 5 fit, 6 do not
    assert pipeline.resolve_chains(cfg, n_params, "cuda").chains == 5
    monkeypatch.setattr(pipeline, "device_memory_bytes", lambda device: 1e30)
    assert pipeline.resolve_chains(cfg, n_params, "cuda").chains == 32
    assert pipeline.resolve_chains(cfg, n_params, "cpu").chains == 1
    with_cv = pipeline.with_overrides(cfg, control_variate=True)
    assert pipeline.resolve_chains(with_cv, n_params, "cuda").chains == 1
    with pytest.raises(ValueError, match="chains"):
        pipeline.with_overrides(cfg, chains="many")
