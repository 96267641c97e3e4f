"""Readable x axes of two figures: the GHMC comparison labels every step size it draws (a log axis
spanning less than a decade labels one power of ten at most), and the R-hat panel of the BNN
traces labels its SWA points 1..n with integers (one point used to show 0.96, 0.98, 1.00, ...)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from experiments.bnn import _figures as figures  # noqa: E402
from experiments.ghmc import _compute as ghmc_logistic  # noqa: E402


@pytest.fixture
def render():
    """Draws a figure the plot functions return (as saving it would: tick labels are set then),
    and closes it at the end."""
    kept = []

    def draw(fig):
        fig.canvas.draw()
        kept.append(fig)
        return fig
    yield draw
    for fig in kept:
        plt.close(fig)


def x_labels(ax) -> list[str]:
    """The non-empty major tick labels inside the x range (the figure was drawn)."""
    lo, hi = sorted(ax.get_xlim())
    locs = ax.xaxis.get_majorticklocs()
    ticks = ax.xaxis.get_major_ticks(len(locs))
    return [t.label1.get_text() for x, t in zip(locs, ticks, strict=True)
            if lo <= x <= hi and t.label1.get_visible() and t.label1.get_text()]


def minor_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]


def ghmc_table(ghmc_h, ubu_h, stuck_h=()):
    table = [{"sampler": ghmc_logistic.REFERENCE, "h": min(ubu_h) / 4, "epochs_per_chain": 40, "acceptance": "",
              "diverged": "", "p_true_error": "", "p_true_error_se": "", "spread_ratio": 1.0}]
    for name, hs in (("SMS-GHMC", ghmc_h), ("SMS-UBU", ubu_h)):
        for h in hs:
            table.append({"sampler": name, "h": h, "epochs_per_chain": 40, "diverged": "",
                          "acceptance": 1 - 8 * h if name == "SMS-GHMC" else "",
                          "p_true_error": 1e-3 + h / 10, "p_true_error_se": 1e-4,
                          "spread_ratio": 0.01 if h in stuck_h else 0.5 + 10 * h})
    return table


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tiny", "full"])
def test_ghmc_panels_label_every_step_size(render, preset):
    cfg = ghmc_logistic.PRESETS[preset]
    fig = render(ghmc_logistic.plot(ghmc_table(cfg["ghmc_h"], cfg["ubu_h"], stuck_h=cfg["ghmc_h"][-1:])))
    a, b, c = fig.axes
    both = sorted(set(cfg["ghmc_h"]) | set(cfg["ubu_h"]))
    for ax, hs in ((a, both), (b, both), (c, sorted(cfg["ghmc_h"]))):
        assert len(x_labels(ax)) == len(hs)  # one labelled tick per step size drawn
        assert x_labels(ax) == [ghmc_logistic.h_label(h) for h in hs]
        assert minor_labels(ax) == []


@pytest.mark.slow
def test_ghmc_single_step_size(render):
    a, b, c = render(ghmc_logistic.plot(ghmc_table((0.01,), (2.0**-6,)))).axes
    assert x_labels(a) == x_labels(b) == ["0.01", "1/64"]
    assert x_labels(c) == ["0.01"]


def test_h_label():
    assert [ghmc_logistic.h_label(h) for h in (2.0**-4, 2.0**-7, 0.04, 0.0025, 1e-5, 0.5, 1.0)] == [
        "1/16", "1/128", "0.04", "0.0025", "1e-5", "1/2", "1"]


def rhat_rows(n, blank=0):
    return ([{"dataset": "d", "seed": i, "rhat": 1.0 + 0.01 * (i + 1), "rank_split_rhat": 1.0 + 0.02 * (i + 1)}
             for i in range(n)] + [{"dataset": "d", "seed": n + i, "rhat": "", "rank_split_rhat": ""}
                                   for i in range(blank)])


def traces():
    return [{"dataset": "d", "seed": 0, "chain": c, "epoch": e + 1, "loss": 1.0 / (e + 1)}
            for c in range(2) for e in range(8)]


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 3])
def test_rhat_panel_ticks_are_the_points(render, n):
    _, b = render(figures.plot_traces(traces(), rhat_rows(n, blank=1))).axes
    assert x_labels(b) == [str(i) for i in range(1, n + 1)]
    lo, hi = b.get_xlim()
    assert lo < 1 and hi > n and hi - lo >= 2  # room around a single point
    assert [tuple(line.get_ydata()) for line in b.get_lines() if line.get_linestyle() == "--"] == [
        (figures.RHAT_MIXED,) * 2]


@pytest.mark.filterwarnings("ignore:No artists with labels")  # the empty left panel
def test_rhat_panel_without_points(render):
    assert x_labels(render(figures.plot_traces([], rhat_rows(0, blank=2))).axes[1]) == []
