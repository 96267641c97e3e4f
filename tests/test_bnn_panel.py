"""The step-size panel at a fixed integration time, and the BNN figures naming what they draw
(both SWA references told apart, the ACE readings, both R-hat bars)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("torch")

from test_figure_layout import layout_problems  # noqa: E402

from experiments.bnn import _figures as figures
from experiments.bnn import _pipeline as pipeline

# 300 digits in batches of 100: 3 steps per epoch at h; the panel's 3e-4 and 3e-3 take 10 and 1
PANEL = pipeline.RunConfig("digits", "fashion_mnist", width=0.125, n_train=300, n_test=120, batch_size=100,
                           epochs_train=1, epochs_swa=1, epochs_burn=1, epochs_sample=2, h=1e-3,
                           samplers=("SMS-UBU",), h_panel=(3e-4, 3e-3), n_eval_batches=1)


@pytest.fixture(scope="module")
def panel_run():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield pipeline.run(PANEL, 0)
    finally:
        torch.set_num_threads(threads)


def test_panel_steps_grow_as_h_shrinks_at_the_same_time():
    m = pipeline.batches_per_epoch(PANEL, 300)
    assert [pipeline.panel_steps_per_epoch(PANEL, 300, h) for h in (3e-4, 1e-3, 3e-3, 1.0)] == [10, m, 1, 1]


def test_panel_chains_integrate_for_the_main_chains_time(panel_run):
    methods = panel_run["methods"]
    main = methods["SMS-UBU"]
    epochs = PANEL.epochs_burn + PANEL.epochs_sample
    assert main["steps_per_epoch"] == 3 and main["time"] == pytest.approx(epochs * 3 * 1e-3)
    for key, steps in (("SMS-UBU h=0.0003", 10), ("SMS-UBU h=0.003", 1)):
        m = methods[key]
        assert m["steps_per_epoch"] == steps and len(m["trace"]) == epochs
        # round(N_m h / h_p) steps per epoch: the time is the main chain's within half a step per epoch
        assert abs(m["time"] - main["time"]) <= epochs * m["step"] / 2 + 1e-15
        assert m["probs"] is not None


def _step_rows():
    rows = []
    for i, (dataset, hs) in enumerate((("xray_stratified", (5e-4, 8.75e-4, 1.75e-3, 3.5e-3)),
                                       ("digits", (2.5e-4, 8.75e-4, 1.75e-3, 3.5e-3)))):
        for metric in figures.STEP_SIZE_METRICS:
            rows += [{"dataset": dataset, "method": "SMS-UBU", "h": h, "metric": metric, "mean": 0.1 + i + h * 10,
                      "std": 0.01, "runs": 4, "diverged_runs": 0, "width": 0.125, "steps_per_epoch": 81,
                      "time": 2.835} for h in hs]
            rows.append({"dataset": dataset, "method": "SWA", "h": "", "metric": metric, "mean": 0.15 + i,
                         "std": 0.01, "runs": 4, "diverged_runs": 0, "width": 0.125, "steps_per_epoch": "",
                         "time": ""})
    return rows


def test_step_size_figure_tells_the_two_swa_references_apart_and_names_each_ace():
    fig = figures.plot_step_size(_step_rows())
    try:
        assert layout_problems(fig) == []
        titles = [ax.get_title() for ax in fig.axes]
        assert titles == ["NLL", "ACE (top-label)", "ACE (class-wise)"]
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "SWA (xray_stratified)" in labels and "SWA (digits)" in labels
        assert any("T = 2.835" in lab for lab in labels)
        for ax in fig.axes:
            swa = [ln for ln in ax.get_lines() if ln.get_label().startswith("SWA")]
            assert len(swa) == 2
            styles = {(ln.get_color(), str(ln.get_linestyle())) for ln in swa}
            assert len(styles) == 2  # colour and line style differ
            assert swa[0].get_color() != swa[1].get_color() and swa[0].get_linestyle() != swa[1].get_linestyle()
    finally:
        plt.close(fig)


def test_rhat_panel_draws_the_bar_used_and_the_strict_one_both_labelled():
    rhats = [{"dataset": "d", "seed": i, "rhat": 1.02 + 0.01 * i, "rank_split_rhat": 1.03 + 0.02 * i} for i in range(3)]
    traces = [{"dataset": "d", "seed": 0, "chain": c, "epoch": e + 1, "loss": 1.0 / (e + 1)}
              for c in range(2) for e in range(4)]
    fig = figures.plot_traces(traces, rhats)
    try:
        b = fig.axes[1]
        bars = {ln.get_ydata()[0]: ln.get_label() for ln in b.get_lines() if len(set(ln.get_ydata())) == 1
                and ln.get_ydata()[0] != 1.0}
        assert set(bars) == {figures.RHAT_MIXED, figures.RHAT_STRICT} == {1.1, 1.01}
        legend = [t.get_text() for t in b.get_legend().get_texts()]
        assert all(lab in legend for lab in bars.values())
        assert layout_problems(fig) == []
    finally:
        plt.close(fig)


def test_ensemble_and_curve_panels_name_their_ace_reading():
    from experiments.bnn import _curves as curves

    rows = [{"dataset": "d", "method": m, "size": s, "metric": metric, "mean": 0.1, "std": 0.01, "n_groups": 2,
             "diverged_runs": 0} for m in ("Adam", "SMS-UBU") for metric in figures.PLOTTED for s in (1, 2)]
    fig = figures.plot_ensembles(rows, "d")
    try:
        assert {"ACE (top-label)", "ACE (class-wise)"} <= {ax.get_title() for ax in fig.axes}
        assert "ace" not in {ax.get_title() for ax in fig.axes}
    finally:
        plt.close(fig)
    summary = curves.curve_summary([{"dataset": "d", "seed": s, "stage": "Adam", "epoch": 1, "step": 10,
                                     "nll": 0.3, "accuracy": 0.9, "ace_top_label": 0.05, "ace_classwise": 0.04,
                                     "rps": 0.1, "train_loss": 0.2} for s in range(2)])
    fig = curves.plot_curve(summary, "d")
    try:
        assert {"test ACE (top-label)", "test ACE (class-wise)"} <= {ax.get_title() for ax in fig.axes}
    finally:
        plt.close(fig)
