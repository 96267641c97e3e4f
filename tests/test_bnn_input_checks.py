"""Input checks of the BNN entry points: every bad value raises a ValueError naming it, before any
data is loaded or any network trained (no training runs here: configurations, loaders and metrics on
tiny inputs)."""

import math

import numpy as np
import pytest
import torch

from bias import metrics as bias_metrics
from bnn import augment as bnn_augment
from bnn import diagnostics, metrics, models, pipeline, presets
from integrators import data

pytestmark = pytest.mark.torch

# ---------------------------------------------------------------------------------------------- metrics

METRIC_FUNCTIONS = [metrics.evaluate, bias_metrics.accuracy, bias_metrics.nll, bias_metrics.ace, bias_metrics.rps,
                    bias_metrics.ece, bias_metrics.brier]
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


@pytest.mark.parametrize("fn", [bias_metrics.ace, bias_metrics.ece], ids=lambda f: f.__name__)
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
        # 20 equal-count bins per class over 3 points: every point alone; class 0 errors |1 - 0.1|, |1 - 0.4|,
        # |0 - 0.3|, class 1 |0 - 0.9|, |0 - 0.6|, |1 - 0.7|
        "ace": (0.9 + 0.6 + 0.3 + 0.9 + 0.6 + 0.3) / 6,
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
