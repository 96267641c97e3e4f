"""Another library's sampler, measured: the law it reaches on exact Gaussian targets, against the
target, over a ladder of step sizes and every minibatch plan.

For an adapter (:mod:`theory_checks.adapters._protocol`), a :class:`GaussianTarget` (its law
``N(mu, Sigma)`` is known exactly) and each plan of :data:`integrators.plans.PLANS`:

1. **Runs.**  For each ``h`` of the ladder, ``n_chains`` independent chains start from the
   target's exact law, make a burn-in of ``runs.BURN_IN`` relaxation times and then average, each
   over a window of ``runs.WINDOW`` relaxation times (whole periods of the plan), the whitened
   statistics ``z = L^-1 (x - mu)`` (``Sigma = L L^T``) and ``z z^T``.  The toolkit draws every
   chain's batches from the plan's rule (:func:`integrators.plans.plan_rule`: each chain its own
   permutations or draws), scaled as the design says, and passes them to the adapter.  Chains
   are independent, so each chain's window average is one independent draw of an unbiased
   estimate: the bias vector ``b(h) = (E z, E z z^T - I)`` (``d + d(d+1)/2`` components, each in
   units of the target's own scale) has standard errors from the spread over chains, exactly,
   whatever the autocorrelation within a chain.
2. **Chains.**  The chain count follows from the effect the limit check must detect
   (``analysis.DETECTABLE_LIMIT``, a whitened variance error of 0.04: noise 2% off).  A pilot of
   the level's ``min_chains`` chains per step size measures the standard error of the limit
   ``b0`` (step 6); ``se`` falls as ``1 / sqrt(n)``, so ``n = n_pilot (se / se*)^2`` chains give
   ``se* = DETECTABLE_LIMIT / (z_alpha + z_power)`` (``z_alpha`` the family-wise critical value,
   ``z_power`` the quantile of ``analysis.LIMIT_POWER``), at most the level's ``max_chains``; the
   chains beyond the pilot are independent and join it.  A level whose ``max_chains`` cannot reach
   ``se*`` says so (the limit check is inconclusive: "cannot detect").  Chains and steps, not
   seconds, set the work: a seed's verdict is the same on a busy machine (``budget`` is an
   optional wall-clock cap, and a cut measurement says so).
3. **Ladder.**  ``h = H_START * edge * 2^-k``, ``k = 0 .. n_h - 1``, with ``edge`` the end of the
   asymptotic regime of :func:`theory_checks._verify.asymptotic_rate` (kinetic rules; for
   overdamped rules ``h lambda_max`` small), divided by the adapter's ``STEPS_PER_CALL`` (a call
   that holds one batch and refreshes the momentum once is the unit the bias expands in).  A
   given ``hs`` above ``edge`` is refused, naming the range (``runs.asymptotic_edge``).  The
   default ladders of ``rr`` and ``sms`` start at ``runs.PARTITION_START`` times the edge: there
   first-order rules carry ``O(h^2)`` terms with constants of order ``N_m^2``, which a linear fit
   of the limit would leave in ``b0``.  A level allows at most ``max_calls`` calls per chain
   over a ladder: a sampler whose range needs more (BlackJAX's sghmc refreshes its momentum every
   ``L h`` and mixes slowly there) is not measured at that level, its claims inconclusive.  With full
   gradients first-order samplers there have
   ``O(h^2)`` terms below the Monte Carlo errors of a quick level (under minibatch plans they are
   larger: see ``SLOPE_TOL``).  The relaxation time that sets burn-in and window is the
   dynamics' (``runs.relaxation_rate``), times the adapter's ``MIXING_FACTOR``, or what its own
   ``relaxation_time`` makes of it (a sampler that refreshes its momentum every few steps mixes
   like a more heavily damped one; a thermostat adds its own time scale).
4. **Stationarity.**  Each chain's window is split in halves (whole periods each); a difference
   between the halves' averages beyond its family-wise interval means the chains were still moving
   (burn-in too short for how slowly the sampler mixes): the ``stationary`` check fails and says at
   which ``h``.
5. **Order.**  The error ``|b(h)|`` (Euclidean over the mean and Frobenius over the second moment,
   as :func:`theory_checks._verify.law_error` in whitened units), debiased by the estimate's own
   variance, against ``h``: least-squares slope of ``log error`` on ``log h`` over the (at most
   ``analysis.FIT_POINTS`` finest) step sizes whose error stands ``analysis.FIT_MARGIN`` times above its
   noise, with a 95% **bootstrap interval over chains** (chains resampled independently at each
   ``h``).  The verdict against an expected order ``p`` fails only when the whole interval lies
   more than ``analysis.SLOPE_TOL`` from ``p``; an interval wider than ``analysis.SLOPE_CI_MAX`` is
   inconclusive.  The tolerance is wider than :func:`theory_checks._verify.verify`'s (whose exact
   oracle reaches deep into the asymptotic regime): Monte Carlo can only measure biases well above
   its noise, where first-order rules under minibatch plans still carry ``O(h^2)`` terms with
   constants of order ``N_m^2`` (slopes up to about 1.3 on the default ladder); it still tells
   order 1 from 2 or from 1/2.
6. **Limit.**  The order says how fast the bias shrinks, not that it shrinks to zero: noise
   scaled by ``c`` heats the law to ``c^2 Sigma`` at every ``h``, and a ladder where the ``O(h)``
   part dominates still shows a slope near 1.  So each component of ``b(h)`` is fitted, by
   weighted least squares, to ``b0 + a h^p`` (``p`` the expected order, 1 when none is known;
   ``+ c h^(p+1)`` from ``analysis.QUADRATIC_FROM`` step sizes on) and the intercept ``b0``, the law's
   error as ``h -> 0``, is tested: the check fails when some ``|b0|`` exceeds its family-wise
   interval ``z_alpha se``; it passes when none does and every ``se`` is at most ``se*`` (step 2),
   so that a limit error of ``analysis.DETECTABLE_LIMIT`` would have failed with probability
   ``analysis.LIMIT_POWER``; otherwise it is inconclusive ("cannot detect").
7. **Referees.**  An adapter whose rule is a toolkit scheme step for step (``EQUIVALENT_SCHEME``)
   is also compared with the exact oracle's law of that scheme x plan at every ``h``
   (:func:`theory_checks.oracle.stationary_moments`); one that declares an exact position law
   on Gaussian targets (``EXACT_GAUSSIAN_X``) must show a bias within its standard errors at
   every ``h`` with full gradients.

The result is an :class:`AdapterReport`, a :class:`theory_checks._verify.VerifyReport` with the
same table, ``ok``, ``failed`` and CSV, whose plot shows the bias ladders.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from integrators._validation import POSITIVE, InstanceOf, Optional, at_least, batch_size_for, check_parameters, declares
from integrators.plans import PLANS, plan_rule, resolve_plan
from integrators.registry import Registry
from integrators.targets import GaussianTarget
from theory_checks._checks import Check, VerifyReport
from theory_checks._verify import ASYMPTOTIC, SHARED_CONSTRAINTS, default_target
from theory_checks.adapters._analysis import (
    exact_check,
    expected_order,
    fit_limit,
    fit_order,
    limit_check,
    oracle_check,
    slope_verdict,
    stationary_check,
)
from theory_checks.adapters._protocol import REQUIRED_ATTRIBUTES, check_adapter, steps_per_call
from theory_checks.adapters._runs import (
    PARTITION_START,
    PlanMeasurement,
    Whitening,
    asymptotic_edge,
    critical_friction,
    default_ladder,
    ladder_calls,
    measure_plan,
    resolve_level,
)
from theory_checks.orders import ladder

ADAPTERS = Registry("adapter", REQUIRED_ATTRIBUTES, check_adapter)  # filled by theory_checks.adapters (discovery)


def resolve_adapter(adapter):
    """The adapter of a registered name, or an adapter object (checked by :func:`check_adapter`).

    Parameters
    ----------
    adapter : str or object
        A registered adapter's name, or an adapter object.

    Returns
    -------
    object
        The adapter.

    Raises
    ------
    ValueError
        If the name is unknown, or the object is not an adapter.
    """
    if isinstance(adapter, str):
        return ADAPTERS.resolve(adapter)
    check_adapter(adapter)
    return adapter


# ----------------------------------------------------------------------------- the report
def _span(counts) -> str:
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{hi}-{lo}"


@dataclass
class AdapterReport(VerifyReport):
    """What :func:`measure_adapter` found: the checks (as :class:`VerifyReport`: ``ok``,
    ``failed``, ``check(name)``, ``table()``, ``write_csv``) and the measurements per plan.

    Parameters
    ----------
    scheme : str
        The adapter's name.
    target : str
        The target, described.
    checks : list of Check
        The checks, in the order they ran.
    seconds : float
        How long the measurement took.
    level : str, default ""
        The level's name.
    gamma : float, default nan
        The friction.
    measurements : dict, default {}
        The measurements per plan (ladder, errors, noise levels, chains, slope and fit).
    adapter : object, default None
        What was measured (its declarations: ``RULE_ORDER``, ...).
    """

    level: str = ""
    gamma: float = float("nan")
    measurements: dict = field(default_factory=dict)
    adapter: object = None           # what was measured (its declarations: RULE_ORDER, ...)

    def table(self) -> str:
        """The report as a Markdown table, under a line with the verdict, the time and the chains.

        Returns
        -------
        str
            The table.
        """
        runs = ", ".join(f"{p}: {_span(m.n_chains)} chains" + (" (over budget)" if m.over_budget else "")
                         for p, m in self.measurements.items())
        lines = [f"measure_adapter({self.scheme!r}) on {self.target}, gamma={self.gamma:.3g}, level {self.level!r}: "
                 f"{self.verdict_line()} ({self.seconds:.0f} s; {runs})",
                 "", "| check | expected | measured | verdict |", "|---|---|---|---|"]
        lines += [f"| {c.name} | {c.expected} | {c.measured} | {c.verdict} |" for c in self.checks]
        return "\n".join(lines)

    def plot(self, path) -> Path:
        """The whitened bias ``|b(h)|`` against ``h`` per plan, with its noise level (dashed) and
        the fitted points filled (PNG).

        Parameters
        ----------
        path : str or pathlib.Path
            Where to write the PNG.

        Returns
        -------
        pathlib.Path
            The path written.
        """
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


MEASURE_CONSTRAINTS = {  # verify's declaration, with the defaults measure_adapter derives itself
    **SHARED_CONSTRAINTS,
    "target": Optional(InstanceOf(GaussianTarget, "a GaussianTarget (its exact law)")),
    "gamma": Optional(POSITIVE), "budget": Optional(POSITIVE), "n_chains": Optional(at_least(2)),
}


@declares(MEASURE_CONSTRAINTS, {"adapter": "posteriors.sghmc", "target": None, "plans": ["full"], "gamma": None,
                                "batch_size": 1, "budget": 10.0, "n_chains": 8})
def measure_adapter(adapter, *, target: GaussianTarget | None = None, plans=None, gamma: float | None = None,
                    batch_size: int = 1, level="quick", budget: float | None = None, hs=None,
                    n_chains: int | None = None, seed: int = 0) -> AdapterReport:
    """Measure an adapter's sampler (a registered name or an adapter object) on ``target``
    (default :func:`theory_checks._verify.default_target`: three non-commuting Gaussian terms in
    2-D) with each of ``plans`` (default: every registered plan), see the module docstring.

    ``gamma``: the friction (default ``runs.critical_friction``; overdamped rules have none);
    ``level``: a name of ``runs.LEVELS`` or a :class:`Level`; ``budget``: an optional wall-clock
    cap in seconds per plan (default the level's, ``None``: the chains follow from the detectable
    limit error alone); ``hs``: the ladder (default ``runs.default_ladder``; every ``h`` at most
    ``runs.asymptotic_edge``, else ``ValueError``); ``n_chains``: fixes the chain count instead of
    deriving it from the detectable effect.

    Parameters
    ----------
    adapter : str or object
        A registered adapter's name or an adapter object.
    target : GaussianTarget or None, optional
        The target (None: the default target).
    plans : sequence of str or None, optional
        The plans (None: every registered plan).
    gamma : float or None, optional
        The friction (None: the critical friction).
    batch_size : int, default 1
        The batch size.
    level : str or Level, default "quick"
        The level: chains, ladder length and budget.
    budget : float or None, optional
        A wall-clock cap in seconds per plan (None: the level's).
    hs : array_like or None, optional
        The ladder of step sizes (None: the default ladder).
    n_chains : int or None, optional
        The chain count (None: derived from the detectable effect).
    seed : int, default 0
        The seed.

    Returns
    -------
    AdapterReport
        The checks and the measurements per plan.

    Raises
    ------
    ValueError
        If an option is out of range, the adapter or a plan is unknown, or a step size of ``hs``
        lies beyond the asymptotic edge.
    """
    t0 = time.time()
    values = check_parameters(locals(), MEASURE_CONSTRAINTS)
    adapter = resolve_adapter(adapter)
    level = resolve_level(level)
    target = default_target() if target is None else target
    plan_modules = [resolve_plan(p) for p in PLANS] if plans is None else values["plans"]
    gamma = critical_friction(target) if gamma is None else values["gamma"]
    batch_size = batch_size_for(target, values["batch_size"])
    budget = level.budget if budget is None else values["budget"]
    n_chains = values["n_chains"]
    given = hs is not None
    if not given:
        hs = default_ladder(target, gamma, batch_size, adapter.DYNAMICS, level.n_h, steps_per_call(adapter))
    else:
        hs = ladder("hs", hs, minimum=2)
        edge = asymptotic_edge(target, gamma, batch_size, adapter.DYNAMICS, steps_per_call(adapter))
        outside = [float(h) for h in hs if h > edge * (1.0 + 1e-9)]
        if outside:
            raise ValueError(f"hs must lie in (0, {edge:.4g}], the range where {adapter.NAME}'s bias is asymptotic "
                             f"in h on this target (h x rate x steps per call <= {ASYMPTOTIC:g}, "
                             f"runs.asymptotic_edge); got {', '.join(f'{h:.4g}' for h in outside)} outside it")
    whitening = Whitening.of(target)
    names, exact, weights = whitening.names(), whitening.exact(), whitening.weights()
    checks, measurements = [], {}
    for plan in plan_modules:
        try:
            rule = plan_rule(plan)
        except ValueError as exc:
            for kind in ("limit", "weak_order"):
                checks.append(Check(f"{kind}[{plan.NAME}]", None, "-", "-", skipped=str(exc), claim=True))
            continue
        p, asserted = expected_order(adapter, plan)
        plan_hs = hs if given or rule.kind != "partition" else hs * PARTITION_START
        calls = sum(b + w for b, w in ladder_calls(adapter, target, plan, plan_hs, gamma, batch_size))
        if n_chains is None and calls > level.max_calls:
            why = (f"not measured at level {level.name!r}: the asymptotic range (h <= {plan_hs[0]:.3g}) needs "
                   f"{calls:,} calls per chain, the level allows {level.max_calls:,} (a larger level)")
            for kind in ("stationary", "limit", "weak_order"):
                checks.append(Check(f"{kind}[{plan.NAME}]", None, "-", "-", skipped=why, claim=True))
            continue
        m = measure_plan(adapter, target, plan, gamma=gamma, batch_size=batch_size, hs=plan_hs, level=level,
                         budget=budget, n_chains=n_chains, seed=seed, order=p or 1.0)
        measurements[plan.NAME] = m
        fit_order(m, exact, weights, level.n_boot, seed)
        fit_limit(m, p or 1.0)
        checks.append(stationary_check(m, names))
        checks.append(stable_fit(limit_check(m, p or 1.0, names), m, chosen=not given))
        if plan.NAME == "full" and adapter.EXACT_GAUSSIAN_X:
            checks.append(exact_check(m, names))
        else:
            passed, measured, why = slope_verdict(m, p if asserted else None)
            exp_txt = "-" if p is None else f"{p:g}" + ("" if asserted else " (observed, not a claim)")
            checks.append(stable_fit(Check(f"weak_order[{plan.NAME}]", passed, exp_txt, measured, list(m.hs),
                                           list(m.errors), skipped=why, claim=bool(asserted and p is not None)),
                                     m, chosen=not given))
        if getattr(adapter, "EQUIVALENT_SCHEME", None) is not None:
            checks.append(oracle_check(adapter, m, target, gamma, batch_size, whitening, names))
    checks.append(_documented_check(adapter, measurements.get("full"), checks))
    return AdapterReport(adapter.NAME, f"{target.name} (d={target.dim}, {target.n_data} data terms)", checks,
                         time.time() - t0, level=level.name, gamma=gamma, measurements=measurements,
                         adapter=adapter)


MIN_STABLE = 3  # an order or a limit is fitted on at least this many stable step sizes


def stable_fit(check: Check, m: PlanMeasurement, *, chosen: bool) -> Check:
    """``check`` (an order or limit fit of ``m``) with the ladder's instability judged: a chain that
    turned non-finite at a step size the toolkit chose (``chosen``: inside the asymptotic range it
    computed) fails the claim, and the step size is never dropped from the verdict; at step sizes
    the caller gave, or with no instability, a fit on fewer than :data:`MIN_STABLE` stable step
    sizes is inconclusive."""
    unstable = [f"{h:.3g}" for h, ok in zip(m.hs, m.stable, strict=True) if not ok]
    if unstable:
        check.measured += f"; non-finite chains at h = {', '.join(unstable)}"
    if unstable and chosen and check.claim:
        check.passed, check.skipped = False, ""
        check.measured += " (step sizes the toolkit chose in the asymptotic range: the sampler diverged there)"
    elif int(np.sum(m.stable)) < MIN_STABLE and check.claim and check.passed is not False:
        check.passed = None
        check.skipped = f"fewer than {MIN_STABLE} stable step sizes ({int(np.sum(m.stable))} of {len(m.hs)})"
    return check


def _documented_check(adapter, full: PlanMeasurement | None, checks: list) -> Check:
    """The library's documented weak order for full gradients against the full plan's slope (an
    exact law is consistent with any order)."""
    name = "documented_order[full]"
    claim = adapter.WEAK_ORDER
    expected = "-" if claim is None else f"{claim:g} ({adapter.CLAIM_SOURCE})"
    if full is None:
        return Check(name, None, expected, "-", skipped="the full plan was not measured", claim=claim is not None)
    if adapter.EXACT_GAUSSIAN_X:
        exact = next(c for c in checks if c.name == "weak_order[full]")
        return Check(name, None if claim is None else exact.passed, expected, "exact law: " + exact.measured,
                     claim=claim is not None)
    passed, measured, why = slope_verdict(full, claim)
    if claim is None:
        why = ""
        measured += f"; no order documented ({adapter.CLAIM_SOURCE})"
    return Check(name, passed, expected, measured, skipped=why, claim=claim is not None)
