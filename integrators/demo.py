"""Demo: SMS-UBU against SG-UBU on the paper's 1-D example, against the exact target.

    python -m integrators.demo --out out/demo

Writes ``demo.png`` (sample densities at the largest step next to the exact density, and the
bias of the stationary variance against ``h`` on log-log axes), ``demo.csv`` (the numbers
behind the plot) and ``metadata.json`` (seed, preset, versions, git commit).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from pathlib import Path

import numpy as np

from integrators import GaussianTarget, sample
from integrators.metadata import metadata, unwritable

SAMPLERS = {"SMS-UBU": ("ubu", "sms"), "SG-UBU": ("ubu", "iid")}
PRESETS = {"quick": {"n_chains": 4000, "time": 800.0}, "tiny": {"n_chains": 400, "time": 100.0},
           "full": {"n_chains": 16000, "time": 1600.0}}


HIST_BINS = 80


def hist_edges(target) -> np.ndarray:
    mean, sd = target.mean[0], math.sqrt(target.covariance[0, 0])
    return np.linspace(mean - 4 * sd, mean + 4 * sd, HIST_BINS + 1)


def run_unit(name: str, k: int, preset: str = "quick", seed: int = 0) -> dict:
    """One sampler at ``h = 2^-k``: a row of the CSV, and (for the largest step) a histogram."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    scheme, plan = SAMPLERS[name]
    cfg = PRESETS[preset]
    target = GaussianTarget.one_d_example()
    exact_mean, exact_var = target.mean[0], target.covariance[0, 0]
    h = 2.0**-k
    edges = hist_edges(target)
    res = sample(target, scheme, plan, h=h, gamma=1.0, n_chains=cfg["n_chains"], n_steps=int(cfg["time"] / h),
                 burn_in=int(20.0 / h), batch_size=1, seed=seed,
                 histogram=(edges[0], edges[-1], HIST_BINS) if k == 2 else None)
    row = {"sampler": name, "scheme": scheme, "plan": plan, "h": h,
           "mean": res.mean[0], "mean_se": res.mean_se[0], "variance": res.variance[0],
           "variance_se": res.variance_se[0], "variance_bias": res.variance[0] - exact_var,
           "mean_bias": res.mean[0] - exact_mean, "diverged_chains": res.n_diverged}
    row = {key: (float(val) if isinstance(val, (float, np.floating)) else val) for key, val in row.items()}
    hist = res.histogram.tolist() if k == 2 else None
    return {"row": row, "hist": hist, "summary": res.summary()}


def run(out: Path, seed: int = 0, preset: str = "quick") -> list[dict]:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in SAMPLERS:
        for k in range(2, 6):
            results.append(run_unit(name, k, preset, seed))
            print(f"  {name:8s} h=2^-{k}: {results[-1]['summary']}", flush=True)
    write_outputs(out, results)
    (out / "metadata.json").write_text(json.dumps(metadata(seed, preset), indent=2) + "\n")
    return [r["row"] for r in results]


def write_outputs(out: Path, results: list[dict]) -> None:
    rows = [r["row"] for r in results]
    with open(out / "demo.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    hists = {r["row"]["sampler"]: np.array(r["hist"]) for r in results if r["hist"] is not None}
    plot(out / "demo.png", rows, hists)


def plot(path: Path, rows, hists):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    fig.savefig(path.with_suffix(".pdf"))
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="SMS-UBU vs SG-UBU on the paper's 1-D example")
    parser.add_argument("--out", default="out/demo", help="output folder (created if missing)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (>= 0)")
    parser.add_argument("--preset", default="quick", choices=sorted(PRESETS), help="run size")
    args = parser.parse_args(argv)
    out = Path(args.out)
    problem = unwritable(out)
    if problem:
        parser.exit(2, f"error: cannot write to --out {out}: {problem}\n")
    t0 = time.time()
    print(f"SMS-UBU vs SG-UBU on the 1-D example (preset {args.preset}, seed {args.seed})")
    run(out, args.seed, args.preset)
    print(f"wrote {out / 'demo.png'}, {out / 'demo.csv'}, {out / 'metadata.json'} "
          f"in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
