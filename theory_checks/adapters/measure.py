"""Another library's sampler, measured: the law it reaches on exact Gaussian targets, against the
target, over a ladder of step sizes and every minibatch plan.

For an adapter (:mod:`theory_checks.adapters.protocol`), a :class:`GaussianTarget` (its law
``N(mu, Sigma)`` is known exactly) and each plan of :data:`integrators.plans.PLANS`:

1. **Runs.**  For each ``h`` of the ladder, ``n_chains`` independent chains start from the
   target's exact law, make a burn-in of :data:`BURN_IN` relaxation times and then average, each
   over a window of :data:`WINDOW` relaxation times (whole periods of the plan), the whitened
   statistics ``z = L^-1 (x - mu)`` (``Sigma = L L^T``) and ``z z^T``.  The toolkit draws every
   chain's batches from the plan's rule (:func:`integrators.plans.plan_rule`: each chain its own
   permutations or draws), scaled as the design says, and passes them to the adapter.  Chains
   are independent, so each chain's window average is one independent draw of an unbiased
   estimate: the bias vector ``b(h) = (E z, E z z^T - I)`` (``d + d(d+1)/2`` components, each in
   units of the target's own scale) has standard errors from the spread over chains, exactly,
   whatever the autocorrelation within a chain.
2. **Budget.**  A pilot times steps at two chain counts (per-step cost ``c0 + c1 n``); the chain
   count is then what the time ``budget`` (per plan) buys for the ladder's steps, between the
   level's minimum and :data:`MAX_CHAINS`; after each step size the measured cost rescales the
   chains of the finer ones, where the pilot's extrapolation was off.  Levels (:data:`LEVELS`) set
   the budget and the ladder's length.
3. **Ladder.**  ``h = H_START * edge * 2^-k``, ``k = 0 .. n_h - 1``, with ``edge`` the end of the
   asymptotic regime of :func:`theory_checks.verify.asymptotic_rate` (kinetic rules; for
   overdamped rules ``h lambda_max`` small): with full gradients first-order samplers there have
   ``O(h^2)`` terms below the Monte Carlo errors of a quick level (under minibatch plans they are
   larger: see ``SLOPE_TOL``).  The relaxation time that sets burn-in and window is the
   dynamics' (:func:`relaxation_rate`), times the adapter's ``MIXING_FACTOR``, or what its own
   ``relaxation_time`` makes of it (a sampler that refreshes its momentum every few steps mixes
   like a more heavily damped one; a thermostat adds its own time scale).
4. **Stationarity.**  Each chain's window is split in halves (whole periods each); a difference
   between the halves' averages beyond its family-wise interval means the chains were still moving
   (burn-in too short for how slowly the sampler mixes): the ``stationary`` check fails and says at
   which ``h``.
5. **Order.**  The error ``|b(h)|`` (Euclidean over the mean and Frobenius over the second moment,
   as :func:`theory_checks.verify.law_error` in whitened units), debiased by the estimate's own
   variance, against ``h``: least-squares slope of ``log error`` on ``log h`` over the (at most
   :data:`FIT_POINTS` finest) step sizes whose error stands :data:`FIT_MARGIN` times above its
   noise, with a 95% **bootstrap interval over chains** (chains resampled independently at each
   ``h``).  The verdict against an expected order ``p`` fails only when the whole interval lies
   more than :data:`SLOPE_TOL` from ``p``; an interval wider than :data:`SLOPE_CI_MAX` is
   inconclusive.  The tolerance is wider than :func:`theory_checks.verify.verify`'s (whose exact
   oracle reaches deep into the asymptotic regime): Monte Carlo can only measure biases well above
   its noise, where first-order rules under minibatch plans still carry ``O(h^2)`` terms with
   constants of order ``N_m^2`` (slopes up to about 1.3 on the default ladder); it still tells
   order 1 from 2 or from 1/2.
6. **Limit.**  The order says how fast the bias shrinks, not that it shrinks to zero: noise
   scaled by ``c`` heats the law to ``c^2 Sigma`` at every ``h``, and a ladder where the ``O(h)``
   part dominates still shows a slope near 1.  So each component of ``b(h)`` is fitted, by
   weighted least squares, to ``b0 + a h^p`` (``p`` the expected order, 1 when none is known;
   ``+ c h^(p+1)`` from :data:`QUADRATIC_FROM` step sizes on) and the intercept ``b0``, the law's
   error as ``h -> 0``, is tested: the check fails when some
   ``|b0|`` exceeds :data:`LIMIT_TOL` beyond its family-wise interval, passes when every ``|b0|``
   is within :data:`LIMIT_BOUND` with its interval, and is inconclusive between.
7. **Referees.**  An adapter whose rule is a toolkit scheme step for step (``EQUIVALENT_SCHEME``)
   is also compared with the exact oracle's law of that scheme x plan at every ``h``
   (:func:`theory_checks.oracle.stationary_moments`); one that declares an exact position law
   on Gaussian targets (``EXACT_GAUSSIAN_X``) must show a bias within its standard errors at
   every ``h`` with full gradients.

The result is an :class:`AdapterReport`, a :class:`theory_checks.verify.VerifyReport` with the
same table, ``ok``, ``failed`` and CSV, whose plot shows the bias ladders.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from integrators.plans import PLANS, plan_rule, resolve_plan
from integrators.plans.partitions import n_batches
from integrators.registry import Registry
from integrators.seeds import derive
from integrators.targets import GaussianTarget
from integrators.validation import int_at_least, positive_float
from theory_checks.adapters.protocol import (
    REQUIRED_ATTRIBUTES,
    AdapterProblem,
    check_adapter,
    mixing_factor,
    steps_per_call,
)
from theory_checks.orders import ladder
from theory_checks.verify import (
    ASYMPTOTIC,
    MC_ALPHA,
    Check,
    VerifyReport,
    asymptotic_rate,
    default_target,
    largest_frequency,
)

H_START = 1.0         # the coarsest h, in units of the asymptotic regime's edge
BURN_IN = 6.0         # relaxation times of burn-in (from the exact law: leaves e^-6 of an O(h) start error)
WINDOW = 10.0         # relaxation times each chain averages over
FIT_MARGIN = 3.0      # a step size enters the slope fit when its error is this many noise levels up
FIT_POINTS = 3        # the slope is fitted on (at most) this many of the finest such step sizes
SLOPE_TOL = 0.3       # |slope - p| allowed beyond the interval: the ladder is only near the asymptotic regime
SLOPE_CI_MAX = 1.5    # a wider 95% interval of the slope decides nothing
LIMIT_TOL = 0.03      # a limit error (whitened) this small is not flagged: O(h^(p+1)) remnants of a 3-point fit
QUADRATIC_FROM = 4    # with this many stable step sizes the limit fit includes the h^(p+1) term
LIMIT_BOUND = 0.06    # a passing limit check shows every whitened limit error below this
LIMIT_ALPHA = 1e-4    # family-wise level of the limit and exactness checks (per check)
ORACLE_ALPHA = MC_ALPHA  # family-wise level of the comparison with the exact oracle (as verify's)
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


def _registry():
    from theory_checks.adapters import blackjax_adapter, posteriors_adapter
    return Registry("adapter", REQUIRED_ATTRIBUTES, check_adapter,
                    (*posteriors_adapter.ADAPTERS, *blackjax_adapter.ADAPTERS))


ADAPTERS = _registry()


def resolve_adapter(adapter):
    """A registered adapter's name, or an adapter object (checked by :func:`check_adapter`)."""
    if isinstance(adapter, str):
        return ADAPTERS.resolve(adapter)
    check_adapter(adapter)
    return adapter


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


def _debiased_error(samples: np.ndarray, exact: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
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
        z = whitening.z(adapter.positions(sampler, state))
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
        whitening.z(adapter.positions(sampler, state))
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
            errors[j], noise[j] = _debiased_error(y, exact, weights)
    drift_z = np.full((len(hs), k), np.nan)
    for j, dy in enumerate(drifts):
        if dy is not None and dy.shape[0] > 1:
            drift_z[j] = dy.mean(axis=0) / np.maximum(dy.std(axis=0, ddof=1) / math.sqrt(dy.shape[0]), 1e-300)
    return PlanMeasurement(plan.NAME, np.asarray(hs, dtype=float), chains, calls, samples, bias, se, errors,
                           noise, time.time() - t0, over_budget=over or time.time() - t0 > 1.5 * budget,
                           drift_z=drift_z)


# ----------------------------------------------------------------------------- analysis
def fit_order(m: PlanMeasurement, exact: np.ndarray, weights: np.ndarray, n_boot: int, seed: int) -> None:
    """The slope of ``log error`` on ``log h`` over the step sizes whose error stands
    :data:`FIT_MARGIN` noise levels up, with a percentile bootstrap interval (chains resampled
    independently at each ``h``).  Sets ``m.slope``, ``m.ci``, ``m.fit`` (nan, no points: no slope)."""
    above = [j for j in range(len(m.hs)) if np.isfinite(m.errors[j]) and m.errors[j] >= FIT_MARGIN * m.noise[j]]
    fit = sorted(above, key=lambda j: m.hs[j])[:FIT_POINTS]
    m.fit = sorted(fit)
    if len(fit) < 2:
        return
    fit = m.fit
    logh = np.log(m.hs[fit])
    m.slope = float(np.polyfit(logh, np.log(m.errors[fit]), 1)[0])
    rng = np.random.default_rng(derive(seed, "adapters", "bootstrap", m.plan))
    slopes = []
    for _ in range(n_boot):
        errs = []
        for j in fit:
            y = m.samples[j]
            errs.append(_debiased_error(y[rng.integers(0, y.shape[0], y.shape[0])], exact, weights)[0])
        errs = np.array(errs)
        slopes.append(float(np.polyfit(logh, np.log(errs), 1)[0]) if np.all(errs > 0) else np.nan)
    slopes = np.array(slopes)
    if np.mean(np.isfinite(slopes)) < 0.9:  # resamples whose error fell to the noise: no interval
        m.ci = (-math.inf, math.inf)
        return
    m.ci = (float(np.nanpercentile(slopes, 2.5)), float(np.nanpercentile(slopes, 97.5)))


def fit_limit(m: PlanMeasurement, p: float) -> None:
    """Each component's weighted least-squares fit ``b(h) = b0 + a h^p`` over the stable step
    sizes, ``+ c h^(p+1)`` when there are :data:`QUADRATIC_FROM` of them (the next term of the
    expansion then leaves no ``O(h^(p+1))`` remnant in ``b0``): ``m.intercept`` (``b0``) and
    ``m.intercept_se``."""
    ok = m.stable
    if ok.sum() < 2:
        return
    hs, bias, se = m.hs[ok], m.bias[ok], m.se[ok]
    powers = [0.0, p] + ([p + 1.0] if ok.sum() >= QUADRATIC_FROM else [])
    design = np.stack([hs**q for q in powers], axis=1)
    b0, sd = [], []
    for k in range(bias.shape[1]):
        w = 1.0 / np.maximum(se[:, k], 1e-300) ** 2
        cov = np.linalg.inv(design.T @ (w[:, None] * design))
        b0.append(float((cov @ design.T @ (w * bias[:, k]))[0]))
        sd.append(math.sqrt(cov[0, 0]))
    m.intercept, m.intercept_se = np.array(b0), np.array(sd)


def family_z(alpha: float, count: int) -> float:
    """Two-sided Bonferroni critical value for ``count`` comparisons at family-wise level ``alpha``."""
    from scipy.stats import norm
    return float(norm.isf(alpha / (2 * max(count, 1))))


def slope_verdict(m: PlanMeasurement, expected: float | None) -> tuple[bool | None, str, str]:
    """``(passed, measured, skipped)`` of a measured slope against ``expected``: fails when the
    whole 95% interval lies more than :data:`SLOPE_TOL` from it; no verdict without a claim, without
    two step sizes above noise, or with an interval wider than :data:`SLOPE_CI_MAX`."""
    if not np.isfinite(m.slope):
        above = len(m.fit)
        return None, f"bias above noise at {above} of {len(m.hs)} step sizes", \
            "no slope: the bias stands above Monte Carlo noise at fewer than 2 step sizes (a larger level or hs)"
    lo, hi = m.ci
    measured = f"slope {m.slope:.2f} (95% CI [{lo:.2f}, {hi:.2f}], {len(m.fit)} h)"
    if expected is None:
        return None, measured, ""
    if hi < expected - SLOPE_TOL or lo > expected + SLOPE_TOL:
        return False, measured, ""
    if hi - lo > SLOPE_CI_MAX:
        return None, measured, f"inconclusive: the interval is wider than {SLOPE_CI_MAX:g} (a larger level)"
    return True, measured, ""


def expected_order(adapter, plan) -> tuple[float | None, bool]:
    """``(p, asserted)``: the smaller of the rule's order and the plan's cap; asserted when the
    plan's orders are a theorem (``THEOREM``; ``rr``'s are observations)."""
    plan = resolve_plan(plan)
    if adapter.RULE_ORDER is None or plan.WEAK_ORDER is None:
        return None, False
    return float(min(adapter.RULE_ORDER, plan.WEAK_ORDER)), bool(getattr(plan, "THEOREM", True))


def _stationary_check(m: PlanMeasurement, names: list[str]) -> Check:
    """The halves of every chain's window agree within their family-wise interval at every ``h``."""
    name = f"stationary[{m.plan}]"
    expected = "window halves agree (chains at their stationary law)"
    ok = np.isfinite(m.drift_z).all(axis=1)
    if not ok.any():
        return Check(name, None, expected, "-", skipped="no stable step size")
    zs = np.abs(m.drift_z[ok])
    crit = family_z(LIMIT_ALPHA, zs.size)
    j, k = np.unravel_index(int(np.argmax(zs)), zs.shape)
    h = m.hs[ok][j]
    measured = f"max |second - first half| / s.e. = {zs[j, k]:.2f} ({names[k]} at h={h:.3g}; critical {crit:.2f})"
    if zs.max() >= crit:
        measured += "; still moving: the burn-in is too short for how slowly this sampler mixes"
    return Check(name, bool(zs.max() < crit), expected, measured)


def _limit_check(m: PlanMeasurement, p: float, names: list[str]) -> Check:
    name = f"limit[{m.plan}]"
    expected = f"|bias| -> 0 as h -> 0 (|b0| <= {LIMIT_TOL:g}, whitened)"
    if m.intercept is None:
        return Check(name, None, expected, "-", skipped="fewer than 2 stable step sizes")
    z = family_z(LIMIT_ALPHA, len(m.intercept))
    low = np.abs(m.intercept) - z * m.intercept_se
    high = np.abs(m.intercept) + z * m.intercept_se
    k = int(np.argmax(np.abs(m.intercept) / np.maximum(m.intercept_se, 1e-300)))
    worst = int(np.argmax(low))
    model = f"b0 + a h^{p:g}" + (f" + c h^{p + 1:g}" if m.stable.sum() >= QUADRATIC_FROM else "")
    measured = (f"b0 = {m.intercept[worst]:+.3f} +- {z * m.intercept_se[worst]:.3f} ({names[worst]}; "
                f"fit {model}); largest z {m.intercept[k] / m.intercept_se[k]:+.1f} ({names[k]})")
    if np.max(low) > LIMIT_TOL:
        return Check(name, False, expected, measured, list(m.hs), list(m.errors))
    if np.max(high) <= LIMIT_BOUND:
        return Check(name, True, expected, measured, list(m.hs), list(m.errors))
    return Check(name, None, expected, measured, list(m.hs), list(m.errors),
                 skipped=f"inconclusive: the limit error is only bounded by {np.max(high):.3f} > {LIMIT_BOUND:g} "
                         f"(more chains: a larger level)")


def _exact_check(m: PlanMeasurement, names: list[str]) -> Check:
    """Every component's bias within its family-wise interval at every step size."""
    name = f"weak_order[{m.plan}]"
    ok = m.stable
    if not ok.any():
        return Check(name, False, "exact law (declared)", "unstable at every h", list(m.hs), list(m.errors))
    zs = np.abs(m.bias[ok] / m.se[ok])
    crit = family_z(LIMIT_ALPHA, zs.size)
    j, k = np.unravel_index(int(np.argmax(zs)), zs.shape)
    measured = (f"max |bias| / s.e. = {zs[j, k]:.2f} ({names[k]} at h={m.hs[ok][j]:.3g}; critical {crit:.2f}); "
                f"|bias| <= {np.nanmax(np.abs(m.bias) + crit * m.se):.3f}")
    return Check(name, bool(zs.max() < crit and ok.all()), "exact law (declared)", measured, list(m.hs),
                 list(m.errors))


def _oracle_check(adapter, m: PlanMeasurement, target, gamma, batch_size, whitening, names) -> Check:
    """The Monte Carlo bias against the exact law of the adapter's ``EQUIVALENT_SCHEME x plan``."""
    from theory_checks.oracle import UnstableStepError, stationary_moments

    scheme = adapter.EQUIVALENT_SCHEME
    name = f"oracle[{m.plan}]"
    expected = f"bias = exact law of {scheme} x {m.plan}"
    zs, where = [], []
    for j, h in enumerate(m.hs):
        if m.samples[j] is None:
            continue
        try:
            law = stationary_moments(target, scheme, m.plan, float(h), gamma,
                                     None if m.plan == "full" else batch_size)
        except UnstableStepError:
            continue
        exact_bias = whitening.of_moments(law.mean, law.second_moment) - whitening.exact()
        zs.append(np.abs(m.bias[j] - exact_bias) / m.se[j])
        where.append(h)
    if not zs:
        return Check(name, None, expected, "-", skipped="no stable step size")
    zs = np.array(zs)
    crit = family_z(ORACLE_ALPHA, zs.size)
    j, k = np.unravel_index(int(np.argmax(zs)), zs.shape)
    return Check(name, bool(zs.max() < crit), expected,
                 f"max |MC - oracle| / s.e. = {zs[j, k]:.2f} ({names[k]} at h={where[j]:.3g}; critical {crit:.2f})")


# ----------------------------------------------------------------------------- the report
def _span(counts) -> str:
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{hi}-{lo}"


@dataclass
class AdapterReport(VerifyReport):
    """What :func:`measure_adapter` found: the checks (as :class:`VerifyReport`: ``ok``,
    ``failed``, ``check(name)``, ``table()``, ``write_csv``) and the measurements per plan."""

    level: str = ""
    gamma: float = float("nan")
    measurements: dict = field(default_factory=dict)
    adapter: object = None           # what was measured (its declarations: RULE_ORDER, ...)

    def table(self) -> str:
        runs = ", ".join(f"{p}: {_span(m.n_chains)} chains" + (" (over budget)" if m.over_budget else "")
                         for p, m in self.measurements.items())
        lines = [f"measure_adapter({self.scheme!r}) on {self.target}, gamma={self.gamma:.3g}, level {self.level!r}: "
                 f"{'OK' if self.ok else 'FAILED: ' + ', '.join(self.failed)} ({self.seconds:.0f} s; {runs})",
                 "", "| check | expected | measured | verdict |", "|---|---|---|---|"]
        lines += [f"| {c.name} | {c.expected} | {c.measured} | {c.verdict} |" for c in self.checks]
        return "\n".join(lines)

    def plot(self, path) -> Path:
        """The whitened bias ``|b(h)|`` against ``h`` per plan, with its noise level (dashed) and
        the fitted points filled (PNG)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        path = Path(path)
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for plan, m in self.measurements.items():
            ok = np.isfinite(m.errors) & (m.errors > 0)
            line, = ax.plot(m.hs[ok], m.errors[ok], marker="o", mfc="none",
                            label=f"{plan}: {'-' if not np.isfinite(m.slope) else f'{m.slope:.2f}'}")
            ax.plot(m.hs, m.noise, ls="--", color=line.get_color(), lw=0.8)
            if m.fit:
                ax.plot(m.hs[m.fit], m.errors[m.fit], "o", color=line.get_color())
        ax.set(xscale="log", yscale="log", xlabel="h", ylabel="|bias| (whitened)",
               title=f"{self.scheme} on {self.target.split(',')[0]}) ({self.level})")
        if ax.lines:
            ax.legend(fontsize=7, title="plan: slope", title_fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


def measure_adapter(adapter, *, target: GaussianTarget | None = None, plans=None, gamma: float | None = None,
                    batch_size: int = 1, level="quick", budget: float | None = None, hs=None,
                    n_chains: int | None = None, seed: int = 0) -> AdapterReport:
    """Measure an adapter's sampler (a registered name or an adapter object) on ``target``
    (default :func:`theory_checks.verify.default_target`: three non-commuting Gaussian terms in
    2-D) with each of ``plans`` (default: every registered plan), see the module docstring.

    ``gamma``: the friction (default :func:`critical_friction`; overdamped rules have none);
    ``level``: a name of :data:`LEVELS` or a :class:`Level`; ``budget``: seconds per plan (default
    the level's); ``hs``: the ladder (default :func:`default_ladder`); ``n_chains``: fixes the
    chain count instead of buying it with the budget."""
    t0 = time.time()
    adapter = resolve_adapter(adapter)
    level = resolve_level(level)
    target = default_target() if target is None else target
    if not isinstance(target, GaussianTarget):
        raise ValueError(f"measure_adapter needs a GaussianTarget (its exact law), got {type(target).__name__}")
    if isinstance(plans, str):
        raise ValueError(f"plans must be a list of plans, got the string {plans!r} (write [{plans!r}])")
    plan_modules = [resolve_plan(p) for p in (list(PLANS) if plans is None else plans)]
    if not plan_modules:
        raise ValueError(f"plans must name at least one plan (or be None for every registered plan), got {plans!r}")
    gamma = critical_friction(target) if gamma is None else positive_float("gamma", gamma)
    batch_size = int_at_least("batch_size", batch_size, 1)
    if batch_size > target.n_data:
        raise ValueError(f"batch_size must lie in [1, {target.n_data}], got {batch_size!r}")
    budget = level.budget if budget is None else positive_float("budget", budget)
    hs = default_ladder(target, gamma, batch_size, adapter.DYNAMICS, level.n_h) if hs is None else \
        ladder("hs", hs, minimum=2)
    if n_chains is not None:
        n_chains = int_at_least("n_chains", n_chains, 2)
    whitening = Whitening.of(target)
    names, exact, weights = whitening.names(), whitening.exact(), whitening.weights()
    checks, measurements = [], {}
    for plan in plan_modules:
        try:
            plan_rule(plan)
        except ValueError as exc:
            for kind in ("limit", "weak_order"):
                checks.append(Check(f"{kind}[{plan.NAME}]", None, "-", "-", skipped=str(exc)))
            continue
        m = measure_plan(adapter, target, plan, gamma=gamma, batch_size=batch_size, hs=hs, level=level,
                         budget=budget, n_chains=n_chains, seed=seed)
        measurements[plan.NAME] = m
        p, asserted = expected_order(adapter, plan)
        fit_order(m, exact, weights, level.n_boot, seed)
        fit_limit(m, p or 1.0)
        checks.append(_stationary_check(m, names))
        checks.append(_limit_check(m, p or 1.0, names))
        if plan.NAME == "full" and adapter.EXACT_GAUSSIAN_X:
            checks.append(_exact_check(m, names))
        else:
            passed, measured, why = slope_verdict(m, p if asserted else None)
            exp_txt = "-" if p is None else f"{p:g}" + ("" if asserted else " (observed, not a claim)")
            unstable = [f"{h:.3g}" for h, ok in zip(m.hs, m.stable, strict=True) if not ok]
            if unstable:
                measured += f"; unstable at h = {', '.join(unstable)}"
            checks.append(Check(f"weak_order[{plan.NAME}]", passed, exp_txt, measured, list(m.hs), list(m.errors),
                                skipped=why))
        if getattr(adapter, "EQUIVALENT_SCHEME", None) is not None:
            checks.append(_oracle_check(adapter, m, target, gamma, batch_size, whitening, names))
    checks.append(_documented_check(adapter, measurements.get("full"), checks))
    return AdapterReport(adapter.NAME, f"{target.name} (d={target.dim}, {target.n_data} data terms)", checks,
                         time.time() - t0, level=level.name, gamma=gamma, measurements=measurements,
                         adapter=adapter)


def _documented_check(adapter, full: PlanMeasurement | None, checks: list) -> Check:
    """The library's documented weak order for full gradients against the full plan's slope (an
    exact law is consistent with any order)."""
    name = "documented_order[full]"
    claim = adapter.WEAK_ORDER
    expected = "-" if claim is None else f"{claim:g} ({adapter.CLAIM_SOURCE})"
    if full is None:
        return Check(name, None, expected, "-", skipped="the full plan was not measured")
    if adapter.EXACT_GAUSSIAN_X:
        exact = next(c for c in checks if c.name == "weak_order[full]")
        return Check(name, None if claim is None else exact.passed, expected, "exact law: " + exact.measured)
    passed, measured, why = slope_verdict(full, claim)
    if claim is None:
        why = ""
        measured += f"; no order documented ({adapter.CLAIM_SOURCE})"
    return Check(name, passed, expected, measured, skipped=why)
