"""A scheme's affine map read off its compiled step, by probing.

On a Gaussian target the minibatch force is affine, ``G(x, w) = H_w x - b_w``, so one compiled
``step`` with batch ``w`` is an affine map of its inputs: the state ``z = (x, v, g)`` (``g`` the
cached force that first-same-as-last schemes carry; other schemes overwrite it) and the path
data ``xi = (dW_1, J_1, dW_2, J_2)`` of the step's two half steps:

    z' = A_w z + a_w + C_w xi

The step runs once on a block of ``1 + 3d + 4d (+ extra)`` chains: chain 0 with every input
zero gives ``a_w``, chain ``1 + j`` with unit input ``j`` gives column ``j`` of ``[A_w C_w]``
(minus ``a_w``), and further chains with random inputs check that the step is affine at all
(a scheme that draws its own random numbers, or is not linear in its inputs, is caught here).
This needs nothing from the scheme but its step and coefficients, so the exact oracle serves a
scheme written in user code as well as the built-in ones, whose declared ``affine_ops`` remain an
independent check of the probing.  ``backend="torch"`` probes the scheme's tensor step instead
(:func:`integrators.torch.schemes.torch_step`: a built-in's, or a user scheme's ``TORCH_STEP``)
on float64 CPU tensors, with the path data injected the same way: a scheme written only in torch
reaches the same oracle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from integrators._bounce import make_box
from integrators._kernel import step_caller
from integrators._user_code import guarded
from integrators._validation import positive_float
from integrators.schemes import resolve_scheme
from integrators.targets import GaussianTarget
from integrators.targets._force import force_data, lane_force_for

N_CHECK = 3  # chains with random inputs that check affinity


@dataclass
class ProbedMap:
    """``z' = A z + a + C xi`` with ``z = (x, v, g)`` (``3d``) and ``xi`` the ``4d`` path data;
    ``affine_residual``: largest deviation of random inputs from the affine prediction, relative
    to the size of the outputs (rounding level for an affine step)."""

    A: np.ndarray
    a: np.ndarray
    C: np.ndarray
    affine_residual: float


def checked_batch(target, batch) -> np.ndarray:
    """``batch`` as an ``int32`` array of data indices: non-empty, integers in ``[0, n_data)``
    (an index outside would read another datum's memory, or none, as a zero force)."""
    if not isinstance(target, GaussianTarget):
        raise ValueError(f"the step maps need a GaussianTarget, got {type(target).__name__}")
    try:
        arr = np.asarray(batch)
    except (TypeError, ValueError):
        raise ValueError(f"batch must be a list of data indices, got {batch!r}") from None
    if arr.ndim == 1 and arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)  # integer-valued floats are indices too
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"batch must be a non-empty list of integer data indices, got {batch!r}")
    if arr.min() < 0 or arr.max() >= target.n_data:
        raise ValueError(f"batch indices must lie in [0, {target.n_data}), got {batch!r}")
    return arr.astype(np.int32)


def _inputs(d: int, rng) -> np.ndarray:
    """Rows: one chain's inputs ``(x, v, g, xi)``: zeros, the unit vectors, random checks."""
    n_in = 7 * d
    return np.vstack([np.zeros(n_in), np.eye(n_in), rng.normal(size=(N_CHECK, n_in))])


BACKENDS = ("numba", "torch")


def probe_backend(scheme, backend: str | None) -> str:
    """``backend`` checked, or by default ``"numba"`` (``"torch"`` for a scheme with no Numba step)."""
    if backend is None:
        return "torch" if getattr(resolve_scheme(scheme), "step", None) is None else "numba"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def probe_step_map(scheme, target: GaussianTarget, batch, scale: float, h: float, gamma: float,
                   control_variate: bool = False, x_ref=None, seed: int = 0, *,
                   backend: str | None = None) -> ProbedMap:
    """The affine map of one step of ``scheme`` with batch ``batch``, on ``backend`` (see the module)."""
    module = resolve_scheme(scheme)
    backend = probe_backend(module, backend)
    batch = checked_batch(target, batch)
    h, gamma, scale = positive_float("h", h), positive_float("gamma", gamma), positive_float("scale", scale)
    d = target.dim
    rows = _inputs(d, np.random.default_rng(seed))
    n = rows.shape[0]
    x = np.ascontiguousarray(rows[:, :d])
    v = np.ascontiguousarray(rows[:, d:2 * d])
    g = np.ascontiguousarray(rows[:, 2 * d:3 * d])
    xi = rows[:, 3 * d:].reshape(n, 4, d)          # slots: dW_1, J_1, dW_2, J_2
    dW = np.ascontiguousarray(xi[:, 0::2, :].transpose(1, 2, 0))   # (2, d, n)
    J = np.ascontiguousarray(xi[:, 1::2, :].transpose(1, 2, 0))
    if backend == "torch":
        out = _torch_step_outputs(module, target, batch, scale, h, gamma, control_variate, x_ref, x, v, g, dW, J)
    else:
        batches = np.ascontiguousarray(np.repeat(batch[:, None], n, axis=1))
        step = step_caller(guarded(module.step, f"scheme {module.NAME!r}: step"),  # user code: checked, named
                           lane_force_for(target))
        step(x, v, g, np.asarray(module.coefficients(h, gamma), dtype=float), dW, J, batches, len(batch),
             float(scale), force_data(target, control_variate, x_ref), make_box(d))
        out = np.hstack([x, v, g])                  # (n, 3d)
    a = out[0]
    cols = (out[1:1 + 7 * d] - a).T                # (3d, 7d)
    A, C = cols[:, :3 * d], cols[:, 3 * d:]
    check_in = rows[1 + 7 * d:]
    predicted = a + check_in @ cols.T
    got = out[1 + 7 * d:]
    size = max(1.0, float(np.max(np.abs(out))))
    residual = float(np.max(np.abs(predicted - got))) / size if np.all(np.isfinite(got)) else float("inf")
    return ProbedMap(A, a, C, residual)


def _torch_step_outputs(module, target, batch, scale, h, gamma, control_variate, x_ref, x, v, g, dW, J):
    """``(x', v', g')`` of the scheme's tensor step on the probe's block (float64, CPU)."""
    import torch

    from integrators.torch._targets import torch_force
    from integrators.torch.schemes import torch_step

    step = torch_step(module)
    f64 = torch.float64
    xt, vt, gt = (torch.tensor(a, dtype=f64) for a in (x, v, g))
    dWt = torch.tensor(np.ascontiguousarray(dW.transpose(0, 2, 1)), dtype=f64)  # (2, n, d): the tensor layout
    Jt = torch.tensor(np.ascontiguousarray(J.transpose(0, 2, 1)), dtype=f64)
    force = torch_force(target, "cpu", f64, control_variate, x_ref)
    idx = torch.as_tensor(batch, dtype=torch.int64)[None, :].expand(xt.shape[0], -1)
    coef = tuple(float(c) for c in step.coefficients(h, gamma))
    g_new = step.step(xt, vt, gt, coef, dWt, Jt, lambda y: force(y, idx, float(scale)), None)
    return np.hstack([xt.numpy(), vt.numpy(), g_new.detach().numpy()])
