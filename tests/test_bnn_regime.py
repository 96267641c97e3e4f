"""The ``regime`` level of the BNN experiment: the stratified split, the authors' variants as
options, the baselines' test metrics along training, the paired verdicts, and its tiny level
through the command line (the same code path as ``sms-langevin run bnn --preset regime``)."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import data_sets as data
from experiments.bnn import _curves as curves
from experiments.bnn import _pipeline as pipeline
from experiments.bnn import _presets as presets

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]
SMALL = pipeline.RunConfig("digits", "fashion_mnist", width=0.125, n_train=200, n_test=100, batch_size=50,
                           epochs_train=2, epochs_swa=1, epochs_burn=0, epochs_sample=1, h=1e-3,
                           samplers=("SMS-UBU",), n_eval_batches=1)


def _images(labels, n_classes):
    """ImageData whose every image holds its own index (so a split can be traced back)."""
    labels = np.asarray(labels, dtype=np.int64)
    x = np.arange(len(labels), dtype=np.float32)[:, None, None, None] * np.ones((1, 1, 2, 2), np.float32)
    cut = len(labels) // 2
    return data.ImageData(x[:cut], labels[:cut], x[cut:], labels[cut:], n_classes, "indexed")


@given(counts=st.lists(st.integers(2, 60), min_size=2, max_size=5), fraction=st.sampled_from([0.2, 0.25, 0.5]),
       seed=st.integers(0, 3))
def test_stratified_split_puts_the_same_share_of_each_class_in_test(counts, fraction, seed):
    labels = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(counts)), counts))
    d = _images(labels, len(counts))
    if any(not 0 < round(fraction * c) < c for c in counts):
        with pytest.raises(ValueError, match="test_fraction"):
            d.stratified(fraction, seed=seed)
        return
    s = d.stratified(fraction, seed=seed)
    for c, n_c in enumerate(counts):  # exact counts: round(fraction * n_c) of class c in test, the rest in train
        assert int(np.sum(s.y_test == c)) == round(fraction * n_c)
        assert int(np.sum(s.y_train == c)) == n_c - round(fraction * n_c)
    # every pooled image exactly once, with its own label
    ids = np.concatenate([s.x_train[:, 0, 0, 0], s.x_test[:, 0, 0, 0]]).astype(int)
    assert sorted(ids.tolist()) == list(range(len(labels)))
    np.testing.assert_array_equal(labels[ids], np.concatenate([s.y_train, s.y_test]))


@pytest.mark.data  # the development data folder (tests/conftest.py)
def test_stratified_xray_subset_has_the_pooled_class_ratio_in_train_and_test():
    d = data.load_medmnist().stratified(0.2)
    pooled = np.array([388 + 135 + 234, 3494 + 389 + 390])  # normal, pneumonia (the data README)
    assert np.bincount(d.y_test).tolist() == np.round(0.2 * pooled).astype(int).tolist() == [151, 855]
    assert np.bincount(d.y_train).tolist() == (pooled - [151, 855]).tolist()
    ratio_train, ratio_test = np.mean(d.y_train == 1), np.mean(d.y_test == 1)
    assert abs(ratio_train - ratio_test) < 1e-3 and abs(ratio_test - pooled[1] / pooled.sum()) < 1e-3
    assert "stratified" in d.source
    # the level's configuration reads it that way
    cfg = presets.run_config("regime", "xray_stratified", 0)
    assert cfg.stratified_test == 0.2 and np.bincount(pipeline.load(cfg).y_test).tolist() == [151, 855]


@pytest.mark.parametrize("change,match", [
    ({"step_convention": "Notebook"}, "step_convention must be one of 'paper', 'notebook', got 'Notebook'"),
    ({"step_convention": None}, "step_convention"), ({"control_variate": 1}, "control_variate must be True or False"),
    ({"control_variate": "yes"}, "control_variate"), ({"stratified_test": 1.0}, "stratified_test"),
    ({"stratified_test": True}, "stratified_test"), ({"curve_every": -1}, "curve_every"),
    ({"curve_every": 1.5}, "curve_every"),
    ({"chains": 2, "control_variate": True}, "chains must be 1"),
    ({"chains": 2, "samplers": ("SMS-UBU (notebook)",)}, "chains must be 1")])
def test_variant_options_are_validated(change, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        pipeline.with_overrides(SMALL, **change)


def test_sampler_settings_follow_the_convention():
    paper = pipeline.with_overrides(SMALL, samplers=("SMS-UBU", "SMS-UBU (notebook)", "SG-HMC"))
    note = pipeline.with_overrides(paper, step_convention="notebook", control_variate=True)
    s = pipeline.SAMPLERS
    assert pipeline.sampler_settings(s["SMS-UBU"], paper, 2e-3) == {
        "step": 2e-3, "step_convention": "paper", "control_variate": False}
    assert pipeline.sampler_settings(s["SMS-UBU (notebook)"], paper, 2e-3) == {
        "step": 1e-3, "step_convention": "notebook", "control_variate": True}
    assert pipeline.sampler_settings(s["SMS-UBU"], note, 2e-3) == {
        "step": 1e-3, "step_convention": "notebook", "control_variate": True}
    # EM steps by h under both conventions; the unlocalized SG-HMC has no x* for a control variate
    assert pipeline.sampler_settings(s["SG-HMC"], note, 2e-3) == {
        "step": 2e-3, "step_convention": "notebook", "control_variate": False}


@pytest.fixture(scope="module")
def variant_runs():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    base = pipeline.with_overrides(SMALL, samplers=("SMS-UBU", "SMS-UBU (notebook)"), curve_every=1)
    runs = {"paper": pipeline.run(base, 7),
            "notebook": pipeline.run(pipeline.with_overrides(base, samplers=("SMS-UBU",), h=2e-3,
                                                             step_convention="notebook"), 7),
            "half": pipeline.run(pipeline.with_overrides(base, samplers=("SMS-UBU",), h=1e-3), 7),
            "cv": pipeline.run(pipeline.with_overrides(base, samplers=("SMS-UBU",), control_variate=True), 7)}
    torch.set_num_threads(threads)
    return runs


@pytest.mark.slow
def test_variants_are_recorded_and_change_the_chain(variant_runs):
    paper, notebook = variant_runs["paper"], variant_runs["notebook"]
    assert paper["config"]["step_convention"] == "paper" and paper["config"]["control_variate"] is False
    assert notebook["config"]["step_convention"] == "notebook"
    assert variant_runs["cv"]["config"]["control_variate"] is True
    m = paper["methods"]
    assert (m["SMS-UBU"]["step"], m["SMS-UBU"]["control_variate"]) == (1e-3, False)
    assert (m["SMS-UBU (notebook)"]["h"], m["SMS-UBU (notebook)"]["step"]) == (1e-3, 5e-4)
    assert m["SMS-UBU (notebook)"]["control_variate"] is True
    assert m["SMS-UBU (notebook)"]["step_convention"] == "notebook"
    # the notebooks' convention at h = 2e-3 is the paper's at h = 1e-3: the same chain (same seed and label)
    assert notebook["methods"]["SMS-UBU"]["step"] == 1e-3
    np.testing.assert_array_equal(notebook["methods"]["SMS-UBU"]["probs"],
                                  variant_runs["half"]["methods"]["SMS-UBU"]["probs"])
    # ... and not the paper's chain at 2e-3 nor one without the control variate
    assert not np.allclose(m["SMS-UBU"]["trace"], variant_runs["cv"]["methods"]["SMS-UBU"]["trace"], rtol=1e-6)
    assert variant_runs["cv"]["methods"]["SMS-UBU"]["control_variate"] is True


def test_curve_evaluates_adam_and_swa_without_changing_them(variant_runs, one_torch_thread):
    res = variant_runs["paper"]
    curve = res["curve"]
    m = pipeline.batches_per_epoch(SMALL, 200)
    assert [(p["stage"], p["epoch"], p["step"]) for p in curve] == [("Adam", 1, m), ("Adam", 2, 2 * m),
                                                                       ("SWA", 1, 3 * m)]
    assert [p["train_loss"] for p in curve] == res["train_losses"]
    for p in curve:
        assert 0 <= p["accuracy"] <= 1 and p["nll"] > 0
        assert 0 <= p["ace_top_label"] <= 1 and 0 <= p["ace_classwise"] <= 1
    # the last Adam point scores Adam's network on a different BatchNorm subset: close, and the
    # run without a curve trains the same networks (the curve draws from a generator of its own)
    without = pipeline.run(pipeline.with_overrides(SMALL, samplers=("SMS-UBU", "SMS-UBU (notebook)")), 7)
    assert "curve" not in without
    assert without["train_losses"] == res["train_losses"]
    np.testing.assert_array_equal(without["methods"]["SWA"]["probs"], res["methods"]["SWA"]["probs"])


def test_overconfidence_finds_the_lowest_nll_along_training():
    rows = [{"dataset": "d", "seed": s, "stage": "Adam", "epoch": e, "step": 10 * e, "nll": nll + 0.01 * s,
             "accuracy": 0.9, "ace_top_label": 0.1, "ace_classwise": 0.1, "rps": 0.1, "train_loss": 1.0 / e}
            for s in range(2) for e, nll in ((1, 0.5), (2, 0.3), (3, 0.4), (4, 0.6))]
    summary = curves.curve_summary(rows)
    assert [r["runs"] for r in summary] == [2] * 4
    over = curves.overconfidence(summary, "d")
    assert over["best_step"] == 20 and over["adam_step"] == 40
    assert over["best_nll"] == pytest.approx(0.305) and over["adam_nll"] == pytest.approx(0.605)
    assert over["overconfident"] and over["rise"] == pytest.approx(0.3) and over["runs"] == 2
    # a last point within two standard errors of the lowest, or an accuracy fallen with it, is not overconfidence
    flat = [{**r, "nll": 0.3 + 0.2 * r["seed"]} if r["epoch"] == 4 else r for r in rows]
    assert not curves.overconfidence(curves.curve_summary(flat), "d")["overconfident"]
    fallen = [{**r, "accuracy": 0.5} if r["epoch"] == 4 else r for r in rows]
    assert not curves.overconfidence(curves.curve_summary(fallen), "d")["overconfident"]


def test_regime_levels_hold_every_sampler_the_panel_and_the_traces():
    for level in ("regime", "regime-tiny"):
        exps = presets.experiments(level)
        assert {e.name for e in exps} == {"xray_stratified", "digits"}
        for e in exps:
            assert set(e.config.samplers) == {"SMS-UBU", "SMS-UBU (notebook)", "SG-UBU", "SG-HMC"}
            assert e.config.curve_every >= 1 and e.config.rho == 50**-0.5 and e.config.rho_max_factor == 6
            extra = presets.run_config(level, e.name, 0)
            assert extra.trace_chains >= 2 and extra.h_panel
            if level == "regime":
                assert e.n_runs >= 32 and e.extra_runs >= 2 and len({extra.h, *extra.h_panel}) >= 4
                steps = (e.config.epochs_train + e.config.epochs_swa) * pipeline.batches_per_epoch(
                    e.config, 4024 if e.config.dataset == "xray_subset" else 1200)
                assert 5500 <= steps <= 6500  # the paper's 15 + 5 epochs of 300 batches: 6000 steps


def _cli(args, **kwargs):
    env = os.environ.copy()
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SMS_LANGEVIN_REPORT_MODULES"] = "experiments.demo,experiments.bnn"
    return subprocess.run([sys.executable, "-m", "reports", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, **kwargs)


@pytest.mark.slow
def test_other_modules_refuse_the_regime_preset(tmp_path):
    proc = _cli(["run", "demo", "--preset", "regime", "--out", str(tmp_path / "x")])
    assert proc.returncode == 2 and "preset 'regime' is a level of bnn only" in proc.stderr
    assert not (tmp_path / "x").exists()
    proc = _cli(["run", "all", "--preset", "regime", "--out", str(tmp_path / "y")])
    assert proc.returncode == 2 and "demo has no such level" in proc.stderr
    proc = _cli(["run", "bnn", "--preset", "nonesuch", "--out", str(tmp_path / "z")])
    assert proc.returncode == 2 and "unknown preset 'nonesuch'" in proc.stderr


@pytest.mark.slow
@pytest.mark.data  # the development data folder (tests/conftest.py)
def test_regime_tiny_runs_through_the_command_line_and_resumes(tmp_path):
    out = tmp_path / "regime"
    proc = _cli(["run", "bnn", "--preset", "regime-tiny", "--workers", "2", "--out", str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr
    rep = out / "report" / "bnn"
    for name in ("bnn_curve.csv", "bnn_verdicts.csv", "bnn_regime.md", "bnn_overconfidence_digits.png",
                 "bnn_overconfidence_xray_stratified.png", "bnn_ensembles.csv", "bnn_step_size.csv", "bnn_rhat.csv"):
        assert (rep / name).exists(), name
    curve = list(csv.DictReader(open(rep / "bnn_curve.csv")))
    assert {(r["dataset"], r["stage"]) for r in curve} == {(d, s) for d in ("digits", "xray_stratified")
                                                          for s in ("Adam", "SWA")}
    verdicts = list(csv.DictReader(open(rep / "bnn_verdicts.csv")))
    assert {r["method"] for r in verdicts} == {"SMS-UBU", "SMS-UBU (notebook)", "SG-UBU", "SG-HMC"}
    assert {r["reference"] for r in verdicts} == {"Adam", "SWA", "Adam (paper)", "SWA (paper)"}
    # 2 runs per data set: one group of 2 or two single runs, too few degrees of freedom to call anything
    assert {r["verdict"].split(":")[0] for r in verdicts} <= {"better", "worse", "not distinguishable", "not tested"}
    text = (rep / "bnn_regime.md").read_text()
    assert "## xray_stratified" in text and "## digits" in text and "pooled and split stratified" in text
    assert "SMS-UBU (notebook) with step h/2 and the control variate at x*" in text
    assert "claim" in text and "rank-normalised split" in text
    units = sorted((out / "units" / "bnn").glob("*.json"))
    assert len(units) == 4
    unit = json.loads(units[0].read_text())
    res = unit["result"] if "result" in unit else unit
    assert res["config"]["step_convention"] == "paper" and "control_variate" in res["config"]
    assert res["methods"]["SMS-UBU (notebook)"]["step"] == res["methods"]["SMS-UBU (notebook)"]["h"] / 2
    again = _cli(["run", "bnn", "--preset", "regime-tiny", "--resume", "--out", str(out)], timeout=300)
    assert again.returncode == 0 and "4 units already done, 0 to run" in again.stderr


@pytest.mark.data  # its X-ray level reads the development data folder
def test_the_prepared_device_run_of_a_level_draws_its_tables(tmp_path, one_torch_thread):
    """benchmarks/bnn_level_on_device.py (the GPU run of ``regime``) at its smallest: two units of
    ``regime-tiny`` on the CPU, drawn into the report's files."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bnn_level_on_device",
                                                  Path(__file__).resolve().parents[1] / "benchmarks"
                                                  / "bnn_level_on_device.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--level", "regime-tiny", "--device", "cpu", "--units", "2", "--out", str(tmp_path)]) == 0
    assert all((tmp_path / name).exists() for name in ("bnn_regime.md", "bnn_verdicts.csv", "metadata.json"))
