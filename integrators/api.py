"""The public entry point: pick a target, a scheme, a plan, ``h``, ``gamma``, chains, steps,
burn-in, seed and observers; get a :class:`SampleResult`.

    >>> from integrators import GaussianTarget, sample
    >>> res = sample(GaussianTarget.one_d_example(), scheme="ubu", plan="sms", h=0.1,
    ...              n_chains=100, n_steps=2000, burn_in=200, seed=1)
    >>> res.mean.shape
    (1,)

Every argument is validated before any Numba code runs; a bad value raises ``ValueError``
naming it.  Every chain ``c`` has its own path, batch and initial-velocity streams
(:mod:`integrators.rng`: SplitMix64 outputs of one key per stream kind, ``PATH_STREAM``,
``PLAN_STREAM``, ``VELOCITY_STREAM``, at chain ``c``'s index), so the same seed gives identical
output, and adding chains, or running them in other tiles or threads, never changes existing ones.
"""

from __future__ import annotations

import inspect
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace

import numba as nb
import numpy as np

from integrators.bounce import make_box
from integrators.diagnostics import rhat_from_moments
from integrators.kernel import (
    Divergence,
    Forces,
    Observers,
    Path,
    PlanState,
    Samplers,
    Schedule,
    aligned_zeros,
    histogram_counts,
    kernel_for_kinds,
    make_work_buffers,
    no_test_functions,
    path_chunk,
    sampler_kind,
)
from integrators.memory import check_fits
from integrators.plans import kernel_code, resolve_plan
from integrators.rng import (  # noqa: F401  (stream kinds re-exported for older imports)
    PATH_STREAM,
    PLAN_STREAM,
    STATE_WORDS,
    VELOCITY_STREAM,
    lane_normal_matrix,
    lane_states,
)
from integrators.schemes import resolve_scheme
from integrators.targets import Target, force_data, lane_force_for
from integrators.validation import (  # noqa: F401  (MIN_STEP_OVER_FRICTION: the api's constants)
    MIN_STEP_OVER_FRICTION,
    batch_size_for,
    boolean,
    divergence_bound_for,
    finite_array,
    initial_state,
    int_at_least,
    positive_float,
    real_number,
    seed_value,
    step_over_friction,
    test_functions_and_data,
    whole_number,
)

BLOCK_SIZE = 256  # chains per kernel call in the coupled h / h/2 runs
MAX_PATH_REFINE = 2**20  # fine intervals per step: beyond this a run does nothing but draw its path
TILE_SIZE = 256  # about this many chains advance together in the kernel (their arrays stay in L1)
TILE_LANES = 8   # tiles are a multiple of this many chains: every tile's rows start on a cache line
RHAT_WARN = 1.1  # a result whose chains disagree beyond this (R-hat of the first moments) says so
THREADS_VARIABLE = "SMS_LANGEVIN_THREADS"


@dataclass
class SampleResult:
    """What a run observed.  Statistics pool the chains that did not diverge.

    ``chain_mean`` / ``chain_second_moment``: per-chain time averages after burn-in (diagonal);
    ``chain_outer``: per-chain averages of ``x x^T`` when ``full_moments`` was asked for;
    ``chain_tests``: per-chain averages of the test functions; ``samples``: thinned samples
    ``(n_chains, n_keep, d)``, NaN where a chain had no sample to give (``keep`` above the number
    of post-burn-in steps, or after its divergence); ``diverged_at``: first step per chain at which
    its state left the divergence bound or was not finite (-1: never); ``x``, ``v``: final states.
    :attr:`rhat` compares the chains with each other; :attr:`warnings` lists what makes the pooled
    numbers untrustworthy as estimates (and :meth:`summary` prints it).
    """

    scheme: str
    plan: str
    h: float
    gamma: float
    n_steps: int
    burn_in: int
    seed: int
    chain_mean: np.ndarray
    chain_second_moment: np.ndarray
    chain_outer: np.ndarray | None
    chain_tests: np.ndarray | None
    samples: np.ndarray | None
    diverged_at: np.ndarray
    x: np.ndarray
    v: np.ndarray
    histogram: np.ndarray | None = None
    histogram_tails: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    @property
    def ok(self) -> np.ndarray:
        return self.diverged_at < 0

    @property
    def n_diverged(self) -> int:
        return int(np.sum(~self.ok))

    @property
    def diverged(self) -> bool:
        return self.n_diverged > 0

    @property
    def first_divergence_step(self) -> int | None:
        steps = self.diverged_at[~self.ok]
        return int(steps.min()) if steps.size else None

    def _pooled(self, per_chain):
        if not np.any(self.ok):
            raise RuntimeError(
                f"all {len(self.ok)} chains of {self.scheme} x {self.plan} at h={self.h} diverged "
                f"(first at step {self.first_divergence_step}); no statistics to report")
        return per_chain[self.ok]

    @property
    def mean(self) -> np.ndarray:
        return self._pooled(self.chain_mean).mean(axis=0)

    @property
    def second_moment(self) -> np.ndarray:
        return self._pooled(self.chain_second_moment).mean(axis=0)

    @property
    def variance(self) -> np.ndarray:
        return self.second_moment - self.mean**2

    @property
    def mean_se(self) -> np.ndarray:
        """Standard error of :attr:`mean` from the spread of independent chains."""
        m = self._pooled(self.chain_mean)
        return m.std(axis=0, ddof=1) / math.sqrt(m.shape[0])

    @property
    def variance_se(self) -> np.ndarray:
        """Standard error of :attr:`variance` (delta method over independent chains)."""
        m1 = self._pooled(self.chain_mean)
        m2 = self._pooled(self.chain_second_moment)
        lin = m2 - 2.0 * self.mean * m1
        return lin.std(axis=0, ddof=1) / math.sqrt(m1.shape[0])

    @property
    def test_means(self) -> np.ndarray:
        return self._pooled(self.chain_tests).mean(axis=0)

    @property
    def test_se(self) -> np.ndarray:
        t = self._pooled(self.chain_tests)
        return t.std(axis=0, ddof=1) / math.sqrt(t.shape[0])

    @property
    def rhat(self) -> np.ndarray | None:
        """Classic R-hat per coordinate over the chains that did not diverge, from their time
        averages of ``x`` and ``x^2`` (:func:`integrators.diagnostics.rhat_from_moments`); about 1
        when the chains agree within their own spread, large when they disagree far beyond their
        standard errors (chains still on their way somewhere).  ``None`` with fewer than 2 chains
        or 2 post-burn-in steps."""
        n_stat = self.n_steps - self.burn_in
        if int(np.sum(self.ok)) < 2 or n_stat < 2:
            return None
        return rhat_from_moments(self.chain_mean[self.ok], self.chain_second_moment[self.ok], n_stat)

    @property
    def warnings(self) -> list[str]:
        """Why the pooled statistics should not be read as estimates (empty when nothing is wrong)."""
        out = []
        if self.diverged:
            out.append(f"{self.n_diverged} of {len(self.ok)} chains diverged (first at step "
                       f"{self.first_divergence_step}); statistics pool the others")
        rhat = self.rhat
        if rhat is not None:
            worst = float(np.nanmax(rhat)) if np.any(~np.isnan(rhat)) else math.nan
            if math.isnan(worst):
                out.append("the chains did not move (no spread within or between them): no estimate")
            elif worst > RHAT_WARN:
                out.append(f"chains disagree far beyond their standard errors (R-hat {worst:.3g} > "
                           f"{RHAT_WARN}): not converged, the numbers are not an estimate")
        return out

    def summary(self) -> str:
        if not np.any(self.ok):
            return (f"{self.scheme} x {self.plan}, h={self.h:g}: DIVERGED "
                    f"(all chains; first at step {self.first_divergence_step})")
        msg = (f"{self.scheme} x {self.plan}, h={self.h:g}, gamma={self.gamma:g}: "
               f"mean={_fmt(self.mean)} +/- {_fmt(self.mean_se)}, "
               f"var={_fmt(self.variance)} +/- {_fmt(self.variance_se)}")
        for warning in self.warnings:
            msg += f"; WARNING: {warning}"
        return msg


def _fmt(values) -> str:
    return "[" + ", ".join(f"{val:.4g}" for val in np.ravel(values)) + "]"


def validate(target, scheme, plan, h, gamma, n_chains, n_steps, burn_in, batch_size, seed):
    if not isinstance(target, Target):
        raise ValueError(f"target must be a Target (e.g. GaussianTarget), got {type(target).__name__}")
    resolve_scheme(scheme)  # a registered name or a scheme object (integrators.schemes)
    kernel_code(plan)  # a registered name or a plan object the kernel can run (integrators.plans)
    plan = resolve_plan(plan).NAME
    h = positive_float("h", h)
    gamma = positive_float("gamma", gamma)
    step_over_friction(h, gamma)
    n_chains = int_at_least("n_chains", n_chains, 1)
    n_steps = int_at_least("n_steps", n_steps, 1)
    burn_in = int_at_least("burn_in", burn_in, 0)
    if burn_in >= n_steps:
        raise ValueError(f"burn_in must be smaller than n_steps={n_steps}, got {burn_in}")
    seed = seed_value(seed)
    if plan == "full":
        batch_size = target.n_data if batch_size is None else batch_size
    elif batch_size is None:
        raise ValueError(f"batch_size is required for plan {plan!r}")
    return h, gamma, n_chains, n_steps, burn_in, batch_size_for(target, batch_size), seed


def _threads_from_environment() -> int:
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return os.cpu_count() or 1
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"environment variable {THREADS_VARIABLE} must be a positive integer, "
                         f"got {text!r}") from None
    if value < 1:
        raise ValueError(f"environment variable {THREADS_VARIABLE} must be a positive integer, got {text!r}")
    return value


def _describe(test_data) -> str:
    return "(" + ", ".join(f"{a.dtype}[{a.ndim}d]" for a in test_data) + ("," if len(test_data) == 1 else "") + ")"


def _tiled(states: np.ndarray, n_tiles: int, tile: int) -> np.ndarray:
    """Stream states ``(STATE_WORDS, n_tiles * tile)`` as ``(n_tiles, STATE_WORDS, tile)`` on a cache line."""
    out = aligned_zeros((n_tiles, STATE_WORDS, tile), np.uint64)
    out[...] = states.reshape(STATE_WORDS, n_tiles, tile).transpose(1, 0, 2)
    return out


def sample(target, scheme="ubu", plan="sms", *, h=0.1, gamma=1.0, n_chains=100, n_steps=1000,
           burn_in=0, seed=0, batch_size=None, x0=None, v0=None, control_variate=False,
           x_ref=None, box_center=None, box_half_width=None, keep=0, full_moments=False,
           test_functions=None, n_test_functions=0, test_data=(), path_refine=1, threads=None,
           divergence_bound=None, histogram=None) -> SampleResult:
    """Run ``n_chains`` independent chains of ``scheme x plan`` on ``target`` (every option
    keyword-only; ``scheme`` and ``plan`` are registered names or scheme / plan objects).

    Parameters: ``h`` step size, ``gamma`` friction, ``burn_in`` steps excluded from statistics,
    ``batch_size`` (required except for ``plan="full"``), ``x0`` / ``v0`` initial states (default:
    ``target.initial_point()`` and standard normal velocities), ``control_variate`` (at ``x_ref``,
    default the L-BFGS mode), ``box_center`` / ``box_half_width`` for the elastic bounce,
    ``keep`` thinned samples per chain, ``full_moments`` to track ``x x^T``,
    ``test_functions`` a Numba function (``@numba.njit``) ``f(x, out, test_data)`` filling
    ``n_test_functions`` values (``test_data``: a tuple of numpy arrays passed through),
    ``path_refine`` (a power of two) to drive the run with the Brownian path of ``h / path_refine``,
    ``histogram=(lo, hi, n_bins)`` streams a histogram of the first coordinate after burn-in
    (``SampleResult.histogram``, ``histogram_tails``) for :class:`bias.wasserstein.StreamingW1`,
    ``threads`` worker threads (default: ``SMS_LANGEVIN_THREADS`` or all cores), ``divergence_bound``:
    a chain is reported diverged at the first step where a coordinate of x or v is non-finite or
    exceeds it in absolute value (default: ``target.divergence_bound()``, a scale taken from the
    target: its centre plus 1000 of its standard deviations, and at least 1000 for the unit-variance
    velocities).
    """
    return _run_samplers([_prepare(dict(locals()))])[0]


def sample_together(target, samplers, *, batch_size=None, **options) -> list[SampleResult]:
    """Run several samplers ``[(scheme, plan), ...]`` on one Brownian path: the same chains,
    seed, ``h``, ``gamma`` and every other keyword option of :func:`sample`, which they share.

    Result ``i`` equals ``sample(target, scheme_i, plan_i, batch_size=..., **options)`` bit for
    bit (``batch_size`` applies to the minibatch plans; ``plan="full"`` always uses all the
    data): a chain's path depends only on the seed and its index, so every sampler of the same
    seed sees the same path, and here it is drawn once per step for all of them instead of once
    per sampler (on the 1-D example, drawing the path is most of a step's cost).  Each sampler
    keeps its own batch stream, state, observers and divergence record."""
    allowed = {name for name, par in inspect.signature(sample).parameters.items()
               if par.kind is inspect.Parameter.KEYWORD_ONLY and name != "batch_size"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"sample_together got unknown options {unknown}; it takes sample()'s keyword options")
    if isinstance(samplers, (str, dict)):  # a name or a mapping would be read key by key, letter by letter
        raise ValueError(f"samplers must be a list of (scheme, plan) pairs, got {samplers!r}")
    try:
        samplers = [tuple(pair) for pair in samplers]
    except TypeError:
        raise ValueError(f"samplers must be a list of (scheme, plan) pairs, got {samplers!r}") from None
    if not samplers or any(len(pair) != 2 for pair in samplers):
        raise ValueError(f"samplers must be a non-empty list of (scheme, plan) pairs, got {samplers!r}")
    defaults = {name: par.default for name, par in inspect.signature(sample).parameters.items()
                if par.kind is inspect.Parameter.KEYWORD_ONLY}
    runs = []
    for scheme, plan in samplers:
        is_full = isinstance(plan, str) and plan == "full"
        runs.append(_prepare({**defaults, **options, "target": target, "scheme": scheme, "plan": plan,
                              "batch_size": None if is_full else batch_size}))
    return _run_samplers(runs)


@dataclass
class _Prepared:
    """One sampler of a run, validated, with its initial state laid out in tiles (:func:`_prepare`);
    the kernel's arrays are made for a stack of samplers of one kind (:func:`_stack`)."""

    kind: tuple             # (scheme module, force, plan module): what the kernel compiles
    args: SimpleNamespace   # the validated arguments
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
        a, out = self.args, self.outputs
        n = a.n_chains
        n_stat = a.n_steps - a.burn_in
        return SampleResult(
            scheme=a.module.NAME, plan=a.plan_module.NAME, h=a.h, gamma=a.gamma, n_steps=a.n_steps,
            burn_in=a.burn_in, seed=a.seed, chain_mean=out["sum_x"][:n] / n_stat,
            chain_second_moment=out["sum_xx"][:n] / n_stat,
            chain_outer=out["sum_outer"][:n] / n_stat if a.full_moments else None,
            chain_tests=out["sum_tests"][:n] / n_stat if a.n_test_functions else None,
            samples=out["samples"][:n] if a.keep else None, diverged_at=out["diverged_at"][:n],
            x=out["x"][:n], v=out["v"][:n],
            histogram=out["hist"] if self.n_bins else None, histogram_tails=out["hist_tails"] if self.n_bins else None,
            meta={"batch_size": a.batch_size, "n_chains": n, "control_variate": a.control_variate,
                  "path_refine": a.path_refine, "target": a.target.name},
        )


def _prepare(arguments: dict) -> _Prepared:
    """Validate :func:`sample`'s arguments (a dict of its parameters) and lay out one sampler's
    initial state; nothing compiles or runs here."""
    a = SimpleNamespace(**arguments)
    target, scheme, plan = a.target, a.scheme, a.plan
    a.h, a.gamma, a.n_chains, a.n_steps, a.burn_in, a.batch_size, a.seed = validate(
        target, scheme, plan, a.h, a.gamma, a.n_chains, a.n_steps, a.burn_in, a.batch_size, a.seed)
    h, gamma, n_chains, n_steps, burn_in, batch_size, seed = (a.h, a.gamma, a.n_chains, a.n_steps, a.burn_in,
                                                              a.batch_size, a.seed)
    keep = a.keep = int_at_least("keep", a.keep, 0)
    a.control_variate = boolean("control_variate", a.control_variate)
    a.full_moments = boolean("full_moments", a.full_moments)
    a.divergence_bound = divergence_bound_for(target, a.divergence_bound)
    path_refine = a.path_refine = int_at_least("path_refine", a.path_refine, 1)
    if path_refine & (path_refine - 1) or path_refine > MAX_PATH_REFINE:
        raise ValueError(f"path_refine must be a power of two <= 2**{MAX_PATH_REFINE.bit_length() - 1}, "
                         f"got {path_refine}")
    n_test_functions = a.n_test_functions = int_at_least("n_test_functions", a.n_test_functions, 0)
    test_data = a.test_data = test_functions_and_data(a.test_functions, n_test_functions, a.test_data)
    threads = a.threads
    if threads is None:  # an executor running several units at once sets SMS_LANGEVIN_THREADS
        threads = _threads_from_environment()
    threads = int_at_least("threads", threads, 1)
    dim = target.dim
    hist_lo, hist_inv_width, n_bins = _histogram_layout(a.histogram)
    # every per-chain array about twice (the initial layout and the threads' stacks); per thread, the
    # histogram's counts and a tile's batch and permutation buffers over the data (int32, two of them)
    per_chain = 6 * dim + (dim * dim if a.full_moments else 0) + n_test_functions + keep * dim + 4 * STATE_WORDS
    per_thread = n_bins + min(n_chains, TILE_SIZE) * target.n_data
    check_fits(f"n_chains={n_chains} with d={dim}, keep={keep}, full_moments={a.full_moments}, "
               f"n_test_functions={n_test_functions} and {n_bins} histogram bins",
               8.0 * (2 * n_chains * per_chain + min(threads, math.ceil(n_chains / TILE_SIZE)) * per_thread))
    box = make_box(dim, a.box_center, a.box_half_width)
    x0 = initial_state("x0", a.x0, n_chains, dim, target.initial_point())
    if box[2][0] and np.any(np.abs(x0 - box[0]) >= box[1]):
        raise ValueError("x0 lies outside the box |x - box_center|_inf < box_half_width")
    v_given = None if a.v0 is None else initial_state("v0", a.v0, n_chains, dim, None)
    tdata = force_data(target, a.control_variate, a.x_ref)
    module = a.module = resolve_scheme(scheme)
    plan_module = a.plan_module = resolve_plan(plan)
    test_fn = no_test_functions if a.test_functions is None else a.test_functions
    n_keep_stride = max(1, (n_steps - burn_in) // keep) if keep else 1

    # Every chain's streams (path, batches, initial velocity) depend only on the seed and its
    # index; the kernel runs tiles of about TILE_SIZE chains (balanced, padded with parked lanes),
    # one call per thread, and the tiling changes no number.
    n_tiles = math.ceil(n_chains / TILE_SIZE)
    tile = TILE_LANES * math.ceil(n_chains / (n_tiles * TILE_LANES))
    n_tiles = math.ceil(n_chains / tile)
    n_pad = n_tiles * tile
    x = np.zeros((n_pad, dim))
    x[:n_chains] = x0
    v = np.zeros((n_pad, dim))
    if v_given is None:
        v[:n_chains] = lane_normal_matrix(lane_states(seed, VELOCITY_STREAM, 0, n_chains), dim)
    else:
        v[:n_chains] = v_given
    path_states = np.zeros((STATE_WORDS, n_pad), dtype=np.uint64)
    plan_states = np.zeros((STATE_WORDS, n_pad), dtype=np.uint64)
    path_states[:, :n_chains] = lane_states(seed, PATH_STREAM, 0, n_chains)
    plan_states[:, :n_chains] = lane_states(seed, PLAN_STREAM, 0, n_chains)
    diverged_at = np.full(n_pad, -1, dtype=np.int64)
    diverged_at[n_chains:] = 0  # padding lanes: parked from the start, in no statistic

    n_groups = min(threads, n_tiles)
    bounds = [round(i * n_tiles / n_groups) for i in range(n_groups + 1)]
    groups = [(bounds[i], bounds[i + 1]) for i in range(n_groups)]
    # the per-chain observer arrays of one chain (shapes only): _stack makes them for a stack
    observers = Observers(test_fn, test_data, np.zeros((1, dim)), np.zeros((1, dim)),
                          np.zeros((1, dim, dim) if a.full_moments else (1, 0, 0)), np.zeros((1, n_test_functions)),
                          np.zeros((1, keep, dim)),
                          histogram_counts(n_bins, n_pad * (n_steps - burn_in) if n_bins else 0), hist_lo,
                          hist_inv_width, np.zeros(4))
    return _Prepared(
        sampler_kind(module, lane_force_for(target), plan_module), a, tile, groups,
        Path(gamma, 0.5 * h / path_refine, path_refine, _tiled(path_states, n_tiles, tile)),
        module.coefficients(h, gamma),
        PlanState(kernel_code(plan_module), batch_size, plan_module.force_scale(target.n_data, batch_size),
                  _tiled(plan_states, n_tiles, tile)),
        Forces(tdata, box), Schedule(n_steps, burn_in, n_keep_stride), x, v, diverged_at, observers, n_bins)


def _stack(runs: list[_Prepared], group: int) -> Samplers:
    """The kernel's arrays for samplers of one kind on one thread's tiles (``group``), stacked
    along a leading axis, each array starting on a cache line."""
    first = runs[0]
    t_lo, t_hi = first.groups[group]
    lo, hi = t_lo * first.tile, t_hi * first.tile
    m, rows, a, o = len(runs), hi - lo, first.args, first.observers

    def stacked(arrays, dtype=np.float64):
        out = aligned_zeros((m,) + arrays[0].shape, dtype)
        for i, arr in enumerate(arrays):
            out[i] = arr
        return out

    def per_chain(template, fill=0.0):  # (m, rows) + the per-chain shape of an observer array
        out = aligned_zeros((m, rows) + template.shape[1:])
        out[...] = fill
        return out

    # (the test functions travel apart: see integrators.kernel._make_member_steps)
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
                    make_work_buffers(first.tile, a.target.dim, a.target.n_data, max(r.args.batch_size for r in runs),
                                      a.n_test_functions, samplers=m))


def _histogram_spec(histogram) -> tuple[float, float, int] | None:
    """``histogram=(lo, hi, n_bins)`` checked and converted (``None``: no histogram); both backends
    read their histogram option through this."""
    if histogram is None:
        return None
    try:
        if len(histogram) != 3 or isinstance(histogram, str):
            raise ValueError
        lo, hi, n_bins = float(histogram[0]), float(histogram[1]), histogram[2]
    except (TypeError, ValueError, IndexError, OverflowError):
        raise ValueError(f"histogram must be (lo, hi, n_bins), got {histogram!r}") from None
    n_bins = whole_number("histogram's n_bins", n_bins, 1)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo and n_bins >= 1):
        raise ValueError(f"histogram must be (lo, hi, n_bins) with lo < hi and n_bins >= 1, got {histogram!r}")
    return lo, hi, n_bins


def _histogram_layout(histogram) -> tuple[float, float, int]:
    """``(lo, 1 / bin width, n_bins)`` of ``histogram=(lo, hi, n_bins)`` (``(0, 1, 0)``: none)."""
    spec = _histogram_spec(histogram)
    if spec is None:
        return 0.0, 1.0, 0
    lo, hi, n_bins = spec
    return lo, n_bins / (hi - lo), n_bins


def _run_samplers(runs: list[_Prepared]) -> list[SampleResult]:
    """Run the prepared samplers, which share one path (:func:`sample_together`), on their
    threads: one stack per kind of sampler, in order of first appearance."""
    first = runs[0]
    kinds = list(dict.fromkeys(r.kind for r in runs))
    by_kind = [[r for r in runs if r.kind == kind] for kind in kinds]
    kernel = kernel_for_kinds(kinds)
    a = first.args
    chunk = path_chunk(a.target.dim, first.tile)
    stacks = [tuple(_stack(same, group) for same in by_kind) for group in range(len(first.groups))]

    def group_args(group):
        t_lo, t_hi = first.groups[group]
        path = first.path._replace(states=first.path.states[t_lo:t_hi])
        work = make_work_buffers(first.tile, a.target.dim, a.target.n_data, 1, 0, path_steps=chunk)
        return path, stacks[group], work, first.observers.test_fn

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
        named = [r.args.test_functions for r in runs if r.args.test_functions is not None]
        if not named:
            raise
        fn = named[0]
        first_line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        raise ValueError(f"test_functions {getattr(fn, '__name__', fn)!r} could not be compiled as "
                         f"f(x, out, test_data) with x, out 1-D float arrays and test_data "
                         f"{_describe(first.args.test_data)}: {first_line}") from None
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
