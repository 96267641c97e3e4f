"""Targets: potentials ``f(x) = f_0(x) + sum_i f_i(x)`` with per-datum gradients usable from Numba.

Every target exposes ``arrays`` (a tuple of numpy arrays) and three Numba functions taking it:
``prior_grad_add(x, arrays, out)`` adds grad f_0(x); ``datum_grad_add(x, i, coef, arrays, out)``
adds ``coef * grad f_i(x)``; ``potential(x, arrays)`` returns f(x).  The minibatch force
``G(x, w) = grad f_0(x) + scale * sum_{i in w} grad f_i(x)`` (with an optional control variate
at a reference point ``xh``) is assembled from them by :func:`make_force`; a target never knows
which plan or scheme drives it.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
import scipy.optimize

from integrators.validation import finite_array

DIVERGENCE_SDS = 1e3  # a chain this many target standard deviations out has left the target
LEGACY_DIVERGENCE_BOUND = 1e8  # for a target that knows no scale of its own
MAX_DIM = 10**8  # a model with more weights than this is a mistake in its labels or sizes


class Target:
    """Common interface; subclasses set ``arrays``, ``dim``, ``n_data`` and the Numba functions."""

    name = "target"
    allocates = False  # True if datum_grad_add allocates (the kernel then keeps reference counting)
    lane_grad = None  # optional: prior + scaled batch gradients of a block of chains, vectorized
    arrays: tuple
    dim: int
    n_data: int

    def initial_point(self) -> np.ndarray:
        return np.zeros(self.dim)

    def typical_scale(self) -> tuple[float, float] | None:
        """``(r, s)``: the target's centre lies within ``r`` of the origin (max norm) and its coordinates'
        standard deviations are at most ``s``; ``None`` when the target knows no such scale."""
        return None

    def divergence_bound(self) -> float:
        """Default bound on ``|x|`` and ``|v|`` beyond which a chain is reported diverged:
        ``r + DIVERGENCE_SDS * max(s, 1)`` from :meth:`typical_scale` (the 1 is the velocities' unit
        stationary scale); a chain that far out is not sampling the target, whatever the scheme."""
        scale = self.typical_scale()
        if scale is None:
            return LEGACY_DIVERGENCE_BOUND
        centre, sd = scale
        return float(centre + DIVERGENCE_SDS * max(sd, 1.0))

    # Python-side helpers (used for validation, control variates and tests).
    def full_grad(self, x) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=float)
        out = np.zeros(self.dim)
        self.prior_grad_add(x, self.arrays, out)
        for i in range(self.n_data):
            self.datum_grad_add(x, i, 1.0, self.arrays, out)
        return out

    def value(self, x) -> float:
        return float(self.potential(np.ascontiguousarray(x, dtype=float), self.arrays))

    def mode(self) -> np.ndarray:
        """Minimizer of the potential by scipy's L-BFGS (the control-variate reference point)."""
        res = scipy.optimize.minimize(
            self.value, self.initial_point(), jac=self.full_grad, method="L-BFGS-B",
            options={"maxiter": 10_000, "gtol": 1e-10, "ftol": 1e-15},
        )
        return np.asarray(res.x)


# --------------------------------------------------------------------------- Gaussian data terms
@nb.njit(nogil=True, inline="always")
def _gauss_prior_grad_add(x, arrays, out):
    _, _, p0, m0 = arrays
    d = x.shape[0]
    for a in range(d):
        acc = 0.0
        for b in range(d):
            acc += p0[a, b] * (x[b] - m0[b])
        out[a] += acc


@nb.njit(nogil=True, inline="always")
def _gauss_datum_grad_add(x, i, coef, arrays, out):
    mu, prec, _, _ = arrays
    d = x.shape[0]
    for a in range(d):
        acc = 0.0
        for b in range(d):
            acc += prec[i, a, b] * (x[b] - mu[i, b])
        out[a] += coef * acc


SMALL_DATA = 8  # up to this many data terms, the Gaussian lane force makes one masked pass per term


@nb.njit(nogil=True, inline="always")
def _gauss_lane_grad(x, out, batch, n_batch, scale, arrays):
    """Prior and scaled batch gradients of a block of chains written to ``out``, chains
    innermost (vectorized)."""
    mu, prec, p0, m0 = arrays
    n, d = x.shape
    few = mu.shape[0] <= SMALL_DATA
    for a in range(d):
        fresh = True  # out[:, a] not written yet: the first pass writes instead of adding to zeros
        for b in range(d):
            if p0[a, b] != 0.0:  # (the paper's 1-D example has no prior)
                for c in range(n):
                    out[c, a] = (0.0 if fresh else out[c, a]) + p0[a, b] * (x[c, b] - m0[b])
                fresh = False
        if few:
            fresh = _gauss_masked_terms(x, out, a, fresh, batch, n_batch, scale, mu, prec)
        if fresh:
            for c in range(n):
                out[c, a] = 0.0
    if few:
        return
    for j in range(n_batch):  # gathers by each chain's batch (scalar: Numba tells LLVM nothing of aliasing)
        for a in range(d):
            for b in range(d):
                for c in range(n):
                    i = batch[j, c]
                    out[c, a] += scale * (prec[i, a, b] * (x[c, b] - mu[i, b]))


@nb.njit(nogil=True, inline="always")
def _gauss_masked_terms(x, out, a, fresh, batch, n_batch, scale, mu, prec):
    """Coordinate ``a`` of the batch gradients with few data terms; returns whether ``out[:, a]``
    is still unwritten."""
    n, d = x.shape
    # one branch-free pass per term, each chain adding it where its batch holds it (vectorizes;
    # the same additions in the same order as the gathers of _gauss_lane_grad)
    for j in range(n_batch):
        for i in range(mu.shape[0]):
            for b in range(d):
                for c in range(n):
                    term = scale * (prec[i, a, b] * (x[c, b] - mu[i, b]))
                    out[c, a] = (0.0 if fresh else out[c, a]) + (term if batch[j, c] == i else 0.0)
                fresh = False
    return fresh


@nb.njit(nogil=True, inline="always")
def _gauss_potential(x, arrays):
    mu, prec, p0, m0 = arrays
    d = x.shape[0]
    total = 0.0
    for a in range(d):
        for b in range(d):
            total += 0.5 * (x[a] - m0[a]) * p0[a, b] * (x[b] - m0[b])
    for i in range(mu.shape[0]):
        for a in range(d):
            for b in range(d):
                total += 0.5 * (x[a] - mu[i, a]) * prec[i, a, b] * (x[b] - mu[i, b])
    return total


class GaussianTarget(Target):
    """Gaussian data terms ``f_i(x) = (x - mu_i)^T A_i (x - mu_i) / 2`` plus a Gaussian prior
    ``f_0(x) = (x - m_0)^T P_0 (x - m_0) / 2``.  The posterior is exactly Gaussian."""

    name = "gaussian"
    lane_grad = staticmethod(_gauss_lane_grad)
    prior_grad_add = staticmethod(_gauss_prior_grad_add)
    datum_grad_add = staticmethod(_gauss_datum_grad_add)
    potential = staticmethod(_gauss_potential)

    def __init__(self, means, precisions, prior_precision=None, prior_mean=None):
        means = finite_array("means", means)
        if means.ndim == 0:  # one number: one one-dimensional data term
            means = means.reshape(1)
        raw_means_1d = means.ndim == 1
        if raw_means_1d:
            means = means[:, None]
        if means.ndim != 2 or means.shape[0] < 1:
            raise ValueError(f"means must have shape (n_data, d), got {means.shape}")
        n, d = means.shape
        precisions = finite_array("precisions", precisions)
        if precisions.ndim <= 1 and d == 1:
            precisions = precisions.reshape(-1, 1, 1)
        if precisions.shape != (n, d, d):
            hint = (f" (means of shape {(n,)} is read as {n} one-dimensional data terms; for one term in d={n} "
                    f"pass means of shape {(1, n)})" if raw_means_1d and n > 1 else "")
            raise ValueError(f"precisions must have shape {(n, d, d)}, got {precisions.shape}{hint}")
        if not np.allclose(precisions, np.swapaxes(precisions, 1, 2)):
            raise ValueError("precisions must be symmetric matrices")
        if prior_precision is None:
            if prior_mean is not None:
                raise ValueError("prior_mean needs prior_precision (without a prior precision there is no prior "
                                 "for it to center)")
            prior_precision = np.zeros((d, d))
        prior_precision = finite_array("prior_precision", prior_precision)
        if prior_precision.ndim == 0:
            prior_precision = prior_precision * np.eye(d)
        if prior_precision.shape != (d, d):
            raise ValueError(f"prior_precision must have shape {(d, d)}, got {prior_precision.shape}")
        prior_mean = np.zeros(d) if prior_mean is None else finite_array("prior_mean", prior_mean)
        if prior_mean.ndim == 0 and d == 1:
            prior_mean = prior_mean.reshape(1)
        if prior_mean.shape != (d,):
            raise ValueError(f"prior_mean must have shape {(d,)}, got {prior_mean.shape}")
        total = prior_precision + precisions.sum(axis=0)
        eig = np.linalg.eigvalsh(0.5 * (total + total.T))
        if eig.min() <= 0:
            raise ValueError("the total precision (prior + data terms) must be positive definite")
        self.arrays = (means, precisions, np.ascontiguousarray(prior_precision), prior_mean)
        self.dim, self.n_data = d, n

    @property
    def precision(self) -> np.ndarray:
        """Hessian of f (the posterior precision)."""
        return self.arrays[2] + self.arrays[1].sum(axis=0)

    @property
    def mean(self) -> np.ndarray:
        mu, prec, p0, m0 = self.arrays
        rhs = p0 @ m0 + np.einsum("iab,ib->a", prec, mu)
        return np.linalg.solve(self.precision, rhs)

    @property
    def covariance(self) -> np.ndarray:
        return np.linalg.inv(self.precision)

    def initial_point(self) -> np.ndarray:
        return np.zeros(self.dim)

    def typical_scale(self) -> tuple[float, float]:
        """The exact moments: ``(|mean|_inf, largest marginal standard deviation)``."""
        return float(np.max(np.abs(self.mean))), float(math.sqrt(np.max(np.diag(self.covariance))))

    @classmethod
    def one_d_example(cls) -> GaussianTarget:
        """The paper's Section 3.4 example: two terms ``(x - x_i)^2 / (2 sigma_i^2)``,
        means -1 and 1, sigmas 0.5 and 2, no prior (the design's convention)."""
        sig = np.array([0.5, 2.0])
        return cls(means=[[-1.0], [1.0]], precisions=(1.0 / sig**2)[:, None, None])


# ---------------------------------------------------------------- binary logistic regression
@nb.njit(nogil=True, inline="always")
def _iso_prior_grad_add(x, arrays, out):
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
    """Convex data terms plus the prior ``lambda |x|^2 / 2``: the potential is ``lambda``-strongly
    convex, so its mode lies within ``|grad f(0)| / lambda`` of the origin and every coordinate's
    standard deviation is at most ``1 / sqrt(lambda)`` (Brascamp-Lieb)."""
    lam = float(self.arrays[2][0])
    return float(np.linalg.norm(self.full_grad(np.zeros(self.dim))) / lam), 1.0 / math.sqrt(lam)


class LogisticTarget(Target):
    """Binary logistic regression: ``f_i(x) = log(1 + e^{z_i}) - y_i z_i`` with
    ``z_i = features_i . x`` and labels in {0, 1}; prior ``f_0(x) = prior_precision |x|^2 / 2``."""

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
    """Class probabilities of row ``i`` of ``feats`` under weights ``x`` (stable softmax)."""
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
    """Multinomial logistic regression with weights ``W`` of shape (n_features, n_classes),
    flattened row-major into ``x``: ``f_i = logsumexp(z_i) - z_i[y_i]``, ``z_i = features_i W``;
    prior ``f_0 = prior_precision |x|^2 / 2`` (the paper uses precision 50)."""

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
        w = np.asarray(x).reshape(self.n_features, self.n_classes)
        z = np.asarray(features) @ w
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------ the minibatch force
def make_force(target_cls):
    """Numba force ``force(x, out, batch, n_batch, scale, tdata)`` for a target class.

    ``tdata = (arrays, ref_grads, ref_grad_sum, use_cv)`` with ``ref_grads[i] = grad f_i(x_ref)``.
    Without a control variate
    ``G = grad f_0(x) + scale * sum_{i in batch} grad f_i(x)``; with one (``use_cv[0]``)
    ``G = grad f_0(x) + sum_i grad f_i(x_ref) + scale * sum_{i in batch} (grad f_i(x) - grad f_i(x_ref))``.
    """
    prior_grad_add = target_cls.prior_grad_add
    datum_grad_add = target_cls.datum_grad_add

    @nb.njit(nogil=True, inline="always")
    def force(x, out, batch, n_batch, scale, tdata):
        arrays, ref_grads, ref_grad_sum, use_cv = tdata
        out[:] = 0.0
        prior_grad_add(x, arrays, out)
        for j in range(n_batch):
            datum_grad_add(x, batch[j], scale, arrays, out)
        if use_cv[0]:
            for a in range(out.shape[0]):
                out[a] += ref_grad_sum[a]
            for j in range(n_batch):
                row = ref_grads[batch[j]]  # grad f_i(x_ref), precomputed
                for a in range(out.shape[0]):
                    out[a] -= scale * row[a]

    force.allocates = target_cls.allocates
    return force


def make_lane_force(target_cls):
    """The force over a block of chains, ``force(x, out, batch, n_batch, scale, tdata)`` with
    ``x, out`` of shape ``(n, d)`` and ``batch`` of shape ``(k, n)`` (chain ``c``'s batch in
    ``batch[:n_batch, c]``); the same formula as :func:`make_force`, chain by chain.  A target
    class with a ``lane_grad`` gets its vectorized gradients; others are called chain by chain."""
    prior_grad_add = target_cls.prior_grad_add
    datum_grad_add = target_cls.datum_grad_add
    grads = target_cls.lane_grad
    if grads is None:
        @nb.njit(nogil=True, inline="always")
        def grads(x, out, batch, n_batch, scale, arrays):
            for c in range(x.shape[0]):
                xc, oc = x[c], out[c]
                oc[:] = 0.0
                prior_grad_add(xc, arrays, oc)
                for j in range(n_batch):
                    datum_grad_add(xc, batch[j, c], scale, arrays, oc)

    @nb.njit(nogil=True)  # called once per step for a whole block: not worth inlining
    def force(x, out, batch, n_batch, scale, tdata):
        arrays, ref_grads, ref_grad_sum, use_cv = tdata
        n, d = out.shape
        grads(x, out, batch, n_batch, scale, arrays)
        if use_cv[0]:
            for c in range(n):
                for a in range(d):
                    out[c, a] += ref_grad_sum[a]
                for j in range(n_batch):
                    row = ref_grads[batch[j, c]]  # grad f_i(x_ref), precomputed
                    for a in range(d):
                        out[c, a] -= scale * row[a]

    force.allocates = target_cls.allocates
    return force


_FORCES: dict = {}


def force_for(target) -> object:
    """The force of one chain (``x`` of shape ``(d,)``) for the target's class, compiled once."""
    key = (type(target), "chain")
    if key not in _FORCES:
        _FORCES[key] = make_force(type(target))
    return _FORCES[key]


def lane_force_for(target) -> object:
    """The force over a block of chains (:func:`make_lane_force`) for the target's class."""
    key = (type(target), "lanes")
    if key not in _FORCES:
        _FORCES[key] = make_lane_force(type(target))
    return _FORCES[key]


def force_data(target, control_variate=False, x_ref=None) -> tuple:
    """The ``tdata`` tuple for :func:`make_force`, with the control variate at ``x_ref``
    (default: the L-BFGS minimizer of the potential) when ``control_variate`` is true; the
    per-datum gradients at ``x_ref`` are computed once here."""
    if control_variate:
        x_ref = target.mode() if x_ref is None else finite_array("x_ref", x_ref)
        if x_ref.ndim == 0 and target.dim == 1:  # one number for a one-dimensional target
            x_ref = x_ref.reshape(1)
        if x_ref.shape != (target.dim,):
            raise ValueError(f"x_ref must have shape {(target.dim,)}, got {x_ref.shape}")
        x_ref = np.ascontiguousarray(x_ref, dtype=float)
        ref_grads = np.zeros((target.n_data, target.dim))
        for i in range(target.n_data):
            target.datum_grad_add(x_ref, i, 1.0, target.arrays, ref_grads[i])
        ref_sum = ref_grads.sum(axis=0)
    else:
        if x_ref is not None:  # a reference point is only read by the control variate
            raise ValueError("x_ref is given but control_variate is false: pass control_variate=True to use it")
        ref_grads = np.zeros((0, target.dim))
        ref_sum = np.zeros(target.dim)
    return (target.arrays, ref_grads, ref_sum, np.array([bool(control_variate)]))
