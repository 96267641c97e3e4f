"""Weak-order curves of every registered scheme x plan on the 1-D example, from the exact oracle
(one panel per plan; a scheme or plan registered from user code gets its curve or panel)."""

from __future__ import annotations

import numpy as np

from integrators import PLANS, SCHEMES, GaussianTarget
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, ListOf, Nullable, Record, SameLength
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict
from theory_checks.orders import weak_order

ORDER = 20  # its place in the registry, the list and the report
_PANELS_PER_ROW = 4


def units(preset: str) -> list[dict]:
    """The independent units of work of the weak-order table: one per scheme and plan (``{"scheme", "plan"}``)."""
    return [{"scheme": s, "plan": p} for s in list(SCHEMES) for p in list(PLANS)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    """Compute one unit.

    The variance bias at each step size of a ladder on the one-dimensional Gaussian, and its fitted slope.
    """
    hs = 2.0 ** -np.arange(2, 10)
    fit = weak_order(GaussianTarget.one_d_example(), unit["scheme"], unit["plan"], hs, 1.0,
                     None if unit["plan"] == "full" else 1)
    return {"hs": hs.tolist(), "bias": [None if not np.isfinite(b) else float(b) for b in fit.errors],
            "slope": fit.slope, "unstable": fit.unstable}


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the weak-order table: its figures, tables and measured numbers."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = [{"scheme": unit["scheme"], "plan": unit["plan"], "h": h, "variance_bias": "" if b is None else b,
              "unstable": h in res["unstable"], "slope_finest4": res["slope"]}
             for unit, res in results for h, b in zip(res["hs"], res["bias"], strict=True)]
    plans = list(dict.fromkeys(unit["plan"] for unit, _ in results))
    n_rows = -(-len(plans) // _PANELS_PER_ROW)
    n_cols = min(len(plans), _PANELS_PER_ROW)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(4 * n_cols, 4 * n_rows), sharey=True, squeeze=False)
    for ax in axes.flat[len(plans):]:
        ax.set_visible(False)
    for ax, plan in zip(axes.flat, plans, strict=False):
        for unit, res in results:
            if unit["plan"] != plan:
                continue
            pts = [(h, b) for h, b in zip(res["hs"], res["bias"], strict=True) if b is not None and b > 0]
            exact = bool(pts) and max(b for _, b in pts) < 1e-12  # zero bias up to rounding
            if pts and not exact:
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{unit['scheme'].upper()} "
                        f"(slope {res['slope']:.2f})")
            elif exact:
                ax.plot([], [], " ", label=f"{unit['scheme'].upper()}: exact (|bias| < 1e-12)")
            for h in res["unstable"]:  # inside the panel: a dotted line at h, the label down from its top
                ax.axvline(h, color="0.6", ls=":", lw=0.8)
                ax.annotate(f"{unit['scheme'].upper()} unstable", (h, 0.98), xycoords=("data", "axes fraction"),
                            xytext=(-3, 0), textcoords="offset points", fontsize=9, rotation=90, ha="right",
                            va="top", bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 1})
        ax.set(xscale="log", yscale="log", title=f"plan: {plan}", xlabel="h")
        ax.legend(fontsize=9)
    for row in axes:
        row[0].set_ylabel("|bias of Var x| (exact)")
    fig.tight_layout()
    slopes = {f"{u['scheme'].upper()} x {u['plan']}": r["slope"] for u, r in results
              if max((b for b in r["bias"] if b is not None), default=0.0) >= 1e-12}
    exact = [f"{u['scheme'].upper()} x {u['plan']}" for u, r in results
             if max((b for b in r["bias"] if b is not None), default=0.0) < 1e-12]
    measured = "; ".join(f"{k}: {v:.2f}" for k, v in slopes.items() if np.isfinite(v))
    measured += f". Exact x-variance (|bias| < 1e-12 at every stable h): {', '.join(exact) or 'none'}"
    return Drawing(measured=f"Fitted slopes on the four finest h: {measured}.", figures={"weak_orders": fig},
                   tables={"weak_orders": table})


def verdict(results: list, preset: str) -> Verdict:
    """The claim judged by the claims table's rule (:func:`theory_checks._verify.weak_order_verdict`): each
    scheme x plan with an asserted weak order has its slope on the four finest h within the tolerance of
    it, or its declared exact law; and EM x full is unstable at h = 1/4."""
    from theory_checks._declared import asserted, expected_weak_order
    from theory_checks._verify import WEAK_TOL, exact_x_declared, target_scale, weak_order_verdict

    scale = target_scale(GaussianTarget.one_d_example())
    failed, held = [], []
    for unit, res in results:
        scheme, plan = unit["scheme"], unit["plan"]
        errors = [np.nan if b is None else abs(b) for b in res["bias"]]
        name = f"{scheme.upper()} x {plan}"
        if exact_x_declared(scheme, plan):
            passed, measured = weak_order_verdict(res["hs"], errors, None, scale, exact_declared=True)
        elif asserted(scheme, plan) and expected_weak_order(scheme, plan) is not None:
            passed, measured = weak_order_verdict(res["hs"], errors, expected_weak_order(scheme, plan), scale)
            name += f" (order {expected_weak_order(scheme, plan):g})"
        else:
            continue
        (held if passed else failed).append(f"{name}: {measured}")
    em = [res for unit, res in results if unit["scheme"] == "em" and unit["plan"] == "full"]
    if em:
        (held if 0.25 in em[0]["unstable"] else failed).append(
            f"EM x full at h = 1/4: {'unstable' if 0.25 in em[0]['unstable'] else 'stable'}")
    rule = f"slope on the four finest h within {WEAK_TOL:g} of the asserted order, or the declared exact law"
    if failed:
        return Verdict(DOES_NOT_HOLD, f"{len(failed)} of {len(failed) + len(held)} asserted claims miss: {rule}",
                       "; ".join(failed))
    if not held:
        return Verdict(NOT_TESTABLE, "no scheme x plan of this run carries an asserted weak order")
    return Verdict(HOLDS, f"all {len(held)} asserted claims: {rule} (exact oracle, no Monte Carlo error)",
                   "; ".join(held))


EXPERIMENT = Experiment(
    ID="weak_orders",
    TITLE="Exact stationary variance bias against h, every scheme x plan (1-D example)",
    CLAIM="UBU x full, UBU x sms and BAOAB x sms have weak order 2; every iid sampler and EM have weak "
          "order 1; BAOAB x full has an exact x-variance; EM is unstable at h = 1/4 (design claims table).",
    COST={"quick": "~2 s", "full": "~2 s"},
    PRESETS=("quick", "full"),  # the oracle needs no smaller level: tiny runs quick
    RESULT=SameLength(Record(hs=ListOf(NUMBER), bias=ListOf(Nullable(NUMBER)), slope=Nullable(NUMBER),
                             unstable=ListOf()), "hs", "bias"),
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT"]
