"""Every adapted sampler x every plan, measured, beside the toolkit's own UBU and BAOAB: the
computation behind the conformance report (``sms-langevin run conformance``).

What each sampler should show is declared by its adapter before anything is measured
(``RULE_ORDER`` and ``RULE_SOURCE``: the order of the update rule, from reading its source) and by
the plans (``WEAK_ORDER``: ``iid`` caps every rule at 1, ``rr`` and ``sms`` at 2): a first-order
rule has order 1 under every plan, since the symmetric sweep removes the minibatch error's leading
term but not the rule's own; a second-order rule (posteriors' ``baoa``, BAOAB's positions) keeps
order 2 under ``sms`` and drops to 1 under ``iid``.
"""

from __future__ import annotations

import math

import numpy as np

from integrators.plans import PLANS
from integrators.targets import GaussianTarget
from theory_checks._verify import default_target
from theory_checks.adapters._analysis import SLOPE_CI_MAX, SLOPE_TOL, expected_order
from theory_checks.adapters._measure import ADAPTERS, AdapterReport, measure_adapter
from theory_checks.adapters._runs import Whitening, critical_friction, default_ladder

TARGETS = {
    "default": ("three non-commuting Gaussian terms and a prior, d = 2", default_target),
    "one_d": ("the paper's 1-D example, two terms", GaussianTarget.one_d_example),
}
TOOLKIT_SCHEMES = ("ubu", "baoab")  # drawn beside every measured ladder (exact oracle)
TOOLKIT_POINTS = 9                  # step sizes of each toolkit line


def positive_controls() -> dict:
    """Samplers with a planted bug, measured beside the libraries' (the measurement must flag them):
    noise 2% too hot (the detectable effect) first, then 5% too hot."""
    from theory_checks.adapters._planted import HOT_SGHMC, NOISY_SGHMC
    return {HOT_SGHMC.NAME: HOT_SGHMC, NOISY_SGHMC.NAME: NOISY_SGHMC}


def conformance_adapters() -> dict:
    """``{name: adapter}``: the registry's adapters, then the positive controls."""
    return {**{name: ADAPTERS[name] for name in ADAPTERS}, **positive_controls()}


def resolve_target(name: str) -> GaussianTarget:
    if name not in TARGETS:
        raise ValueError(f"unknown conformance target {name!r}; choose from {', '.join(TARGETS)}")
    return TARGETS[name][1]()


def conformance(adapters=None, *, targets=None, plans=None, level="quick", seed: int = 0) -> list[AdapterReport]:
    """Every adapter (default: the registry) on every target (default: the 2-D default target and
    the paper's 1-D example) with every plan: one :class:`AdapterReport` each."""
    adapters = list(ADAPTERS) if adapters is None else adapters
    targets = [resolve_target(name) for name in TARGETS] if targets is None else targets
    return [measure_adapter(a, target=t, plans=plans, level=level, seed=seed) for a in adapters for t in targets]


# ----------------------------------------------------------------------------- plain data
def _finite(values) -> list:
    return [float(v) if v is not None and np.isfinite(v) else None for v in np.ravel(np.asarray(values, float))]


def record(report: AdapterReport, *, target: str = "") -> dict:
    """One report as plain data: the adapter's declarations, each plan's ladder and fit, the checks."""
    adapter = report.adapter
    plans = {}
    for name, m in report.measurements.items():
        p, asserted = expected_order(adapter, name)
        b0 = None if m.intercept is None else float(np.max(np.abs(m.intercept)))
        plans[name] = {"hs": _finite(m.hs), "errors": _finite(m.errors), "noise": _finite(m.noise),
                       "n_chains": [int(n) for n in m.n_chains], "slope": _finite([m.slope])[0],
                       "calls": [[int(b), int(w)] for b, w in m.calls],
                       "ci": _finite(m.ci), "fit": [int(j) for j in m.fit], "b0_max": b0,
                       "expected": None if p is None or not math.isfinite(p) else p, "asserted": asserted}
    checks = [{"name": c.name, "passed": c.passed, "expected": c.expected, "measured": c.measured,
               "verdict": c.verdict} for c in report.checks]
    return {"sampler": adapter.NAME, "library": adapter.LIBRARY, "dynamics": adapter.DYNAMICS,
            "rule_order": adapter.RULE_ORDER, "rule_source": adapter.RULE_SOURCE,
            "documented_order": adapter.WEAK_ORDER, "claim_source": adapter.CLAIM_SOURCE,
            "exact_gaussian_x": bool(adapter.EXACT_GAUSSIAN_X),
            "equivalent_scheme": getattr(adapter, "EQUIVALENT_SCHEME", None),
            "target": target, "target_label": report.target, "gamma": float(report.gamma), "level": report.level,
            "seconds": float(report.seconds), "ok": report.ok, "failed": list(report.failed),
            "inconclusive": list(report.inconclusive), "plans": plans, "checks": checks,
            "positive_control": adapter.LIBRARY == "planted"}


def check_of(rec: dict, name: str) -> dict | None:
    return next((c for c in rec["checks"] if c["name"] == name), None)


def toolkit_ladders(target: GaussianTarget, *, gamma: float, batch_size: int = 1, hs=None,
                    schemes=TOOLKIT_SCHEMES, plans=None) -> dict:
    """``{scheme: {plan: {"hs", "errors"}}}``: the whitened stationary bias ``|b(h)|`` (the measured
    ladders' metric) of the toolkit's schemes from the exact oracle; ``None`` where unstable."""
    from theory_checks.oracle import UnstableStepError, stationary_moments

    if hs is None:
        edges = [default_ladder(target, gamma, batch_size, dyn, 1)[0] for dyn in ("kinetic", "overdamped")]
        hs = np.geomspace(min(edges) / 10.0, max(edges), TOOLKIT_POINTS)
    whitening = Whitening.of(target)
    exact, weights = whitening.exact(), whitening.weights()
    out = {}
    for scheme in schemes:
        out[scheme] = {}
        for plan in (list(PLANS) if plans is None else plans):
            errors = []
            for h in hs:
                try:
                    law = stationary_moments(target, scheme, plan, float(h), gamma,
                                             None if plan == "full" else batch_size)
                except UnstableStepError:
                    errors.append(None)
                    continue
                b = whitening.of_moments(law.mean, law.second_moment) - exact
                errors.append(float(np.sqrt(np.sum(weights * b * b))))
            out[scheme][plan] = {"hs": _finite(hs), "errors": errors}
    return out


def toolkit_record(target: str) -> dict:
    """The toolkit lines of one target at the friction the adapters are measured at."""
    t = resolve_target(target)
    return {"sampler": "toolkit", "target": target, "gamma": critical_friction(t),
            "ladders": toolkit_ladders(t, gamma=critical_friction(t))}


# ----------------------------------------------------------------------------- verdicts
def _consistent(plan: dict, order: float) -> bool:
    lo, hi = plan["ci"]
    return lo is not None and hi is not None and not (hi < order - SLOPE_TOL or lo > order + SLOPE_TOL)


def order_class(rec: dict, plan: str) -> str:
    """The measured order of ``plan``: ``"exact"`` (a declared exact law that held), ``"1"`` or
    ``"2"`` (the slope's interval fits one and not the other), ``"below noise"`` (no step size's
    bias stands ``FIT_MARGIN`` noise levels up), ``"no slope (one step size above noise)"``,
    ``"no limit"`` (the bias does not vanish as ``h -> 0``), else ``"inconclusive"``."""
    m = rec["plans"].get(plan)
    if m is None:
        return "not measured"
    limit = check_of(rec, f"limit[{plan}]")
    if limit is not None and limit["passed"] is False:
        return "no limit"
    if plan == "full" and rec["exact_gaussian_x"]:
        exact = check_of(rec, "weak_order[full]")
        if exact is not None and exact["passed"]:
            return "exact"
    if m["slope"] is None:  # fewer than 2 step sizes above noise: those are the fit's
        return "below noise" if not m["fit"] else "no slope (one step size above noise)"
    lo, hi = m["ci"]
    if lo is None or hi is None or hi - lo > SLOPE_CI_MAX:
        return "inconclusive"
    one, two = _consistent(m, 1.0), _consistent(m, 2.0)
    return "1" if one and not two else "2" if two and not one else "inconclusive"


def sms_effect(rec: dict) -> str:
    """Whether feeding the sampler the symmetric sweep changes its order, against ``iid``."""
    iid, sms = order_class(rec, "iid"), order_class(rec, "sms")
    if iid in ("1", "2") and sms in ("1", "2"):
        return f"leaves its order at {sms}" if iid == sms else f"changes its order from {iid} to {sms}"
    return f"undecided (iid: {iid}, sms: {sms})"


def control_verdict(rec: dict) -> str:
    """A positive control's outcome: ``"detected (FAILED: ...)"``, or ``"NOT DETECTED: ..."`` with
    the reason (the level cannot detect the effect: its limit checks inconclusive; or they passed,
    a missed bug)."""
    if rec.get("failed"):
        return f"detected (FAILED: {', '.join(rec['failed'])})"
    limits = [c for c in rec["checks"] if c["name"].startswith("limit[")]
    blind = [c for c in limits if c["passed"] is None]
    if blind:
        reason = blind[0]["verdict"].removeprefix("INCONCLUSIVE (").removesuffix(")")
        return f"NOT DETECTED: level {rec['level']} {reason}"
    return "NOT DETECTED: every limit check passed (a missed bug)"


def is_control(rec: dict) -> bool:
    return bool(rec.get("positive_control", rec.get("library") == "planted"))


def conformance_table(records) -> str:
    """One row per sampler x target, one column per plan: the slope with its interval against the
    expected order and the limit and order verdicts (markdown).  Takes records or reports."""
    records = [r if isinstance(r, dict) else record(r) for r in records]
    plans = list(dict.fromkeys(p for r in records for p in r["plans"]))
    controls = [f"positive control {r['sampler']} on {r['target_label'].split(' (')[0]}: {control_verdict(r)}"
                for r in records if is_control(r)]
    lines = ["| sampler | target | " + " | ".join(plans) + " | documented | sms against iid |",
             "|---|---|" + "---|" * (len(plans) + 2)]
    for r in records:
        cells = []
        for p in plans:
            limit, order = check_of(r, f"limit[{p}]"), check_of(r, f"weak_order[{p}]")
            if limit is None or order is None:
                cells.append("-")
                continue
            cells.append(f"limit {limit['verdict']}; {order['measured'].split(';')[0]} vs {order['expected']}: "
                         f"{order['verdict']}")
        doc = check_of(r, "documented_order[full]")
        lines.append(f"| {r['sampler']} | {r['target_label'].split(' (')[0]} | " + " | ".join(cells)
                     + f" | {doc['verdict'] if doc else '-'} | {sms_effect(r)} |")
    return "\n".join(lines + ([""] + controls if controls else []))

