"""A killed ``--workers N`` run leaves nothing behind: its worker processes die with it, the output
folder's lock goes with them, and ``--resume`` finishes the run with the outputs of an uninterrupted
one.  A lock still held after its run is gone names the processes that hold it."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import message_lines

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

ROOT = Path(__file__).resolve().parents[1]
FAST = "tests.report_fixtures.fast_units"
GONE_WITHIN = 10.0  # seconds: no process of a killed run may be left after this

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")


def env(**extra):
    e = os.environ.copy()
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e["SMS_LANGEVIN_REPORT_MODULES"] = FAST
    e.update(extra)
    return e


def cli(args, **extra):
    return subprocess.run([sys.executable, "-m", "reports", *args], cwd=ROOT, env=env(**extra),
                          capture_output=True, text=True, timeout=120)


def unit_files(out):
    return sorted(p for p in (Path(out) / "units").rglob("*.json") if not p.name.startswith("."))


def session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``: a run started as a session leader and every
    process it started."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] not in "ZX":
            pids.append(int(entry))
    return pids


def results(out):
    return {p.name: json.loads(p.read_text())["result"] for p in unit_files(out)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted")
    proc = cli(["run", "all", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    return out


@linux_only
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--workers 2 is reduced to 1 on one core")
@pytest.mark.parametrize("sig,saved,workers", [(signal.SIGKILL, 0, 2), (signal.SIGTERM, 2, 1), (signal.SIGKILL, 4, 1)],
                         ids=["SIGKILL-before-any-unit", "SIGTERM-after-2-units", "SIGKILL-after-4-units"])
def test_killed_worker_run_leaves_no_process_and_resumes_identically(tmp_path, reference, sig, saved, workers):
    """Killed at three points; resumed once on two workers again, else in one process (spawning
    workers costs seconds here)."""
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "reports", "run", "all", "--workers", "2", "--out", str(out)],
                            cwd=ROOT, env=env(FAST_UNITS_SLEEP="0.3"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        # "before any unit": once both workers are up (parent + 2 workers, + the resource tracker)
        while time.time() < deadline and proc.poll() is None and (
                len(unit_files(out)) < saved if saved else len(session(proc.pid)) < 3):
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed"
        proc.send_signal(sig)
        proc.wait(timeout=30)
        killed_at = time.time()
        while session(proc.pid) and time.time() < killed_at + GONE_WITHIN:
            time.sleep(0.1)
        left = session(proc.pid)
        assert not left, f"processes of the killed run still alive {GONE_WITHIN:g} s after: {left}"
    finally:
        for pid in session(proc.pid):  # never leave an orphan behind, whatever failed
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    done = len(unit_files(out))
    assert done < 6, "the run should be killed mid-way"
    resumed = cli(["run", "all", "--workers", str(workers), "--resume", "--out", str(out)])
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done} units already done, {6 - done} to run" in resumed.stderr
    assert not list((out / "units").rglob(".tmp-*"))
    assert (out / "report/fast/fast.csv").read_bytes() == (reference / "report/fast/fast.csv").read_bytes()
    assert results(out) == results(reference)


@linux_only
def test_a_lock_outliving_its_run_names_the_processes_holding_it(tmp_path):
    """The pid written in the lock is a finished process; the lock is held by this one (as a worker
    left over from a killed run would): the refusal names this process, not the dead run."""
    out = tmp_path / "stale"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import fcntl
    with open(out / ".lock", "w") as fh:
        fh.write(f"{dead.pid}\n")
        fh.flush()
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = cli(["run", "all", "--resume", "--out", str(out)])
    assert proc.returncode == 2, proc.stderr
    lines = message_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("sms-langevin: error:"), proc.stderr
    assert f"pid {os.getpid()} still holds" in lines[0] and f"kill {os.getpid()}" in lines[0], lines[0]
    assert f"run of pid {dead.pid} that took its lock is gone" in lines[0], lines[0]


FORK_AND_DIE = """
import os, sys, time
from reports.store import FolderLock
lock = FolderLock(sys.argv[1]).__enter__()
child = os.fork()
if child == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # let the caller's pipes close
        os.dup2(null, fd)
    time.sleep(30)
    os._exit(0)
print(child, flush=True)
os._exit(0)  # gone without unlocking, as a killed run is
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_keep_the_folder_locked(tmp_path):
    """A process forked by the lock's holder (a fork-started worker, say) outlives it: the lock is
    free all the same."""
    from reports.store import Busy, FolderLock
    proc = subprocess.run([sys.executable, "-c", FORK_AND_DIE, str(tmp_path)], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    child = int(proc.stdout)
    try:
        with FolderLock(tmp_path) as lock:
            assert not os.get_inheritable(lock.fh.fileno())
    except Busy as exc:
        pytest.fail(f"a forked child kept the lock: {exc}")
    finally:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)


@linux_only
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--workers 2 is reduced to 1 on one core")
@pytest.mark.parametrize("executor", [["--workers", "2"], ["--workers", "2", "--local-dask"]], ids=["pool", "dask"])
def test_ctrl_c_twice_stops_at_once_keeps_finished_units_and_resumes(tmp_path, reference, executor):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, twice: the run stops within a
    few seconds with one line and exit status 130, leaves no process, and ``--resume`` finishes it."""
    if "--local-dask" in executor:
        pytest.importorskip("dask.distributed")
    out = tmp_path / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "reports", "run", "all", *executor, "--out", str(out)],
                            cwd=ROOT, env=env(FAST_UNITS_SLEEP="1.5"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline and proc.poll() is None and len(unit_files(out)) < 2:
            time.sleep(0.02)
        assert proc.poll() is None and len(unit_files(out)) >= 2, "the run should be interrupted mid-way"
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.3)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        interrupted = time.time()
        _, stderr = proc.communicate(timeout=30)
        stopped = time.time() - interrupted
        while session(proc.pid) and time.time() < interrupted + GONE_WITHIN:
            time.sleep(0.1)
        left = session(proc.pid)
    finally:
        for pid in session(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert stopped < 10, f"took {stopped:.1f} s to stop after Ctrl-C"
    assert not left, f"processes of the interrupted run still alive: {left}"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "interrupted; finished units are saved; rerun with --resume" in stderr.strip().splitlines()[-1], stderr
    done = len(unit_files(out))
    assert 2 <= done < 6
    resumed = cli(["run", "all", "--resume", "--out", str(out)])
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done} units already done, {6 - done} to run" in resumed.stderr
    assert results(out) == results(reference)


def test_each_unit_is_given_its_share_of_the_cores_as_an_argument():
    """In process a unit runs alone (``threads=None``: its own default, every core); in a pool of
    N workers each unit gets ``cores // N``; a ``run_unit`` without the keyword is called without it."""
    from reports._executor import execute, local_cores

    tasks = [("tests.report_fixtures.thread_units", {"i": i}, "quick", i) for i in range(2)]
    alone = [result for _, result, _ in execute(tasks, workers=1)]
    assert [r["threads"] for r in alone] == [None, None]
    assert {r["pid"] for r in alone} == {os.getpid()}
    pooled = [result for _, result, _ in execute(tasks, workers=2)]
    assert [r["threads"] for r in pooled] == [max(1, local_cores() // 2)] * 2
    assert os.getpid() not in {r["pid"] for r in pooled}
    [(_, plain, _)] = execute([(FAST, {"k": 2, "plan": "sms"}, "quick", 0)], workers=1)
    assert set(plain) == {"mean", "variance"}


@linux_only
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--workers 2 is reduced to 1 on one core")
def test_ctrl_c_while_a_local_cluster_starts_is_held_and_acted_on_once_it_is_up(tmp_path):
    """SIGINT to the process group as soon as the run's first child process appears (the local cluster
    starting its workers): the press is not dropped; the run stops with exit status 130 and one line,
    leaving no process."""
    pytest.importorskip("dask.distributed")
    out = tmp_path / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "reports", "run", "all", "--workers", "2", "--local-dask",
                             "--out", str(out)], cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline and proc.poll() is None and len(session(proc.pid)) < 2:
            time.sleep(0.01)
        assert proc.poll() is None and not unit_files(out), "the cluster should still be starting"
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=90)
        gone = time.time() + GONE_WITHIN
        while session(proc.pid) and time.time() < gone:
            time.sleep(0.1)
        left = session(proc.pid)
    finally:
        for pid in session(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert not left, f"processes of the interrupted run still alive: {left}"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "interrupted; finished units are saved; rerun with --resume" in stderr.strip().splitlines()[-1], stderr


def _listening(answer: bytes):
    """A local port that accepts connections and sends ``answer`` (nothing: silent) on each."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if answer:
                conn.sendall(answer)
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.mark.parametrize("answer,words", [(b"", "no answer to Dask's handshake within 2 s"),
                                          (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\r\n" * 4,
                                           "answered something other than Dask's handshake")])
def test_a_scheduler_that_does_not_answer_dask_is_one_line_within_the_timeout(tmp_path, monkeypatch, answer, words):
    pytest.importorskip("dask.distributed")
    import io

    from reports import _executor
    from reports._cli import main

    monkeypatch.setattr(_executor, "HANDSHAKE_TIMEOUT", 2.0)
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    monkeypatch.setenv("FAST_UNITS_FAIL", "1")
    server = _listening(answer)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", "fast", "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}",
                         "--out", str(tmp_path)])
    finally:
        server.close()
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], err.getvalue()


def pool_workers(pid: int) -> list[int]:
    """The worker processes (spawned by multiprocessing, not its resource tracker) whose parent is ``pid``."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmdline:
            found.append(int(entry))
    return found


@linux_only
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--workers 2 is reduced to 1 on one core")
def test_a_worker_killed_mid_unit_is_one_line_saying_resume_and_the_run_resumes(tmp_path):
    out = tmp_path / "worker-killed"
    proc = subprocess.Popen([sys.executable, "-m", "reports", "run", "fast", "--workers", "2", "--out", str(out)],
                            cwd=ROOT, env=env(FAST_UNITS_SLEEP="0.5"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and (len(pool_workers(proc.pid)) < 2
                                                                   or not unit_files(out)):
            time.sleep(0.02)
        workers = pool_workers(proc.pid)
        assert proc.poll() is None and workers, "the run finished before a worker could be killed"
        os.kill(workers[0], signal.SIGKILL)
        err = proc.communicate(timeout=60)[1]
    finally:
        for pid in session(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 2 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    # how it ended is named where the pool still holds the dead worker (it may have let it go already)
    assert last.startswith("sms-langevin: error: a worker process ended abruptly ("), err
    assert "killed by SIGKILL" in last or "(killed, or out of memory)" in last, err
    assert "units unfinished; the finished units are saved: rerun with --resume" in last, err
    resumed = cli(["run", "fast", "--resume", "--out", str(out)])
    assert resumed.returncode == 0, resumed.stderr
