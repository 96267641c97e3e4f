"""Calibration metrics of a predictive distribution, as the design defines them.

``probs`` is ``(n, K)`` (rows sum to one), ``labels`` ``(n,)`` integers in ``[0, K)``.
"""

from __future__ import annotations

import numpy as np


def _check(probs, labels):
    probs = np.asarray(probs, dtype=float)
    labels = np.asarray(labels)
    if probs.ndim != 2 or labels.shape != (probs.shape[0],):
        raise ValueError(f"probs must be (n, K) and labels (n,), got {probs.shape} and {labels.shape}")
    if labels.min() < 0 or labels.max() >= probs.shape[1]:
        raise ValueError("labels outside [0, K)")
    return probs, labels.astype(np.int64)


def accuracy(probs, labels) -> float:
    probs, labels = _check(probs, labels)
    return float(np.mean(np.argmax(probs, axis=1) == labels))


def nll(probs, labels) -> float:
    """Negative log-likelihood, log-probabilities clipped at -100."""
    probs, labels = _check(probs, labels)
    with np.errstate(divide="ignore"):
        logp = np.maximum(np.log(probs[np.arange(len(labels)), labels]), -100.0)
    return float(-np.mean(logp))


def ace(probs, labels, n_bins: int = 20) -> float:
    """Adaptive calibration error: for every class, ``n_bins`` bins of equal count over the sorted
    predicted probabilities of that class; mean of ``|frequency - mean probability|`` over bins
    and classes."""
    probs, labels = _check(probs, labels)
    errors = []
    for k in range(probs.shape[1]):
        order = np.argsort(probs[:, k], kind="stable")
        for chunk in np.array_split(order, n_bins):
            if chunk.size:
                errors.append(abs(np.mean(labels[chunk] == k) - np.mean(probs[chunk, k])))
    return float(np.mean(errors))


def rps(probs, labels) -> float:
    """Ranked probability score ``1/(K-1) sum_k (F_k - O_k)^2``, averaged over points."""
    probs, labels = _check(probs, labels)
    k = probs.shape[1]
    observed = np.zeros_like(probs)
    observed[np.arange(len(labels)), labels] = 1.0
    diff = np.cumsum(probs, axis=1) - np.cumsum(observed, axis=1)
    return float(np.mean(np.sum(diff**2, axis=1) / (k - 1)))


def ece(probs, labels, n_bins: int = 15) -> float:
    """Expected calibration error of the top label: ``n_bins`` bins of equal width over the
    confidence ``max_k p_k``; ``sum_b (n_b / n) |accuracy_b - mean confidence_b|``."""
    probs, labels = _check(probs, labels)
    conf = probs.max(axis=1)
    correct = np.argmax(probs, axis=1) == labels
    bins = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        sel = bins == b
        total += sel.sum() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total / len(labels))


def brier(probs, labels) -> float:
    """Multi-class Brier score ``sum_k (p_k - O_k)^2``, averaged over points."""
    probs, labels = _check(probs, labels)
    observed = np.zeros_like(probs)
    observed[np.arange(len(labels)), labels] = 1.0
    return float(np.mean(np.sum((probs - observed) ** 2, axis=1)))


def all_metrics(probs, labels) -> dict:
    return {"accuracy": accuracy(probs, labels), "nll": nll(probs, labels), "ace": ace(probs, labels),
            "rps": rps(probs, labels)}
