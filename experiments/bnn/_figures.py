"""Tables and figures of the BNN experiments from persisted run results, returned as data (rows,
Markdown, matplotlib figures); :mod:`reports` writes them.

``runs`` below is a list of results of :func:`experiments.bnn._pipeline.run` for one data set.
The Hessian's rows and figure (:func:`experiments.bnn._curves.hessian_rows`,
:func:`experiments.bnn._curves.plot_hessian`) are defined with the training curves and read from here too.
"""

from __future__ import annotations

import math

import numpy as np

from bnn import _metrics as metrics
from bnn._config import PAPER_REFERENCE  # the paper's baseline (RunConfig.paper_baseline)

PLOTTED = ("accuracy", "nll", "ace_top_label", "ace_classwise", "rps")  # keys of bnn._metrics.METRICS
STEP_SIZE_METRICS = ("nll", "ace_top_label", "ace_classwise")  # the step-size panel's
REFERENCE = ("Adam", "SWA")  # the annealed baseline (the samplers start from its SWA point)
RHAT_MIXED, RHAT_STRICT = metrics.RHAT_MIXED, metrics.RHAT_STRICT  # drawn on the R-hat panel
# the paper's Table (wide CIFAR-10 network, 4 runs): mean, standard deviation; its ACE is the authors' code's,
# the top-label one
CIFAR10_PAPER = {
    "Adam": {"accuracy": (0.8734, 0.0045), "ace_top_label": (0.0150, 0.0011), "nll": (0.5475, 0.0352),
             "rps": (0.0387, 0.0016)},
    "SWA": {"accuracy": (0.8943, 0.0046), "ace_top_label": (0.0138, 0.0007), "nll": (0.5620, 0.0507),
            "rps": (0.0340, 0.0016)},
    "SMS-UBU": {"accuracy": (0.8979, 0.0020), "ace_top_label": (0.0054, 0.0003), "nll": (0.3086, 0.0061),
                "rps": (0.0285, 0.0006)},
}


def metric_label(metric: str) -> str:
    """How a figure names a metric."""
    return metrics.LABELS.get(metric, metric)


def method_runs(runs: list) -> dict:
    """``{method: (run_probs (r, n, K), diverged [(seed, step)])}`` over the runs that have it."""
    out = {}
    for method in dict.fromkeys(m for r in runs for m in r["methods"]):
        probs, diverged = [], []
        for r in runs:
            m = r["methods"].get(method)
            if m is None:
                continue
            if m["probs"] is None:
                diverged.append((r["seed"], m["diverged"]))
            else:
                probs.append(m["probs"])
        out[method] = (np.array(probs) if probs else None, diverged)
    return out


def ensemble_rows(dataset: str, runs: list) -> list[dict]:
    """Per method, ensemble size and metric, :func:`bnn._metrics.ensemble_scores` over the runs."""
    labels = np.array(runs[0]["labels"])
    rows = []
    for method, (probs, diverged) in method_runs(runs).items():
        if probs is None:
            rows.append({"dataset": dataset, "method": method, "size": "", "metric": "", "mean": "", "std": "",
                         "n_groups": 0, "runs": 0, "diverged_runs": len(diverged)})
            continue
        for s in metrics.ensemble_scores(probs, labels):
            rows.append({"dataset": dataset, "method": method, "size": s.size, "metric": s.metric, "mean": s.mean,
                         "std": "" if math.isnan(s.std) else s.std, "n_groups": s.n_groups, "runs": len(probs),
                         "diverged_runs": len(diverged)})
    return rows


def format_mean_std(mean, std) -> str:
    """``mean ± std`` to four decimals (the mean alone when ``std`` is ``""``)."""
    return f"{mean:.4f}" + (f" ± {std:.4f}" if std != "" else "")


def ensemble_markdown(rows: list[dict], settings: str) -> str:
    """Single runs and small ensembles, every method, mean ± standard deviation over disjoint groups."""
    sizes = sorted({r["size"] for r in rows if r["size"] != ""})
    lines = [f"Settings: {settings}", "", "| data | method | size | " + " | ".join(metrics.METRICS) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in metrics.METRICS) + " |"]
    keyed = {(r["dataset"], r["method"], r["size"], r["metric"]): r for r in rows}
    for dataset, method in dict.fromkeys((r["dataset"], r["method"]) for r in rows):
        for size in sizes:
            cells = [keyed.get((dataset, method, size, m)) for m in metrics.METRICS]
            if all(c is None for c in cells):
                continue
            lines.append(f"| {dataset} | {method} | {size} | " + " | ".join(
                format_mean_std(c["mean"], c["std"]) if c else "" for c in cells) + " |")
    diverged = [r for r in rows if r["size"] == "" or (r["diverged_runs"] and r["size"] == 1 and r["metric"] == "nll")]
    for r in diverged:
        lines.append(f"\n{r['method']} ({r['dataset']}): diverged in {r['diverged_runs']} run(s)")
    return "\n".join(lines) + "\n"


def plot_ensembles(rows: list[dict], dataset: str):
    """The metrics of :data:`PLOTTED` against the ensemble size, one panel each, every method
    (mean ± s.d. over disjoint groups; Adam and SWA dashed, the paper's baseline dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PLOTTED), figsize=(3.6 * len(PLOTTED), 3.4))
    for ax, metric in zip(axes, PLOTTED, strict=True):
        for method in dict.fromkeys(r["method"] for r in rows if r["dataset"] == dataset):
            pts = [r for r in rows if r["dataset"] == dataset and r["method"] == method and r["metric"] == metric]
            if not pts:
                continue
            x = [p["size"] for p in pts]
            y = [p["mean"] for p in pts]
            err = [p["std"] if p["std"] != "" else 0.0 for p in pts]
            ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=2, label=method,
                        ls="--" if method in REFERENCE else ":" if method in PAPER_REFERENCE else "-")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ensemble size")
        ax.set_title(metric_label(metric))
    diverged = sorted({r["method"] for r in rows if r["dataset"] == dataset and r["diverged_runs"]})
    handles, labels = axes[0].get_legend_handles_labels()
    # below the panels, at a size the report's page (the figure shrunk to its width) still shows readably
    ncol = max(1, min(len(labels), 5))  # rows of five: ten methods in one row are wider than the figure
    fig.legend(handles, labels, fontsize=10, loc="lower center", ncol=ncol)
    fig.suptitle(f"{dataset}: ensembles of independent runs (mean ± s.d. over disjoint groups)"
                 + ("\ndiverged in some runs: " + ", ".join(diverged) if diverged else ""), fontsize=11)
    fig.tight_layout(rect=(0, 0.02 + 0.08 * -(-len(labels) // ncol), 1, 1))  # room for the legend's rows
    return fig


def step_size_rows(dataset: str, runs: list) -> list[dict]:
    """NLL and both ACE readings (:data:`STEP_SIZE_METRICS`) of single SMS-UBU runs against ``h`` on
    the runs that carry the panel, with SWA of the same runs as the reference. Every ``h`` runs for
    the same integration time (:func:`bnn._chains.panel_steps_per_epoch`)."""
    panel = [r for r in runs if r["config"]["h_panel"]]
    if not panel:
        return []
    labels = np.array(panel[0]["labels"])
    rows = []
    for method in panel[0]["methods"]:
        first = panel[0]["methods"][method]
        if method != "SWA" and first.get("sampler") != "SMS-UBU":
            continue
        vals = {m: [] for m in STEP_SIZE_METRICS}
        diverged = []
        for r in panel:
            m = r["methods"][method]
            if m["probs"] is None:
                diverged.append(m["diverged"])
                continue
            p = np.array(m["probs"])
            for metric in STEP_SIZE_METRICS:
                vals[metric].append(metrics.METRICS[metric](p, labels))
        for metric, v in vals.items():
            rows.append({"dataset": dataset, "method": "SWA" if method == "SWA" else "SMS-UBU",
                         "h": "" if method == "SWA" else first["h"], "metric": metric,
                         "mean": float(np.mean(v)) if v else "", "std": float(np.std(v, ddof=1)) if len(v) > 1 else "",
                         "runs": len(v), "diverged_runs": len(diverged),
                         "width": panel[0]["config"]["width"], "steps_per_epoch": first.get("steps_per_epoch", ""),
                         "time": first.get("time", "")})
    return rows


def _h_label(h: float) -> str:
    """A step size in at most three significant digits, as ``8.75e-4`` below 0.01."""
    if h >= 0.01:
        return f"{h:.3g}"
    mantissa, exponent = f"{h:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def plot_step_size(rows: list[dict]):
    """Each metric of the rows against ``h`` (single SMS-UBU runs, mean ± s.d. over runs), at a
    fixed integration time ``T`` (the steps grow as ``h`` shrinks: the panel measures the
    discretization's bias, not a shorter trajectory); a grey dotted line where it diverged, and
    SWA's level per data set in that data set's colour and a line style of its own."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    panels = list(dict.fromkeys(r["metric"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.0 * len(panels), 3.4), squeeze=False)
    axes = axes[0]
    ref_styles = ("--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))
    for ax, metric in zip(axes, panels, strict=True):
        for i, dataset in enumerate(datasets):
            color = f"C{i}"
            pts = sorted((r for r in rows if r["dataset"] == dataset and r["metric"] == metric
                          and r["method"] == "SMS-UBU" and r["mean"] != ""), key=lambda r: r["h"])
            times = sorted({round(float(p["time"]), 3) for p in pts if p.get("time", "") != ""})
            at = f", T = {times[0]:g}" if len(times) == 1 else ""
            ax.errorbar([p["h"] for p in pts], [p["mean"] for p in pts], yerr=[p["std"] or 0.0 for p in pts],
                        marker="o", ms=4, capsize=2, color=color, label=f"SMS-UBU ({dataset}{at})")
            for p in (r for r in rows if r["dataset"] == dataset and r["metric"] == metric
                      and r["method"] == "SMS-UBU" and r["mean"] == ""):
                ax.axvline(p["h"], color="0.5", ls=":", label=f"diverged ({dataset}, h={_h_label(p['h'])})")
            ref = [r for r in rows if r["dataset"] == dataset and r["metric"] == metric and r["method"] == "SWA"]
            if ref and ref[0]["mean"] != "":
                ax.axhline(ref[0]["mean"], color=color, lw=1.2, ls=ref_styles[i % len(ref_styles)],
                           label=f"SWA ({dataset})")
        ax.set_xscale("log")
        # one label per step size drawn, compact and slanted (a log axis spanning about a decade labels its minor
        # ticks too, and those overlap)
        hs = sorted({r["h"] for r in rows if r["method"] == "SMS-UBU" and r["metric"] == metric})
        if hs:
            ax.set_xticks(hs, [_h_label(h) for h in hs], rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlabel("h")
        ax.set_title(metric_label(metric), fontsize=10)
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    ncol = max(1, min(len(labels), 2 * len(datasets)))
    fig.legend([handles[lab] for lab in labels], labels, fontsize=9, loc="lower center", ncol=ncol)
    fig.suptitle("Single SMS-UBU runs against h at a fixed integration time T (more steps at smaller h)", fontsize=10)
    fig.tight_layout(rect=(0, 0.04 + 0.07 * -(-len(labels) // ncol), 1, 1))  # room for the legend's rows
    return fig


def trace_rows(dataset: str, runs: list) -> tuple[list[dict], list[dict]]:
    """Per-epoch average training loss of the trace chains, and R-hat per run after burn-in (the
    first quarter of the epochs, as the paper's 10 of 40)."""
    from bnn._diagnostics import trace_rhat

    traces, rhats = [], []
    for r in runs:
        chains = r.get("traces") or []
        if not chains:
            continue
        for c, ch in enumerate(chains):
            for e, loss in enumerate(ch["trace"]):
                traces.append({"dataset": dataset, "seed": r["seed"], "chain": c, "epoch": e + 1, "loss": loss})
        ok = [ch["trace"] for ch in chains if ch["diverged"] is None]
        n = min(len(t) for t in ok) if ok else 0
        burn = n // 4
        row = {"dataset": dataset, "seed": r["seed"], "chains": len(ok), "burn_in_epochs": burn,
               "draws": n - burn, "diverged_chains": len(chains) - len(ok), "rhat": "", "rank_split_rhat": ""}
        if len(ok) >= 2 and n - burn >= 4:
            row.update(trace_rhat(np.array([t[burn:n] for t in ok])))
        rhats.append(row)
    return traces, rhats


def plot_traces(traces: list[dict], rhats: list[dict]):
    """The training loss of the first run's trace chains per epoch, and the R-hats per run against
    the bar the text reads (:data:`RHAT_MIXED`, 1.1: below it mixed enough) and the strict one
    (:data:`RHAT_STRICT`, 1.01), both drawn and labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3.2))
    if traces:
        seed0 = traces[0]["seed"]
        for c in sorted({t["chain"] for t in traces if t["seed"] == seed0}):
            pts = [t for t in traces if t["seed"] == seed0 and t["chain"] == c]
            a.plot([p["epoch"] for p in pts], [p["loss"] for p in pts], label=f"chain {c + 1}")
        a.set_yscale("log")
    a.set_xlabel("epoch")
    a.set_ylabel("average training loss")
    a.set_title("SMS-UBU from x* + N(0, rho^2)")
    a.legend(fontsize=7)
    good = [r for r in rhats if r["rhat"] != ""]
    b.plot(range(1, len(good) + 1), [r["rhat"] for r in good], "o", label="Gelman-Rubin R-hat")
    b.plot(range(1, len(good) + 1), [r["rank_split_rhat"] for r in good], "x", label="rank-normalised split R-hat")
    b.axhline(1.0, color="k", lw=0.5)
    b.axhline(RHAT_MIXED, color="C3", ls="--", lw=0.9, label=f"{RHAT_MIXED:g}: the bar used (below: mixed)")
    b.axhline(RHAT_STRICT, color="C2", ls=":", lw=0.9, label=f"{RHAT_STRICT:g}: strict bar")
    if len(good) <= 20:  # one integer tick per point, labelled 1..n
        b.set_xticks(range(1, len(good) + 1), [str(i) for i in range(1, len(good) + 1)])
    else:
        import matplotlib.ticker

        b.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    if good:  # half a unit of room either side (a unit and a half around a single point)
        b.set_xlim(0.5 - (len(good) == 1), len(good) + 0.5 + (len(good) == 1))
    b.set_xlabel("independent SWA point")
    b.set_title("R-hat of the training loss after burn-in")
    b.legend(fontsize=7)
    fig.tight_layout()
    return fig


def cifar10_rows(runs: list) -> list[dict]:
    """Single-model metrics (mean ± s.d. over runs) beside the paper's Table for the wide network."""
    labels = np.array(runs[0]["labels"])
    rows = []
    for method, (probs, diverged) in method_runs(runs).items():
        if method not in CIFAR10_PAPER:
            continue
        scores = [metrics.evaluate(p, labels) for p in probs] if probs is not None else []
        for metric in PLOTTED:
            v = [s[metric] for s in scores]
            paper = CIFAR10_PAPER[method].get(metric, ("", ""))  # the paper reports the top-label ACE only
            rows.append({"method": method, "metric": metric, "mean": float(np.mean(v)) if v else "",
                         "std": float(np.std(v, ddof=1)) if len(v) > 1 else "", "runs": len(v),
                         "diverged_runs": len(diverged), "paper_mean": paper[0], "paper_std": paper[1]})
    return rows
