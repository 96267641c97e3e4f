"""Figure 1's outputs as data: the table of its points, its facts for the metadata, and the figure
(``reports`` writes them)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from experiments.figure1._setup import PRESETS, SAMPLERS, Point, histogram_layout, target_law
from integrators import GaussianTarget
from theory_checks.orders import format_slope


def table(points: list[Point], slopes: dict, *, with_seconds: bool = True) -> list[dict]:
    """The figure's numbers, one row per point (an undefined local slope, where a point diverged, is an empty
    cell)."""
    return [{**{f: v for f, v in asdict(q).items() if with_seconds or f != "seconds"},
             "local_slope_finest": slopes[(q.scheme, q.plan)] if np.isfinite(slopes[(q.scheme, q.plan)]) else ""}
            for q in points]


def resolution_metadata() -> dict:
    """The histogram every W1 is read from, and the binning bounds that follow from it."""
    law = target_law(GaussianTarget.one_d_example())
    lo, hi, n_bins = histogram_layout(law)
    width = (hi - lo) / n_bins
    return {"lo": lo, "hi": hi, "n_bins": n_bins, "bin_width": width,
            "binning_bound_plain": 0.5 * width, "binning_bound_control_variate": 1.5 * width,
            "noise_floor": "exact expectation of the plain statistic for N exact draws, binning "
                           "included (bias._noise_floor.expected_binned_w1)"}


def run_facts(points: list[Point], preset: str, *, baoab_paper_friction: bool = False) -> dict:
    """What the figure's ``metadata.json`` records besides the run's metadata."""
    o_step = ("exp(-gamma h / 2) (the paper's listing: BAOAB at friction gamma / 2)" if baoab_paper_friction
              else "exp(-gamma h) (standard)")
    facts = {"gamma": 1.0, "baoab_o_step": o_step,
             "estimator": sorted({q.estimator for q in points if not q.diverged}),
             "samples_per_point": "samples_per_unit * 2^k",
             "samples_per_unit": PRESETS[preset]["samples_per_unit"],
             "histogram": resolution_metadata()}
    ok = [q for q in points if not q.diverged]
    if ok:  # the bounds the figure needs: against the smallest plotted W1 and the smallest floor
        res = facts["histogram"]
        res["control_variate_bound_over_smallest_w1"] = res["binning_bound_control_variate"] / min(q.w1 for q in ok)
        res["plain_bound_over_smallest_noise_floor"] = res["binning_bound_plain"] / min(q.noise_floor for q in ok)
    return facts


def plot(points: list[Point], slopes: dict):
    """Figure 1: W1 bias against h per sampler, diverged samplers marked, the noise floor drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 5.2))
    colors = {"ubu": "tab:blue", "baoab": "tab:orange", "em": "tab:green"}
    styles = {"sms": "-", "iid": ":", "rr": "--"}
    markers = {"sms": "o", "iid": "s", "rr": "^"}
    names = {"sms": "SMS", "iid": "SG", "rr": "SG-RR"}
    for s, p in SAMPLERS:
        pts = sorted((q for q in points if q.scheme == s and q.plan == p), key=lambda q: q.h)
        ok = [q for q in pts if not q.diverged]
        label = f"{names[p]}-{s.upper()} (slope {format_slope(slopes[(s, p)])})"
        if ok:
            ax.errorbar([q.h for q in ok], [q.w1 for q in ok], yerr=[2 * q.mc_error for q in ok],
                        color=colors[s], ls=styles[p], marker=markers[p], capsize=2, label=label)
            plain = [q for q in ok if q.estimator != "plain" and np.isfinite(q.w1_plain)]
            ax.plot([q.h for q in plain], [q.w1_plain for q in plain], ls="none", marker=markers[p],
                    mfc="none", color=colors[s], alpha=0.35, ms=5)
    # diverged samplers: a cross near the top at their h, one row each, with the first bad step
    top = ax.get_ylim()[1] if any(not q.diverged for q in points) else 1.0
    rows: dict = {}
    for q in points:
        if q.diverged:
            row = rows[q.h] = rows.get(q.h, -1) + 1
            y = top * 0.72**row
            ax.plot([q.h], [y], marker="x", color=colors[q.scheme], ms=8, ls="none")
            ax.annotate(f"{names[q.plan]}-{q.scheme.upper()} diverged (step {q.first_divergence_step})",
                        (q.h, y), fontsize=6.5, color=colors[q.scheme], textcoords="offset points",
                        xytext=(-6, -2), ha="right", va="center")
    floors = sorted((q.h, q.noise_floor) for q in points if q.scheme == "ubu" and q.plan == "sms")
    ax.plot([f[0] for f in floors], [f[1] for f in floors], "k-.", lw=0.8, label="noise floor (exact draws)")
    if any(q.estimator != "plain" for q in points):
        ax.plot([], [], ls="none", marker="o", mfc="none", color="gray", alpha=0.5,
                label="plain empirical W1 (no control)")
    ax.set(xscale="log", yscale="log", xlabel="step size h", ylabel="W1 bias to the exact target (bars: 2 MC errors)",
           title="1-D example (Figure 1): Wasserstein bias, gamma = 1\n"
                 "lines: control-variate estimate (full-gradient chain on the same path)")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes: covers no line
    fig.tight_layout()
    return fig
