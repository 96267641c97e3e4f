"""Units that report the thread count the executor gave them (``run_unit``'s keyword
``threads``), for the executor's tests; nothing else of the experiment contract is used."""

from __future__ import annotations

import os


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    return {"threads": threads, "pid": os.getpid()}
