"""Executors: run units locally (in process or in worker processes) or on a Dask cluster.

Results come back to the caller as each unit finishes, so the caller persists it at once.  A
unit's seed is derived from the run seed and the unit (``store.unit_seed``), never from where or in
which order it runs, so every executor gives identical results.
"""

from __future__ import annotations

import importlib
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed


def run_task(module_name: str, unit: dict, preset: str, seed: int, threads: int | None = None):
    """Run one unit (in whatever process this is); returns (result, wall seconds)."""
    if threads:
        os.environ["SMS_LANGEVIN_THREADS"] = str(threads)
    mod = importlib.import_module(module_name)
    t0 = time.time()
    result = mod.run_unit(unit, preset, seed)
    return result, time.time() - t0


def execute(tasks: list, workers: int = 1, scheduler: str | None = None, local_dask: bool = False):
    """Yield ``(task, result, seconds)`` as units finish.  ``tasks``: ``(module, unit, preset, seed)``."""
    cores = os.cpu_count() or 1
    if scheduler or local_dask:
        yield from _dask(tasks, workers, scheduler)
        return
    if workers <= 1:
        for task in tasks:
            result, seconds = run_task(*task)
            yield task, result, seconds
        return
    threads = max(1, cores // workers)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_task, *task, threads): task for task in tasks}
        for fut in as_completed(futures):
            result, seconds = fut.result()
            yield futures[fut], result, seconds


def _dask(tasks, workers, scheduler):
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError as exc:
        raise RuntimeError("the Dask executor needs dask.distributed: pip install 'dask[distributed]'") from exc
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        futures = {client.submit(run_task, *task, 1, pure=False): task for task in tasks}
        for fut in dask_completed(list(futures)):
            result, seconds = fut.result()
            yield futures[fut], result, seconds
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
