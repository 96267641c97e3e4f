"""Elastic bounce on ``|x - c|_inf < w`` on tensors, coordinate by coordinate (the same folding
as :func:`integrators._bounce.fold`): a coordinate that left the box is reflected back in as many
times as it crossed a wall, and its velocity component changes sign once per reflection."""

from __future__ import annotations

import torch


def compiling() -> bool:
    """Whether ``torch.compile`` is tracing or a CUDA graph is being captured (then the bounce stays
    branch-free: nothing is read back to the host)."""
    return torch.compiler.is_compiling() or (torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


def make_reflect(center: torch.Tensor, half_width: torch.Tensor):
    """``reflect(x, v)`` in place for the box with ``center`` and ``half_width`` (broadcast
    against ``x``); eager calls skip the folding when no coordinate left the box (one
    device-to-host read)."""

    def reflect(x: torch.Tensor, v: torch.Tensor) -> None:
        y = x - center
        outside = y.abs() > half_width
        if not compiling() and not bool(outside.any()):  # the usual case: three passes, no folding
            return
        period = 4.0 * half_width
        shifted = y + half_width
        n_walls = torch.floor(shifted / (2.0 * half_width))
        r = shifted - period * torch.floor(shifted / period)
        r = torch.where(r > 2.0 * half_width, period - r, r)
        odd = torch.remainder(n_walls.abs(), 2.0) == 1.0
        x.copy_(torch.where(outside, center + (r - half_width), x))
        v.copy_(torch.where(outside & odd, -v, v))

    return reflect
