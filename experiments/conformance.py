"""Other libraries' samplers under the toolkit's measurement: every adapted sampler (posteriors,
BlackJAX, and a planted bug as positive control) x every plan, its stationary bias against the
exact Gaussian target over a ladder of step sizes, beside the toolkit's UBU and BAOAB (exact
oracle). The computation is :mod:`theory_checks.adapters._conformance`; one unit is one sampler on
one target (or the toolkit's exact lines of one target). A sampler whose library is not installed
is skipped and named (``pip install -e '.[adapters]'``)."""

from __future__ import annotations

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import ANY, BOOL, INTEGER, NUMBER, SKIPPED, TEXT, ListOf, MapOf, Nullable, OneOf, Record, SameLength
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict

ORDER = 60  # its place in the registry, the list and the report
_LADDER = Nullable(SameLength(Record(hs=ListOf(NUMBER), errors=ListOf(Nullable(NUMBER))), "hs", "errors"))
_PLAN = SameLength(Record(hs=ListOf(NUMBER), errors=ListOf(Nullable(NUMBER)), noise=ListOf(Nullable(NUMBER)),
                          n_chains=ListOf(INTEGER), slope=Nullable(NUMBER), ci=ListOf(Nullable(NUMBER)),
                          fit=ListOf(INTEGER), b0_max=Nullable(NUMBER), expected=Nullable(NUMBER), asserted=BOOL),
                   "hs", "errors", "noise")
LEVEL = {"tiny": "tiny", "quick": "quick", "full": "standard"}  # theory_checks.adapters._runs.LEVELS
TARGETS = {"tiny": ("default",), "quick": ("default",), "full": ("default", "one_d")}
EXACT = 1e-12  # a toolkit line whose bias stays below this is an exact law, up to rounding


def tiny_samplers() -> tuple[str, ...]:
    """The ``tiny`` level's samplers (every sampler of the registry at the other levels): the names of the
    first registered adapter of each library, and of the positive controls."""
    from theory_checks.adapters._conformance import conformance_adapters

    first = {}
    for name, adapter in conformance_adapters().items():
        first.setdefault(adapter.LIBRARY, name)
    return tuple(first.values())


def units(preset: str) -> list[dict]:
    """The independent units of work of the conformance figure.

    One per target (``TARGETS[preset]``) for the toolkit's exact lines (``{"sampler": "toolkit",
    "target"}``), and one per adapted sampler and target (``tiny_samplers`` at ``tiny``).
    """
    from theory_checks.adapters._conformance import conformance_adapters

    names = tiny_samplers() if preset == "tiny" else tuple(conformance_adapters())
    return ([{"sampler": "toolkit", "target": t} for t in TARGETS[preset]]
            + [{"sampler": name, "target": t} for t in TARGETS[preset] for name in names])


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    """Compute one unit: a sampler measured on its target at the preset's level, or the toolkit's lines."""
    from theory_checks.adapters import _conformance as conformance
    from theory_checks.adapters._protocol import LibraryMissing

    if unit["sampler"] == "toolkit":
        return conformance.toolkit_record(unit["target"])
    adapter = conformance.conformance_adapters()[unit["sampler"]]
    try:
        report = conformance.measure_adapter(adapter, target=conformance.resolve_target(unit["target"]),
                                             level=LEVEL[preset], seed=seed)
    except LibraryMissing as exc:
        return {"sampler": unit["sampler"], "target": unit["target"], "skipped": str(exc)}
    return conformance.record(report, target=unit["target"])


# the tables' headers, written also where no library sampler was measured (no rows)
ROW_COLUMNS = ("sampler", "library", "target", "plan", "rule_order", "expected_order", "expected_is_theorem", "slope",
               "ci_low", "ci_high", "fitted_step_sizes", "limit_b0_max", "limit", "weak_order", "oracle",
               "measured_order", "sms_against_iid", "chains_min", "chains_max", "gamma", "level", "rule_source",
               "positive_control")
POINT_COLUMNS = ("sampler", "source", "target", "plan", "h", "bias_whitened", "noise")


def _rows(records: list[dict]) -> list[dict]:
    """The table's rows: one per sampler x target x plan (:data:`ROW_COLUMNS`)."""
    from theory_checks.adapters._conformance import check_of, control_verdict, is_control, order_class, sms_effect

    out = []
    for r in records:
        for plan, m in r["plans"].items():
            lo, hi = m["ci"]
            out.append({"sampler": r["sampler"], "library": r["library"], "target": r["target"], "plan": plan,
                        "rule_order": r["rule_order"], "expected_order": m["expected"],
                        "expected_is_theorem": m["asserted"], "slope": m["slope"], "ci_low": lo, "ci_high": hi,
                        "fitted_step_sizes": len(m["fit"]), "limit_b0_max": m["b0_max"],
                        "limit": (check_of(r, f"limit[{plan}]") or {}).get("verdict", ""),
                        "weak_order": (check_of(r, f"weak_order[{plan}]") or {}).get("verdict", ""),
                        "oracle": (check_of(r, f"oracle[{plan}]") or {}).get("verdict", ""),
                        "measured_order": order_class(r, plan), "sms_against_iid": sms_effect(r),
                        "chains_min": min(m["n_chains"]), "chains_max": max(m["n_chains"]),
                        "gamma": r["gamma"], "level": r["level"], "rule_source": r["rule_source"],
                        "positive_control": control_verdict(r) if is_control(r) else ""})
    return out


def _points(records: list[dict], toolkit: list[dict]) -> list[dict]:
    """Every plotted point: measured ``|b(h)|`` with its noise level, and the toolkit's exact lines
    (:data:`POINT_COLUMNS`)."""
    out = [{"sampler": r["sampler"], "source": "measured", "target": r["target"], "plan": plan, "h": h,
            "bias_whitened": e, "noise": n}
           for r in records for plan, m in r["plans"].items()
           for h, e, n in zip(m["hs"], m["errors"], m["noise"], strict=True)]
    out += [{"sampler": f"toolkit.{scheme}", "source": "exact oracle", "target": t["target"], "plan": plan, "h": h,
             "bias_whitened": e, "noise": 0.0}
            for t in toolkit for scheme, by_plan in t["ladders"].items() for plan, lad in by_plan.items()
            for h, e in zip(lad["hs"], lad["errors"], strict=True)]
    return out


def control_note(records: list[dict]) -> str:
    """The positive controls' verdicts among the measured ``records``, in one line; ``""`` without controls."""
    from theory_checks.adapters._conformance import control_verdict, is_control

    parts = [f"{r['sampler']} on {r['target']}: {control_verdict(r)}" for r in records if is_control(r)]
    return "Positive controls: " + "; ".join(parts) + "." if parts else ""


def plot(records: list[dict], toolkit: list[dict], skipped: list[dict]):
    """The figure: ``|b(h)|`` against ``h``, one panel per target and plan, beside the toolkit's exact lines;
    the ``skipped`` units (a library missing) are named on it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from theory_checks.adapters._analysis import FIT_MARGIN

    targets = list(dict.fromkeys([t["target"] for t in toolkit] + [r["target"] for r in records]))
    plans = list(dict.fromkeys(p for t in toolkit for by_plan in t["ladders"].values() for p in by_plan))
    colors = plt.get_cmap("tab10").colors
    samplers = list(dict.fromkeys(r["sampler"] for r in records))
    # each panel's legend stands below it (inside, it covered the curves): room for its entries
    entries = 1 + len({s for t in toolkit for s in t["ladders"]}) + len(samplers)
    fig, axes = plt.subplots(len(targets), len(plans), sharey="row", squeeze=False,
                             figsize=(3.6 * len(plans), (3.4 + 0.16 * entries) * len(targets) + 0.8))
    for row, target in zip(axes, targets, strict=True):
        for ax, plan in zip(row, plans, strict=True):
            for t in (t for t in toolkit if t["target"] == target):
                for scheme, lad in ((s, by_plan[plan]) for s, by_plan in t["ladders"].items()):
                    pts = [(h, e) for h, e in zip(lad["hs"], lad["errors"], strict=True) if e is not None]
                    color = "k" if scheme == "ubu" else "0.6"
                    if pts and max(e for _, e in pts) < EXACT:
                        ax.plot([], [], "-", color=color, lw=2, label=f"toolkit {scheme.upper()}: exact law")
                    elif pts:
                        ax.plot(*zip(*pts, strict=True), "-", color=color, lw=2,
                                label=f"toolkit {scheme.upper()} (exact oracle)")
            for r in (r for r in records if r["target"] == target and plan in r["plans"]):
                m = r["plans"][plan]
                drawn = [(h, e, n) for h, e, n in zip(m["hs"], m["errors"], m["noise"], strict=True) if e]
                pts = [(h, e) for h, e, _ in drawn]
                color = colors[samplers.index(r["sampler"]) % len(colors)]
                planted = r["library"] == "planted"
                if pts:  # filled where the bias stands FIT_MARGIN noise levels up (what a slope may use)
                    above = [i for i, (_, e, n) in enumerate(drawn) if n is not None and e >= FIT_MARGIN * n]
                    slope = "" if m["slope"] is None else f", slope {m['slope']:.2f}"
                    ax.plot(*zip(*pts, strict=True), "--" if planted else "-", marker="o", ms=4, color=color,
                            markevery=above, label=r["sampler"] + slope)
                    within = [p for i, p in enumerate(pts) if i not in above]
                    if within:
                        ax.plot(*zip(*within, strict=True), "o", ms=4, mfc="white", color=color)
            ax.set(xscale="log", yscale="log", title=f"{target} target, plan {plan}", xlabel="h")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            # 8 pt: readable where the report's page shrinks the figure to its width
            ax.legend(fontsize=8, title="sampler", title_fontsize=8, loc="upper center",
                      bbox_to_anchor=(0.5, -0.16), frameon=False)
        row[0].set_ylabel("|stationary bias| (whitened)")
    # the points are explained only where a library sampler drew some (else only the toolkit's lines are drawn)
    note = (f"Filled points: the bias stands {FIT_MARGIN:g} Monte Carlo noise levels up (a slope is fitted on "
            f"two or more); hollow: within the noise; a bias indistinguishable from zero is not drawn. "
            if records else "") + skipped_note(skipped)
    controls = control_note(records)
    fig.text(0.01, 0.005, note + ("\n" + controls if controls else ""), fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.05 if controls else 0.03, 1, 1))
    return fig


def skipped_note(skipped: list) -> str:
    """The samplers not measured, the library samplers apart from the planted controls (which wrap one)."""
    names = sorted({s["sampler"] for s in skipped})
    planted = [n for n in names if n.split(".")[0] == "planted"]
    library = [n for n in names if n not in planted]
    wrap = ("controls skipped with the library they wrap" if len(planted) > 1
            else "control skipped with the library it wraps")
    parts = ([f"Skipped, library not installed: {', '.join(library)}"] if library else []) \
        + ([f"planted {wrap}: {', '.join(planted)}"] if planted else [])
    return ("; ".join(parts) + f" ({skipped[0]['skipped']}).") if parts else ""


def checks_left(rec: dict) -> str:
    """The checks of a measured sampler that did not pass, in parentheses: ``FAILED`` ones, then
    ``inconclusive`` ones (no verdict); ``""`` where all passed."""
    parts = ([f"FAILED: {', '.join(rec['failed'])}"] if rec.get("failed") else []) \
        + ([f"inconclusive: {', '.join(rec['inconclusive'])}"] if rec.get("inconclusive") else [])
    return f" ({'; '.join(parts)})" if parts else ""


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the conformance measurements: the figure, the table and the verdicts."""
    from theory_checks.adapters._conformance import order_class, sms_effect

    toolkit = [res for _, res in results if res["sampler"] == "toolkit"]
    skipped = [res for _, res in results if "skipped" in res]
    records = [res for _, res in results if res["sampler"] != "toolkit" and "skipped" not in res]
    verdicts = []
    for r in records:
        orders = ", ".join(f"{p} {order_class(r, p)}" for p in r["plans"])
        verdicts.append(f"{r['sampler']} on {r['target']}: {orders}; the symmetric sweep {sms_effect(r)}"
                        + checks_left(r))
    measured = "; ".join(verdicts) + "." if verdicts else "No sampler measured."
    controls = control_note(records)
    if controls:
        measured += " " + controls
    if skipped:
        measured += " " + skipped_note(skipped)
    return Drawing(measured=measured, figures={"conformance": plot(records, toolkit, skipped)},
                   tables={"conformance": _rows(records), "conformance_points": _points(records, toolkit)},
                   columns={"conformance": list(ROW_COLUMNS), "conformance_points": list(POINT_COLUMNS)})


def verdict(results: list, preset: str) -> Verdict:
    """Each measured library sampler's checks against its expected order (its record's ``failed`` and
    ``inconclusive``), and each positive control detected: does not hold where a sampler's check failed or
    a control passed every limit check; not testable where a check or a control was inconclusive at this
    level, or no library sampler was measured (none installed); holds otherwise."""
    from theory_checks.adapters._conformance import control_verdict, is_control

    records = [res for _, res in results if res["sampler"] != "toolkit" and "skipped" not in res]
    real = [r for r in records if not is_control(r)]
    controls = {f"{r['sampler']} on {r['target']}": control_verdict(r) for r in records if is_control(r)}
    failed = [f"{r['sampler']} on {r['target']}{checks_left(r)}" for r in real if r.get("failed")]
    missed = [f"{k}: {v}" for k, v in controls.items() if v.startswith("NOT DETECTED: every")]
    unsure = [f"{r['sampler']} on {r['target']}{checks_left(r)}" for r in real if r.get("inconclusive")]
    unsure += [f"{k}: {v}" for k, v in controls.items() if v.startswith("NOT DETECTED: level")]
    numbers = (f"{len(real)} library sampler{'s' if len(real) != 1 else ''} measured, {len(failed)} with a "
               f"failed check, {len(unsure)} inconclusive; {len(controls)} positive control"
               + ("s" if len(controls) != 1 else ""))
    if failed or missed:
        return Verdict(DOES_NOT_HOLD, "measured against the expected orders: " + "; ".join(failed + missed), numbers)
    if not real:
        return Verdict(NOT_TESTABLE, "no library sampler was measured here (posteriors and BlackJAX not installed)",
                       numbers)
    if unsure:
        return Verdict(NOT_TESTABLE, "no check failed, but these could not decide at this level: "
                       + "; ".join(unsure), numbers)
    return Verdict(HOLDS, "every library sampler passed its checks against its expected order and every "
                   "positive control was detected", numbers)


EXPERIMENT = Experiment(
    ID="conformance",
    TITLE="Conformance: library samplers x minibatch plans, stationary bias against h beside UBU and BAOAB",
    CLAIM="Expected before measuring (each adapter's RULE_ORDER and RULE_SOURCE): SGLD, SGHMC (Euler) and SGNHT "
          "are first-order rules, so order 1 under every plan (the symmetric sweep removes the minibatch error's "
          "leading term, not the rule's own); posteriors' baoa has BAOAB's positions: exact on Gaussian targets "
          "with full gradients, order 1 under iid, 2 under sms; BlackJAX's sghmc refreshes its momentum every "
          "call and has no weak order (its law tends to temperature L/(L-1)); the planted copies with noise x1.02 "
          "(the detectable limit error, 0.04) and x1.05 fail their limit checks at every plan at quick and above; "
          "the tiny level cannot detect a 0.04 limit error and says that its positive controls were missed.",
    COST={"tiny": ("~1-2 min with posteriors and BlackJAX installed (3 samplers, up to 512 chains); seconds "
                   "without them"),
          "quick": "~10 min with --workers 2 (9 samplers on the 2-D target, chains set by the detectable limit "
                   "error: benchmarks/RESULTS.md, bench_conformance.py)",
          "full": "an hour or more with --workers 2 (both targets, 4 step sizes, BlackJAX's sghmc in its range)"},
    PRESETS=("tiny", "quick", "full"),
    RESULT=OneOf(Record(sampler=TEXT, target=TEXT, gamma=NUMBER, ladders=MapOf(MapOf(_LADDER))),  # the toolkit's
                 Record(sampler=TEXT, library=TEXT, target=TEXT, rule_order=Nullable(NUMBER), rule_source=TEXT,
                        exact_gaussian_x=BOOL, gamma=NUMBER,
                        level=TEXT, ok=BOOL, plans=MapOf(_PLAN),
                        checks=ListOf(Record(name=TEXT, passed=ANY, expected=ANY, measured=ANY, verdict=TEXT))),
                 SKIPPED),  # its library not installed
    LIBRARIES=("posteriors", "blackjax", "jax", "torch"),  # their versions join each unit's fingerprint
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT"]
