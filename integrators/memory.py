"""Refuse requests whose arrays cannot fit in this machine's memory before anything is allocated.

Without this, ``n_chains=10**12`` or a histogram of ``10**12`` bins ends in a ``MemoryError``
that names no argument (or, below the machine's size but above what is free, in swapping).  Every
entry point that sizes arrays from its arguments adds up the bytes it will hold and calls
:func:`check_fits` with the arguments that decided them.
"""

from __future__ import annotations

import os

GIB = 2.0**30


def physical_memory_bytes() -> int | None:
    """This machine's physical memory in bytes, or ``None`` where the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def device_memory_bytes(device) -> int | None:
    """The memory of a torch ``device`` in bytes: a CUDA device's own (``total_memory``), else
    this machine's physical memory (CPU tensors; torch is imported only for a CUDA device)."""
    if getattr(device, "type", None) == "cuda" or str(device).startswith("cuda"):
        import torch

        return int(torch.cuda.get_device_properties(device).total_memory)
    return physical_memory_bytes()


def check_fits(request: str, n_bytes: float, *, limit: float | None = None) -> None:
    """Raise a ``ValueError`` naming ``request`` (the arguments that sized the arrays, e.g.
    ``"n_chains=10**12 with d=3"``) when ``n_bytes`` exceed ``limit`` (default: the physical
    memory)."""
    limit = physical_memory_bytes() if limit is None else limit
    if limit is not None and n_bytes > limit:
        raise ValueError(f"{request} needs about {n_bytes / GIB:.3g} GiB of arrays, more than this machine's "
                         f"{limit / GIB:.3g} GiB of memory; ask for fewer")
