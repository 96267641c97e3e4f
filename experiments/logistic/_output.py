"""The logistic-regression experiment's outputs as data: where a sampler stands at each step size,
the divergences, the biases at one step size, and the figure (``reports`` writes them).
:mod:`experiments.logistic._compute` runs the experiment."""

from __future__ import annotations

import math

from experiments.logistic._compute import NAMES, Row


def ordering(rows: list[Row], focus: str = "SMS-UBU") -> list[dict]:
    """Where ``focus`` stands among the samplers at each step size, by mean |bias|."""
    out = []
    for h in sorted({r.h for r in rows}, reverse=True):
        at_h = {r.sampler: r for r in rows if math.isclose(r.h, h)}
        me = at_h.get(focus)
        if me is None or me.diverged:
            out.append({"h": h, "verdict": "diverged" if me else "absent", "runner_up": "", "gap": float("nan"),
                        "noise": float("nan")})
            continue
        others = [r for name, r in at_h.items() if name != focus and not r.diverged]
        if not others:
            out.append({"h": h, "verdict": "smallest", "runner_up": "all others diverged",
                        "gap": float("inf"), "noise": 2.0 * me.bias_mean_se})
            continue
        rival = min(others, key=lambda r: r.bias)
        gap, noise = rival.bias - me.bias, 2.0 * math.hypot(rival.bias_mean_se, me.bias_mean_se)
        if gap > noise:
            verdict = "smallest"
        elif gap >= 0:
            verdict = "smallest within noise"
        elif -gap <= noise:
            verdict = "tied"
        else:
            verdict = "not smallest"
        out.append({"h": h, "verdict": verdict, "runner_up": rival.sampler, "gap": gap, "noise": noise})
    return out


def ordering_summary(rows: list[Row], focus: str = "SMS-UBU") -> str:
    """One line per step size: the verdict of :func:`ordering`, with the runner-up and the gap."""
    return "; ".join(f"h={o['h']:g}: {o['verdict']}" + (f" (next {o['runner_up']}, gap {o['gap']:.1e} vs 2 s.e. "
                                                         f"{o['noise']:.1e})" if o["runner_up"] else "")
                     for o in ordering(rows, focus))


def diverged_step_sizes(rows) -> dict[str, list[float]]:
    """The step sizes where each sampler diverged."""
    out: dict[str, list[float]] = {}
    for r in sorted((r for r in rows if r.diverged), key=lambda r: -r.h):
        out.setdefault(r.sampler, []).append(r.h)
    return out


def bias_at(rows: list[Row], h: float) -> dict:
    """``|bias|`` per sampler at one step size."""
    return {r.sampler: abs(r.bias) for r in rows if math.isclose(r.h, h) and not r.diverged}


def plot(rows: list[Row]):
    """Bias, accuracy, NLL, ACE and RPS against h, one panel each; diverged samplers marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # two rows of three (the sixth cell holds the legend): narrow enough that the report's page shows the
    # text near its size
    fig, grid = plt.subplots(2, 3, figsize=(13, 7))
    axes, key = list(grid.flat[:5]), grid.flat[5]
    panels = [("bias", "mean |bias| of p(true class) (bars: 2 s.e.)"), ("accuracy", "accuracy"), ("nll", "NLL"),
              ("ace", "ACE"), ("rps", "RPS")]
    colors = dict(zip(NAMES.values(), plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for ax, (field, label) in zip(axes, panels, strict=True):
        for name in NAMES.values():
            sub = sorted((r for r in rows if r.sampler == name and not r.diverged), key=lambda r: r.h)
            if sub:
                hs = [r.h for r in sub]
                if field == "bias":
                    keep = [r for r in sub if r.bias > 0.0]
                    se = [2 * r.bias_mean_se if math.isfinite(r.bias_mean_se) else 0.0 for r in keep]
                    ax.errorbar([r.h for r in keep], [r.bias for r in keep], yerr=se, marker="o", capsize=2,
                                label=name, color=colors[name])
                    ax.set_yscale("log")
                else:
                    ax.plot(hs, [getattr(r, field) for r in sub], marker="o", label=name, color=colors[name])
            for r in (r for r in rows if r.sampler == name and r.diverged):  # shown, never plotted as NaN
                ax.scatter([r.h], [0.97], marker="x", s=60, color=colors[name], transform=ax.get_xaxis_transform(),
                           clip_on=False)
                ax.annotate("diverged", (r.h, 0.97), xycoords=("data", "axes fraction"), fontsize=7,
                            color=colors[name], xytext=(-46, -12), textcoords="offset points")
        ax.set_xscale("log", base=2)
        ax.set(xlabel="h", title=label)
    key.axis("off")
    found = {}  # every sampler drawn in some panel, once
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    key.legend(list(found.values()), list(found), loc="center", fontsize=11, title="sampler (x at the top: diverged)",
               title_fontsize=11)
    fig.tight_layout()
    return fig
