"""Running an adapter's chains on an exact Gaussian target: the measurement levels, the target's
time scales and the ladder of step sizes, every chain's batches from the plan's rule, the whitened
statistics, and :func:`measure_plan` (chains from the detectable limit error, an optional
wall-clock cap, burn-in and window in relaxation times).  :mod:`theory_checks.adapters._measure`
describes the method as a whole."""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from integrators.plans import resolve_plan
from integrators.plans._walk import PlanWalk, cut
from integrators.seeds import derive
from integrators.targets import GaussianTarget
from theory_checks._verify import ASYMPTOTIC, asymptotic_rate, largest_frequency
from theory_checks.adapters._protocol import (
    AdapterProblem,
    called,
    checked_positions,
    mixing_factor,
    steps_per_call,
)

H_START = 1.0         # the coarsest h, in units of the asymptotic regime's edge
BURN_IN = 6.0         # relaxation times of burn-in (from the exact law: leaves e^-6 of an O(h) start error)
WINDOW = 30.0         # relaxation times each chain averages over (a longer window buys variance cheaper than chains)
CHAIN_MARGIN = 1.3    # chains asked for beyond the pilot's estimate (its se is itself estimated)
PARTITION_START = 0.5  # rr and sms ladders start this far below the edge: their O(h^2) terms carry N_m^2
DIVERGED = 1e3        # a whitened coordinate this large has left the target


@dataclass(frozen=True)
class Level:
    """A measurement preset: ``n_h`` step sizes; chains from a pilot of ``min_chains`` up to what detects
    ``analysis.DETECTABLE_LIMIT``, at most ``max_chains``; at most ``max_calls`` adapter calls per chain
    (else inconclusive); ``n_boot`` bootstrap resamples; ``budget`` an optional wall-clock cap per plan."""

    name: str
    n_h: int
    min_chains: int
    max_chains: int
    n_boot: int
    max_calls: int
    budget: float | None = None


LEVELS = {level.name: level for level in (
    Level("tiny", 3, 32, 512, 100, 10_000),
    Level("quick", 3, 1024, 40_000, 200, 15_000),
    Level("standard", 4, 1024, 200_000, 300, 400_000),
    Level("thorough", 5, 2048, 1_000_000, 400, 2_000_000),
)}


def resolve_level(level) -> Level:
    if isinstance(level, Level):
        return level
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose from {', '.join(LEVELS)} or pass a Level")
    return LEVELS[level]


# ----------------------------------------------------------------------------- the target's scales
def critical_friction(target: GaussianTarget) -> float:
    """``2 sqrt(lambda_min)``: the friction that damps the target's slowest mode critically, so
    chains forget their start fastest and a number of steps gives the most independent samples."""
    return 2.0 * math.sqrt(float(np.linalg.eigvalsh(target.precision).min()))


def relaxation_rate(target: GaussianTarget, gamma: float, dynamics: str) -> float:
    """The slowest rate at which the continuous dynamics forgets its start on ``target``:
    ``lambda_min`` (overdamped) or ``min over lambda of Re (gamma - sqrt(gamma^2 - 4 lambda)) / 2``
    (kinetic)."""
    lam = np.linalg.eigvalsh(target.precision)
    if dynamics == "overdamped":
        return float(lam.min())
    return float(np.min((gamma - np.sqrt(np.maximum(gamma * gamma - 4.0 * lam, 0.0))) / 2.0))


def relaxation_time(adapter, target: GaussianTarget, h: float, gamma: float) -> float:
    """The time the adapter's chains take to forget their start at step size ``h``:
    ``MIXING_FACTOR`` times the Langevin dynamics' ``1 / relaxation_rate`` at friction ``gamma``,
    or times what the adapter's own ``relaxation_time(h, gamma, langevin_time)`` makes of
    ``langevin_time(friction)`` (the dynamics' relaxation time on this target at any friction)."""

    def langevin_time(friction: float) -> float:
        return 1.0 / relaxation_rate(target, friction, adapter.DYNAMICS)

    own = getattr(adapter, "relaxation_time", None)
    return mixing_factor(adapter) * (langevin_time(gamma) if own is None else float(own(h, gamma, langevin_time)))


def asymptotic_edge(target: GaussianTarget, gamma: float, batch_size: int, dynamics: str,
                    steps_per_call: int = 1) -> float:
    """The largest step size of the asymptotic range: ``ASYMPTOTIC / (rate x steps_per_call)``,
    ``rate`` :func:`theory_checks._verify.asymptotic_rate` (kinetic) or the largest force curvature
    ``omega^2`` (:func:`theory_checks._verify.largest_frequency`, overdamped).  A call of
    ``steps_per_call`` steps with one batch (and, for BlackJAX's sghmc, one momentum refreshment)
    is the unit the bias expands in, so its length ``steps_per_call x h`` is what must be small."""
    rate = largest_frequency(target, batch_size) ** 2 if dynamics == "overdamped" else \
        asymptotic_rate(target, gamma, batch_size)
    return ASYMPTOTIC / (rate * steps_per_call)


def default_ladder(target: GaussianTarget, gamma: float, batch_size: int, dynamics: str, n_h: int,
                   steps_per_call: int = 1) -> np.ndarray:
    """``H_START * edge * 2^-k``, ``k = 0 .. n_h - 1``, ``edge`` of :func:`asymptotic_edge`."""
    return H_START * asymptotic_edge(target, gamma, batch_size, dynamics, steps_per_call) * 2.0 ** -np.arange(n_h)


# ----------------------------------------------------------------------------- batches
class PlanBatches:
    """Every chain's batch at each step, by the reference walk of the plan's rule
    (:class:`integrators.plans._walk.PlanWalk`), drawn from ``rng``: ``full`` all data; ``iid``
    ``batch_size`` independent uniform draws per chain; a partition plan a fresh random
    permutation per chain every period.  Row ``c`` of :meth:`next` is chain ``c``'s."""

    def __init__(self, plan, n_data: int, batch_size: int, n_chains: int, rng: np.random.Generator):
        every = functools.cache(lambda: np.ascontiguousarray(np.broadcast_to(np.arange(n_data), (n_chains, n_data))))
        self.walk = PlanWalk(
            plan, n_data, batch_size, everything=every,
            indices=lambda: rng.integers(0, n_data, (n_chains, batch_size)),
            permutation=lambda: rng.permuted(np.tile(np.arange(n_data), (n_chains, 1)), axis=1),
            cut=lambda perms, bs: [np.ascontiguousarray(b) for b in cut(perms, bs)])

    def next(self) -> np.ndarray:
        return self.walk.next()


# ----------------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class Whitening:
    """``z = L^-1 (x - mu)``; the statistics are ``z`` and the upper triangle of ``z z^T``."""

    mu: np.ndarray
    inv_chol: np.ndarray
    chol: np.ndarray

    @classmethod
    def of(cls, target: GaussianTarget) -> Whitening:
        chol = np.linalg.cholesky(target.covariance)
        return cls(target.mean, np.linalg.inv(chol), chol)

    @property
    def dim(self) -> int:
        return self.mu.shape[0]

    def z(self, x) -> np.ndarray:
        return (np.asarray(x, dtype=float) - self.mu) @ self.inv_chol.T

    def names(self) -> list[str]:
        iu = np.triu_indices(self.dim)
        return [f"E z{a}" for a in range(self.dim)] + [f"E z{a}z{b}" for a, b in zip(*iu, strict=True)]

    def exact(self) -> np.ndarray:
        """The statistics' values under the target: ``(0, I)``."""
        return np.concatenate([np.zeros(self.dim), np.eye(self.dim)[np.triu_indices(self.dim)]])

    def weights(self) -> np.ndarray:
        """Squared-norm weights: 1 for the mean and the diagonal, 2 for an off-diagonal entry
        (it stands for two entries of the Frobenius norm)."""
        iu = np.triu_indices(self.dim)
        return np.concatenate([np.ones(self.dim), np.where(iu[0] == iu[1], 1.0, 2.0)])

    def of_moments(self, mean, second_moment) -> np.ndarray:
        """The statistics of a law with these moments of ``x`` (the oracle's)."""
        mz = self.inv_chol @ (mean - self.mu)
        c = second_moment - np.outer(mean, self.mu) - np.outer(self.mu, mean) + np.outer(self.mu, self.mu)
        return np.concatenate([mz, (self.inv_chol @ c @ self.inv_chol.T)[np.triu_indices(self.dim)]])


@dataclass
class PlanMeasurement:
    """What the runs of one plan gave: per step size the per-chain statistics ``samples[j]``
    (``None`` where the chains diverged), the bias vector and its standard errors."""

    plan: str
    hs: np.ndarray
    n_chains: list                   # chains per h (an optional wall-clock cap may cut them)
    calls: list                      # (burn-in, window) steps per h
    samples: list
    bias: np.ndarray                 # (n_h, K), nan where unstable
    se: np.ndarray                   # (n_h, K)
    errors: np.ndarray               # debiased |b| per h (0 when below noise, nan when unstable)
    noise: np.ndarray                # sqrt(sum w Var b) per h
    seconds: float
    over_budget: bool = False
    slope: float = float("nan")
    ci: tuple = (float("nan"), float("nan"))
    fit: list = field(default_factory=list)          # indices of the fitted step sizes
    intercept: np.ndarray | None = None
    intercept_se: np.ndarray | None = None
    drift_z: np.ndarray | None = None              # (n_h, K): second half minus first half, in s.e.

    @property
    def stable(self) -> np.ndarray:
        return np.array([s is not None for s in self.samples])


def debiased_error(samples: np.ndarray, exact: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """``(error, noise)``: ``sqrt(max(sum w (b^2 - Var b), 0))`` and ``sqrt(sum w Var b)``."""
    n = samples.shape[0]
    b = samples.mean(axis=0) - exact
    var = samples.var(axis=0, ddof=1) / n
    e2 = float(np.sum(weights * (b * b - var)))
    return math.sqrt(max(e2, 0.0)), math.sqrt(float(np.sum(weights * var)))


# ----------------------------------------------------------------------------- running
def _calls(time_span: float, h: float, per_call: int, period: int) -> int:
    """Steps (adapter calls) covering ``time_span``, rounded up to whole periods of the plan."""
    calls = max(1, math.ceil(time_span / (h * per_call)))
    return period * math.ceil(calls / period)


def _run(adapter, problem, plan, batch_size, h, gamma, n_chains, burn, window, split, whitening, seed):
    """One step size: per-chain window averages of the statistics ``(n_chains, K)`` and the
    differences of the averages after and before step ``split`` of the window (a whole number of
    the plan's periods, so both parts see every position of the period alike; ``None`` when the
    window is one period), or ``None`` when a chain left the target."""
    rng = np.random.default_rng(seed)
    sampler = called(adapter, "build", problem, h, gamma)
    x0 = whitening.mu + rng.standard_normal((n_chains, whitening.dim)) @ whitening.chol.T
    state = called(adapter, "init", sampler, x0, int(rng.integers(2**62)))
    batches = PlanBatches(plan, problem.n_data, batch_size, n_chains, rng)
    d = whitening.dim
    iu = np.triu_indices(d)
    halves = np.zeros((2, n_chains, d + len(iu[0])))  # the window's first and second half
    for k in range(burn + window):
        state = called(adapter, "step", sampler, state, batches.next())
        if k < burn and (k % 16 and k != burn - 1):
            continue
        z = whitening.z(checked_positions(adapter, sampler, state, n_chains, d))
        if not np.all(np.abs(z) < DIVERGED):  # nan included
            return None
        if k >= burn:
            acc = halves[int(k - burn >= split)]
            acc[:, :d] += z
            acc[:, d:] += z[:, iu[0]] * z[:, iu[1]]
    drift = halves[1] / (window - split) - halves[0] / split if 0 < split < window else None
    return (halves[0] + halves[1]) / window, drift


def ladder_calls(adapter, target: GaussianTarget, plan, hs, gamma: float, batch_size: int) -> list:
    """``(burn-in, window)`` adapter calls per step size: ``BURN_IN`` and ``WINDOW`` relaxation
    times (:func:`relaxation_time`), in whole periods of the plan."""
    plan = resolve_plan(plan)
    bs = target.n_data if plan.NAME == "full" else batch_size
    per_call, period = steps_per_call(adapter), plan.period(target.n_data, bs)
    calls = []
    for h in hs:
        tau = relaxation_time(adapter, target, float(h), gamma)
        calls.append((_calls(BURN_IN * tau, h, per_call, period), _calls(WINDOW * tau, h, per_call, period)))
    return calls


def measure_plan(adapter, target: GaussianTarget, plan, *, gamma: float, batch_size: int, hs, level: Level,
                 budget: float | None, n_chains: int | None, seed: int, order: float = 1.0) -> PlanMeasurement:
    """Run one plan's ladder (module docstring, steps 1-4) and estimate its bias vectors.  Without
    ``n_chains`` a pilot of ``level.min_chains`` chains measures the limit's standard error and the
    chains grow to what detects ``analysis.DETECTABLE_LIMIT``, capped by ``level.max_chains`` and
    ``budget`` (``over_budget`` says it was cut)."""
    from theory_checks.adapters._analysis import chains_to_detect, fit_limit, limit_significant

    t0 = time.time()
    plan = resolve_plan(plan)
    bs = target.n_data if plan.NAME == "full" else batch_size
    problem = AdapterProblem(target, plan.force_scale(target.n_data, bs))
    whitening = Whitening.of(target)
    period = plan.period(target.n_data, bs)
    calls = ladder_calls(adapter, target, plan, hs, gamma, batch_size)
    exact, weights = whitening.exact(), whitening.weights()

    def runs(count: int, tag: str):
        out = []
        for j, (h, (burn, window)) in enumerate(zip(hs, calls, strict=True)):
            split = period * (window // period // 2)  # the window's halves, in whole periods
            out.append(_run(adapter, problem, plan, bs, float(h), gamma, count, burn, window, split, whitening,
                            derive(seed, "adapters", adapter.NAME, plan.NAME, j, *(() if tag == "" else (tag,)))))
        return out

    over = False
    if n_chains is not None:
        results = runs(n_chains, "")
    else:
        pilot = level.min_chains
        results = runs(pilot, "")
        pilot_seconds = time.time() - t0
        m = _measurement(plan.NAME, hs, [pilot] * len(hs), calls, results, exact, weights, 0.0)
        fit_limit(m, order)
        # the pilot is the first of two looks: a limit already significant needs no more chains
        want = pilot if m.intercept is None or limit_significant(m) else \
            min(max(int(CHAIN_MARGIN * chains_to_detect(m.intercept_se, pilot)), pilot), level.max_chains)
        budget = level.budget if budget is None else budget
        if budget is not None and want > pilot and pilot_seconds * want / pilot > budget:
            want, over = max(pilot, int(pilot * budget / max(pilot_seconds, 1e-9))), True
        if want > pilot:
            more = runs(want - pilot, "more")
            results = [None if a is None or b is None else (np.concatenate([a[0], b[0]]),
                                                            None if a[1] is None else np.concatenate([a[1], b[1]]))
                       for a, b in zip(results, more, strict=True)]
        n_chains = want
    return _measurement(plan.NAME, hs, [n_chains] * len(hs), calls, results, exact, weights, time.time() - t0,
                        over_budget=over)


def _measurement(plan_name, hs, chains, calls, results, exact, weights, seconds, over_budget=False):
    """A :class:`PlanMeasurement` of per-step-size ``(window averages, half differences)``."""
    k = exact.shape[0]
    samples = [None if r is None else r[0] for r in results]
    bias = np.full((len(hs), k), np.nan)
    se = np.full((len(hs), k), np.nan)
    errors = np.full(len(hs), np.nan)
    noise = np.full(len(hs), np.nan)
    for j, y in enumerate(samples):
        if y is not None:
            bias[j] = y.mean(axis=0) - exact
            se[j] = y.std(axis=0, ddof=1) / math.sqrt(y.shape[0])
            errors[j], noise[j] = debiased_error(y, exact, weights)
    drift_z = np.full((len(hs), k), np.nan)
    for j, r in enumerate(results):
        dy = None if r is None else r[1]
        if dy is not None and dy.shape[0] > 1:
            drift_z[j] = dy.mean(axis=0) / np.maximum(dy.std(axis=0, ddof=1) / math.sqrt(dy.shape[0]), 1e-300)
    return PlanMeasurement(plan_name, np.asarray(hs, dtype=float), list(chains), calls, samples, bias, se, errors,
                           noise, seconds, over_budget=over_budget, drift_z=drift_z)
