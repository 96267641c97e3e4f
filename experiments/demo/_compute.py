"""Demo: SMS-UBU against SG-UBU on the paper's 1-D example, against the exact target.

    sms-langevin run demo --preset quick --out out/demo      (make demo-1d)

The figure ``demo`` of the reports (:mod:`experiments.demo`) runs :func:`run_unit` per sampler and
step size; :func:`table` gives the numbers behind the plot (columns :data:`CSV_COLUMNS`) and
:func:`plot` the figure (sample densities at the largest step next to the exact density, and the
bias of the stationary variance against ``h`` on log-log axes).  Nothing here writes a file.
"""

from __future__ import annotations

import math

import numpy as np

from integrators import GaussianTarget, sample
from integrators._validation import preset_settings

SAMPLERS = {"SMS-UBU": ("ubu", "sms"), "SG-UBU": ("ubu", "iid")}
PRESETS = {"quick": {"n_chains": 4000, "time": 800.0}, "tiny": {"n_chains": 400, "time": 100.0},
           "full": {"n_chains": 16000, "time": 1600.0}}


HIST_BINS = 80
CSV_COLUMNS = ("sampler", "scheme", "plan", "h", "mean", "mean_se", "variance", "variance_se", "variance_bias",
               "mean_bias", "diverged_chains")


def hist_edges(target) -> np.ndarray:
    """The histogram's bin edges: :data:`HIST_BINS` bins over the target's mean ``± 4`` standard
    deviations of its first coordinate."""
    mean, sd = target.mean[0], math.sqrt(target.covariance[0, 0])
    return np.linspace(mean - 4 * sd, mean + 4 * sd, HIST_BINS + 1)


def run_unit(name: str, k: int, preset: str = "quick", seed: int = 0, *, threads: int | None = None) -> dict:
    """One sampler at ``h = 2^-k``: a row of the CSV, and (for the largest step) a histogram."""
    cfg = preset_settings(PRESETS, preset)
    scheme, plan = SAMPLERS[name]
    target = GaussianTarget.one_d_example()
    exact_mean, exact_var = target.mean[0], target.covariance[0, 0]
    h = 2.0**-k
    edges = hist_edges(target)
    res = sample(target, scheme, plan, h=h, gamma=1.0, n_chains=cfg["n_chains"], n_steps=int(cfg["time"] / h),
                 burn_in=int(20.0 / h), batch_size=1, seed=seed, threads=threads,
                 histogram=(edges[0], edges[-1], HIST_BINS) if k == 2 else None)
    row = dict(zip(CSV_COLUMNS, (name, scheme, plan, h, res.mean[0], res.mean_se[0], res.variance[0],
                                 res.variance_se[0], res.variance[0] - exact_var, res.mean[0] - exact_mean,
                                 res.n_diverged), strict=True))
    row = {key: (float(val) if isinstance(val, (float, np.floating)) else val) for key, val in row.items()}
    hist = res.histogram.tolist() if k == 2 else None
    return {"row": row, "hist": hist, "summary": res.summary()}


def table(results: list[dict]) -> list[dict]:
    """The rows of the units' results, columns in the order of :data:`CSV_COLUMNS` (rows read back
    from JSON come key-sorted)."""
    return [{key: r["row"][key] for key in CSV_COLUMNS} for r in results]


def histograms(results: list[dict]) -> dict:
    """``{sampler: counts}`` of the units that kept a histogram (the largest step)."""
    return {r["row"]["sampler"]: np.array(r["hist"]) for r in results if r["hist"] is not None}


def plot(rows: list[dict], hists: dict):
    """The demo figure: densities at ``h = 1/4`` beside the exact one, and |variance bias| against h."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    target = GaussianTarget.one_d_example()
    exact_mean, exact_var = target.mean[0], target.covariance[0, 0]
    edges = hist_edges(target)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    grid = np.linspace(edges[0], edges[-1], 400)
    density = np.exp(-0.5 * (grid - exact_mean) ** 2 / exact_var) / math.sqrt(2 * math.pi * exact_var)
    for name, counts in hists.items():
        dens = counts / (counts.sum() * np.diff(edges))
        ax1.stairs(dens, edges, lw=1.5, label=f"{name}, h = 1/4")
    ax1.plot(grid, density, "k--", lw=1.2, label="exact target")
    ax1.set(xlim=(edges[0], edges[-1]), xlabel="x", ylabel="density", title="1-D example: samples at h = 1/4")
    ax1.legend(fontsize=8)
    for name in SAMPLERS:
        sub = [r for r in rows if r["sampler"] == name]
        hs = np.array([r["h"] for r in sub])
        bias = np.abs([r["variance_bias"] for r in sub])
        se = np.array([r["variance_se"] for r in sub])
        ax2.errorbar(hs, bias, yerr=2 * se, marker="o", capsize=3, label=name)
    hs = np.array(sorted({r["h"] for r in rows}))
    ax2.plot(hs, 0.5 * hs**2, "k:", lw=1, label="slope 2")
    ax2.plot(hs, 0.5 * hs, "k-.", lw=1, label="slope 1")
    ax2.set(xscale="log", yscale="log", xlabel="step size h", ylabel="|bias of Var x| (±2 s.e.)",
            title="stationary variance bias vs h")
    # the step sizes drawn, labelled once each (a log axis within a decade crowds its minor labels)
    ax2.set_xticks(hs, [f"1/{1 / h:g}" if float(1 / h).is_integer() else f"{h:g}" for h in hs])
    ax2.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig
