"""Refuse requests whose arrays cannot fit in the memory free now, before anything is allocated.

Without this, ``n_chains=10**12`` or a histogram of ``10**12`` bins ends in a ``MemoryError``
that names no argument, and a request below the machine's size but above what is free ends in
swapping or the kernel's out-of-memory killer.  Every entry point that sizes arrays from its
arguments adds up the bytes it will hold and calls :func:`check_fits` with the arguments that
decided them; the limit is the memory available now (:func:`available_memory_bytes`), or a CUDA
device's free memory for tensors on it (:func:`device_memory_bytes`).
"""

from __future__ import annotations

import os

GIB = 2.0**30
MEMINFO = "/proc/meminfo"


def physical_memory_bytes() -> int | None:
    """This machine's physical memory in bytes, or ``None`` where the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def psutil_available_bytes() -> int | None:
    """``psutil.virtual_memory().available``, or ``None`` where psutil is not installed (it is
    not a dependency)."""
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def meminfo_available_bytes(path: str | None = None) -> int | None:
    """The kernel's estimate of the memory a new allocation can take without swapping
    (``MemAvailable`` of ``path``, default :data:`MEMINFO`; Linux 3.14 on), or ``None`` where it
    is not given."""
    try:
        with open(MEMINFO if path is None else path) as meminfo:
            for line in meminfo:
                key, _, rest = line.partition(":")
                if key == "MemAvailable":
                    number, _, unit = rest.strip().partition(" ")
                    return int(number) * (1024 if unit.strip().lower() == "kb" else 1)
    except (OSError, ValueError):
        return None
    return None


def available_memory_bytes() -> int | None:
    """The memory available to a new allocation now, in bytes: psutil's ``available`` if psutil
    is installed, else ``MemAvailable`` of ``/proc/meminfo``, else the physical memory (``None``
    where the platform says nothing)."""
    for reader in (psutil_available_bytes, meminfo_available_bytes, physical_memory_bytes):
        value = reader()
        if value is not None:
            return value
    return None


def cuda_free_bytes(device) -> int:
    """The free memory of a CUDA ``device`` now (``torch.cuda.mem_get_info``), in bytes."""
    import torch

    return int(torch.cuda.mem_get_info(device)[0])


def device_memory_bytes(device) -> int | None:
    """The memory tensors on a torch ``device`` may fill now, in bytes: a CUDA device's free
    memory (:func:`cuda_free_bytes`), else the memory available on this machine
    (:func:`available_memory_bytes`; torch is imported only for a CUDA device)."""
    if getattr(device, "type", None) == "cuda" or str(device).startswith("cuda"):
        return cuda_free_bytes(device)
    return available_memory_bytes()


def check_fits(request: str, n_bytes: float, *, limit: float | None = None) -> None:
    """Raise a ``ValueError`` naming ``request`` (the arguments that sized the arrays, e.g.
    ``"n_chains=10**12 with d=3"``) when ``n_bytes`` exceed ``limit`` (default: the memory
    available now, :func:`available_memory_bytes`)."""
    limit = available_memory_bytes() if limit is None else limit
    if limit is not None and n_bytes > limit:
        raise ValueError(f"{request} needs about {n_bytes / GIB:.3g} GiB of arrays, more than this machine's "
                         f"{limit / GIB:.3g} GiB of memory available now; ask for fewer")
