"""Running an adapter's chains on an exact Gaussian target: the measurement levels, the target's
time scales and the ladder of step sizes, every chain's batches from the plan's rule, the whitened
statistics, and :func:`measure_plan` (chains bought with a time budget, burn-in and window in
relaxation times).  :mod:`theory_checks.adapters.measure` describes the method as a whole."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from integrators.plans import plan_rule, resolve_plan
from integrators.plans.partitions import n_batches
from integrators.seeds import derive
from integrators.targets import GaussianTarget
from theory_checks.adapters.protocol import AdapterProblem, checked_positions, mixing_factor, steps_per_call
from theory_checks.verify import ASYMPTOTIC, asymptotic_rate, largest_frequency

H_START = 1.0         # the coarsest h, in units of the asymptotic regime's edge
BURN_IN = 6.0         # relaxation times of burn-in (from the exact law: leaves e^-6 of an O(h) start error)
WINDOW = 10.0         # relaxation times each chain averages over
MAX_CHAINS = 100_000
PILOT_CALLS = 6       # timed steps per pilot chain count (after two untimed ones: compilation)
DIVERGED = 1e3        # a whitened coordinate this large has left the target


@dataclass(frozen=True)
class Level:
    """A measurement preset: ``budget`` seconds per plan (pilot included), ``n_h`` step sizes,
    at least ``min_chains`` chains, ``n_boot`` bootstrap resamples."""

    name: str
    budget: float
    n_h: int
    min_chains: int
    n_boot: int


LEVELS = {level.name: level for level in (
    Level("tiny", 2.0, 3, 32, 100),
    Level("quick", 20.0, 3, 256, 200),
    Level("standard", 60.0, 4, 512, 300),
    Level("thorough", 300.0, 5, 1024, 400),
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
    chains forget their start fastest and a budget buys the most independent samples."""
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


def default_ladder(target: GaussianTarget, gamma: float, batch_size: int, dynamics: str, n_h: int) -> np.ndarray:
    """``H_START * edge * 2^-k``: ``edge = ASYMPTOTIC / rate`` with ``rate`` the asymptotic rate of
    :func:`theory_checks.verify.asymptotic_rate` (kinetic) or the largest force curvature
    ``omega^2`` (overdamped)."""
    rate = largest_frequency(target, batch_size) ** 2 if dynamics == "overdamped" else \
        asymptotic_rate(target, gamma, batch_size)
    return H_START * ASYMPTOTIC / rate * 2.0 ** -np.arange(n_h)


# ----------------------------------------------------------------------------- batches
class PlanBatches:
    """Every chain's batch at each step, from the plan's rule (:func:`integrators.plans.plan_rule`):
    ``full`` all data; ``iid`` ``batch_size`` independent uniform draws per chain; a partition plan
    a fresh random permutation per chain every period, cut into ``N_m`` batches, the batch of
    position ``p`` being ``batch_index(p, N_m)``.  Row ``c`` of :meth:`next` is chain ``c``'s."""

    def __init__(self, plan, n_data: int, batch_size: int, n_chains: int, rng: np.random.Generator):
        self.rule = plan_rule(plan)
        self.n_data, self.batch_size, self.n_chains, self.rng = n_data, batch_size, n_chains, rng
        self.m = n_batches(n_data, batch_size)
        self.position = 0
        self.perms = None
        if self.rule.kind == "full":
            self.all = np.ascontiguousarray(np.broadcast_to(np.arange(n_data), (n_chains, n_data)))

    def next(self) -> np.ndarray:
        if self.rule.kind == "full":
            return self.all
        if self.rule.kind == "iid":
            return self.rng.integers(0, self.n_data, (self.n_chains, self.batch_size))
        if self.position == 0:
            self.perms = self.rng.permuted(np.tile(np.arange(self.n_data), (self.n_chains, 1)), axis=1)
        j = int(self.rule.batch_index(self.position, self.m))
        self.position = (self.position + 1) % (self.rule.sweeps * self.m)
        return np.ascontiguousarray(self.perms[:, j * self.batch_size:min((j + 1) * self.batch_size, self.n_data)])


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
    n_chains: list                   # chains per h (the budget may cut them for the finer h)
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
    sampler = adapter.build(problem, h, gamma)
    x0 = whitening.mu + rng.standard_normal((n_chains, whitening.dim)) @ whitening.chol.T
    state = adapter.init(sampler, x0, int(rng.integers(2**62)))
    batches = PlanBatches(plan, problem.n_data, batch_size, n_chains, rng)
    d = whitening.dim
    iu = np.triu_indices(d)
    halves = np.zeros((2, n_chains, d + len(iu[0])))  # the window's first and second half
    for k in range(burn + window):
        state = adapter.step(sampler, state, batches.next())
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


def _time_steps(adapter, problem, plan, batch_size, h, gamma, n_chains, whitening, seed) -> float:
    """Seconds per step (batch, step, statistics) of ``n_chains`` chains, after two untimed steps."""
    rng = np.random.default_rng(seed)
    sampler = adapter.build(problem, h, gamma)
    x0 = whitening.mu + rng.standard_normal((n_chains, whitening.dim)) @ whitening.chol.T
    state = adapter.init(sampler, x0, seed)
    batches = PlanBatches(plan, problem.n_data, batch_size, n_chains, rng)
    for k in range(PILOT_CALLS + 2):
        if k == 2:
            t0 = time.perf_counter()
        state = adapter.step(sampler, state, batches.next())
        whitening.z(checked_positions(adapter, sampler, state, n_chains, whitening.dim))
    return (time.perf_counter() - t0) / PILOT_CALLS


def _chains_for(budget_left: float, total_calls: int, cost) -> tuple[int, bool]:
    """The chain count the budget buys at ``cost = (c0, c1)`` seconds per step, clipped."""
    c0, c1 = cost
    n = (budget_left / max(total_calls, 1) - c0) / max(c1, 1e-9)
    return int(min(MAX_CHAINS, max(n, 0))), n < 0


def measure_plan(adapter, target: GaussianTarget, plan, *, gamma: float, batch_size: int, hs, level: Level,
                 budget: float, n_chains: int | None, seed: int) -> PlanMeasurement:
    """Run one plan's ladder (see the module docstring, steps 1-4) and estimate its bias vectors."""
    t0 = time.time()
    plan = resolve_plan(plan)
    bs = target.n_data if plan.NAME == "full" else batch_size
    problem = AdapterProblem(target, plan.force_scale(target.n_data, bs))
    whitening = Whitening.of(target)
    per_call = steps_per_call(adapter)
    period = plan.period(target.n_data, bs)
    calls = []
    for h in hs:
        tau = relaxation_time(adapter, target, float(h), gamma)
        calls.append((_calls(BURN_IN * tau, h, per_call, period), _calls(WINDOW * tau, h, per_call, period)))
    total = sum(b + w for b, w in calls)
    over, fixed = False, n_chains is not None
    if n_chains is None:
        pilot = [level.min_chains, max(16 * level.min_chains, 4096)]
        times = [_time_steps(adapter, problem, plan, bs, float(hs[0]), gamma, n, whitening,
                             derive(seed, "adapters", "pilot", n)) for n in pilot]
        c1 = max((times[1] - times[0]) / (pilot[1] - pilot[0]), 1e-9)
        c0 = max(times[0] - c1 * pilot[0], 0.0)
        n_chains, over = _chains_for(budget - (time.time() - t0), total, (c0, c1))
        if n_chains < level.min_chains:
            n_chains, over = level.min_chains, True
    samples, drifts, chains = [], [], []
    for j, (h, (burn, window)) in enumerate(zip(hs, calls, strict=True)):
        split = period * (window // period // 2)  # the window's halves, in whole periods
        started = time.time()
        run = _run(adapter, problem, plan, bs, float(h), gamma, n_chains, burn, window, split, whitening,
                   derive(seed, "adapters", adapter.NAME, plan.NAME, j))
        samples.append(None if run is None else run[0])
        drifts.append(None if run is None else run[1])
        chains.append(n_chains)
        if fixed or j + 1 == len(hs):
            continue
        # the pilot's cost model extrapolates: where this step size cost more than the model said,
        # cut the chains of the finer ones to what the whole ladder at this cost fits in the budget
        # (each step size keeps its share; never below the minimum)
        per_step = (time.time() - started) / (burn + window)
        if per_step * total > 1.2 * budget:
            n_chains = max(level.min_chains, int(n_chains * budget / (per_step * total)))
            over = over or n_chains == level.min_chains
    exact, weights = whitening.exact(), whitening.weights()
    k = exact.shape[0]
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
    for j, dy in enumerate(drifts):
        if dy is not None and dy.shape[0] > 1:
            drift_z[j] = dy.mean(axis=0) / np.maximum(dy.std(axis=0, ddof=1) / math.sqrt(dy.shape[0]), 1e-300)
    return PlanMeasurement(plan.NAME, np.asarray(hs, dtype=float), chains, calls, samples, bias, se, errors,
                           noise, time.time() - t0, over_budget=over or time.time() - t0 > 1.5 * budget,
                           drift_z=drift_z)
