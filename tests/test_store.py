"""The results store: the folder lock is never opened through a link, so a ``.lock`` planted as a
link to a file outside the output folder leaves that file unchanged; the fingerprint names the
versions of the libraries a figure measures."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import message_lines

from reports import _runmeta as runmeta
from reports.store import CorruptUnit, FolderLock, StaleUnit, Store, UnsafeLock, checksum

ROOT = Path(__file__).resolve().parents[1]


def _victim(tmp_path) -> Path:
    victim = tmp_path / "elsewhere" / "precious.txt"
    victim.parent.mkdir()
    victim.write_text("a user's file\n")
    return victim


def test_a_symlinked_lock_is_refused_and_its_target_unchanged(tmp_path):
    out, victim = tmp_path / "out", _victim(tmp_path)
    out.mkdir()
    (out / ".lock").symlink_to(victim)
    with pytest.raises(UnsafeLock, match=r"\.lock is a symbolic link"):
        with FolderLock(out):
            pass
    assert victim.read_text() == "a user's file\n"


def test_a_dangling_symlinked_lock_creates_nothing_at_its_target(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "would-be-created.txt"
    (out / ".lock").symlink_to(target)
    with pytest.raises(UnsafeLock, match="symbolic link"):
        with FolderLock(out):
            pass
    assert not target.exists()


def test_a_hard_linked_lock_is_refused_and_its_other_name_unchanged(tmp_path):
    out, victim = tmp_path / "out", _victim(tmp_path)
    out.mkdir()
    os.link(victim, out / ".lock")
    with pytest.raises(UnsafeLock, match="hard link"):
        with FolderLock(out):
            pass
    assert victim.read_text() == "a user's file\n"


def test_a_fifo_in_place_of_the_lock_is_refused_without_blocking(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".lock")
    with pytest.raises(UnsafeLock, match="not a regular file"):
        with FolderLock(out):
            pass


def test_a_regular_lock_is_taken_and_holds_the_pid(tmp_path):
    with FolderLock(tmp_path):
        assert (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"
    with FolderLock(tmp_path):  # taken again once released
        pass


@pytest.mark.slow
@pytest.mark.experiment
@pytest.mark.parametrize("command", [["run", "all", "--resume"], ["report"]])
def test_the_command_line_refuses_a_symlinked_lock_in_one_line(tmp_path, command):
    out, victim = tmp_path / "out", _victim(tmp_path)
    (out / "units").mkdir(parents=True)
    (out / ".lock").symlink_to(victim)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SMS_LANGEVIN_REPORT_MODULES": "tests.report_fixtures.fast_units"}
    proc = subprocess.run([sys.executable, "-m", "reports", *command, "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = message_lines(proc.stderr)
    assert len(lines) == 1 and "is a symbolic link" in lines[0], proc.stderr
    assert victim.read_text() == "a user's file\n"


def test_the_fingerprint_names_the_measured_libraries_versions(monkeypatch):
    import numpy as np

    module = "tests.report_fixtures.library_units"
    versions = runmeta.library_versions(module)
    assert versions == {"numpy": np.__version__}
    assert runmeta.fingerprint(module, 0, 1, "quick")["libraries"] == versions
    assert "libraries" not in runmeta.fingerprint("tests.report_fixtures.fast_units", 0, 1, "quick")
    mod = sys.modules[module]
    monkeypatch.setattr(mod, "EXPERIMENT", dataclasses.replace(
        mod.EXPERIMENT, LIBRARIES=("numpy", "surely-not-an-installed-distribution")))
    assert runmeta.library_versions(module)["surely-not-an-installed-distribution"] == "not installed"


def test_a_unit_file_edited_to_hold_another_unit_names_both_not_a_checksum_mismatch(tmp_path):
    store = Store(tmp_path)
    path = store.save("fig", {"k": 1}, {"v": 1.0}, {})
    payload = json.loads(path.read_text())
    payload["unit"] = {"k": 2}  # edited by hand, its checksum recomputed
    payload["checksum"] = checksum(payload["key"], payload["unit"], payload["result"], payload["meta"])
    path.write_text(json.dumps(payload))
    with pytest.raises(CorruptUnit, match=re.escape(f"{path}: holds unit {{'k': 2}}, not {{'k': 1}}")):
        store.load("fig", {"k": 1})


def test_a_forged_fingerprint_value_is_cut_in_the_stale_unit_message(tmp_path):
    deep = []
    for _ in range(600):
        deep = [deep]
    store = Store(tmp_path)
    store.save("fig", {"k": 1}, {"v": 1.0}, {"fingerprint": {"run_seed": 10**3999, "preset": deep}})
    with pytest.raises(StaleUnit) as caught:
        store.load("fig", {"k": 1}, {"run_seed": 0, "preset": "quick"})
    message = str(caught.value)
    assert "run_seed int 1000" in message and "preset list [[[" in message and len(message) < 400, message[:500]


def test_a_forged_libraries_field_counts_as_every_library_changed_not_a_traceback():
    from reports._runmeta import library_changes

    wanted = {"libraries": {"numpy": "2.0"}}
    for forged in (["x"], "x", 3):
        assert library_changes({"libraries": forged}, wanted) == ["numpy unknown (now 2.0)"]
    assert library_changes({"libraries": {"numpy": "2.0"}}, wanted) == []
