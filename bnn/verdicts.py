"""Paired per-metric verdicts of the samplers against Adam and SWA (better, equal within two
standard errors, worse), whether the paper's claim holds for a data set, and the per-data-set
markdown of the regime level."""

from __future__ import annotations

import math

import numpy as np

from bnn import metrics
from bnn.figures import REFERENCE, format_mean_std

LOWER_IS_BETTER = {"accuracy": False, "nll": True, "ace": True, "rps": True, "ece": True, "brier": True}


def paired_verdicts(dataset: str, runs: list, methods, references=REFERENCE, sizes=(1, 2, 4),
                    metrics_=("accuracy", "nll", "ace", "rps")) -> list[dict]:
    """Each method against each reference, per ensemble size and metric, on the runs where both
    have a predictive (paired by run: the method's samples start from that run's SWA point).
    The runs are split into disjoint groups of ``size`` in run order; ``diff`` is the mean over
    groups of (method - reference), ``se`` the standard deviation of the differences over
    ``sqrt(groups)``. ``verdict``: ``better`` / ``worse`` when the difference is beyond 2 ``se``
    in the metric's good / bad direction, ``equal`` within 2 ``se``, ``no s.e.`` with one group.

    Parameters
    ----------
    dataset : str
        The data set, written into every row.
    runs : list of dict
        The runs: ``labels`` (the test labels, read from the first run) and ``methods``
        (``{method: {"probs": predictive or None, ...}}``).
    methods : iterable of str
        The methods judged.
    references : iterable of str
        The references they are compared with (default :data:`bnn.figures.REFERENCE`).
    sizes : iterable of int
        The ensemble sizes (group sizes); a size with no full group is skipped.
    metrics_ : iterable of str
        The metrics of :func:`bnn.metrics.evaluate` compared, keys of :data:`LOWER_IS_BETTER`.

    Returns
    -------
    list of dict
        Per method, reference, size and metric: ``dataset``, ``method``, ``reference``, ``size``,
        ``metric``, ``method_mean``, ``reference_mean`` (over groups), ``diff``, ``se`` (``""``
        with one group), ``groups``, ``runs`` (paired) and ``verdict``.
    """
    labels = np.array(runs[0]["labels"])
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
                    d = a - b
                    se = float(d.std(ddof=1) / np.sqrt(groups)) if groups > 1 else math.nan
                    diff = float(d.mean())
                    if math.isnan(se):
                        verdict = "no s.e."
                    elif abs(diff) <= 2 * se:
                        verdict = "equal"
                    else:
                        verdict = "better" if (diff < 0) == LOWER_IS_BETTER[metric] else "worse"
                    rows.append({"dataset": dataset, "method": method, "reference": ref, "size": size,
                                 "metric": metric, "method_mean": float(a.mean()), "reference_mean": float(b.mean()),
                                 "diff": diff, "se": "" if math.isnan(se) else se, "groups": groups,
                                 "runs": len(both), "verdict": verdict})
    return rows


def claim_holds(rows: list[dict], dataset: str, method: str = "SMS-UBU") -> str:
    """The paper's claim for ``method`` on ``dataset`` from :func:`paired_verdicts`'s rows: lower
    NLL and ACE than both Adam and SWA at every ensemble size with a standard error.

    Parameters
    ----------
    rows : list of dict
        The rows of :func:`paired_verdicts`.
    dataset : str
        The data set judged.
    method : str
        The method judged.

    Returns
    -------
    str
        ``holds`` (every NLL and ACE verdict with a standard error is ``better``), ``reversed``
        (every one ``worse``), ``does not hold`` (none ``better``), ``holds in part``
        (otherwise), or ``not measured`` (no such verdict).
    """
    mine = [r for r in rows if r["dataset"] == dataset and r["method"] == method and r["metric"] in ("nll", "ace")
            and r["verdict"] != "no s.e."]
    if not mine:
        return "not measured"
    better = sum(r["verdict"] == "better" for r in mine)
    worse = sum(r["verdict"] == "worse" for r in mine)
    if better == len(mine):
        return "holds"
    if worse == len(mine):
        return "reversed"
    return "does not hold" if better == 0 else "holds in part"


def regime_markdown(dataset: str, table_rows: list[dict], verdicts: list[dict], methods, settings: str,
                    extra: list[str]) -> str:
    """The paper-style table (mean ± s.d. over disjoint groups, single runs and ensembles) of the
    ``methods`` and the paired verdicts against Adam and SWA.

    Parameters
    ----------
    dataset : str
        The data set (the section's title); rows of other data sets are skipped.
    table_rows : list of dict
        The ensemble table's rows (:func:`bnn.figures.ensemble_rows`).
    verdicts : list of dict
        The rows of :func:`paired_verdicts`.
    methods : iterable of str
        The methods of the table, in order.
    settings : str
        The run's settings, one line under the title.
    extra : list of str
        Lines written after the settings.

    Returns
    -------
    str
        The markdown section, ending with a blank line.
    """
    keyed = {(r["method"], r["size"], r["metric"]): r for r in table_rows if r["dataset"] == dataset}
    sizes = sorted({r["size"] for r in table_rows if r["dataset"] == dataset and r["size"] != ""})
    cols = ("accuracy", "nll", "ace", "rps")
    lines = [f"## {dataset}", "", f"Settings: {settings}", "", *extra, "",
             "| method | size | " + " | ".join(cols) + " | runs |", "| --- | --- | " + " | ".join("---" for _ in cols)
             + " | --- |"]
    for method in methods:
        for size in sizes:
            cells = [keyed.get((method, size, m)) for m in cols]
            if all(c is None for c in cells):
                continue
            runs = next(c for c in cells if c is not None)
            values = " | ".join(format_mean_std(c["mean"], c["std"]) if c else "" for c in cells)
            lines.append(f"| {method} | {size} | {values} | {runs['runs']} (+{runs['diverged_runs']} diverged) |")
    lines += ["", "Paired differences (method - reference) over disjoint groups of runs, verdict at 2 s.e.:", "",
              "| method | vs | size | " + " | ".join(cols) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |"]
    vk = {(r["method"], r["reference"], r["size"], r["metric"]): r for r in verdicts if r["dataset"] == dataset}
    for method, ref, size in dict.fromkeys((r["method"], r["reference"], r["size"]) for r in verdicts
                                           if r["dataset"] == dataset):
        cells = []
        for m in cols:
            v = vk.get((method, ref, size, m))
            cells.append("" if v is None else f"{v['diff']:+.4f}" + (f" ± {v['se']:.4f}" if v["se"] != "" else "")
                         + f" {v['verdict']}")
        lines.append(f"| {method} | {ref} | {size} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"
