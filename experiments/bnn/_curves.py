"""The baselines along training: Adam's and SWA's test metrics against optimizer steps, their
mean over runs, and whether they show the overconfident regime (test NLL rising while the accuracy
stays); and the spectral norm of the Hessian of the potential at the points training passes
(random initialisation, Adam, SWA, SWA + N(0, rho^2)).  :mod:`experiments.bnn._figures` re-exports
:func:`hessian_rows` and :func:`plot_hessian`."""

from __future__ import annotations

import math

import numpy as np

# ------------------------------------------------------------------ the regime of the paper's claim
CURVE_METRICS = ("nll", "accuracy", "ace_top_label", "ace_classwise", "rps")  # keys of bnn._metrics.METRICS


def curve_rows(dataset: str, runs: list) -> list[dict]:
    """The test metrics of Adam's network and of the SWA average against the optimizer's steps,
    one row per run and evaluation point (the runs' ``curve``)."""
    return [{"dataset": dataset, "seed": r["seed"], **point} for r in runs for point in r.get("curve") or []]


def curve_summary(rows: list[dict]) -> list[dict]:
    """Mean and standard deviation over runs of each metric at each (stage, step)."""
    out = []
    for key in dict.fromkeys((r["dataset"], r["stage"], r["epoch"], r["step"]) for r in rows):
        pts = [r for r in rows if (r["dataset"], r["stage"], r["epoch"], r["step"]) == key]
        row = {"dataset": key[0], "stage": key[1], "epoch": key[2], "step": key[3], "runs": len(pts)}
        for metric in (*CURVE_METRICS, "train_loss"):
            v = np.array([p[metric] for p in pts], dtype=float)
            row[metric] = float(v.mean())
            row[f"{metric}_std"] = float(v.std(ddof=1)) if len(v) > 1 else ""
        out.append(row)
    return out


def overconfidence(summary: list[dict], dataset: str) -> dict | None:
    """Where the mean test NLL of Adam's network is lowest along training, and its value, the
    accuracy there and at the end of Adam and of SWA (None without a curve). ``overconfident``:
    the NLL at Adam's last step exceeds that lowest value by more than two standard errors (its
    standard deviation over runs / sqrt(runs)) while the accuracy there is at most 0.01 below the
    accuracy at the lowest point: the NLL rising while the accuracy stays."""
    adam = [r for r in summary if r["dataset"] == dataset and r["stage"] == "Adam"]
    swa = [r for r in summary if r["dataset"] == dataset and r["stage"] == "SWA"]
    if not adam:
        return None
    best = min(adam, key=lambda r: r["nll"])
    out = {"best_step": best["step"], "best_epoch": best["epoch"], "best_nll": best["nll"],
           "best_accuracy": best["accuracy"], "adam_step": adam[-1]["step"], "runs": adam[-1]["runs"],
           "adam_nll": adam[-1]["nll"], "adam_nll_std": adam[-1]["nll_std"], "adam_accuracy": adam[-1]["accuracy"],
           "adam_train_loss": adam[-1]["train_loss"]}
    std = adam[-1]["nll_std"] if adam[-1]["nll_std"] != "" else 0.0
    out["rise"] = adam[-1]["nll"] - best["nll"]
    out["rise_se"] = std / math.sqrt(adam[-1]["runs"])
    out["overconfident"] = bool(out["rise"] > 2 * out["rise_se"] and adam[-1]["accuracy"] >= best["accuracy"] - 0.01)
    if swa:
        out.update({"swa_step": swa[-1]["step"], "swa_nll": swa[-1]["nll"], "swa_accuracy": swa[-1]["accuracy"]})
    return out


def plot_curve(summary: list[dict], dataset: str):
    """Test NLL, accuracy and both ACE readings (top-label, class-wise) of Adam and SWA against the
    optimizer's steps (mean ± s.d. over runs), and the training loss: the overconfident regime is
    the NLL rising while the accuracy stays."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bnn._metrics import LABELS

    panels = ("nll", "accuracy", "ace_top_label", "ace_classwise", "train_loss")
    fig, axes = plt.subplots(1, len(panels), figsize=(3.0 * len(panels), 3.2))
    for ax, metric in zip(axes, panels, strict=True):
        for stage, color in (("Adam", "C0"), ("SWA", "C1")):
            pts = [r for r in summary if r["dataset"] == dataset and r["stage"] == stage]
            if not pts:
                continue
            ax.errorbar([p["step"] for p in pts], [p[metric] for p in pts],
                        yerr=[p[f"{metric}_std"] or 0.0 for p in pts], marker="o", ms=3, capsize=2, color=color,
                        label=stage)
        ax.set_xlabel("optimizer steps")
        ax.set_title("training loss" if metric == "train_loss" else f"test {LABELS[metric]}")
        if metric == "train_loss":
            ax.set_yscale("log")
    axes[0].legend(fontsize=9)
    runs = max((r["runs"] for r in summary if r["dataset"] == dataset), default=0)
    fig.suptitle(f"{dataset}: Adam (power-1 decay) then SWA, test metrics along training (mean ± s.d. over "
                 f"{runs} runs)", fontsize=9)
    fig.tight_layout()
    return fig


def hessian_rows(dataset: str, runs: list) -> list[dict]:
    """The spectral norms of the Hessian of the potential at each point of each run."""
    return [{"dataset": dataset, "seed": r["seed"], "point": point, **vals}
            for r in runs for point, vals in r.get("hessian", {}).items()]


def plot_hessian(rows: list[dict]):
    """The Hessian's spectral norm at each point (one column per point, every run), log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = list(dict.fromkeys(r["point"] for r in rows))
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for i, p in enumerate(points):
        vals = [r["value"] for r in rows if r["point"] == p]
        ax.plot([i] * len(vals), vals, "o", alpha=0.7)
    ax.set_xticks(range(len(points)), points, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("|Hessian|_2 (power iteration)")
    ax.set_title("Spectral norm of the Hessian of the potential", fontsize=9)
    fig.tight_layout()
    return fig
