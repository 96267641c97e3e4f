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
``sqrt(R)``; for both estimates) and its noise floor: the exact expectation of the plain statistic
for ``N`` exact draws of the target on the same histogram (:func:`noise_floor`, one number per
``N``, shared by the nine samplers; no draws).

Cost: the kernel's chain-steps (about 7.3e9 at ``full``) and nothing else of that order.  The
three plans of a scheme at one ``h`` and their shared control are one group of runs (one W1
evaluation).  Every run of a repeat at one ``h`` has the same seed (repeat ``r`` at ``h = 2^-k``:
``integrators.seeds.derive(seed, "figure1", k, r)``), hence the same Brownian path (and initial
state), so a repeat's runs go in one call of :func:`integrators.sample_together`: the path, most
of a step's cost on this example, is drawn once for the four (a scheme's three plans
and its control; the three schemes together would share it among twelve, but their twelve
histograms then miss the caches enough to make the figure slower), and each run's numbers are
those of its own ``sample()`` call.  All calls go to one pool of ``threads`` workers
(one thread each; the kernel releases the GIL), queued at once with the finest ``h`` first, and a
group's W1 numbers are read off as soon as its calls are done while the other calls keep the
cores busy.  F and the integrated cdf on the histogram's grid are computed once per layout.
Every histogram has ``n_bins`` bins of width ``2 W1_BOUND`` over +-12 sd (in ``metadata.json``): the plotted estimate's
binning bound is ``1.5`` bin widths, the plain one's half a bin width; ``benchmarks/bench_figure1.py``
prints the former as a fraction of the smallest plotted W1.
A sampler that diverges is marked diverged at that ``h`` (with the first divergent step), never
plotted as a number.

Backends: the Numba kernel (default) or ``backend="torch"`` on ``device`` (``cpu`` or ``cuda``),
:mod:`bias.figure1_torch` (the same schemes and plans on tensors; its chain count per
repeat is its own, so that a GPU has enough chains to fill it; its runs go one at a time).

Conventions: the design's 1-D potential ``sum (x - x_i)^2 / (2 sigma_i^2)``; BAOAB with the
standard ``exp(-gamma h)`` O step (``baoab_paper_friction=True`` runs the paper's listing, which
is BAOAB at friction ``gamma / 2``).
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bias.wasserstein import Normal, StreamingW1, expected_binned_w1, w1_with_control
from integrators import GaussianTarget, sample, sample_together
from integrators.seeds import derive
from theory_checks.oracle import UnstableStepError, stationary_full

SAMPLERS = [(s, p) for s in ("ubu", "baoab", "em") for p in ("sms", "iid", "rr")]
PRESETS = {
    "tiny": {"samples_per_unit": 2 * 10**4, "repeats": 2, "n_chains": 16, "ks": (2, 3, 4, 5)},
    "quick": {"samples_per_unit": 10**5, "repeats": 4, "n_chains": 128, "ks": (2, 3, 4, 5)},
    "full": {"samples_per_unit": 10**7, "repeats": 4, "n_chains": 2048, "ks": (2, 3, 4, 5)},
}
BURN_IN_TIME = 30.0  # in units of time; the 1-D example relaxes in a few units at gamma = 1
# histogram resolution: half a bin width.  The figure needs the plotted estimate's binning bound
# (1.5 bin widths) well below the smallest W1 it plots (second-order samplers at h = 1/32, about
# 4.4e-4: the bound is 0.14 of it) and the plain statistic's (half a bin) below its noise floor
# at the largest N (3.6e-5 at full); finer bins slow the kernel's histogram (291,043 bins at this bound).
W1_BOUND = 2e-5
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
    seconds: float  # kernel seconds of the point's runs (its share of its group's calls, control included)
    estimator: str = "plain"          # how w1 and mc_error were estimated
    w1_plain: float = float("nan")    # the empirical W1 of the samples alone
    mc_error_plain: float = float("nan")
    control_noise: float = float("nan")  # W1 of the control's samples to its exact law: bounds |w1 - w1_plain|


def target_law(target: GaussianTarget) -> Normal:
    return Normal(float(target.mean[0]), float(math.sqrt(target.covariance[0, 0])))


def _repeat_seeds(seed: int, k: int, reps: int) -> list[int]:
    # shared by all nine samplers at one h (common random numbers) and by their controls
    return [derive(seed, "figure1", k, r) for r in range(reps)]


def histogram_layout(law: Normal) -> tuple[float, float, int]:
    """``(lo, hi, n_bins)`` of every histogram of the figure: +-12 sd with half-width ``W1_BOUND``."""
    grid = StreamingW1.for_normal(law, bound=W1_BOUND)
    return grid.lo, grid.hi, grid.n_bins


@functools.lru_cache(maxsize=16)
def noise_floor(law: Normal, n_samples: int) -> float:
    """The expected plain statistic for ``n_samples`` exact draws of ``law`` on the figure's
    histogram (:func:`bias.wasserstein.expected_binned_w1`): one number per ``N``, shared by
    every sampler at that step size."""
    return expected_binned_w1(law, n_samples, *histogram_layout(law))


@dataclass(frozen=True)
class _Run:
    """One ``sample()`` call of a point: a repeat of a sampler, or of its full-gradient control."""

    scheme: str
    plan: str
    h: float
    gamma: float
    chains: int
    burn: int
    per_chain: int
    seed: int
    backend: tuple = ("numba", None)  # (backend, device)


BACKENDS = ("numba", "torch")


def sampler_for(backend: str, device=None):
    """The ``sample`` function of a backend (the tensor one bound to ``device``)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {list(BACKENDS)}")
    if backend == "numba":
        if device not in (None, "cpu"):
            raise ValueError(f"the numba backend runs on the CPU; device={device!r} needs backend='torch'")
        return sample
    from bias.figure1_torch import figure1_sampler
    return figure1_sampler(device)


def _run_histograms(target, law, runs: tuple, threads: int) -> tuple[list, float]:
    """Runs that differ only in their (scheme, plan), streamed into histograms on one Brownian
    path; per run ``(histogram, first divergent step or -1)``.  The Numba backend advances them
    together (:func:`integrators.sample_together`: the path is drawn once per step for all, and
    each run's numbers are those of its own ``sample()`` call); the tensor backend runs them one
    at a time.  Also returns the call's seconds."""
    started = time.perf_counter()
    lo, hi, n_bins = histogram_layout(law)
    first = runs[0]
    options = dict(h=first.h, gamma=first.gamma, n_chains=first.chains, n_steps=first.burn + first.per_chain,
                   burn_in=first.burn, seed=first.seed, x0=[law.mean], histogram=(lo, hi, n_bins),
                   divergence_bound=DIVERGENCE_BOUND)
    if first.backend[0] == "numba":
        results = sample_together(target, [(r.scheme, r.plan) for r in runs], batch_size=1, threads=threads,
                                  **options)
    else:
        results = [sampler_for(*r.backend)(target, r.scheme, r.plan, batch_size=None if r.plan == "full" else 1,
                                           **options) for r in runs]
    out = []
    for res in results:
        hist = StreamingW1(law, lo, hi, n_bins)
        if res.diverged:
            out.append((hist, int(res.first_divergence_step)))
        else:
            hist.merge(res.histogram, res.histogram_tails)
            out.append((hist, -1))
    return out, time.perf_counter() - started


@dataclass
class _Control:
    """The full-gradient control of one scheme at one h: its repeats' histograms, pooled, its
    exact law and its own W1 to that law (shared by the three plans)."""

    hists: list
    pooled: StreamingW1
    exact: Normal
    noise: float


_CONTROLS: dict = {}  # the last few controls, shared by the three plans of a scheme at one h


def clear_control_cache() -> None:
    """Forget the cached controls (the next point recomputes its control)."""
    _CONTROLS.clear()


def _control_runs(target, scheme, h, g, chains, burn, per_chain, seeds,
                  backend=("numba", None)) -> tuple[tuple, list[_Run], Normal | None]:
    """The control's runs still to do (none when cached or when the full-gradient scheme is unstable)."""
    key = (scheme, h, g, chains, burn, per_chain, tuple(seeds), backend)
    if key in _CONTROLS:
        return key, [], None
    try:
        _, cov = stationary_full(scheme, target, h, g)
    except UnstableStepError:
        return key, [], None
    exact = Normal(float(target.mean[0]), float(math.sqrt(cov[0, 0])))
    return key, [_Run(scheme, "full", h, g, chains, burn, per_chain, sd, backend) for sd in seeds], exact


def _store_control(key, runs, exact, done, law) -> _Control | None:
    """The control of ``runs`` (None where one of them diverged), cached under ``key``."""
    value = None
    if runs and not any(done[r][1] >= 0 for r in runs):
        hists = [done[r][0] for r in runs]
        pooled = StreamingW1(law, *histogram_layout(law))
        for hist in hists:
            pooled.merge(hist.counts, hist.tails)
        own = StreamingW1(exact, pooled.lo, pooled.hi, pooled.n_bins)
        own.merge(pooled.counts, pooled.tails)
        value = _Control(hists, pooled, exact, own.value())
    _CONTROLS.pop(key, None)
    while len(_CONTROLS) >= 3:
        _CONTROLS.pop(next(iter(_CONTROLS)))
    _CONTROLS[key] = value
    return value


def _mean_error(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")


def point_config(k: int, preset: str, backend=("numba", None)) -> tuple[float, int, int, int, int]:
    """``(h, repeats, chains, samples per chain, burn-in steps)`` of a point at ``h = 2^-k`` (the
    tensor backend spreads the same samples over its own chain count)."""
    cfg = PRESETS[preset]
    h = 2.0**-k
    reps, chains = cfg["repeats"], cfg["n_chains"]
    if backend[0] != "numba":
        chains = sampler_for(*backend).chains_per_repeat(preset)
    per_chain = max(1, math.ceil(cfg["samples_per_unit"] * 2**k / (reps * chains)))
    return h, reps, chains, per_chain, int(math.ceil(BURN_IN_TIME / h))


def chain_steps(preset: str, *, gamma: float = 1.0, control_variate: bool = True) -> dict:
    """Chain-steps (burn-in included) the figure runs per ``(scheme, plan)``, the full-gradient
    controls under ``plan = "full"`` (none where the full-gradient scheme is unstable)."""
    target = GaussianTarget.one_d_example()
    out: dict = {}
    for s, k in _groups(preset):
        h, reps, chains, per_chain, burn = point_config(k, preset)
        each = reps * chains * (burn + per_chain)
        plans = list(_plans_of(s))
        if control_variate:
            try:
                stationary_full(s, target, h, gamma)
                plans.append("full")
            except UnstableStepError:
                pass
        for p in plans:
            out[(s, p)] = out.get((s, p), 0) + each
    return out


def run_point(scheme: str, plan: str, k: int, preset: str = "quick", seed: int = 0,
              gamma: float = 1.0, baoab_paper_friction: bool = False,
              control_variate: bool = True, *, threads: int | None = None, backend: str = "numba",
              device=None) -> Point:
    """One (sampler, step size) point: ``R`` repeats streamed into histograms (with
    ``control_variate``, also the full-gradient control on the same paths); ``threads`` cores
    (default: all).  The per-point interface another backend implements: inputs the sampler,
    ``k`` (``h = 2^-k``), the preset (``N``, repeats, chains), the seed; output the W1 numbers."""
    return run_points(scheme, (plan,), k, preset, seed, gamma=gamma,
                      baoab_paper_friction=baoab_paper_friction, control_variate=control_variate,
                      threads=threads, backend=backend, device=device)[0]


def run_points(scheme: str, plans, k: int, preset: str = "quick", seed: int = 0, *, gamma: float = 1.0,
               baoab_paper_friction: bool = False, control_variate: bool = True,
               threads: int | None = None, backend: str = "numba", device=None) -> list[Point]:
    """The points of one scheme at one step size for several plans, all their runs (and the
    shared control's) scheduled together so that every core stays busy (``backend="torch"``:
    one run at a time on ``device``)."""
    threads = _threads(threads)
    sampler_for(backend, device)  # validates the pair
    group = _Group.make(scheme, tuple(plans), k, preset, seed, gamma, baoab_paper_friction, control_variate,
                        (backend, device))
    runs = group.runs()
    workers = max(1, min(threads, len(runs))) if backend == "numba" else 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return group.finish(group.submit(pool, max(1, threads // workers)))


def _threads(threads) -> int:
    if threads is None:  # an executor running several units at once sets SMS_LANGEVIN_THREADS
        threads = int(os.environ.get("SMS_LANGEVIN_THREADS", 0)) or (os.cpu_count() or 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    return threads


@dataclass
class _Group:
    """The points of one scheme at one step size: their runs, and the control they share."""

    scheme: str
    plans: tuple
    k: int
    n_samples: int
    law: Normal
    sampler_runs: dict
    control_key: tuple | None
    control_runs: list
    control_law: Normal | None
    cached_control: object = None  # the control taken from _CONTROLS when the group was made

    @classmethod
    def make(cls, scheme, plans, k, preset, seed, gamma, baoab_paper_friction, control_variate,
             backend=("numba", None)):
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        for plan in plans:
            if (scheme, plan) not in SAMPLERS:
                raise ValueError(f"unknown sampler {scheme!r} x {plan!r}; choose from {SAMPLERS}")
        target = GaussianTarget.one_d_example()
        h, reps, chains, per_chain, burn = point_config(k, preset, backend)
        g = gamma / 2 if (scheme == "baoab" and baoab_paper_friction) else gamma
        seeds = _repeat_seeds(seed, k, reps)
        runs = {plan: [_Run(scheme, plan, h, g, chains, burn, per_chain, sd, backend) for sd in seeds]
                for plan in plans}
        key, control_runs, exact = (_control_runs(target, scheme, h, g, chains, burn, per_chain, seeds, backend)
                                    if control_variate else (None, [], None))
        # (held by the group: other groups finishing in between may evict it from the bounded cache)
        cached = _CONTROLS.get(key) if key is not None and not control_runs else None
        return cls(scheme, plans, k, reps * chains * per_chain, target_law(target), runs, key, control_runs, exact,
                   cached)

    def runs(self) -> list[_Run]:
        return [r for plan in self.plans for r in self.sampler_runs[plan]] + self.control_runs

    def submit(self, pool, threads_per_call: int) -> dict:
        """Queue the runs on ``pool``: runs that differ only in their (scheme, plan) share their
        Brownian path (the same seed, step, friction and chains), so a repeat's three plans and
        their control go together in one call (:func:`_run_histograms`, ``threads_per_call``
        threads).  Returns ``{run: (future, index of the run in its call, runs in the call)}``."""
        target = GaussianTarget.one_d_example()
        calls: dict = {}
        for r in self.runs():
            calls.setdefault((r.h, r.gamma, r.chains, r.burn, r.per_chain, r.seed, r.backend), []).append(r)
        out = {}
        for joint in calls.values():
            future = pool.submit(_run_histograms, target, self.law, tuple(joint), threads_per_call)
            out.update({r: (future, i, len(joint)) for i, r in enumerate(joint)})
        return out

    def finish(self, futures: dict) -> list[Point]:
        """Wait for the runs and compute the W1 numbers of every point."""
        done = {r: f.result()[0][i] for r, (f, i, _) in futures.items()}
        # the kernel seconds of this group's runs: an equal share of each call they were in
        seconds = sum(f.result()[1] / size for f, _, size in futures.values()) / len(self.plans)
        controls = self.cached_control
        if self.control_key is not None and self.control_runs:
            controls = _store_control(self.control_key, self.control_runs, self.control_law, done, self.law)
        floor = noise_floor(self.law, self.n_samples)
        return [_point(self.scheme, plan, 2.0**-self.k, [done[r] for r in self.sampler_runs[plan]], controls,
                       self.n_samples, floor, self.law, seconds) for plan in self.plans]


def _point(scheme, plan, h, repeats, controls, n_samples, floor, law, seconds) -> Point:
    """The W1 numbers of one point from its repeats' histograms (and the control's)."""
    diverged_at = [at for _, at in repeats if at >= 0]
    if diverged_at:
        lo, hi, n_bins = histogram_layout(law)
        return Point(scheme, plan, h, n_samples, float("nan"), float("nan"), floor, 0.5 * (hi - lo) / n_bins,
                     True, int(min(diverged_at)), seconds)
    pooled = StreamingW1(law, *histogram_layout(law))
    for hist, _ in repeats:
        pooled.merge(hist.counts, hist.tails)
    w1_plain = pooled.value()
    mc_plain = _mean_error([hist.value() for hist, _ in repeats])
    if controls is None:
        return Point(scheme, plan, h, n_samples, w1_plain, mc_plain, floor, pooled.bound,
                     False, -1, seconds, "plain", w1_plain, mc_plain)
    w1, bound = w1_with_control(pooled, controls.pooled, controls.exact)
    mc = _mean_error([w1_with_control(hist, c, controls.exact)[0]
                      for (hist, _), c in zip(repeats, controls.hists, strict=True)])
    return Point(scheme, plan, h, n_samples, w1, mc, floor, bound, False, -1, seconds,
                 "control_variate", w1_plain, mc_plain, controls.noise)


def units(preset: str = "quick"):
    """The independent units of work: one per (sampler, step size); the three plans of a scheme
    at one step size come together so that they share the cached full-gradient control."""
    return [(s, p, k) for s, k in _groups(preset) for p in _plans_of(s)]


def _groups(preset: str) -> list[tuple[str, int]]:
    return [(s, k) for s in dict.fromkeys(s for s, _ in SAMPLERS) for k in PRESETS[preset]["ks"]]


def _plans_of(scheme: str) -> tuple[str, ...]:
    return tuple(p for s, p in SAMPLERS if s == scheme)


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
        baoab_paper_friction: bool = False, control_variate: bool = True, *,
        threads: int | None = None, backend: str = "numba", device=None) -> list[Point]:
    """Run every unit, write ``figure1.csv``, ``figure1.png`` and ``metadata.json``
    (``baoab_paper_friction``: BAOAB as the paper's listing, at friction ``gamma / 2``;
    ``control_variate=False``: the plain empirical W1 only; ``threads``: cores, default all).
    The three plans of a scheme at one step size and their shared control run together."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    threads = _threads(threads)
    sampler = sampler_for(backend, device)
    t0 = time.time()
    n_units = len(units(preset))

    # one pool for the whole figure and every call queued at once, the costliest (finest h)
    # first, so that all cores stay busy to the end; W1 is read off each group as it completes
    groups = {(s, k): _Group.make(s, _plans_of(s), k, preset, seed, 1.0, baoab_paper_friction, control_variate,
                                  (backend, device)) for s, k in _groups(preset)}
    by_group: dict = {}
    with ThreadPoolExecutor(max_workers=threads if backend == "numba" else 1) as pool:
        # (one scheme's runs per call: twelve samplers' histograms in one call, 14 MB, miss the
        # caches so much that the figure ran 1.5x slower than with four, in spite of the path)
        queued = {key: groups[key].submit(pool, 1) for key in sorted(groups, key=lambda sk: -sk[1])}
        for key in _completion_order(queued):
            by_group[key] = groups[key].finish(queued.pop(key))  # (its calls' results can go once read)
            for q in by_group[key]:
                n_done = sum(map(len, by_group.values()))
                if progress:
                    progress(f"[{n_done}/{n_units}] {q.scheme} x {q.plan}, h = 2^-{key[1]}: "
                             f"{'DIVERGED' if q.diverged else f'W1 {q.w1:.3e}'}")
    points = [q for key in _groups(preset) for q in by_group[key]]
    seconds = time.time() - t0
    slopes = local_slopes(points)
    write_csv(out / "figure1.csv", points, slopes)
    write_metadata(out / "metadata.json", points, preset, seed, seconds, baoab_paper_friction,
                   backend=sampler.describe() if backend != "numba" else {"backend": "numba"})
    plot(out / "figure1.png", points, slopes)
    return points


def _completion_order(queued: dict):
    """The keys of ``queued`` (``{key: {run: (future, index, size)}}``) in the order their last
    future completes."""
    pending = {key: {f for f, _, _ in runs.values()} for key, runs in queued.items()}
    while pending:
        running = {f for futures in pending.values() for f in futures if not f.done()}
        if running:  # (waiting on a set that holds a done future would return at once: a busy loop)
            wait(running, return_when=FIRST_COMPLETED)
        for key in [key for key, futures in pending.items() if all(f.done() for f in futures)]:
            del pending[key]
            yield key


def write_csv(path: Path, points: list[Point], slopes: dict, *, with_seconds: bool = True) -> None:
    """The figure's numbers, one row per point (``with_seconds=False`` leaves out the wall time,
    so that runs on different executors give byte-identical files)."""
    fields = [f for f in asdict(points[0]) if with_seconds or f != "seconds"] + ["local_slope_finest"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for q in points:
            row = {f: v for f, v in asdict(q).items() if f in fields}
            row["local_slope_finest"] = slopes[(q.scheme, q.plan)]
            writer.writerow(row)


def resolution_metadata() -> dict:
    """The histogram every W1 is read from, and the binning bounds that follow from it."""
    law = target_law(GaussianTarget.one_d_example())
    lo, hi, n_bins = histogram_layout(law)
    width = (hi - lo) / n_bins
    return {"lo": lo, "hi": hi, "n_bins": n_bins, "bin_width": width,
            "binning_bound_plain": 0.5 * width, "binning_bound_control_variate": 1.5 * width,
            "noise_floor": "exact expectation of the plain statistic for N exact draws, binning "
                           "included (bias.wasserstein.expected_binned_w1)"}


def write_metadata(path: Path, points: list[Point], preset: str, seed: int, seconds: float,
                   baoab_paper_friction: bool = False, backend: dict | None = None) -> None:
    from integrators.metadata import metadata
    meta = metadata(seed, preset)
    o_step = ("exp(-gamma h / 2) (the paper's listing: BAOAB at friction gamma / 2)" if baoab_paper_friction
              else "exp(-gamma h) (standard)")
    meta.update({"seconds": round(seconds, 1), "gamma": 1.0, "baoab_o_step": o_step,
                 "estimator": sorted({q.estimator for q in points if not q.diverged}),
                 "samples_per_point": "samples_per_unit * 2^k",
                 "samples_per_unit": PRESETS[preset]["samples_per_unit"],
                 "histogram": resolution_metadata(), **(backend or {"backend": "numba"})})
    ok = [q for q in points if not q.diverged]
    if ok:  # the bounds the figure needs: against the smallest plotted W1 and the smallest floor
        res = meta["histogram"]
        res["control_variate_bound_over_smallest_w1"] = res["binning_bound_control_variate"] / min(q.w1 for q in ok)
        res["plain_bound_over_smallest_noise_floor"] = res["binning_bound_plain"] / min(q.noise_floor for q in ok)
    path.write_text(json.dumps(meta, indent=2) + "\n")


def plot(path: Path, points: list[Point], slopes: dict) -> None:
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
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes: covers no line
    fig.tight_layout()
    fig.savefig(path, dpi=130, bbox_inches="tight")
    fig.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
    plt.close(fig)
