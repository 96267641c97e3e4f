"""Metrics of predictive distributions and of ensembles built from independent runs.

The per-prediction metrics are those of :mod:`bias._metrics` (one implementation for the logistic
regression and the networks): accuracy, NLL of the (averaged) predictive with log-probabilities
clipped at -100, ACE in both readings (``ace_top_label``: 20 equal-count bins of the largest
probability, the authors' code; ``ace_classwise``: 20 equal-count bins per class, Nixon et al.), RPS,
ECE (15 equal-width confidence bins) and the multi-class Brier score.

Ensembles (the paper's Section 5): the predictive of one run is already averaged over its own
samples; an ensemble of size ``m`` averages the predictive probabilities of ``m`` independent runs.
The runs are split into ``n_runs // m`` disjoint groups (runs ``0..m-1``, ``m..2m-1``, ...), each
group's ensemble is scored, and the mean and standard deviation (``ddof = 1``) over the groups are
reported; with a single group there is no spread and the standard deviation is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bias._metrics import accuracy, ace_classwise, ace_top_label, brier, check_predictive, ece, nll, rps
from integrators._validation import int_at_least

RHAT_MIXED = 1.1  # the bar the report reads: rank-normalised split R-hat of the training loss below it: mixed enough
RHAT_STRICT = 1.01  # the strict bar (Vehtari et al. 2021)
METRICS = {"accuracy": accuracy, "nll": nll, "ace_top_label": ace_top_label, "ace_classwise": ace_classwise, "rps": rps,
           "ece": ece, "brier": brier}
LABELS = {"accuracy": "accuracy", "nll": "NLL", "ace_top_label": "ACE (top-label)", "ace_classwise": "ACE (class-wise)",
          "rps": "RPS", "ece": "ECE", "brier": "Brier"}  # how tables and figures name each metric of METRICS


def evaluate(probs, labels) -> dict:
    """Every metric of :data:`METRICS` for one predictive ``probs`` ``(n, K)``, checked by
    :func:`bias._metrics.check_predictive` before the first metric runs (probabilities whose rows
    sum to one, integer labels in ``[0, K)``).

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.

    Returns
    -------
    dict
        ``{metric name: value}``.

    Raises
    ------
    ValueError
        Naming what is wrong with ``probs`` or ``labels``.
    """
    probs, labels = check_predictive(probs, labels)
    return {name: fn(probs, labels) for name, fn in METRICS.items()}


def ensemble_probs(run_probs) -> np.ndarray:
    """Average predictive of several runs: ``run_probs`` ``(m, n, K)`` -> ``(n, K)``."""
    run_probs = np.asarray(run_probs, dtype=float)
    if run_probs.ndim != 3 or run_probs.shape[0] < 1:
        raise ValueError(f"run_probs must be (runs, n, K) with at least one run, got shape {run_probs.shape}")
    return run_probs.mean(axis=0)


def ensemble_sizes(n_runs: int) -> list[int]:
    """1, 2, 4, ... up to ``n_runs`` (an integer >= 1)."""
    n_runs = int_at_least("n_runs", n_runs, 1)
    return [2**j for j in range(int(np.log2(n_runs)) + 1)]


@dataclass(frozen=True)
class EnsembleScore:
    """Mean and standard deviation (NaN for one ensemble) of one metric over the ``n_groups``
    disjoint ensembles of ``size`` runs."""

    size: int
    metric: str
    mean: float
    std: float
    n_groups: int


def ensemble_scores(run_probs, labels, sizes=None) -> list[EnsembleScore]:
    """Score ensembles of each size (default :func:`ensemble_sizes`) over disjoint groups of the runs
    ``run_probs`` ``(m, n, K)``: one :class:`EnsembleScore` per size and metric."""
    run_probs = np.asarray(run_probs, dtype=float)
    if run_probs.ndim != 3:
        raise ValueError(f"run_probs must be (runs, n, K), got shape {run_probs.shape}")
    n_runs = run_probs.shape[0]
    sizes = ensemble_sizes(n_runs) if sizes is None else list(sizes)
    out = []
    for m in sizes:
        m = int_at_least("ensemble size", m, 1)
        if m > n_runs:
            raise ValueError(f"ensemble size {m} outside 1..{n_runs} (the number of runs)")
        groups = [evaluate(ensemble_probs(run_probs[g * m:(g + 1) * m]), labels) for g in range(n_runs // m)]
        for name in METRICS:
            values = np.array([g[name] for g in groups])
            std = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
            out.append(EnsembleScore(m, name, float(values.mean()), std, len(values)))
    return out
