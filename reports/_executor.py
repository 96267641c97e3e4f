"""Executors: run units locally (in process or in worker processes) or on a Dask cluster.

Results come back to the caller as each unit finishes, so the caller persists it at once.  A
unit's seed is derived from the run seed and the unit (``store.unit_seed``), never from where or in
which order it runs, so every executor gives identical results.

Local worker processes die with the run that started them: they are started with ``spawn`` (a fresh
interpreter, which inherits neither the output folder's lock nor the parent's threads), ask Linux to
kill them when their parent dies (``PR_SET_PDEATHSIG``), and elsewhere (or should that signal be
missed) a watchdog thread ends a worker whose parent is gone.  A killed run therefore leaves no
worker computing, blocked, or holding ``<out>/.lock``; ``--resume`` recomputes what was lost.

Ctrl-C belongs to the run, not its workers: local workers (of the pool or of a local Dask cluster)
start with SIGINT ignored (inherited by a pool's; set by a cluster's as it starts, through the preload
:data:`WORKER_PRELOAD`), and on an interrupt the run drops the queued units and kills its workers at
once instead of waiting for them, so it stops within seconds, once or however often Ctrl-C is
pressed (the command line ignores further interrupts while it stops).  A press while a local
cluster starts (seconds) is remembered and acted on once it is up, or once its start failed on
that press (:func:`_sigint_held`).  A ``--scheduler`` must answer Dask's handshake as a scheduler within
:data:`HANDSHAKE_TIMEOUT` seconds (:func:`check_scheduler`); one that does not, or answers
something else, is refused in one line before the run starts.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import importlib
import importlib.util
import inspect
import json
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from integrators._backends import local_cores
from integrators._install import install_command
from reports._cli_common import describe_exception

SCHEDULER_PROTOCOLS = ("tcp", "tls")
CONNECT_TIMEOUT = 3.0  # seconds to wait for a scheduler's port to accept a connection


class SchedulerError(Exception):
    """The Dask scheduler could not be used (bad address, nothing listening, dask missing)."""


class UnitFailed(Exception):
    """A unit's ``run_unit`` raised: the message names the unit, its module and the exception (one line, so it
    travels from a worker process as it is)."""


class ResultNotSent(Exception):
    """A unit's result a worker process could not send back (it does not pickle); ``args``: the task and why
    (the JSON error where JSON cannot hold it either, as in process, else the pickling one)."""


class WorkerDied(Exception):
    """A local worker process ended without finishing its unit (killed, or out of memory)."""


def check_scheduler(address: str, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """``None`` if ``address`` (``tcp://host:port``, ``tls://host:port`` or ``host:port``) accepts a TCP
    connection within ``timeout`` seconds and (where dask.distributed is installed) answers Dask's
    handshake as a scheduler within :data:`HANDSHAKE_TIMEOUT` seconds, else the reason in words."""
    protocol, sep, rest = address.partition("://")
    if not sep:
        protocol, rest = "tcp", address
    if protocol not in SCHEDULER_PROTOCOLS:
        return (f"unsupported protocol {protocol!r}; give a Dask scheduler address such as "
                f"tcp://host:8786")
    host, colon, port_text = rest.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return "expected host:port (for example tcp://127.0.0.1:8786)"
    try:
        with socket.create_connection((host, int(port_text)), timeout=timeout):
            pass
    except OSError as exc:
        return f"cannot connect ({exc.strerror or exc.__class__.__name__}); is a Dask scheduler running there?"
    if importlib.util.find_spec("distributed") is None:
        return None  # (the command line says what to install)
    return _no_dask_answer(f"{protocol}://{rest}", HANDSHAKE_TIMEOUT)


HANDSHAKE_TIMEOUT = 10.0  # seconds a --scheduler has to answer Dask's handshake (its port accepted already)


def _no_dask_answer(address: str, timeout: float) -> str | None:
    """``None`` if ``address`` answers Dask's handshake and an ``identity`` request as a scheduler within
    ``timeout`` seconds in all, else why not: a port that accepts and stays silent would hold a client
    forever, and a service that is not Dask answers bytes that read as a frame of exabytes."""
    import asyncio

    from distributed.comm import connect

    async def identity():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        reply = asyncio.run(asyncio.wait_for(identity(), timeout))
    except TimeoutError:
        return f"no answer to Dask's handshake within {timeout:g} s; is a Dask scheduler running there?"
    except (Exception, MemoryError) as exc:  # whatever the bytes of another service raise
        return (f"it answered something other than Dask's handshake ({exc.__class__.__name__}); is a Dask "
                f"scheduler running there?")
    if not (isinstance(reply, dict) and reply.get("type") == "Scheduler"):
        return f"it answered Dask's handshake as {str(reply)[:80]!r}, not as a scheduler; give a scheduler's address"
    return None


def run_task(module_name: str, unit: dict, preset: str, seed: int, threads: int | None = None):
    """Run one unit here; returns ``(result, wall seconds)``.  ``threads`` (None: the unit's default) is passed
    to ``run_unit`` only where it takes that keyword.  ``run_unit`` gets a copy of ``unit`` (one that edits it
    must not change the unit its result is saved under); an exception it raises is :class:`UnitFailed`."""
    run_unit = importlib.import_module(module_name).EXPERIMENT.run_unit
    options = {"threads": threads} if _takes_threads(run_unit) else {}
    t0 = time.time()
    try:
        result = run_unit(copy.deepcopy(unit), preset, seed, **options)
    # SystemExit too (sys.exit in run_unit is the module's error, not the command's); a KeyboardInterrupt it
    # raises cannot be told from Ctrl-C and is left to the command's interrupted path
    except (Exception, SystemExit) as exc:
        raise UnitFailed(f"run_unit({json.dumps(unit)}) (in {module_name}) raised {describe_exception(exc)}") from exc
    return result, time.time() - t0


def _run_in_worker(module_name: str, unit: dict, preset: str, seed: int, threads: int | None = None):
    """:func:`run_task` in a pool's worker: a result that does not pickle is said here in words (the pool would
    raise its pickling error in the parent, a raw traceback), as JSON refuses it where the unit runs in process."""
    result, seconds = run_task(module_name, unit, preset, seed, threads)
    try:
        pickle.dumps(result)
    except Exception as exc:  # noqa: BLE001 -- whatever __reduce__ of a user's object raises
        try:
            json.dumps(result, sort_keys=True)
            why = ("pickle", f"{exc.__class__.__name__}: {str(exc)[:200]}")
        except (TypeError, ValueError, RecursionError) as json_exc:
            why = ("json", f"{json_exc.__class__.__name__}: {str(json_exc)[:200]}")
        raise ResultNotSent(*why) from None
    return result, seconds


def _takes_threads(run_unit) -> bool:
    """Whether ``run_unit`` accepts the keyword ``threads`` (the experiment contract's optional
    thread count, :mod:`reports.registry`)."""
    try:
        parameter = inspect.signature(run_unit).parameters.get("threads")
    except (TypeError, ValueError):  # no signature to read (a builtin)
        return False
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCHDOG_SECONDS = 0.5  # how often a worker checks that its parent is alive


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCHDOG_SECONDS)
        if os.getppid() != parent:  # orphaned: re-parented to init or a subreaper
            os._exit(1)


def _worker_init(parent: int) -> None:
    """Initializer of every local worker process: die with the parent ``parent``, and leave Ctrl-C to
    it (a terminal sends SIGINT to the whole process group; the parent then kills the workers, so a
    worker never turns the interrupt into a failed unit or keeps computing its queue)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends an orphan
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="sms-langevin-parent-watchdog",
                     daemon=True).start()


def execute(tasks: list, workers: int = 1, scheduler: str | None = None, local_dask: bool = False, *,
            threads: int | None = None):
    """Yield ``(task, result, seconds)`` for ``(module, unit, preset, seed)`` tasks as they finish: in process
    (``workers`` 1), a process pool (``local_cores() // workers`` threads each) or Dask (``scheduler`` or
    ``local_dask``; ``SchedulerError`` when unusable)."""
    cores = local_cores()
    if scheduler or local_dask:
        yield from _dask(tasks, workers, scheduler)
        return
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            result, seconds = run_task(*task, threads)
            yield task, result, seconds
        return
    workers = min(workers, len(tasks))
    threads = max(1, cores // workers)
    # the workers start with Ctrl-C ignored (inherited), so none dies mid-import; a press in these
    # few milliseconds is lost (a handler of ours would not be inherited, and the workers need SIG_IGN)
    with _sigint_ignored():
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init, initargs=(os.getpid(),))
        futures = {pool.submit(_run_in_worker, *task, threads): task for task in tasks}
    finished = 0
    try:
        for fut in as_completed(futures):
            try:
                result, seconds = fut.result()
            except ResultNotSent as exc:  # the worker knows why, the parent which unit
                raise ResultNotSent(futures[fut], *exc.args) from None
            except BrokenProcessPool:
                raise WorkerDied(f"a worker process ended abruptly ({_how_workers_ended(pool)}) with "
                                 f"{len(futures) - finished} of {len(futures)} units unfinished") from None
            finished += 1
            yield futures[fut], result, seconds
    except BaseException:
        _stop_at_once(pool)  # Ctrl-C, a failed unit, or the caller gone: never wait for the queued units
        raise
    pool.shutdown(wait=True)


def _how_workers_ended(pool: ProcessPoolExecutor) -> str:
    """How the pool's dead workers ended, in words (``"pid 12 killed by SIGKILL"``), where that can be read."""
    ended = []
    for pid, proc in (getattr(pool, "_processes", None) or {}).items():
        code = proc.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                ended.append(f"pid {pid} killed by {signal.Signals(-code).name}")
        elif code:
            ended.append(f"pid {pid} exited with code {code}")
    return ", ".join(ended) or "killed, or out of memory"


def _stop_at_once(pool: ProcessPoolExecutor) -> None:
    """End a worker pool without waiting (queue dropped, workers killed), ignoring a second Ctrl-C meanwhile
    (it would leave the pool half shut: a hang); the caller's handler is restored, so the interrupt propagates."""
    with _sigint_ignored():
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                proc.kill()
        for proc in processes:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                proc.join(timeout=5)
        pool.shutdown(wait=False)
        manager = getattr(pool, "_executor_manager_thread", None)
        if manager is not None:  # it sees the dead workers and ends; never waited on without a limit
            manager.join(timeout=5)


@contextlib.contextmanager
def _sigint_ignored():
    """Ctrl-C ignored inside the block (in the main thread; elsewhere signals cannot be set), the
    previous handler restored after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


WORKER_PRELOAD = "reports._dask_worker_setup"  # run by each local cluster worker as it starts


@contextlib.contextmanager
def _sigint_held():
    """Ctrl-C remembered inside the block and acted on after it: a press goes to the handler the block
    replaced (the command line's raises KeyboardInterrupt) once the block's work is done, or has failed
    (a local cluster's worker hit by the same press fails its start), so that it can be cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    except Exception:
        if not pressed:
            raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        if callable(previous):
            previous(signal.SIGINT, None)
        if previous is not signal.SIG_IGN:
            raise KeyboardInterrupt


def _dask(tasks, workers, scheduler):
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise SchedulerError(f"the Dask executor needs dask.distributed: {install_command('dask')}") from None
    if not tasks:
        return
    cluster = client = None
    try:
        if scheduler:
            client = Client(scheduler, timeout=f"{int(CONNECT_TIMEOUT * 3)}s")
        else:
            # Ctrl-C is the run's, which closes the cluster: each worker ignores it from its start (the preload)
            with _sigint_held():
                cluster = LocalCluster(n_workers=max(1, min(workers, len(tasks))), threads_per_worker=1,
                                       processes=True, dashboard_address=None, preload=[WORKER_PRELOAD])
            client = Client(cluster)
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        where = scheduler or "a local Dask cluster"
        first = (str(exc).splitlines() or [""])[0]
        raise SchedulerError(f"cannot use {where}: {exc.__class__.__name__}: {first}") from None
    except BaseException:  # Ctrl-C held while the cluster started: close what started
        with _sigint_ignored(), _quiet("distributed"):
            if cluster is not None:
                _kill_local_workers(cluster)
            _close_dask(client, cluster, timeout=DASK_CLOSE_SECONDS)
        raise
    futures = {}
    try:
        futures = {client.submit(run_task, *task, 1, pure=False): task for task in tasks}
        for fut in dask_completed(list(futures)):
            result, seconds = fut.result()
            yield futures[fut], result, seconds
    except BaseException:
        with _sigint_ignored(), _quiet("distributed"):  # stopping: the units in flight are dropped, not awaited
            if cluster is not None:
                _kill_local_workers(cluster)
            with contextlib.suppress(Exception):
                client.cancel(list(futures), force=True)
            _close_dask(client, cluster, timeout=DASK_CLOSE_SECONDS)
        raise
    with _quiet("distributed"):  # a nanny killing a worker that is slow to stop is no news to the user
        _close_dask(client, cluster)


DASK_CLOSE_SECONDS = 3  # an interrupted run's local cluster: how long its workers get to stop before they are killed


def _kill_local_workers(cluster) -> None:
    """SIGKILL the worker processes of a local cluster (their units are lost; ``--resume`` redoes them)."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _close_dask(client, cluster, timeout=None) -> None:
    if client is not None:
        with contextlib.suppress(Exception):
            client.close(**({"timeout": timeout} if timeout else {}))
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close(**({"timeout": timeout} if timeout else {}))


@contextlib.contextmanager
def _quiet(logger_name: str):
    """The warnings of the logger and its children (workers killed while stopping) held back inside
    the block."""
    names = [logger_name] + [n for n in logging.root.manager.loggerDict if n.startswith(logger_name + ".")]
    loggers = [logging.getLogger(n) for n in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
