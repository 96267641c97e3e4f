"""Figure 1's runs: the ``sample()`` calls of the points of one scheme at one step size and of the
full-gradient control they share (one unit of the executor), scheduled on a thread pool so that
every core of the unit stays busy, and the W1 numbers read off their histograms."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from bias._streaming_w1 import StreamingW1, w1_with_control
from bias._wasserstein import Normal
from experiments.figure1._setup import (
    DIVERGENCE_BOUND,
    PRESETS,
    SAMPLERS,
    Point,
    histogram_layout,
    noise_floor,
    point_config,
    repeat_seeds,
    sampler_for,
    target_law,
)
from integrators import GaussianTarget, sample_together
from integrators._validation import preset_settings
from theory_checks.oracle import UnstableStepError, stationary_full


@dataclass(frozen=True)
class Run:
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


def _run_histograms(target, law, runs: tuple, threads: int) -> tuple[list, float]:
    """Stream runs into histograms together: on Numba runs differing only in (scheme, plan), on one Brownian
    path (:func:`integrators.sample_together`); on torch a group's runs (every repeat, plan and control at one
    step size), one launch of the fused kernel on cuda, else one run at a time.  Returns per run
    ``(histogram, first divergent step or -1)`` and the call's seconds."""
    started = time.perf_counter()
    lo, hi, n_bins = histogram_layout(law)

    def options(r):
        return dict(h=r.h, gamma=r.gamma, n_chains=r.chains, n_steps=r.burn + r.per_chain, burn_in=r.burn,
                    seed=r.seed, x0=[law.mean], histogram=(lo, hi, n_bins), divergence_bound=DIVERGENCE_BOUND)

    first = runs[0]
    if first.backend[0] == "numba":
        results = sample_together(target, [(r.scheme, r.plan) for r in runs], batch_size=1, threads=threads,
                                  **options(first))
    else:
        results = sampler_for(*first.backend).run_all(target, [(r.scheme, r.plan, options(r)) for r in runs])
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


def _control_runs_for(target, scheme, h, g, chains, burn, per_chain, seeds,
                      backend=("numba", None)) -> tuple[list[Run], Normal | None]:
    """The control's runs and its exact law (none where the full-gradient scheme is unstable)."""
    try:
        _, cov = stationary_full(scheme, target, h, g)
    except UnstableStepError:
        return [], None
    exact = Normal(float(target.mean[0]), float(math.sqrt(cov[0, 0])))
    return [Run(scheme, "full", h, g, chains, burn, per_chain, sd, backend) for sd in seeds], exact


def _control(runs, exact, done, law) -> _Control | None:
    """The control of ``runs`` (None where one of them diverged)."""
    if not runs or any(done[r][1] >= 0 for r in runs):
        return None
    hists = [done[r][0] for r in runs]
    pooled = StreamingW1(law, *histogram_layout(law))
    for hist in hists:
        pooled.merge(hist.counts, hist.tails)
    own = StreamingW1(exact, pooled.lo, pooled.hi, pooled.n_bins)
    own.merge(pooled.counts, pooled.tails)
    return _Control(hists, pooled, exact, own.value())


def _mean_error(values: list[float]) -> float:
    """The standard error of the mean of the repeats' ``values`` (nan for fewer than two)."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")


@dataclass
class Group:
    """The points of one scheme at one step size: their runs, and the control they share."""

    scheme: str
    plans: tuple
    k: int
    n_samples: int
    law: Normal
    sampler_runs: dict
    control_runs: list
    control_law: Normal | None

    @classmethod
    def make(cls, scheme, plans, k, preset, seed, gamma, baoab_paper_friction, control_variate,
             backend=("numba", None)):
        """The group of ``scheme``'s ``plans`` at ``h = 2^-k``, with its control's runs."""
        preset_settings(PRESETS, preset)
        for plan in plans:
            if (scheme, plan) not in SAMPLERS:
                raise ValueError(f"unknown sampler {scheme!r} x {plan!r}; choose from {SAMPLERS}")
        target = GaussianTarget.one_d_example()
        h, reps, chains, per_chain, burn = point_config(k, preset, backend)
        g = gamma / 2 if (scheme == "baoab" and baoab_paper_friction) else gamma
        seeds = repeat_seeds(seed, k, reps)
        runs = {plan: [Run(scheme, plan, h, g, chains, burn, per_chain, sd, backend) for sd in seeds]
                for plan in plans}
        control_runs, exact = (_control_runs_for(target, scheme, h, g, chains, burn, per_chain, seeds, backend)
                               if control_variate else ([], None))
        return cls(scheme, plans, k, reps * chains * per_chain, target_law(target), runs, control_runs, exact)

    def runs(self) -> list[Run]:
        """Every run of the group: the plans' repeats, then the control's runs."""
        return [r for plan in self.plans for r in self.sampler_runs[plan]] + self.control_runs

    def submit(self, pool, threads_per_call: int) -> dict:
        """Queue the runs on ``pool``: on Numba runs that differ only in their (scheme, plan) share their
        Brownian path (the same seed, step, friction and chains), so a repeat's three plans and
        their control go together in one call (``_run_histograms``, ``threads_per_call``
        threads); on torch the group's runs are one call (one launch on cuda)."""
        target = GaussianTarget.one_d_example()
        calls: dict = {}
        for r in self.runs():
            shared = (r.h, r.gamma, r.chains, r.burn, r.per_chain, r.seed) if r.backend[0] == "numba" else ()
            calls.setdefault((*shared, r.backend), []).append(r)
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
        controls = _control(self.control_runs, self.control_law, done, self.law)
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

