"""Chains mode on the Numba kernel: the adapter that runs :class:`integrators._spec.RunSpec` s.

:func:`run_specs` lays out each spec's chains in tiles of about ``TILE_SIZE`` (balanced, padded
with parked lanes, every tile's rows on a cache line), one kernel call per thread, and runs
several specs that share one path (:func:`integrators.sample_together`) in one pass: the path is
drawn once per step for all of them.  Every chain's streams (path, batches, initial velocity)
depend only on the seed and its index (:mod:`integrators._rng`), so the tiling and the threads
change no number.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from integrators._backends import TILE_SIZE
from integrators._kernel import (
    Divergence,
    Forces,
    Path,
    PlanState,
    Samplers,
    Schedule,
    aligned_zeros,
    kernel_for_kinds,
    make_work_buffers,
    path_chunk,
    sampler_kind,
)
from integrators._observers import Observers, histogram_counts, no_test_functions
from integrators._result import SampleResult
from integrators._rng import PATH_STREAM, PLAN_STREAM, STATE_WORDS, VELOCITY_STREAM, lane_normal_matrix, lane_states
from integrators._spec import RunSpec
from integrators._user_code import describe, guarded
from integrators.plans import force_scale, kernel_code
from integrators.schemes import run_coefficients
from integrators.targets._force import force_data, lane_force_for

TILE_LANES = 8   # tiles are a multiple of this many chains: every tile's rows start on a cache line


@dataclass
class _Prepared:
    """One sampler of a run, checked, with its initial state laid out in tiles (:func:`prepare`);
    the kernel's arrays are made for a stack of samplers of one kind (:func:`_stack`)."""

    kind: tuple             # (step, FSAL, force, batch rule): what the kernel compiles (sampler_kind)
    spec: RunSpec
    tile: int
    groups: list            # tile ranges, one per thread
    path: Path              # the run's path, all tiles
    coef: np.ndarray
    plan: PlanState         # all tiles
    forces: Forces
    schedule: Schedule
    x: np.ndarray           # (n_pad, d) initial states (the final ones are in outputs)
    v: np.ndarray
    diverged_at: np.ndarray  # (n_pad,), padding lanes marked beforehand
    observers: Observers    # the layout: test functions, histogram position, array shapes (per chain)
    n_bins: int
    outputs: dict = field(default_factory=dict)  # filled by _run_samplers: per-chain arrays, histogram

    def result(self) -> SampleResult:
        a, out = self.spec, self.outputs
        n = a.n_chains
        n_stat = a.n_steps - a.burn_in
        obs = a.observers
        return SampleResult(
            scheme=a.scheme_module.NAME, plan=a.plan_module.NAME, h=a.h, gamma=a.gamma, n_steps=a.n_steps,
            burn_in=a.burn_in, seed=a.seed, chain_mean=out["sum_x"][:n] / n_stat,
            chain_second_moment=out["sum_xx"][:n] / n_stat,
            chain_outer=out["sum_outer"][:n] / n_stat if obs.full_moments else None,
            chain_tests=out["sum_tests"][:n] / n_stat if obs.n_test_functions else None,
            samples=out["samples"][:n] if obs.keep else None, diverged_at=out["diverged_at"][:n],
            x=out["x"][:n], v=out["v"][:n],
            histogram=out["hist"] if self.n_bins else None, histogram_tails=out["hist_tails"] if self.n_bins else None,
            meta={"batch_size": a.batch_size, "n_chains": n, "control_variate": a.control_variate is not None,
                  "path_refine": a.path_refine, "target": a.target.name,
                  **({"test_functions": describe(obs.test_functions)} if obs.n_test_functions else {})},
        )


def _describe(test_data) -> str:
    return "(" + ", ".join(f"{a.dtype}[{a.ndim}d]" for a in test_data) + ("," if len(test_data) == 1 else "") + ")"


def _tiled(states: np.ndarray, n_tiles: int, tile: int) -> np.ndarray:
    """Stream states ``(STATE_WORDS, n_tiles * tile)`` as ``(n_tiles, STATE_WORDS, tile)`` on a cache line."""
    out = aligned_zeros((n_tiles, STATE_WORDS, tile), np.uint64)
    out[...] = states.reshape(STATE_WORDS, n_tiles, tile).transpose(1, 0, 2)
    return out


def prepare(spec: RunSpec) -> _Prepared:
    """Lay out one checked spec's initial state in tiles; nothing compiles or runs here."""
    target, obs = spec.target, spec.observers
    n_chains, dim, h, gamma, seed = spec.n_chains, target.dim, spec.h, spec.gamma, spec.seed
    tdata = force_data(target, spec.control_variate is not None,
                       None if spec.control_variate is None else spec.control_variate.x_ref)
    module, plan_module = spec.scheme_module, spec.plan_module
    test_fn = no_test_functions if obs.test_functions is None else guarded(obs.test_functions, "test_functions")
    hist_lo, hist_inv_width = (0.0, 1.0) if obs.histogram is None else (
        obs.histogram[0], obs.n_bins / (obs.histogram[1] - obs.histogram[0]))
    n_keep_stride = max(1, (spec.n_steps - spec.burn_in) // obs.keep) if obs.keep else 1

    n_tiles = math.ceil(n_chains / TILE_SIZE)
    tile = TILE_LANES * math.ceil(n_chains / (n_tiles * TILE_LANES))
    n_tiles = math.ceil(n_chains / tile)
    n_pad = n_tiles * tile
    x = np.zeros((n_pad, dim))
    x[:n_chains] = spec.x0
    v = np.zeros((n_pad, dim))
    if spec.v0 is None:
        v[:n_chains] = lane_normal_matrix(lane_states(seed, VELOCITY_STREAM, 0, n_chains), dim)
    else:
        v[:n_chains] = spec.v0
    path_states = np.zeros((STATE_WORDS, n_pad), dtype=np.uint64)
    plan_states = np.zeros((STATE_WORDS, n_pad), dtype=np.uint64)
    path_states[:, :n_chains] = lane_states(seed, PATH_STREAM, 0, n_chains)
    plan_states[:, :n_chains] = lane_states(seed, PLAN_STREAM, 0, n_chains)
    diverged_at = np.full(n_pad, -1, dtype=np.int64)
    diverged_at[n_chains:] = 0  # padding lanes: parked from the start, in no statistic

    n_groups = min(spec.backend.resolved_threads(), n_tiles)
    bounds = [round(i * n_tiles / n_groups) for i in range(n_groups + 1)]
    groups = [(bounds[i], bounds[i + 1]) for i in range(n_groups)]
    # the per-chain observer arrays of one chain (shapes only): _stack makes them for a stack
    observers = Observers(test_fn, obs.test_data, np.zeros((1, dim)), np.zeros((1, dim)),
                          np.zeros((1, dim, dim) if obs.full_moments else (1, 0, 0)),
                          np.zeros((1, obs.n_test_functions)), np.zeros((1, obs.keep, dim)),
                          histogram_counts(obs.n_bins, n_pad * (spec.n_steps - spec.burn_in) if obs.n_bins else 0),
                          hist_lo, hist_inv_width, np.zeros(4))
    return _Prepared(
        sampler_kind(module, lane_force_for(target), plan_module), spec, tile, groups,
        Path(gamma, 0.5 * h / spec.path_refine, spec.path_refine, _tiled(path_states, n_tiles, tile)),
        run_coefficients(module, h, gamma),  # checked at this run's (h, gamma)
        PlanState(kernel_code(plan_module), spec.batch_size, force_scale(plan_module, target.n_data, spec.batch_size),
                  _tiled(plan_states, n_tiles, tile)),
        Forces(tdata, spec.box_arrays()), Schedule(spec.n_steps, spec.burn_in, n_keep_stride), x, v, diverged_at,
        observers, obs.n_bins)


def run_specs(specs: list[RunSpec]) -> list[SampleResult]:
    """Run checked specs that share one path (the same target, seed, chains and steps) on their
    threads: one :class:`SampleResult` per spec."""
    return _run_samplers([prepare(spec) for spec in specs])


def _stack(runs: list[_Prepared], group: int) -> Samplers:
    """The kernel's arrays for samplers of one kind on one thread's tiles (``group``), stacked
    along a leading axis, each array starting on a cache line."""
    first = runs[0]
    t_lo, t_hi = first.groups[group]
    lo, hi = t_lo * first.tile, t_hi * first.tile
    m, rows, a, o = len(runs), hi - lo, first.spec, first.observers

    def stacked(arrays, dtype=np.float64):
        out = aligned_zeros((m,) + arrays[0].shape, dtype)
        for i, arr in enumerate(arrays):
            out[i] = arr
        return out

    def per_chain(template, fill=0.0):  # (m, rows) + the per-chain shape of an observer array
        out = aligned_zeros((m, rows) + template.shape[1:])
        out[...] = fill
        return out

    # (the test functions travel apart: see integrators._kernel._make_member_steps)
    observers = Observers(None, o.test_data, per_chain(o.sum_x), per_chain(o.sum_xx), per_chain(o.sum_outer),
                          per_chain(o.sum_tests), per_chain(o.samples, np.nan),  # a sample never taken stays NaN
                          aligned_zeros((m,) + o.hist.shape, o.hist.dtype), o.hist_lo, o.hist_inv_width,
                          np.zeros((m, 4)))
    plan = PlanState(np.array([r.plan.code for r in runs], dtype=np.int64),
                     np.array([r.plan.batch_size for r in runs], dtype=np.int64),
                     np.array([r.plan.scale for r in runs], dtype=np.float64),
                     stacked([r.plan.states[t_lo:t_hi] for r in runs], np.uint64))
    return Samplers(stacked([r.coef for r in runs]), stacked([r.x[lo:hi] for r in runs]),
                    stacked([r.v[lo:hi] for r in runs]), plan, first.forces, first.schedule, observers,
                    Divergence(a.divergence_bound, stacked([r.diverged_at[lo:hi] for r in runs], np.int64)),
                    make_work_buffers(first.tile, a.target.dim, a.target.n_data, max(r.spec.batch_size for r in runs),
                                      a.observers.n_test_functions, samplers=m))


def _run_samplers(runs: list[_Prepared]) -> list[SampleResult]:
    """Run the prepared samplers, which share one path (:func:`sample_together`), on their
    threads: one stack per kind of sampler, in order of first appearance."""
    first = runs[0]
    kinds = list(dict.fromkeys(r.kind for r in runs))
    by_kind = [[r for r in runs if r.kind == kind] for kind in kinds]
    kernel = kernel_for_kinds(kinds, first.observers.test_fn)
    a = first.spec
    chunk = path_chunk(a.target.dim, first.tile)
    stacks = [tuple(_stack(same, group) for same in by_kind) for group in range(len(first.groups))]

    def group_args(group):
        t_lo, t_hi = first.groups[group]
        path = first.path._replace(states=first.path.states[t_lo:t_hi])
        work = make_work_buffers(first.tile, a.target.dim, a.target.n_data, 1, 0, path_steps=chunk)
        return path, stacks[group], work

    def run_group(group):
        kernel(*group_args(group))

    n_groups = len(first.groups)
    try:
        if n_groups == 1:  # (a single call compiles itself if it must)
            run_group(0)
        else:
            if not kernel.overloads:  # first use: compile before the threads start (numba's compiler
                # lock would serialize them anyway; a later new signature relies on that lock)
                kernel.compile(tuple(nb.typeof(x) for x in group_args(0)))
            with ThreadPoolExecutor(max_workers=n_groups) as pool:
                list(pool.map(run_group, range(n_groups)))
    except nb.core.errors.TypingError as exc:
        named = [r.spec.observers.test_functions for r in runs if r.spec.observers.test_functions is not None]
        if not named:
            raise
        fn = named[0]
        first_line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        raise ValueError(f"test_functions {getattr(fn, '__name__', fn)!r} could not be compiled as "
                         f"f(x, out, test_data) with x, out 1-D float arrays and test_data "
                         f"{_describe(first.spec.observers.test_data)}: {first_line}") from None
    for j, same in enumerate(by_kind):
        for i, r in enumerate(same):
            parts = [group_stacks[j] for group_stacks in stacks]
            o = [p.obs for p in parts]
            r.outputs = {
                "x": np.concatenate([p.x[i] for p in parts]), "v": np.concatenate([p.v[i] for p in parts]),
                "diverged_at": np.concatenate([p.div.diverged_at[i] for p in parts]),
                "sum_x": np.concatenate([q.sum_x[i] for q in o]), "sum_xx": np.concatenate([q.sum_xx[i] for q in o]),
                "sum_outer": np.concatenate([q.sum_outer[i] for q in o]),
                "sum_tests": np.concatenate([q.sum_tests[i] for q in o]),
                "samples": np.concatenate([q.samples[i] for q in o]),
                "hist": np.sum([q.hist[i] for q in o], axis=0, dtype=np.float64),  # exact integer counts
                "hist_tails": np.sum([q.hist_tails[i] for q in o], axis=0)}
    return [r.result() for r in runs]
