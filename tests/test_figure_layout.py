"""The figures of the tiny report keep their text readable: every tick label, axis label, title,
legend and annotation lies inside the figure, every annotation inside its own panel, tick labels
of one axis neither overlap nor touch each other, and legend text is at least :data:`READABLE_PX` pixels tall
as the report shows the figure (saved at 120 dpi, at most :data:`PAGE_PX` wide).

Each figure is drawn by its own plot function from rows shaped as the tiny preset makes them (its
step sizes, samplers, runs and labels; the values are made up), as in ``tests/test_figure_ticks.py``;
the weak-orders figure from its real units (an exact oracle, seconds).  Extents come from matplotlib
after ``fig.canvas.draw()``."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

SAVE_DPI = 120  # reports.drawing.write_drawing's PNG resolution
PAGE_PX = 1100  # the report page's width (tour._page_style.STYLE: body max-width), images scaled to fit it
READABLE_PX = 8.0  # the least height of legend text on that page
TOLERANCE_PX = 1.0
TICK_GAP_PX = 2.0  # the least space between two tick labels of one axis


def _inside(box, outer) -> bool:
    return (box.x0 >= outer.x0 - TOLERANCE_PX and box.y0 >= outer.y0 - TOLERANCE_PX
            and box.x1 <= outer.x1 + TOLERANCE_PX and box.y1 <= outer.y1 + TOLERANCE_PX)


def _crowd(a, b) -> bool:
    """Whether two labels' boxes overlap or stand closer than :data:`TICK_GAP_PX` (they read as one)."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > -TICK_GAP_PX and min(a.y1, b.y1) - max(a.y0, b.y0) > -TICK_GAP_PX


def _px(box) -> tuple:
    return tuple(round(float(v)) for v in box.bounds)  # x0, y0, width, height in pixels


def _tick_labels(axis) -> list:
    """The tick labels the drawn axis shows: visible, non-empty, at a tick inside the view."""
    lo, hi = sorted(axis.get_view_interval())
    shown = []
    for minor in (False, True):
        locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
        ticks = axis.get_minor_ticks(len(locs)) if minor else axis.get_major_ticks(len(locs))
        span = (hi - lo) * 1e-9
        for loc, tick in zip(locs, ticks, strict=True):
            if lo - span <= loc <= hi + span:
                shown += [lab for lab in (tick.label1, tick.label2) if lab.get_visible() and lab.get_text()]
    return shown


def layout_problems(fig) -> list[str]:
    """What in ``fig`` breaks the rules of this module, one line each (empty: none)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    shown_width = fig.get_figwidth() * SAVE_DPI
    scale = min(1.0, PAGE_PX / shown_width)  # how the report page shows the PNG
    problems = []

    def check(name, artist, outer=frame):
        if not artist.get_visible() or (hasattr(artist, "get_text") and not artist.get_text()):
            return
        box = artist.get_window_extent(renderer)
        if not _inside(box, outer):
            problems.append(f"{name} outside {'its panel' if outer is not frame else 'the figure'}: "
                            f"{_px(box)} not in {_px(outer)}")

    for i, ax in enumerate(a for a in fig.axes if a.get_visible()):
        where = f"axes {i} ({ax.get_title()!r})"
        for side, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _tick_labels(axis)
            boxes = [lab.get_window_extent(renderer) for lab in labels]
            for lab in labels:
                check(f"{where}: {side} tick label {lab.get_text()!r}", lab)
            for j in range(len(boxes)):
                for k in range(j + 1, len(boxes)):
                    if _crowd(boxes[j], boxes[k]):
                        problems.append(f"{where}: {side} tick labels {labels[j].get_text()!r} and "
                                        f"{labels[k].get_text()!r} overlap")
            check(f"{where}: {side} label", axis.label)
        for title in (ax.title, ax._left_title, ax._right_title):
            check(f"{where}: title", title)
        for text in ax.texts:  # annotations and texts belong to their panel
            check(f"{where}: text {text.get_text()!r}", text, ax.bbox)
        legends = [ax.get_legend()] if ax.get_legend() is not None else []
        for legend in legends:
            check(f"{where}: legend", legend)
    for legend in [*(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None), *fig.legends]:
        for text in legend.get_texts():
            px = text.get_fontsize() / 72 * SAVE_DPI * scale
            if px < READABLE_PX:
                problems.append(f"legend text {text.get_text()!r} is {px:.1f} px tall on the report's page "
                                f"(below {READABLE_PX} px)")
                break
    for legend in fig.legends:
        check("figure legend", legend)
    for text in fig.texts:
        check(f"figure text {text.get_text()!r}", text)
    if fig._suptitle is not None:
        check("figure title", fig._suptitle)
    return problems


# ------------------------------------------------------------------ the tiny report's figures, made up rows

def demo():
    from experiments.demo import _compute as d
    from integrators import GaussianTarget
    rows = [{"sampler": name, "h": 2.0**-k, "variance_bias": (0.5 if name == "SG-UBU" else 0.05) * 2.0**-k * (
        1 if name == "SG-UBU" else 2.0**-k), "variance_se": 1e-4} for name in d.SAMPLERS for k in range(2, 6)]
    edges = d.hist_edges(GaussianTarget.one_d_example())
    centres = (edges[:-1] + edges[1:]) / 2
    hists = {name: np.exp(-0.5 * (centres + 1) ** 2) * 1000 for name in d.SAMPLERS}
    return d.plot(rows, hists)


def conformance():
    from experiments import conformance as fig_conformance
    plans = ("full", "iid", "rr", "sms")
    hs = [0.025, 0.05, 0.1]
    toolkit = [{"target": "default", "ladders": {s: {p: {"hs": hs, "errors": [c * h for h in hs]} for p in plans}
                                                 for s, c in (("baoab", 0.06), ("ubu", 0.08))}}]
    records = [{"sampler": name, "target": "default", "library": name.split(".")[0], "level": "quick",
                "checks": [], "failed": ["limit[full]"] if name.startswith("planted") else [],
                "positive_control": name.startswith("planted"),
                "plans": {p: {"hs": hs, "errors": [0.1 + 0.02 * i + h for h in hs], "noise": [0.01, 0.05, None],
                              "slope": 1.0 + 0.01 * i} for p in plans}}  # filled, hollow, no noise level
               for i, name in enumerate(("posteriors.sgld", "blackjax.sgld", "planted.sghmc_noise_x1.05"))]
    return fig_conformance.plot(records, toolkit, [])


def weak_orders():
    from experiments.weak_orders import EXPERIMENT as mod
    results = [(unit, mod.run_unit(unit, "quick", 0)) for unit in mod.units("quick")]
    return mod.draw(results, "quick").figures["weak_orders"]


def logistic():
    from experiments.logistic import _compute as lg
    from experiments.logistic import _output as logistic_output
    cfg = lg.PRESETS["tiny"]
    hs = [cfg["h0"] * 2.0**-i for i in range(cfg["levels"] + 1)]
    rows = []
    for n, ((scheme, plan), name) in enumerate(lg.NAMES.items()):
        for h in hs:
            diverged = "step 3" if name == "SG-HMC" and h == hs[0] else ""
            rows.append(lg.Row(name, scheme, plan, h, bias=1e-3 * (n + 1) * h * 16, bias_se=1e-4, floor=1e-4,
                               bias_rms=1e-3, p_true=0.8, accuracy=0.9 - 0.01 * n, nll=0.3 + 0.02 * n,
                               ace=0.02 + 0.003 * n, rps=0.01 + 0.001 * n, seconds=1.0, diverged=diverged,
                               bias_mean_se=2e-4))
    return logistic_output.plot(rows)


def figure1():
    from experiments.figure1 import _output as figure1_output
    from experiments.figure1._setup import PRESETS, SAMPLERS, Point
    ks = PRESETS["tiny"]["ks"] if "ks" in PRESETS["tiny"] else range(2, 6)
    points, slopes = [], {}
    for n, (scheme, plan) in enumerate(SAMPLERS):
        slopes[(scheme, plan)] = 1.0 + (plan != "iid")
        for k in ks:
            h = 2.0**-k
            diverged = scheme == "em" and k == min(ks)
            points.append(Point(scheme, plan, h, n_samples=10**5, w1=math.nan if diverged else 0.01 * (n + 1) * h,
                                mc_error=1e-4, noise_floor=1e-3, bound=1e-4, diverged=diverged,
                                first_divergence_step=12 if diverged else -1, seconds=0.1, estimator="control_variate",
                                w1_plain=0.012 * (n + 1) * h, mc_error_plain=2e-4, control_noise=1e-4))
    return figure1_output.plot(points, slopes)


def bnn_ensembles():
    from experiments.bnn import _figures as figures
    methods = ("Adam", "SG-HMC", "SG-UBU", "SG-UBU (rr)", "SMS-UBU", "SMS-UBU (notebook)", "SMS-UBU h=0.0003",
               "SMS-UBU h=0.003", "SWA", "cyclical SG-HMC")  # the tiny preset's
    rows = [{"dataset": "digits", "method": m, "size": size, "metric": metric, "mean": 0.2 + 0.01 * i + 0.001 * size,
             "std": 0.01 if size == 1 else "", "n_groups": 2 // size, "diverged_runs": int(m == "SG-HMC")}
            for i, m in enumerate(methods) for metric in figures.PLOTTED for size in (1, 2)]
    return figures.plot_ensembles(rows, "digits")


def bnn_step_size():
    from experiments.bnn import _figures as figures
    from experiments.bnn import _presets as presets
    exp = presets.experiments("tiny")[0]
    hs = sorted({*exp.extras["h_panel"], exp.config.h})
    rows = [{"dataset": "digits", "method": "SMS-UBU", "h": h, "metric": metric, "mean": 0.2 + h * 10,
             "std": 0.01, "runs": 2, "diverged_runs": 0, "width": 0.25}
            for h in hs for metric in ("nll", "ace_top_label")]
    rows += [{"dataset": "digits", "method": "SWA", "h": "", "metric": metric, "mean": 0.21, "std": 0.01, "runs": 2,
              "diverged_runs": 0, "width": 0.25} for metric in ("nll", "ace_top_label")]
    return figures.plot_step_size(rows)


def bnn_traces():
    from experiments.bnn import _figures as figures
    traces = [{"dataset": "digits", "seed": 0, "chain": c, "epoch": e + 1, "loss": 1.0 / (e + 1 + c)}
              for c in range(2) for e in range(5)]
    rhats = [{"dataset": "digits", "seed": i, "rhat": 1.02 + 0.01 * i, "rank_split_rhat": 1.03 + 0.01 * i}
             for i in range(2)]
    return figures.plot_traces(traces, rhats)


def bnn_hessian():
    from experiments.bnn import _curves as curves
    rows = [{"dataset": "digits", "seed": s, "point": p, "value": 10.0 ** (i + 0.1 * s), "converged": True}
            for s in range(2) for i, p in enumerate(("x* (SWA)", "SMS-UBU sample", "Adam end"))]
    return curves.plot_hessian(rows)


def ghmc():
    from test_figure_ticks import ghmc_table

    from experiments.ghmc import _compute as ghmc_logistic
    cfg = ghmc_logistic.PRESETS["tiny"]
    return ghmc_logistic.plot(ghmc_table(cfg["ghmc_h"], cfg["ubu_h"], stuck_h=cfg["ghmc_h"][-1:]))


FIGURES = {"demo": demo, "weak_orders": weak_orders, "conformance": conformance, "ghmc": ghmc,
           "logistic": logistic, "figure1": figure1, "bnn_ensembles": bnn_ensembles, "bnn_step_size": bnn_step_size,
           "bnn_traces": bnn_traces, "bnn_hessian": bnn_hessian}


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_text_stays_inside_and_readable(name):
    if name.startswith("bnn"):
        pytest.importorskip("torch")
    fig = FIGURES[name]()
    try:
        assert layout_problems(fig) == []
    finally:
        plt.close(fig)


# ------------------------------------------------------------------ the checker catches what it is for

def _close_after(fig):
    problems = layout_problems(fig)
    plt.close(fig)
    return problems


def test_checker_finds_an_annotation_outside_its_panel():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2], [1, 2])
    ax.annotate("EM unstable", (2, 2.0), rotation=90)  # starts at the top right corner: above the panel
    assert any("outside its panel" in p and "EM unstable" in p for p in _close_after(fig))


def test_checker_finds_overlapping_tick_labels():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2], [1, 2])
    ax.set_xticks(np.linspace(1, 2, 12), [f"label {i}" for i in range(12)])
    assert any("overlap" in p for p in _close_after(fig))


def test_checker_finds_a_small_legend_on_a_wide_figure():
    fig, ax = plt.subplots(figsize=(19, 3))
    ax.plot([1, 2], [1, 2], label="a line")
    ax.legend(fontsize=7)
    assert any("px tall" in p for p in _close_after(fig))


def test_checker_passes_a_plain_figure():
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([1, 2], [1, 2], label="a line")
    ax.set(xlabel="h", ylabel="bias", title="t")
    ax.legend()
    fig.tight_layout()
    assert _close_after(fig) == []
