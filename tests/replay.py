"""Replay: the Numba schemes driven by given path data and batches (for cross-backend tests).

:func:`replay` advances chains with the very step functions and block forces the kernel uses
(``SCHEMES[name].step`` and :func:`integrators.targets._force.lane_force_for`), but takes the path pairs
and the batch sequence from the caller instead of the kernel's streams, and records the
trajectory.  The tensor backend (:mod:`integrators.torch`) accepts the same explicit sequences, so
both can be driven by identical numbers and compared step by step.
"""

from __future__ import annotations

import numpy as np

from integrators._bounce import make_box
from integrators.plans import force_scale, resolve_plan
from integrators.schemes import SCHEMES
from integrators.targets._force import force_data, lane_force_for


def batch_array(batches, n_chains: int) -> tuple[np.ndarray, np.ndarray]:
    """A list of per-step batches (each ``(n_b, n_chains)`` or ``(n_b,)`` for every chain alike) as
    a padded ``(n_seq, max n_b, n_chains)`` array and the lengths."""
    arrs = [np.asarray(b, dtype=np.int64) for b in batches]
    arrs = [np.repeat(a[:, None], n_chains, axis=1) if a.ndim == 1 else a for a in arrs]
    width = max(a.shape[0] for a in arrs)
    out = np.zeros((len(arrs), width, n_chains), dtype=np.int32)  # the kernel's index type
    for k, a in enumerate(arrs):
        if a.shape[1] != n_chains:
            raise ValueError(f"batch {k} has {a.shape[1]} columns, expected {n_chains} chains")
        out[k, :a.shape[0]] = a
    return out, np.array([a.shape[0] for a in arrs], dtype=np.int64)


def replay(target, scheme: str, plan: str, h: float, gamma: float, x0, v0, dW, J, batches, *, batch_size=None,
           control_variate=False, x_ref=None, box_center=None, box_half_width=None):
    """Trajectories ``(xs, vs)`` of shape ``(n_steps, n_chains, d)`` of ``scheme`` on ``target``.

    ``x0, v0``: ``(n_chains, d)``; ``dW, J``: ``(n_steps, 2, d, n_chains)`` (the kernel's layout: the
    pair over each half step); ``batches``: ``n_steps`` batches (one more, first, for
    first-same-as-last schemes: the batch of the initial force), each ``(n_b, n_chains)`` or
    ``(n_b,)``; ``plan`` and ``batch_size`` (default: the longest batch) set the force's scale
    (``N_m``, ``N_D / N_b`` or 1).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose from {sorted(SCHEMES)}")
    plan = resolve_plan(plan).NAME  # a registered name or a plan object
    module = SCHEMES[scheme]
    x = np.array(x0, dtype=float, order="C")
    v = np.array(v0, dtype=float, order="C")
    n, d = x.shape
    dW = np.ascontiguousarray(dW, dtype=float)
    J = np.ascontiguousarray(J, dtype=float)
    n_steps = dW.shape[0]
    if dW.shape != (n_steps, 2, d, n) or J.shape != dW.shape:
        raise ValueError(f"dW and J must have shape {(n_steps, 2, d, n)}, got {dW.shape} and {J.shape}")
    if len(batches) != n_steps + int(module.FSAL):
        raise ValueError(f"{scheme} needs {n_steps + int(module.FSAL)} batches for {n_steps} steps, "
                         f"got {len(batches)}")
    arr, lengths = batch_array(batches, n)
    if batch_size is None:
        batch_size = target.n_data if plan == "full" else int(lengths.max())
    scale = force_scale(plan, target.n_data, batch_size)
    force = lane_force_for(target)
    coef, tdata = module.coefficients(h, gamma), force_data(target, control_variate, x_ref)
    box = make_box(d, box_center, box_half_width)
    g = np.zeros((n, d))
    xs = np.zeros((n_steps, n, d))
    vs = np.zeros((n_steps, n, d))
    # a Python loop over the compiled step and force with the kernel's argument types: the
    # specializations the kernel compiled are reused, nothing new is compiled for a replay
    if module.FSAL:
        force(x, g, arr[0], int(lengths[0]), scale, tdata)
    first = int(module.FSAL)
    for k in range(n_steps):
        module.step(x, v, g, coef, dW[k], J[k], force, arr[k + first], int(lengths[k + first]), scale, tdata, box)
        xs[k] = x
        vs[k] = v
    return xs, vs
