"""Calibration metrics of a predictive distribution, as the design defines them.

``probs`` is ``(n, K)`` with ``n >= 1`` and ``K >= 2``: finite entries in ``[0, 1]``, rows summing to
one within :data:`ROW_SUM_TOL` (wide enough for softmax outputs computed in half precision; logits
and unnormalised scores miss it by far). ``labels`` ``(n,)`` integers in ``[0, K)`` (an integer
array, floats with integral values, or booleans for two classes). Every metric checks its input with
:func:`check_predictive` and raises ``ValueError`` naming the bad argument: logits, unnormalised
scores, NaN or fractional labels are refused, never scored.

ACE has two readings, both here and named: :func:`ace_top_label` (the paper's authors' code) and
:func:`ace_classwise` (Nixon et al.).
"""

from __future__ import annotations

import numpy as np

from integrators._validation import int_at_least, integer_labels

ROW_SUM_TOL = 1e-2  # |sum_k p_k - 1| per row: bfloat16 softmax outputs are off by up to ~2e-3


def check_predictive(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """``(probs, labels)`` as float ``(n, K)`` and int64 ``(n,)`` arrays, or ``ValueError`` naming
    what is wrong (the shared check of every metric here and in :mod:`bnn._metrics`)."""
    try:
        probs = np.asarray(probs, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("probs must be an (n, K) array of probabilities (numbers)") from None
    if probs.ndim != 2 or probs.shape[0] < 1 or probs.shape[1] < 2:
        raise ValueError(f"probs must be (n, K) with n >= 1 points and K >= 2 classes, got shape {probs.shape}")
    if not np.all(np.isfinite(probs)):
        raise ValueError("probs contains non-finite values (NaN or infinity)")
    if probs.min() < 0.0 or probs.max() > 1.0:
        raise ValueError(f"probs must lie in [0, 1] (probabilities, not logits), found values in "
                         f"[{probs.min():.6g}, {probs.max():.6g}]")
    row_error = np.abs(probs.sum(axis=1) - 1.0)
    if row_error.max() > ROW_SUM_TOL:
        i = int(np.argmax(row_error))
        raise ValueError(f"probs rows must sum to 1 (within {ROW_SUM_TOL:g}); row {i} sums to "
                         f"{probs[i].sum():.6g}")
    labels = np.asarray(labels)
    if labels.shape != (probs.shape[0],):
        raise ValueError(f"labels must be (n,) with n = {probs.shape[0]} (the rows of probs), got shape "
                         f"{labels.shape}")
    labels = integer_labels(labels)
    if labels.min() < 0 or labels.max() >= probs.shape[1]:
        raise ValueError(f"labels outside [0, K) = [0, {probs.shape[1]}): found {labels.min():g}..{labels.max():g}")
    return probs, labels.astype(np.int64)


def accuracy(probs, labels) -> float:
    """Fraction of points whose most probable class is the label.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.

    Returns
    -------
    float
        The accuracy, in ``[0, 1]``.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`).
    """
    probs, labels = check_predictive(probs, labels)
    return float(np.mean(np.argmax(probs, axis=1) == labels))


def nll(probs, labels) -> float:
    """Negative log-likelihood, log-probabilities clipped at -100.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.

    Returns
    -------
    float
        The mean negative log-probability of the labels.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`).
    """
    probs, labels = check_predictive(probs, labels)
    with np.errstate(divide="ignore"):
        logp = np.maximum(np.log(probs[np.arange(len(labels)), labels]), -100.0)
    return float(-np.mean(logp))


def _equal_count_bins(values, n_bins):
    """Index chunks of ``values`` sorted ascending (stable), ``min(n_bins, n)`` chunks of sizes
    differing by at most one."""
    order = np.argsort(values, kind="stable")
    return np.array_split(order, min(n_bins, order.size))


def ace_top_label(probs, labels, n_bins: int = 20) -> float:
    """Adaptive calibration error of the top label, as the paper's authors compute it: the
    confidence of a point is its largest predicted probability ``c_i = max_k p_ik``, and it is
    correct when that class is the label (``argmax`` takes the first class of a tie). The points
    are sorted by confidence and split into ``n_bins`` bins of equal count (sizes differing by at
    most one; ``min(n_bins, n)`` bins), and

    ``ACE_top = (1/B) sum_b |accuracy_b - mean confidence_b|``.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.
    n_bins : int
        Number of bins.

    Returns
    -------
    float
        The top-label adaptive calibration error, in ``[0, 1]``.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`) or ``n_bins < 1``.
    """
    n_bins = int_at_least("n_bins", n_bins, 1)
    probs, labels = check_predictive(probs, labels)
    conf = probs.max(axis=1)
    correct = np.argmax(probs, axis=1) == labels
    return float(np.mean([abs(correct[b].mean() - conf[b].mean()) for b in _equal_count_bins(conf, n_bins)]))


def ace_classwise(probs, labels, n_bins: int = 20) -> float:
    """Adaptive calibration error over every class (Nixon et al., 2019): for each class ``k``, the
    points sorted by ``p_ik`` and split into ``n_bins`` bins of equal count (``min(n_bins, n)``
    bins), and

    ``ACE_cw = (1/(K B)) sum_k sum_b |frequency of k in b - mean p_k in b|``.

    With many classes most bins hold near-zero probabilities of classes that are rarely the
    label, so it is smaller than :func:`ace_top_label` and can order two predictors differently.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.
    n_bins : int
        Number of bins per class.

    Returns
    -------
    float
        The class-wise adaptive calibration error, in ``[0, 1]``.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`) or ``n_bins < 1``.
    """
    n_bins = int_at_least("n_bins", n_bins, 1)
    probs, labels = check_predictive(probs, labels)
    errors = [abs(np.mean(labels[b] == k) - np.mean(probs[b, k]))
              for k in range(probs.shape[1]) for b in _equal_count_bins(probs[:, k], n_bins)]
    return float(np.mean(errors))


def rps(probs, labels) -> float:
    """Ranked probability score ``1/(K-1) sum_k (F_k - O_k)^2``, averaged over points.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.

    Returns
    -------
    float
        The mean ranked probability score.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`).
    """
    probs, labels = check_predictive(probs, labels)
    k = probs.shape[1]
    observed = np.zeros_like(probs)
    observed[np.arange(len(labels)), labels] = 1.0
    diff = np.cumsum(probs, axis=1) - np.cumsum(observed, axis=1)
    return float(np.mean(np.sum(diff**2, axis=1) / (k - 1)))


def ece(probs, labels, n_bins: int = 15) -> float:
    """Expected calibration error of the top label: ``n_bins`` bins of equal width over the
    confidence ``max_k p_k``; ``sum_b (n_b / n) |accuracy_b - mean confidence_b|``.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.
    n_bins : int
        Number of bins.

    Returns
    -------
    float
        The expected calibration error.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`).
    """
    n_bins = int_at_least("n_bins", n_bins, 1)
    probs, labels = check_predictive(probs, labels)
    conf = probs.max(axis=1)
    correct = np.argmax(probs, axis=1) == labels
    bins = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        sel = bins == b
        total += sel.sum() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total / len(labels))


def brier(probs, labels) -> float:
    """Multi-class Brier score ``sum_k (p_k - O_k)^2``, averaged over points.

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.

    Returns
    -------
    float
        The mean Brier score.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`).
    """
    probs, labels = check_predictive(probs, labels)
    observed = np.zeros_like(probs)
    observed[np.arange(len(labels)), labels] = 1.0
    return float(np.mean(np.sum((probs - observed) ** 2, axis=1)))


def all_metrics(probs, labels) -> dict:
    """Accuracy, NLL, class-wise ACE and RPS of one predictive distribution (the logistic-regression
    experiments' row; the BNN scores both ACE readings through :data:`bnn._metrics.METRICS`).

    Parameters
    ----------
    probs : array_like
        ``(n, K)`` predicted class probabilities.
    labels : array_like
        ``(n,)`` integer labels in ``[0, K)``.

    Returns
    -------
    dict
        The four values, keyed accuracy, nll, ace (:func:`ace_classwise`) and rps.

    Raises
    ------
    ValueError
        When ``probs`` or ``labels`` is malformed (:func:`check_predictive`).
    """
    return {"accuracy": accuracy(probs, labels), "nll": nll(probs, labels), "ace": ace_classwise(probs, labels),
            "rps": rps(probs, labels)}
