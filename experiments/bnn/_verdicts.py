"""Paired verdicts of the samplers against Adam and SWA, whether the paper's claim holds for a data
set, and the per-data-set markdown of the regime level.

Statistics. A method and a reference are paired by run (the method's samples start from that run's
SWA point). For an ensemble size ``m`` the paired runs are split into ``G = runs // m`` disjoint
groups in run order, each group's ensemble is scored, and the ``G`` paired differences
``d_g = method_g - reference_g`` are tested with a two-sided one-sample t test:
``t = mean(d) / (sd(d) / sqrt(G))`` at ``G - 1`` degrees of freedom (the groups are independent;
the runs inside a group are not separate observations). The interval is the per-test
``1 - level`` t interval ``mean(d) +/- t_{1-level/2, G-1} sd(d) / sqrt(G)``.

The tests that make up one claim form one family, Holm-corrected: for a method on a data set, every
tested comparison of the claim's metrics (:data:`CLAIM_METRICS`: NLL and both ACE readings) against
every reference at every ensemble size; each other metric (accuracy, RPS) is a family of its own
over references and sizes. Holm's step-down adjustment of ``k`` p-values sorted ascending,
``p_adj(i) = max_{j <= i} min(1, (k - j + 1) p(j))``, keeps the probability of any false call in a
family at most ``level`` whatever the dependence between its tests.

Verdicts: ``better`` / ``worse`` when the Holm-adjusted p-value is below ``level`` (the direction
from the sign of the difference and :data:`LOWER_IS_BETTER`), ``not distinguishable`` otherwise,
and ``not tested: ...`` where fewer than ``min_df`` (default :data:`MIN_DF`) degrees of freedom are
available: such a comparison is shown with its difference but calls nothing and joins no family.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from bnn import _metrics as metrics
from experiments.bnn._figures import REFERENCE, format_mean_std

LOWER_IS_BETTER = {"accuracy": False, "nll": True, "ace_top_label": True, "ace_classwise": True, "rps": True,
                   "ece": True, "brier": True}
COMPARED = ("accuracy", "nll", "ace_top_label", "ace_classwise", "rps")  # the metrics judged by default
CLAIM_METRICS = ("nll", "ace_top_label", "ace_classwise")  # the paper's claim: lower NLL and ACE (both readings)
ACE_READINGS = ("ace_top_label", "ace_classwise")
LEVEL = 0.05  # family-wise error rate of one claim
MIN_DF = 7  # fewer degrees of freedom than this call no difference (a t with 1-3 d.f. has very heavy tails)
CORRECTION = "Holm"
BETTER, WORSE, SAME, NOT_TESTED = "better", "worse", "not distinguishable", "not tested"


def paired_t(d, *, level: float = LEVEL) -> dict:
    """Two-sided one-sample t test of paired differences over the last axis of ``d`` (``G >= 2``): arrays
    ``mean, se, df, t, p, low, high`` (the ``1 - level`` interval). All-equal differences (``se = 0``) give
    ``p = 0`` when nonzero, ``p = 1`` when zero."""
    d = np.asarray(d, dtype=float)
    g = d.shape[-1]
    if g < 2:
        raise ValueError(f"a paired t test needs at least 2 differences, got {g}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    mean = d.mean(axis=-1)
    se = d.std(axis=-1, ddof=1) / math.sqrt(g)
    df = g - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.inf * np.sign(mean)))
    p = np.where(se > 0, 2.0 * stats.t.sf(np.abs(t), df), np.where(mean == 0, 1.0, 0.0))
    half = stats.t.ppf(1.0 - level / 2.0, df) * se
    out = {"mean": mean, "se": se, "df": np.full_like(mean, df), "t": t, "p": p, "low": mean - half,
           "high": mean + half}
    return {k: float(v) for k, v in out.items()} if d.ndim == 1 else out


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values over the last axis of ``p``, in the input's order:
    ``p_adj(i) = max_{j <= i} min(1, (k - j + 1) p(j))`` over the sorted p-values."""
    p = np.asarray(p, dtype=float)
    k = p.shape[-1]
    if k == 0:
        return p.copy()
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * (k - np.arange(k))
    adjusted = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=-1)
    return out


def decide(diff: float, p_adjusted: float, lower_is_better: bool, *, level: float = LEVEL) -> str:
    """``better`` / ``worse`` where ``p_adjusted < level`` (by the sign of ``diff``, method minus
    reference), ``not distinguishable`` otherwise."""
    if not p_adjusted < level:
        return SAME
    return BETTER if (diff < 0) == lower_is_better else WORSE


def paired_verdicts(dataset: str, runs: list, methods, *, references=REFERENCE, sizes=(1, 2, 4), metrics_=COMPARED,
                    claim_metrics=CLAIM_METRICS, level: float = LEVEL, min_df: int = MIN_DF) -> list[dict]:
    """Each method against each reference, per ensemble size and metric, on the runs where both
    have a predictive, tested and Holm-corrected as the module says."""
    unknown = [m for m in metrics_ if m not in LOWER_IS_BETTER]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {sorted(LOWER_IS_BETTER)}")
    labels = np.array(runs[0]["labels"])
    claim_metrics = tuple(claim_metrics)
    rows = []
    for method in methods:
        for ref in references:
            both = [r for r in runs if r["methods"].get(method, {}).get("probs") is not None
                    and r["methods"].get(ref, {}).get("probs") is not None]
            for size in sizes:
                groups = len(both) // size
                if groups < 1:
                    continue
                scores = {name: [metrics.evaluate(metrics.ensemble_probs(
                    [both[g * size + i]["methods"][name]["probs"] for i in range(size)]), labels)
                    for g in range(groups)] for name in (method, ref)}
                for metric in metrics_:
                    a = np.array([s[metric] for s in scores[method]])
                    b = np.array([s[metric] for s in scores[ref]])
                    row = {"dataset": dataset, "method": method, "reference": ref, "size": size, "metric": metric,
                           "method_mean": float(a.mean()), "reference_mean": float(b.mean()),
                           "diff": float((a - b).mean()), "se": "", "low": "", "high": "", "df": groups - 1, "p": "",
                           "p_holm": "", "family": "", "correction": "", "groups": groups, "runs": len(both)}
                    if groups >= 2:
                        test = paired_t(a - b, level=level)
                        row.update(se=test["se"], low=test["low"], high=test["high"])
                        if groups - 1 >= min_df:
                            row["p"] = test["p"]
                    row["verdict"] = (f"{NOT_TESTED}: {groups - 1} d.f. < {min_df}" if row["p"] == "" else "")
                    rows.append(row)
    _correct(rows, claim_metrics, level)
    return rows


def _family(row: dict, claim_metrics: tuple) -> str:
    if row["metric"] in claim_metrics:
        return f"{row['method']} claim on {row['dataset']} ({', '.join(claim_metrics)})"
    return f"{row['method']} {row['metric']} on {row['dataset']}"


def _correct(rows: list, claim_metrics: tuple, level: float) -> None:
    """Holm within each family of tested rows; fills ``family``, ``correction``, ``p_holm`` and ``verdict``."""
    families: dict = {}
    for r in rows:
        if r["p"] != "":
            families.setdefault(_family(r, claim_metrics), []).append(r)
    for name, members in families.items():
        adjusted = holm([r["p"] for r in members])
        for r, q in zip(members, adjusted, strict=True):
            r.update(family=name, correction=f"{CORRECTION} over {len(members)} tests", p_holm=float(q),
                     verdict=decide(r["diff"], float(q), LOWER_IS_BETTER[r["metric"]], level=level))


def claim_holds(rows: list[dict], dataset: str, method: str = "SMS-UBU", *, metrics_=CLAIM_METRICS) -> str:
    """The paper's claim for ``method`` on ``dataset`` from :func:`paired_verdicts`'s rows: lower
    values of ``metrics_`` than every reference at every tested ensemble size. Pass
    ``("nll", "ace_top_label")`` or ``("nll", "ace_classwise")`` to judge it under one ACE reading."""
    mine = [r for r in rows if r["dataset"] == dataset and r["method"] == method and r["metric"] in tuple(metrics_)]
    if not mine:
        return "not measured"
    tested = [r for r in mine if not r["verdict"].startswith(NOT_TESTED)]
    if not tested:
        return NOT_TESTED
    better = sum(r["verdict"] == BETTER for r in tested)
    worse = sum(r["verdict"] == WORSE for r in tested)
    if better == len(tested):
        return "holds"
    if worse == len(tested):
        return "reversed"
    return "does not hold" if better == 0 else "holds in part"


def _cell(v: dict) -> str:
    """One comparison in a table cell: difference, interval, corrected p-value, verdict."""
    text = f"{v['diff']:+.4f}"
    if v["low"] != "":
        text += f" [{v['low']:+.4f}, {v['high']:+.4f}]"
    if v["p_holm"] != "":
        text += f" p={v['p_holm']:.2g}"
    return f"{text} {v['verdict']}"


def regime_markdown(dataset: str, table_rows: list[dict], verdicts: list[dict], methods, settings: str,
                    extra: list[str], *, level: float = LEVEL) -> str:
    """The paper-style table (mean ± s.d. over disjoint groups, single runs and ensembles) of the
    ``methods``, the paired verdicts against Adam and SWA (difference, per-test interval,
    Holm-corrected p-value, degrees of freedom, verdict), and the claim under each ACE reading."""
    keyed = {(r["method"], r["size"], r["metric"]): r for r in table_rows if r["dataset"] == dataset}
    sizes = sorted({r["size"] for r in table_rows if r["dataset"] == dataset and r["size"] != ""})
    cols = tuple(m for m in COMPARED if any(k[2] == m for k in keyed) or any(v["metric"] == m for v in verdicts))
    names = [metrics.LABELS.get(m, m) for m in cols]
    lines = [f"## {dataset}", "", f"Settings: {settings}", "", *extra, "",
             "| method | size | " + " | ".join(names) + " | runs |", "| --- | --- | " + " | ".join("---" for _ in cols)
             + " | --- |"]
    for method in methods:
        for size in sizes:
            cells = [keyed.get((method, size, m)) for m in cols]
            if all(c is None for c in cells):
                continue
            runs = next(c for c in cells if c is not None)
            values = " | ".join(format_mean_std(c["mean"], c["std"]) if c else "" for c in cells)
            lines.append(f"| {method} | {size} | {values} | {runs['runs']} (+{runs['diverged_runs']} diverged) |")
    mine = [r for r in verdicts if r["dataset"] == dataset]
    lines += ["", f"Paired differences (method - reference) over disjoint groups of runs: mean [{1 - level:.0%} t "
              f"interval at groups - 1 d.f., per test], {CORRECTION}-corrected p-value, verdict at {level:g} "
              f"family-wise ({CORRECTION} over the tests of one claim: NLL and both ACE readings against every "
              f"reference at every tested size; accuracy and RPS a family each); fewer than {MIN_DF} d.f. call "
              "nothing (not tested). ACE (top-label): the largest probability in 20 equal-count bins (the authors' "
              "code); ACE (class-wise): 20 equal-count bins per class (Nixon et al.).", "",
              "| method | vs | size | d.f. | " + " | ".join(names) + " |",
              "| --- | --- | --- | --- | " + " | ".join("---" for _ in cols) + " |"]
    vk = {(r["method"], r["reference"], r["size"], r["metric"]): r for r in mine}
    for method, ref, size in dict.fromkeys((r["method"], r["reference"], r["size"]) for r in mine):
        df = next(r["df"] for r in mine if (r["method"], r["reference"], r["size"]) == (method, ref, size))
        cells = ["" if (method, ref, size, m) not in vk else _cell(vk[(method, ref, size, m)]) for m in cols]
        lines.append(f"| {method} | {ref} | {size} | {df} | " + " | ".join(cells) + " |")
    claims = []
    for method in dict.fromkeys(r["method"] for r in mine):
        readings = [f"under {metrics.LABELS[a]} {claim_holds(mine, dataset, method, metrics_=('nll', a))}"
                    for a in ACE_READINGS if any(r["metric"] == a for r in mine)]
        if readings:
            claims.append(f"- {method}: lower NLL and ACE than {', '.join(dict.fromkeys(r['reference'] for r in mine))}"
                          f" at every tested size: {'; '.join(readings)}.")
    if claims:
        lines += ["", "The claim, per ACE reading:", "", *claims]
    return "\n".join(lines) + "\n\n"
