"""The minibatch force ``G(x, w)`` of any target, with or without a control variate, compiled
once per target class for one chain (:func:`force_for`) and for a block of chains
(:func:`lane_force_for`)."""

from __future__ import annotations

import numba as nb
import numpy as np

from integrators._disk_cache import disk_cached
from integrators._user_code import guarded
from integrators._validation import finite_array


def target_function(target_cls, attr: str):
    """The class's Numba function ``attr`` (``potential``, ``prior_grad_add``, ...), bounds-checked
    and named in its errors when it comes from user code (:func:`integrators._user_code.guarded`);
    None where the class has none."""
    fn = getattr(target_cls, attr, None)
    return None if fn is None else guarded(fn, f"target {target_cls.__name__!r}: {attr}")


def _target_functions(target_cls):
    """The class's ``prior_grad_add``, ``datum_grad_add`` and ``lane_grad`` (:func:`target_function`)."""
    return tuple(target_function(target_cls, attr) for attr in ("prior_grad_add", "datum_grad_add", "lane_grad"))


def make_force(target_cls):
    """Numba force ``force(x, out, batch, n_batch, scale, tdata)`` for a target class.

    ``tdata = (arrays, ref_grads, ref_grad_sum, use_cv)`` with ``ref_grads[i] = grad f_i(x_ref)``.
    Without a control variate
    ``G = grad f_0(x) + scale * sum_{i in batch} grad f_i(x)``; with one (``use_cv[0]``)
    ``G = grad f_0(x) + sum_i grad f_i(x_ref) + scale * sum_{i in batch} (grad f_i(x) - grad f_i(x_ref))``.
    """
    prior_grad_add, datum_grad_add, _ = _target_functions(target_cls)

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
    """The force over a block of chains, the same formula as :func:`make_force`, chain by chain.

    A target class with a ``lane_grad`` gets its vectorized gradients; others are called chain by
    chain.
    """
    prior_grad_add, datum_grad_add, grads = _target_functions(target_cls)
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
    """The force of one chain for the target's class (:func:`make_force`), compiled once."""
    key = (type(target), "chain")
    if key not in _FORCES:
        _FORCES[key] = make_force(type(target))
    return _FORCES[key]


def lane_force_for(target) -> object:
    """The force over a block of chains for the target's class (:func:`make_lane_force`), compiled once
    (and kept on disk: :mod:`integrators._disk_cache`)."""
    key = (type(target), "lanes")
    if key not in _FORCES:
        _FORCES[key] = disk_cached(make_lane_force(type(target)), f"lane_force_{type(target).__name__}")
    return _FORCES[key]


def force_data(target, control_variate=False, x_ref=None) -> tuple:
    """The ``tdata`` tuple the forces of :func:`make_force` and :func:`make_lane_force` read.

    The per-datum gradients at ``x_ref`` are computed once here.
    """
    if control_variate:
        x_ref = target.mode() if x_ref is None else finite_array("x_ref", x_ref)
        if x_ref.ndim == 0 and target.dim == 1:  # one number for a one-dimensional target
            x_ref = x_ref.reshape(1)
        if x_ref.shape != (target.dim,):
            raise ValueError(f"x_ref must have shape {(target.dim,)}, got {x_ref.shape}")
        x_ref = np.ascontiguousarray(x_ref, dtype=float)
        ref_grads = np.zeros((target.n_data, target.dim))
        datum_grad_add = _target_functions(type(target))[1]  # a user class's: bounds-checked, named
        for i in range(target.n_data):
            datum_grad_add(x_ref, i, 1.0, target.arrays, ref_grads[i])
        ref_sum = ref_grads.sum(axis=0)
    else:
        if x_ref is not None:  # a reference point is only read by the control variate
            raise ValueError("x_ref is given but control_variate is false: pass control_variate=True to use it")
        ref_grads = np.zeros((0, target.dim))
        ref_sum = np.zeros(target.dim)
    return (target.arrays, ref_grads, ref_sum, np.array([bool(control_variate)]))
