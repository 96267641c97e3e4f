"""Bayesian neural networks (Section 5, Algorithm 4): calibrated ensembles from SMS-UBU around SWA
points against Adam and SWA, the step-size panel, traces + R-hat, Hessian norms (and, at the full
preset, the CIFAR-10 table). One unit is one independent run (:func:`experiments.bnn._pipeline.run`)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from bnn._metrics import RHAT_MIXED, RHAT_STRICT
from experiments.bnn import _curves as curves
from experiments.bnn import _figures as figures
from experiments.bnn import _presets as presets
from experiments.bnn import _verdicts as verdicts
from experiments.bnn._presets import REGIME_H, missing_data
from experiments.bnn._verdicts import MIN_DF
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import ANY, INTEGER, MISSING, NUMBER, TEXT, ListOf, MapOf, Nullable, OneOf, Record
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict, worst

# fewest runs per data set whose ensembles can test the claim: 8 single runs give 7 degrees of freedom (regime runs 32,
# quick 12); the tiny levels' 2 runs give two single-run groups, a standard error from two numbers
MIN_RUNS_TO_TEST = 8

ORDER = 70  # its place in the registry, the list and the report
ACE_READINGS = ("ace_top_label", "ace_classwise")  # keys of bnn._metrics.METRICS: both ACE definitions, each named


def units(preset: str) -> list[dict]:
    """The independent units of work of the BNN experiment: one per data set and independent run,
    ``{"dataset", "run"}``."""
    return [{"dataset": e.name, "run": i} for e in presets.experiments(preset) for i in range(e.n_runs)]


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    """Compute one unit: one run of the preset's configuration for its data set (:func:`run_config`), of
    the structure ``EXPERIMENT.RESULT``, or ``{"missing": why}``; ``threads`` are the torch threads the executor
    gives it (None: one)."""
    return run_config(presets.run_config(preset, unit["dataset"], unit["run"]), seed, threads=threads)


def missing_input(unit: dict, preset: str) -> str | None:
    """Why a unit's data set is absent, or None when its files are found (asked before a run starts;
    paths only)."""
    from experiments.bnn import _presets as presets
    return presets.missing_data(preset, unit["dataset"])


def inputs(unit: dict, preset: str) -> dict | None:
    """The data file or folder a unit reads, by name and size (:func:`experiments.bnn._presets.data_identity`);
    None for data made in memory or found nowhere.  Part of its fingerprint, so a unit computed on the
    development subset is not reused for the full PneumoniaMNIST, nor the reverse."""
    from experiments.bnn import _presets as presets
    return presets.data_identity(preset, unit["dataset"])


def run_config(cfg, seed: int, *, threads: int | None = None) -> dict:
    """One run of :func:`experiments.bnn._pipeline.run` as a unit, in whichever process or Dask worker runs it.

    Parameters
    ----------
    cfg : RunConfig
        The run's configuration.
    seed : int
        The unit's seed (the run derives its parts' seeds).
    threads : int or None, optional
        The torch threads (None: one).

    Returns
    -------
    dict
        The run's result, or ``{"missing": why}`` when the data set's files are absent.
    """
    import torch

    from data_sets import DataError
    from experiments.bnn import _pipeline as pipeline

    # one thread unless the executor gives more: on a shared CPU, threads of small convolutions mostly wait
    torch.set_num_threads(threads or 1)
    try:
        return pipeline.run(cfg, seed)  # the unit's seed as it is: the run derives its parts' seeds
    except DataError as exc:
        return {"missing": str(exc)}


def _settings(runs: list) -> str:
    c = runs[0]["config"]
    return (f"{runs[0]['data']}; network {c['network']} at width {c['width']:g} ({runs[0]['n_parameters']:,} "
            f"parameters; reduced width)" if c["width"] != 1 else f"{runs[0]['data']}; network {c['network']}") + (
        f"; {len(runs)} runs; batch {c['batch_size']}; Adam {c['epochs_train']} epochs from lr {c['lr_adam']:g} "
        f"(power-1 decay), SWA {c['epochs_swa']} epochs at {c['lr_swa']:g}; samplers {c['epochs_burn']} burn-in + "
        f"{c['epochs_sample']} sample epochs at h = {c['h']:g}, rho = {c['rho']:.4g}, rho_max = "
        f"{c['rho_max_factor']:g} rho, gamma = 1/rho; prior precision {c['prior_precision']:g} on weights")


def ensemble_verdict(rows, dataset, size, metric, testable=True):
    """SMS-UBU against SWA on one metric at one ensemble size, the summary sentence's reading (``""`` where
    either has no row): ``lower`` or ``higher`` where the difference's 95% t interval over the ``G``
    disjoint groups (``G - 1`` degrees of freedom, the two methods' spreads combined) excludes 0, ``not
    distinguishable`` otherwise; with fewer than :data:`experiments.bnn._verdicts.MIN_DF` degrees of freedom, or
    where the run cannot test the claim (``testable`` False: too few runs), the difference alone,
    said to be no test.  The corrected verdicts of the regime's tables are
    :func:`experiments.bnn._verdicts.paired_verdicts`'."""
    get = {r["method"]: r for r in rows if r["dataset"] == dataset and r["size"] == size and r["metric"] == metric}
    if "SMS-UBU" not in get or "SWA" not in get:
        return ""
    s, w = get["SMS-UBU"], get["SWA"]
    diff = s["mean"] - w["mean"]
    groups = max(1, min(s["n_groups"], w["n_groups"]))
    if not testable or groups - 1 < MIN_DF:
        why = "no test" if not testable else f"no test: {groups - 1} d.f. < {MIN_DF}"
        return (f"{metric} {s['mean']:.4f} vs SWA {w['mean']:.4f} (difference {diff:+.4f} over {groups} "
                f"group{'s' if groups != 1 else ''}: {why})")
    from scipy.stats import t
    half = float(t.isf(0.025, groups - 1)) * np.hypot(s["std"] or 0.0, w["std"] or 0.0) / np.sqrt(groups)
    word = "lower" if diff < -half else "higher" if diff > half else "not distinguishable"
    return (f"{metric} {s['mean']:.4f} vs SWA {w['mean']:.4f} ({word}: difference {diff:+.4f}, 95% t interval "
            f"+-{half:.4f} at {groups - 1} d.f., {groups} groups, uncorrected)")


def too_small(preset: str, by_data: dict) -> str:
    """Why this run cannot test the claim (fewer than :data:`MIN_RUNS_TO_TEST` runs of a data set in
    ``by_data``, ``{data set: [run results]}``; CIFAR-10 is no ensemble verdict and is left out), as the
    sentence that opens the section's measurements; ``""`` when it can."""
    small = {d: len(runs) for d, runs in by_data.items() if d != "cifar10" and len(runs) < MIN_RUNS_TO_TEST}
    if not small:
        return ""
    counts = "; ".join(f"{n} run{'s' if n != 1 else ''}, {d}" for d, n in small.items())
    return (f"The {preset} preset cannot test this claim: {counts} (a verdict needs at least {MIN_RUNS_TO_TEST} "
            "independent runs per data set, as the quick and regime presets run; the numbers below only show that "
            "the code path runs, and a difference between them is no evidence either way)")


def _range(values) -> str:
    return f"{min(values):.3f}" if min(values) == max(values) else f"{min(values):.3f}..{max(values):.3f}"


def rhat_summary(rows) -> str:
    """Both R-hats of the training loss (classic and rank-normalised split) over the SWA points ``rows``, and
    what they say against the bar the figure draws: below :data:`bnn._metrics.RHAT_MIXED` (1.1) mixed enough
    to report, and whether below the strict :data:`bnn._metrics.RHAT_STRICT` (1.01) too (below 1 is noise of
    few draws, not a pass)."""
    n = len(rows)
    classic = [r["rhat"] for r in rows]
    rank = [r["rank_split_rhat"] for r in rows if r.get("rank_split_rhat", "") != ""]
    text = f"R-hat of the training loss over {n} SWA point{'s' if n != 1 else ''}: {_range(classic)}"
    if rank:
        text += f", rank-normalised split {_range(rank)}"
    worst = max(classic + rank)
    draws = sorted({r["draws"] for r in rows if r.get("draws", "") != ""})
    per_chain = f", {draws[0]} draws per chain" if draws else ""
    if worst > RHAT_MIXED:
        text += f" (above {RHAT_MIXED:g}: not mixed at this preset{per_chain})"
    elif worst > RHAT_STRICT:
        text += f" (below {RHAT_MIXED:g}: mixed by the bar used; above the strict {RHAT_STRICT:g}{per_chain})"
    else:
        text += f" (below the strict {RHAT_STRICT:g}{per_chain})"
    return text


def _regime(dataset: str, runs: list, rows: list, rhats: list):
    """The claim in the regime of the paper for one data set: the overconfidence of the baselines
    along training (figure), the paper-style table and the paired verdicts of every sampler of the
    runs against Adam and SWA (Markdown), and the measured sentences."""
    summary = curves.curve_summary(curves.curve_rows(dataset, runs))
    figure = curves.plot_curve(summary, dataset)
    # every sampler some run ran (later runs of the regime run SMS-UBU alone)
    samplers = list(dict.fromkeys(s for r in runs for s in r["config"]["samplers"] if s in r["methods"]))
    # the annealed baseline, and the paper's where the runs trained it (the paper's claim is about that one)
    refs = [r for r in (*figures.REFERENCE, *figures.PAPER_REFERENCE) if r in runs[0]["methods"]]
    paired = verdicts.paired_verdicts(dataset, runs, samplers, references=refs)
    text = []
    over = curves.overconfidence(summary, dataset)
    if over is not None:
        text.append(f"{dataset}: Adam's mean test NLL is lowest at step {over['best_step']} ({over['best_nll']:.4f}, "
                    f"accuracy {over['best_accuracy']:.4f}) and {over['adam_nll']:.4f} at its last step "
                    f"{over['adam_step']} (accuracy {over['adam_accuracy']:.4f}, training loss "
                    f"{over['adam_train_loss']:.3g})" + (f", SWA {over['swa_nll']:.4f} (accuracy "
                                                          f"{over['swa_accuracy']:.4f})" if "swa_nll" in over else "")
                    + (f": overconfident (the NLL {over['rise']:.4f} above its lowest, {over['rise_se']:.4f} s.e., "
                       f"while the accuracy stays)" if over["overconfident"] else
                       f": not overconfident (the NLL {over['rise']:.4f} above its lowest, {over['rise_se']:.4f} s.e.)")
                    + f", over {over['runs']} runs")
    mine = [r for r in rhats if r["dataset"] == dataset and r["rhat"] != ""]
    if mine:
        rank = [r["rank_split_rhat"] for r in mine]
        text.append(f"{dataset}: R-hat of the SMS-UBU training-loss traces ({mine[0]['chains']} chains, "
                    f"{mine[0]['draws']} draws after {mine[0]['burn_in_epochs']} burn-in epochs, {len(mine)} SWA "
                    f"points): Gelman-Rubin {_range([r['rhat'] for r in mine])}, rank-normalised split {_range(rank)} "
                    f"({'below' if max(rank) < RHAT_MIXED else 'not all below'} {RHAT_MIXED})")
    for method in samplers:
        sizes = sorted({v["size"] for v in paired if v["method"] == method and v["se"] != ""})
        holds = verdicts.claim_holds(paired, dataset, method)
        parts = []
        for v in paired:
            if v["method"] == method and v["size"] == 1 and v["metric"] in ("nll", *ACE_READINGS):
                parts.append(f"{v['metric']} {v['method_mean']:.4f} vs {v['reference']} {v['reference_mean']:.4f} "
                             f"({v['verdict']})")
        per_size = []
        for metric in ("nll", *ACE_READINGS):
            for ref in refs:
                vs = [v["verdict"] for v in paired if v["method"] == method and v["metric"] == metric
                      and v["reference"] == ref and v["size"] in sizes]
                per_size.append(f"{metric} vs {ref} {'/'.join(vs)}")
        text.append(f"{dataset}: {method} against {', '.join(refs)} (lower NLL and ACE at sizes "
                    f"{'/'.join(map(str, sizes))}: {', '.join(per_size)}): claim {holds}; single runs "
                    + "; ".join(parts))
    settings = _settings(runs)
    c = runs[0]["config"]
    extra = [f"Test set: {len(runs[0]['labels'])} images, class counts "
             f"{np.bincount(runs[0]['labels']).tolist()}; training set {runs[0]['n_train']} images.",
             f"Variants: step convention {c.get('step_convention', 'paper')!r}, control variate "
             f"{c.get('control_variate', False)} for the samplers of the run; SMS-UBU (notebook) with step h/2 "
             f"and the control variate at x*."] + text
    markdown = verdicts.regime_markdown(dataset, rows, paired, [*refs, *samplers], settings, extra)
    return figure, markdown, curves.curve_rows(dataset, runs), paired, text


def not_run(results: list) -> list[str]:
    """The units that did not run (data absent, or skipped for a library not installed), said once per data
    set and reason with how many units it concerns: ``"<dataset>: data absent for <n> units (<why>)"`` (the 64
    runs of an absent data set at the full preset are one line, not 64 copies of it)."""
    counts = Counter((unit.get("dataset", "?"), "data absent" if "missing" in res else "skipped",
                      res.get("missing", res.get("skipped"))) for unit, res in results
                     if "missing" in res or "skipped" in res)
    return [f"{dataset}: {what} for {n} unit{'s' if n > 1 else ''} ({why})"
            for (dataset, what, why), n in counts.items()]


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the BNN runs: ensembles, step sizes, traces, Hessians and verdicts, from
    every ``(unit, result)`` pair (absent data sets named)."""
    by_data: dict = {}
    for unit, res in results:
        if "missing" not in res and "skipped" not in res:
            by_data.setdefault(unit["dataset"], []).append(res)
    drawing = Drawing(measured="")
    untestable = too_small(preset, by_data)
    measured = [untestable] if untestable else []
    ens, steps, traces, rhats, hess = [], [], [], [], []
    curve_table, paired_table = [], []
    settings, regime_md = [], []
    for dataset, runs in by_data.items():
        if dataset == "cifar10":
            drawing.tables["bnn_cifar10"] = figures.cifar10_rows(runs)
            continue
        rows = figures.ensemble_rows(dataset, runs)
        ens += rows
        settings.append(_settings(runs))
        drawing.figures[f"bnn_ensembles_{dataset}"] = figures.plot_ensembles(rows, dataset)
        steps += figures.step_size_rows(dataset, runs)
        t, run_rhats = figures.trace_rows(dataset, runs)
        traces += t
        rhats += run_rhats
        hess += curves.hessian_rows(dataset, runs)
        if any(r.get("curve") for r in runs):
            figure, markdown, c, v, text = _regime(dataset, runs, rows, run_rhats)
            drawing.figures[f"bnn_overconfidence_{dataset}"] = figure
            regime_md.append(markdown)
            curve_table += c
            paired_table += v
            measured += text
        # single runs and the largest ensembles that still have two disjoint groups (a standard deviation)
        sizes = sorted({r["size"] for r in rows if r["size"] != "" and r["n_groups"] >= 2})
        for size in dict.fromkeys((sizes[0], sizes[-1])) if sizes else ():
            verdicts_here = (ensemble_verdict(rows, dataset, size, m, not untestable) for m in ("nll", *ACE_READINGS))
            claims = [v for v in verdicts_here if v]
            if claims:
                measured.append(f"{dataset}, ensembles of {size}: SMS-UBU " + "; ".join(claims))
        div = sorted({r["method"] for r in rows if r["diverged_runs"]})
        if div:
            measured.append(f"{dataset}: diverged runs for {', '.join(div)}")
    if curve_table:
        drawing.tables.update(bnn_curve=curve_table, bnn_verdicts=paired_table)
        drawing.texts["bnn_regime.md"] = "".join(regime_md)
    if ens:
        drawing.tables["bnn_ensembles"] = ens
        drawing.texts["bnn_ensembles.md"] = figures.ensemble_markdown(ens, " | ".join(settings))
    if steps:
        drawing.tables["bnn_step_size"] = steps
        drawing.figures["bnn_step_size"] = figures.plot_step_size(steps)
        for r in steps:
            if r["metric"] == "nll" and r["method"] == "SMS-UBU" and r["mean"] != "":
                ref = next(x for x in steps if x["dataset"] == r["dataset"] and x["method"] == "SWA"
                           and x["metric"] == "nll")
                measured.append(f"{r['dataset']} width {r['width']:g}: single-run NLL at h = {r['h']:g}: "
                                f"SMS-UBU {r['mean']:.4f} vs SWA {ref['mean']:.4f}")
    if traces:
        drawing.tables.update(bnn_traces=traces, bnn_rhat=rhats)
        drawing.figures["bnn_traces"] = figures.plot_traces(traces, rhats)
        good = [r for r in rhats if r["rhat"] != ""]
        if good:
            measured.append(rhat_summary(good))
    if hess:
        drawing.tables["bnn_hessian"] = hess
        drawing.figures["bnn_hessian"] = curves.plot_hessian(hess)
        med = {p: np.median([r["value"] for r in hess if r["point"] == p]) for p in dict.fromkeys(
            r["point"] for r in hess)}
        short = sum(not r["converged"] for r in hess)
        measured.append("median |H|_2: " + ", ".join(f"{p} {v:.3g}" for p, v in med.items())
                        + (f" (power iteration not converged in {short} of {len(hess)} estimates: those are "
                           "lower bounds)" if short else ""))
    measured += not_run(results)
    drawing.measured = ". ".join(measured) + "."
    return drawing


def verdict(results: list, preset: str) -> Verdict:
    """SMS-UBU against SWA per data set at the largest ensemble size with two disjoint groups, on NLL and each
    ACE reading (:func:`ensemble_verdict`'s 95% t interval): holds where every one is lower; does not hold
    where one is higher or none is distinguishable; not testable with too few runs (:func:`too_small`), too
    few groups, or no data."""
    by_data, missing = {}, not_run(results)
    for unit, res in results:
        if "missing" not in res and "skipped" not in res and unit["dataset"] != "cifar10":
            by_data.setdefault(unit["dataset"], []).append(res)
    if not by_data:
        return Verdict(NOT_TESTABLE, "no data set was run here", "; ".join(missing))
    small = too_small(preset, by_data)
    if small:
        return Verdict(NOT_TESTABLE, small.removeprefix(f"The {preset} preset cannot test this claim: "))
    outcomes, numbers = [], []
    for dataset, runs in by_data.items():
        rows = figures.ensemble_rows(dataset, runs)
        sizes = sorted({r["size"] for r in rows if r["size"] != "" and r["n_groups"] >= 2})
        said = [ensemble_verdict(rows, dataset, sizes[-1], m) for m in ("nll", *ACE_READINGS)] if sizes else []
        said = [v for v in said if v]
        if not said or any("no test" in v for v in said):
            outcomes.append(NOT_TESTABLE)
        elif any("(higher" in v for v in said) or not any("(lower" in v for v in said):
            outcomes.append(DOES_NOT_HOLD)
        else:
            outcomes.append(HOLDS if all("(lower" in v for v in said) else DOES_NOT_HOLD)
        numbers.append(f"{dataset}, ensembles of {sizes[-1] if sizes else '-'}: " + ("; ".join(said) or "no ensemble"))
    outcome = worst(outcomes)
    reason = {HOLDS: "SMS-UBU's ensembles are lower than SWA's on NLL and every ACE reading (95% t interval)",
              DOES_NOT_HOLD: "SMS-UBU's ensembles are not lower than SWA's on every calibration metric "
                             "(higher, or not distinguishable at 95%)",
              NOT_TESTABLE: "too few disjoint groups of runs for a test"}[outcome]
    return Verdict(outcome, reason, ". ".join(numbers + missing))


def __getattr__(name: str):
    # run imports torch: imported when first asked, so that this module imports without it
    if name == "run":
        from experiments.bnn._pipeline import run
        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


EXPERIMENT = Experiment(
    ID="bnn",
    TITLE="BNN ensembles: SMS-UBU around SWA points against Adam and SWA (accuracy, NLL, ACE, RPS)",
    CLAIM="Ensembles of SMS-UBU samples around independent SWA points are better calibrated (lower NLL, ACE, "
          "RPS) than Adam or SWA ensembles of the same size, with a small gain in accuracy (paper, Section 5, "
          "Figs. 3-6 and the CIFAR-10 table).",
    COST={"tiny": "~15 s (embedded digits, width 1/4, 2 runs)",
          "quick": ("~9 min on 2 idle cores with --workers 2 (chest X-ray subset, width 1/4, 12 runs; SMS-UBU, "
                    "Adam, SWA)"),
          "full": "GPU or cluster: 64 runs per data set at the paper's epochs and widths (local data files)",
          "regime": ("~65 min on 2 idle cores with --workers 2, ~80 min under a load of 3.6 (estimated: stratified "
                     "X-ray subset and digits, 32 runs each, the paper's optimizer steps; Adam, SWA, the paper's "
                     "Adam and SWA, SMS-UBU; SMS-UBU (notebook), SG-UBU, SG-HMC on 8 runs)"),
          "regime-tiny": "~10 s (the regime's code path on 300 images, 2 runs per data set)"},
    PRESETS=presets.LEVELS,  # this module has its own tiny level (the registry maps tiny to quick elsewhere)
    RESULT=OneOf(Record(config=MapOf(ANY), data=TEXT, n_parameters=INTEGER, n_train=INTEGER, labels=ListOf(INTEGER),
                        methods=MapOf(Record(probs=Nullable(ListOf(ListOf(NUMBER))), diverged=ANY))),  # null: diverged
                 MISSING),  # its data set's files absent
    REQUIRES=("torch",),  # what its runs import (experiments.bnn._presets and this module import without it)
    LIBRARIES=("torch",),  # its version joins each unit's fingerprint
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
    missing_input=missing_input,
    inputs=inputs,
)

__all__ = ["EXPERIMENT", "REGIME_H", "missing_data", "run", "run_config"]
