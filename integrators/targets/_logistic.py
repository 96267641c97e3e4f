"""Binary and multinomial logistic regression with an isotropic Gaussian prior on the weights."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators._validation import finite_array
from integrators.targets._base import MAX_DIM, Target


@nb.njit(nogil=True, inline="always")
def _iso_prior_grad_add(x, arrays, out):
    """Add the isotropic prior's gradient ``lambda x`` at one point to ``out`` (a Numba function).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(d,)``.
    arrays : tuple
        The target's ``arrays``: ``(features, labels, [prior_precision])``.
    out : numpy.ndarray
        Shape ``(d,)``, added to in place.
    """
    prec = arrays[-1][0]
    for a in range(x.shape[0]):
        out[a] += prec * x[a]


@nb.njit(nogil=True, inline="always")
def _log1pexp(z):
    if z > 0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@nb.njit(nogil=True, inline="always")
def _logit_datum_grad_add(x, i, coef, arrays, out):
    """Add ``coef`` times the gradient ``(sigmoid(z_i) - y_i) features_i`` of datum ``i`` to ``out`` (Numba).

    The sigmoid is evaluated in the form that cannot overflow for either sign of ``z_i``.

    Parameters
    ----------
    x : numpy.ndarray
        The weights, shape ``(d,)``.
    i : int
        Index of the datum.
    coef : float
        Factor of the term (the plan's force scale, or -1 for a control variate's reference).
    arrays : tuple
        The target's ``arrays``: ``(features, labels, [prior_precision])``.
    out : numpy.ndarray
        Shape ``(d,)``, added to in place.
    """
    feats, labels, _ = arrays
    z = 0.0
    for a in range(x.shape[0]):
        z += feats[i, a] * x[a]
    if z >= 0:
        s = 1.0 / (1.0 + math.exp(-z))
    else:
        e = math.exp(z)
        s = e / (1.0 + e)
    r = coef * (s - labels[i])
    for a in range(x.shape[0]):
        out[a] += r * feats[i, a]


@nb.njit(nogil=True, inline="always")
def _logit_potential(x, arrays):
    """The potential ``lambda |x|^2 / 2 + sum_i (log(1 + e^{z_i}) - y_i z_i)`` at one point (Numba).

    Parameters
    ----------
    x : numpy.ndarray
        The weights, shape ``(d,)``.
    arrays : tuple
        The target's ``arrays``: ``(features, labels, [prior_precision])``.

    Returns
    -------
    float
        The potential, with ``log(1 + e^z)`` computed stably.
    """
    feats, labels, prior = arrays
    total = 0.5 * prior[0] * np.dot(x, x)
    for i in range(feats.shape[0]):
        z = 0.0
        for a in range(x.shape[0]):
            z += feats[i, a] * x[a]
        total += _log1pexp(z) - labels[i] * z
    return total


def _features(features) -> np.ndarray:
    feats = finite_array("features", features, 2)
    if feats.shape[0] < 1 or feats.shape[1] < 1:
        raise ValueError(f"features must have at least one row (datum) and one column, got shape {feats.shape}")
    return feats


def _prior_precision(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"prior_precision must be a positive finite number, got {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"prior_precision must be positive and finite, got {value}")
    return float(value)


def _strongly_convex_scale(self) -> tuple[float, float]:
    """The target's scale, bounded from strong convexity (it sets the default divergence bound).

    Convex data terms plus the prior ``lambda |x|^2 / 2``: the potential is ``lambda``-strongly
    convex, so its mode lies within ``|grad f(0)| / lambda`` of the origin and every coordinate's
    standard deviation is at most ``1 / sqrt(lambda)`` (Brascamp-Lieb).

    Returns
    -------
    tuple of float
        ``(|grad f(0)| / lambda, 1 / sqrt(lambda))``.
    """
    lam = float(self.arrays[2][0])
    return float(np.linalg.norm(self.full_grad(np.zeros(self.dim))) / lam), 1.0 / math.sqrt(lam)


class LogisticTarget(Target):
    """Binary logistic regression with an isotropic Gaussian prior on the weights.

    Data terms ``f_i(x) = log(1 + e^{z_i}) - y_i z_i`` with ``z_i = features_i . x`` and labels
    ``y_i`` in {0, 1}; prior ``f_0(x) = prior_precision |x|^2 / 2``.

    Parameters
    ----------
    features : array_like
        Shape ``(n_data, d)``, finite, at least one row and one column.
    labels : array_like
        Shape ``(n_data,)``, each 0 or 1.
    prior_precision : float, default 50.0
        The prior's precision ``lambda``, positive and finite.

    Attributes
    ----------
    name : str
        ``"logistic"``.
    arrays : tuple
        ``(features, labels, [prior_precision])`` as the Numba functions take them.
    dim : int
        Number of weights ``d``.
    n_data : int
        Number of data terms ``N_D``.

    Raises
    ------
    ValueError
        If ``features`` or ``labels`` is not finite or has the wrong shape, a label is not 0 or
        1, or ``prior_precision`` is not a positive finite number.
    """

    name = "logistic"
    prior_grad_add = staticmethod(_iso_prior_grad_add)
    datum_grad_add = staticmethod(_logit_datum_grad_add)
    potential = staticmethod(_logit_potential)

    def __init__(self, features, labels, prior_precision=50.0):
        feats = _features(features)
        labels = finite_array("labels", labels, 1)
        if labels.shape[0] != feats.shape[0]:
            raise ValueError(
                f"labels has {labels.shape[0]} entries but features has {feats.shape[0]} rows")
        if not np.all((labels == 0) | (labels == 1)):
            raise ValueError("labels must be 0 or 1")
        self.arrays = (feats, labels, np.array([_prior_precision(prior_precision)]))
        self.n_data, self.dim = feats.shape

    typical_scale = _strongly_convex_scale


# ----------------------------------------------------------- multinomial logistic regression
@nb.njit(nogil=True, inline="always")
def _softmax_logits(x, feats, i, n_classes):
    p = feats.shape[1]
    z = np.zeros(n_classes)
    for a in range(p):
        f = feats[i, a]
        if f != 0.0:
            for k in range(n_classes):
                z[k] += f * x[a * n_classes + k]
    return z


@nb.njit(nogil=True, inline="always")
def softmax_probabilities(x, feats, i, n_classes):
    """Class probabilities of row ``i`` of ``feats`` under weights ``x`` (stable softmax; Numba)."""
    z = _softmax_logits(x, feats, i, n_classes)
    zmax = z.max()
    total = 0.0
    for k in range(n_classes):
        z[k] = math.exp(z[k] - zmax)
        total += z[k]
    for k in range(n_classes):
        z[k] /= total
    return z


@nb.njit(nogil=True, inline="always")
def _mlogit_datum_grad_add(x, i, coef, arrays, out):
    """Add ``coef`` times the gradient of datum ``i``, ``features_i (p_i - e_{y_i})^T``, to ``out`` (Numba).

    ``p_i`` are the class probabilities (a stable softmax); the gradient is written into the
    row-major flat weights, skipping zero features.

    Parameters
    ----------
    x : numpy.ndarray
        The flat weights, shape ``(n_features * n_classes,)``.
    i : int
        Index of the datum.
    coef : float
        Factor of the term (the plan's force scale, or -1 for a control variate's reference).
    arrays : tuple
        The target's ``arrays``: ``(features, labels, [prior_precision])``.
    out : numpy.ndarray
        Shape ``(n_features * n_classes,)``, added to in place.
    """
    feats, labels, _ = arrays
    n_classes = x.shape[0] // feats.shape[1]
    z = softmax_probabilities(x, feats, i, n_classes)
    for k in range(n_classes):
        z[k] *= coef
    z[labels[i]] -= coef
    for a in range(feats.shape[1]):
        f = feats[i, a]
        if f != 0.0:
            for k in range(n_classes):
                out[a * n_classes + k] += f * z[k]


@nb.njit(nogil=True, inline="always")
def _mlogit_potential(x, arrays):
    """The potential ``lambda |x|^2 / 2 + sum_i (logsumexp(z_i) - z_i[y_i])`` at one point (Numba).

    Parameters
    ----------
    x : numpy.ndarray
        The flat weights, shape ``(n_features * n_classes,)``.
    arrays : tuple
        The target's ``arrays``: ``(features, labels, [prior_precision])``.

    Returns
    -------
    float
        The potential, with a stable log-sum-exp.
    """
    feats, labels, prior = arrays
    n_classes = x.shape[0] // feats.shape[1]
    total = 0.5 * prior[0] * np.dot(x, x)
    for i in range(feats.shape[0]):
        z = _softmax_logits(x, feats, i, n_classes)
        zmax = z.max()
        lse = zmax + math.log(np.sum(np.exp(z - zmax)))
        total += lse - z[labels[i]]
    return total


class MultinomialLogisticTarget(Target):
    """Multinomial logistic regression with an isotropic Gaussian prior on the weights.

    The weights ``W`` of shape ``(n_features, n_classes)`` are flattened row-major into ``x``;
    data terms ``f_i = logsumexp(z_i) - z_i[y_i]`` with ``z_i = features_i W``; prior
    ``f_0 = prior_precision |x|^2 / 2`` (the paper uses precision 50).

    Parameters
    ----------
    features : array_like
        Shape ``(n_data, n_features)``, finite, at least one row and one column.
    labels : array_like
        Shape ``(n_data,)``, integers (or integral floats) in ``[0, n_classes)``.
    n_classes : int or None, default None
        Number of classes, at least 2 (``None``: the largest label plus one, refused when fewer
        than half of those classes appear).
    prior_precision : float, default 50.0
        The prior's precision ``lambda``, positive and finite.

    Attributes
    ----------
    name : str
        ``"multinomial_logistic"``.
    allocates : bool
        True: the per-datum softmax needs a scratch vector (the kernel keeps reference counting).
    arrays : tuple
        ``(features, labels, [prior_precision])`` as the Numba functions take them.
    dim : int
        Number of weights, ``n_features * n_classes``.
    n_data, n_features, n_classes : int
        The data's sizes.

    Raises
    ------
    ValueError
        If ``features`` or ``labels`` is not finite or has the wrong shape, a label is not an
        integer in ``[0, n_classes)``, ``n_classes`` is not an integer ``>= 2``, the number of
        weights exceeds ``10**8``, or ``prior_precision`` is not a positive finite number.
    """

    name = "multinomial_logistic"
    allocates = True  # the per-datum softmax needs a scratch vector of n_classes
    prior_grad_add = staticmethod(_iso_prior_grad_add)
    datum_grad_add = staticmethod(_mlogit_datum_grad_add)
    potential = staticmethod(_mlogit_potential)

    def __init__(self, features, labels, n_classes=None, prior_precision=50.0):
        feats = _features(features)
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != feats.shape[0]:
            raise ValueError(
                f"labels must be 1-D with {feats.shape[0]} entries, got shape {labels.shape}")
        if labels.dtype == bool or labels.dtype.kind not in "iuf":
            raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
        if not np.issubdtype(labels.dtype, np.integer):
            if not np.all(np.isfinite(labels)) or not np.all(labels == np.round(labels)):
                raise ValueError("labels must be integers")
        if labels.min() < 0 or labels.max() >= 2**62:
            raise ValueError(f"labels must lie in [0, n_classes), got values from {labels.min()} to {labels.max()}")
        labels = np.ascontiguousarray(labels.astype(np.int64))
        if n_classes is None:
            n_classes = int(labels.max()) + 1
            seen = len(np.unique(labels))
            if n_classes > max(2, 2 * seen):
                raise ValueError(f"labels imply n_classes = max label + 1 = {n_classes} but only {seen} distinct "
                                 f"labels appear; pass n_classes explicitly if that is meant")
        elif isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)):
            raise ValueError(f"n_classes must be an integer, got {n_classes!r}")
        n_classes = int(n_classes)
        if n_classes < 2 or labels.max() >= n_classes:
            raise ValueError(f"labels must lie in [0, n_classes={n_classes}) with n_classes >= 2")
        if feats.shape[1] * n_classes > MAX_DIM:
            raise ValueError(f"{feats.shape[1]} features x {n_classes} classes = {feats.shape[1] * n_classes} "
                             f"weights exceeds {MAX_DIM:.0e}")
        self.arrays = (feats, labels, np.array([_prior_precision(prior_precision)]))
        self.n_data = feats.shape[0]
        self.n_features = feats.shape[1]
        self.n_classes = n_classes
        self.dim = feats.shape[1] * n_classes

    typical_scale = _strongly_convex_scale

    def predict_proba(self, x, features) -> np.ndarray:
        """Class probabilities of rows of ``features`` under weights ``x`` (a stable softmax).

        Parameters
        ----------
        x : array_like
            The flat weights, shape ``(n_features * n_classes,)``.
        features : array_like
            Shape ``(m, n_features)``.

        Returns
        -------
        numpy.ndarray
            Shape ``(m, n_classes)``, each row summing to 1.
        """
        w = np.asarray(x).reshape(self.n_features, self.n_classes)
        z = np.asarray(features) @ w
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)
