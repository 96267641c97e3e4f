"""Dask preload of the workers of the local cluster the command line starts (``--local-dask``): Ctrl-C
belongs to the run, which closes its cluster, so each worker ignores SIGINT from its start on (a
worker started by a parent that was not ignoring it would otherwise stop mid-unit with a traceback)."""

from __future__ import annotations

import signal
import threading


def dask_setup(worker) -> None:
    """Ignore SIGINT in this worker process (its main thread runs the worker, where signals are set)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
