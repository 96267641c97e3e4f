"""Elastic bounce on the box ``|x - c|_inf < w`` (the paper's Section 4, constrained sampling).

A coordinate that leaves ``(c_i - w_i, c_i + w_i)`` is reflected back in, folding the
position as many times as it crossed a wall (overshoots of several box widths included), and
its velocity component changes sign once per reflection.  Schemes call :func:`reflect` after
every position update, so the bounce works with every scheme.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators._disk_cache import njit_cached
from integrators._validation import finite_array


@njit_cached(nogil=True)
def fold(y, w):
    """Fold ``y`` into ``[-w, w]`` by reflections at the walls; return (folded, n_reflections)."""
    if -w <= y <= w:
        return y, 0
    period = 4.0 * w
    shifted = y + w  # in [0, 2w] when inside
    n_walls = int(math.floor(shifted / (2.0 * w)))
    r = shifted - period * math.floor(shifted / period)  # in [0, 4w)
    if r > 2.0 * w:
        r = period - r
    return r - w, abs(n_walls)


@nb.njit(nogil=True, inline="always")
def reflect(x, v, box):
    """Apply the elastic bounce in place to a block of chains: each coordinate outside the box is
    folded back in, and its velocity flips sign once per reflection; a no-op when inactive.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Positions, changed in place.
    v : ndarray, shape (n, d)
        Velocities, changed in place.
    box : tuple
        ``(center, half_width, active)``: arrays of shape ``(d,)``, ``(d,)`` and ``(1,)``.
    """
    center, half_width, active = box
    if not active[0]:
        return
    n, d = x.shape
    for c in range(n):
        for a in range(d):
            y, n_ref = fold(x[c, a] - center[a], half_width[a])
            if n_ref:
                x[c, a] = center[a] + y
                if n_ref % 2 == 1:
                    v[c, a] = -v[c, a]


def make_box(dim: int, center=None, half_width=None) -> tuple:
    """The ``box`` tuple the kernels take; ``center=None`` and ``half_width=None`` means no box."""
    if center is None and half_width is None:
        return (np.zeros(dim), np.full(dim, np.inf), np.array([False]))
    if half_width is None:
        raise ValueError("box_center needs box_half_width (the box is |x - box_center|_inf < box_half_width)")
    center = np.zeros(dim) if center is None else finite_array("box_center", center)
    half_width = finite_array("box_half_width", half_width)
    if center.ndim == 0:
        center = np.full(dim, float(center))
    if half_width.ndim == 0:
        half_width = np.full(dim, float(half_width))
    if center.shape != (dim,):
        raise ValueError(f"box_center must have shape {(dim,)}, got {center.shape}")
    if half_width.shape != (dim,):
        raise ValueError(f"box_half_width must have shape {(dim,)}, got {half_width.shape}")
    if not np.all(np.isfinite(center)):
        raise ValueError("box_center contains non-finite values")
    if not np.all((half_width > 0) & np.isfinite(half_width)):
        raise ValueError(f"box_half_width must be positive and finite, got {half_width}")
    return (np.ascontiguousarray(center), np.ascontiguousarray(half_width), np.array([True]))
