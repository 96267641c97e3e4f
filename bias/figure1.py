"""The paper's Figure 1: Wasserstein bias against the exact target on the 1-D example.

Nine samplers (UBU, BAOAB, EM each x sms, iid, rr), ``gamma = 1``, ``h = 2^-k`` for k = 2..5 and
``N = samples_per_unit * 2^k`` post-burn-in samples per point (the paper: ``10^7 * 2^k``).  The
statistic is ``W_1`` between the law of the chains and the exact target, streamed through a
histogram (:class:`bias.wasserstein.StreamingW1`: memory independent of ``N``).

Two estimates per point, both in the CSV:

* ``w1`` (the plotted one, ``estimator = "control_variate"``): each repeat also runs the same
  scheme with the full gradient on the same Brownian path and initial velocities; its stationary
  law is exactly Gaussian (variance from the oracle's Lyapunov solution), so
  ``F_sampler - F_control + F_control_exact`` estimates the sampler's cdf without bias and with the
  noise of the two chains' small pathwise difference (:func:`bias.wasserstein.w1_with_control`).
  Where the full-gradient scheme is unstable (EM at ``h = 1/4``) the point falls back to the
  plain estimate and says so.
* ``w1_plain``: the empirical ``W_1`` of the ``N`` samples alone, as in the paper.  At ``N = 10^7
  2^k`` its Monte Carlo error at ``h = 1/32`` is 15-30% of the bias, enough to move the local slope
  by 0.3 from one realization to the next; the control-variate estimate's is below 1%.

Each point reports its Monte Carlo error (the spread of ``R`` independent repeats, divided by
``sqrt(R)``; for both estimates) and its noise floor (the plain statistic for ``N`` exact draws of
the target).
A sampler that diverges is marked diverged at that ``h`` (with the first divergent step), never
plotted as a number.

Conventions: the design's 1-D potential ``sum (x - x_i)^2 / (2 sigma_i^2)``; BAOAB with the
standard ``exp(-gamma h)`` O step (``baoab_paper_friction=True`` runs the paper's listing, which
is BAOAB at friction ``gamma / 2``).
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bias.wasserstein import Normal, StreamingW1, w1_with_control
from integrators import GaussianTarget, sample
from theory_checks.oracle import UnstableStepError, stationary_full

SAMPLERS = [(s, p) for s in ("ubu", "baoab", "em") for p in ("sms", "iid", "rr")]
PRESETS = {
    "tiny": {"samples_per_unit": 2 * 10**4, "repeats": 2, "n_chains": 16, "ks": (2, 3, 4, 5)},
    "quick": {"samples_per_unit": 10**5, "repeats": 4, "n_chains": 128, "ks": (2, 3, 4, 5)},
    "full": {"samples_per_unit": 10**7, "repeats": 4, "n_chains": 2048, "ks": (2, 3, 4, 5)},
}
BURN_IN_TIME = 30.0  # in units of time; the 1-D example relaxes in a few units at gamma = 1
W1_BOUND = 2e-5      # histogram resolution: |streamed - exact W1| <= this (plus tails)
DIVERGENCE_BOUND = 100.0  # about 200 target standard deviations: no stable chain gets there


@dataclass
class Point:
    scheme: str
    plan: str
    h: float
    n_samples: int
    w1: float            # nan when diverged
    mc_error: float
    noise_floor: float
    bound: float
    diverged: bool
    first_divergence_step: int
    seconds: float
    estimator: str = "plain"          # how w1 and mc_error were estimated
    w1_plain: float = float("nan")    # the empirical W1 of the samples alone
    mc_error_plain: float = float("nan")
    control_noise: float = float("nan")  # W1 of the control's samples to its exact law: bounds |w1 - w1_plain|


def target_law(target: GaussianTarget) -> Normal:
    return Normal(float(target.mean[0]), float(math.sqrt(target.covariance[0, 0])))


def _repeat_seeds(seed: int, k: int, reps: int) -> list[int]:
    # shared by all nine samplers at one h (common random numbers) and by their controls
    return [seed * 1000 + 17 * k + r for r in range(reps)]


def _run_histogram(target, law, scheme, plan, h, gamma, chains, burn, per_chain, seed):
    """One repeat streamed into a histogram; ``(histogram, first divergent step or -1)``."""
    hist = StreamingW1.for_normal(law, bound=W1_BOUND)
    res = sample(target, scheme, plan, h=h, gamma=gamma, n_chains=chains, n_steps=burn + per_chain,
                 burn_in=burn, batch_size=None if plan == "full" else 1, seed=seed, x0=[law.mean],
                 histogram=(hist.lo, hist.hi, hist.n_bins), divergence_bound=DIVERGENCE_BOUND)
    if res.diverged:
        return hist, int(res.first_divergence_step)
    hist.merge(res.histogram, res.histogram_tails)
    return hist, -1


_CONTROLS: dict = {}  # the last few control runs, shared by the three plans of a scheme at one h


def _controls(target, law, scheme, h, gamma, chains, burn, per_chain, seeds):
    """Full-gradient runs on the same paths as the sampler's repeats, and their exact law
    (None where the full-gradient scheme is unstable or a control chain diverged)."""
    key = (scheme, h, gamma, chains, burn, per_chain, tuple(seeds))
    if key not in _CONTROLS:
        try:
            _, cov = stationary_full(scheme, target, h, gamma)
        except UnstableStepError:
            value = None
        else:
            exact = Normal(float(target.mean[0]), float(math.sqrt(cov[0, 0])))
            hists = [_run_histogram(target, law, scheme, "full", h, gamma, chains, burn, per_chain, sd)
                     for sd in seeds]
            value = None if any(at >= 0 for _, at in hists) else ([hs for hs, _ in hists], exact)
        while len(_CONTROLS) >= 3:
            _CONTROLS.pop(next(iter(_CONTROLS)))
        _CONTROLS[key] = value
    return _CONTROLS[key]


def _mean_error(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")


def run_point(scheme: str, plan: str, k: int, preset: str = "quick", seed: int = 0,
              gamma: float = 1.0, baoab_paper_friction: bool = False,
              control_variate: bool = True) -> Point:
    """One (sampler, step size) point: ``R`` repeats streamed into histograms (with
    ``control_variate``, also the full-gradient control on the same paths)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    if (scheme, plan) not in SAMPLERS:
        raise ValueError(f"unknown sampler {scheme!r} x {plan!r}; choose from {SAMPLERS}")
    cfg = PRESETS[preset]
    target = GaussianTarget.one_d_example()
    law = target_law(target)
    h = 2.0**-k
    n_total = cfg["samples_per_unit"] * 2**k
    reps, chains = cfg["repeats"], cfg["n_chains"]
    per_chain = max(1, math.ceil(n_total / (reps * chains)))
    burn = int(math.ceil(BURN_IN_TIME / h))
    g = gamma / 2 if (scheme == "baoab" and baoab_paper_friction) else gamma
    seeds = _repeat_seeds(seed, k, reps)
    t0 = time.time()
    runs = [_run_histogram(target, law, scheme, plan, h, g, chains, burn, per_chain, sd) for sd in seeds]
    n_samples = reps * chains * per_chain
    floor = StreamingW1.for_normal(law, bound=W1_BOUND)
    floor.add_exact_samples(n_samples, seed=seed * 1000 + 17 * k + 999)
    diverged_at = [at for _, at in runs if at >= 0]
    if diverged_at:
        return Point(scheme, plan, h, n_samples, float("nan"), float("nan"), floor.value(), floor.bound,
                     True, int(min(diverged_at)), time.time() - t0)
    pooled = StreamingW1.for_normal(law, bound=W1_BOUND)
    for hist, _ in runs:
        pooled.merge(hist.counts, hist.tails)
    w1_plain = pooled.value()
    mc_plain = _mean_error([hist.value() for hist, _ in runs])
    controls = _controls(target, law, scheme, h, g, chains, burn, per_chain, seeds) if control_variate else None
    if controls is None:
        return Point(scheme, plan, h, n_samples, w1_plain, mc_plain, floor.value(), pooled.bound,
                     False, -1, time.time() - t0, "plain", w1_plain, mc_plain)
    control_hists, exact = controls
    pooled_control = StreamingW1.for_normal(law, bound=W1_BOUND)
    for hist in control_hists:
        pooled_control.merge(hist.counts, hist.tails)
    w1, bound = w1_with_control(pooled, pooled_control, exact)
    pooled_control.dist = exact
    control_noise = pooled_control.value()
    mc = _mean_error([w1_with_control(hist, c, exact)[0]
                      for (hist, _), c in zip(runs, control_hists, strict=True)])
    return Point(scheme, plan, h, n_samples, w1, mc, floor.value(), bound, False, -1, time.time() - t0,
                 "control_variate", w1_plain, mc_plain, control_noise)


def units(preset: str = "quick"):
    """The independent units of work: one per (sampler, step size); the three plans of a scheme
    at one step size come together so that they share the cached full-gradient control."""
    return [(s, p, k) for s in ("ubu", "baoab", "em") for k in PRESETS[preset]["ks"]
            for p in ("sms", "iid", "rr")]


def local_slopes(points: list[Point], field: str = "w1") -> dict:
    """Local slope of ``field`` (``w1``, or ``w1_plain`` for the plain estimate) between the two
    finest step sizes, per sampler (nan if either diverged)."""
    out = {}
    for s, p in SAMPLERS:
        pts = sorted((q for q in points if q.scheme == s and q.plan == p), key=lambda q: q.h)
        if len(pts) >= 2 and not (pts[0].diverged or pts[1].diverged):
            coarse, fine = getattr(pts[1], field), getattr(pts[0], field)
            out[(s, p)] = math.log(coarse / fine) / math.log(pts[1].h / pts[0].h)
        else:
            out[(s, p)] = float("nan")
    return out


def run(out: Path | str, preset: str = "quick", seed: int = 0, progress=None,
        baoab_paper_friction: bool = False, control_variate: bool = True) -> list[Point]:
    """Run every unit, write ``figure1.csv``, ``figure1.png`` and ``metadata.json``
    (``baoab_paper_friction``: BAOAB as the paper's listing, at friction ``gamma / 2``;
    ``control_variate=False``: the plain empirical W1 only)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    points = []
    t0 = time.time()
    for i, (s, p, k) in enumerate(units(preset)):
        points.append(run_point(s, p, k, preset, seed, baoab_paper_friction=baoab_paper_friction,
                                control_variate=control_variate))
        if progress:
            progress(f"[{i + 1}/{len(units(preset))}] {s} x {p}, h = 2^-{k}: "
                     f"{'DIVERGED' if points[-1].diverged else f'W1 {points[-1].w1:.3e}'}")
    write_outputs(out, points, preset, seed, time.time() - t0, baoab_paper_friction)
    return points


def write_outputs(out: Path, points: list[Point], preset: str, seed: int, seconds: float,
                  baoab_paper_friction: bool = False) -> None:
    slopes = local_slopes(points)
    write_csv(out / "figure1.csv", points, slopes)
    from integrators.metadata import metadata
    meta = metadata(seed, preset)
    o_step = ("exp(-gamma h / 2) (the paper's listing: BAOAB at friction gamma / 2)" if baoab_paper_friction
              else "exp(-gamma h) (standard)")
    meta.update({"seconds": round(seconds, 1), "gamma": 1.0, "baoab_o_step": o_step,
                 "estimator": sorted({q.estimator for q in points if not q.diverged}),
                 "samples_per_point": "samples_per_unit * 2^k",
                 "samples_per_unit": PRESETS[preset]["samples_per_unit"]})
    (out / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    plot(out / "figure1.png", points, slopes)


def write_csv(path: Path, points: list[Point], slopes: dict, *, drop: tuple = ()) -> None:
    """``figure1.csv``: one row per point with the sampler's local slope (the one writer of this
    file; ``drop`` leaves fields out, e.g. wall times for byte-identical reports)."""
    fields = [f for f in asdict(points[0]) if f not in drop] + ["local_slope_finest"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for q in points:
            row = {k: v for k, v in asdict(q).items() if k not in drop}
            row["local_slope_finest"] = slopes[(q.scheme, q.plan)]
            writer.writerow(row)


def plot(path: Path, points: list[Point], slopes: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    colors = {"ubu": "tab:blue", "baoab": "tab:orange", "em": "tab:green"}
    styles = {"sms": "-", "iid": ":", "rr": "--"}
    markers = {"sms": "o", "iid": "s", "rr": "^"}
    names = {"sms": "SMS", "iid": "SG", "rr": "SG-RR"}
    for s, p in SAMPLERS:
        pts = sorted((q for q in points if q.scheme == s and q.plan == p), key=lambda q: q.h)
        ok = [q for q in pts if not q.diverged]
        label = f"{names[p]}-{s.upper()} (slope {slopes[(s, p)]:.2f})"
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
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    fig.savefig(path.with_suffix(".pdf"))
    plt.close(fig)
