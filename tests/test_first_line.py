"""Every command says what it is doing at once: a line before the heavy imports (numba, the experiments),
one before the units are listed, and one saying whether kernels compile before the units run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports import _cli as cli
from reports._start import first_line

ROOT = Path(__file__).resolve().parents[1]
FAST = "tests.report_fixtures.fast_units"


@pytest.mark.parametrize("command", ["list", "run", "report", "claims", "bench", "tour"])
def test_the_entry_point_prints_its_first_line_before_importing_numba(command):
    # numba made unimportable: whatever the command imports first fails, after the line
    code = (f"import sys; sys.modules['numba'] = None; sys.argv = ['sms-langevin', {command!r}, '--out', 'x']; "
            "from reports._start import entry; entry()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    lines = proc.stderr.splitlines()
    assert proc.returncode != 0 and "numba" in proc.stderr, proc.stderr[-500:]
    assert lines[0] == first_line([command]), lines[:3]
    assert lines[0].startswith(f"sms-langevin {command}: starting")
    assert "compile" not in lines[0], lines[0]  # nothing has compiled or been validated yet: said later, if at all


@pytest.mark.parametrize("argv", [["list"], ["run", "all", "--preset", "nonesuch", "--out", "{tmp}"]])
def test_a_command_that_runs_no_unit_says_nothing_of_compiling(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    argv = [a.replace("{tmp}", str(tmp_path / "out")) for a in argv]
    cli.main(argv)
    err = f"{first_line(argv)}\n{capsys.readouterr().err}"  # what the entry point prints, then the command
    assert "compile" not in err, err


def test_help_prints_no_line_before_its_text():
    assert first_line(["--help"]) is None and first_line([]) is None and first_line(["run", "-h"]) is None


def test_a_command_name_with_control_characters_is_not_echoed():
    assert first_line(["\x1b[2Jrun"]) is None  # no command: argparse refuses it (escaped), nothing echoed raw
    assert first_line(["run", "\x1b[2J"]) == "sms-langevin run: starting (importing numba and the experiments)"


def _run_stopped_at(step: str, tmp_path, monkeypatch, capsys) -> str:
    """``run all --preset quick`` with the CLI's ``step`` made to raise: the stderr written before it."""
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)

    def heavy(*args, **kwargs):
        raise RuntimeError(f"{step} was reached")

    monkeypatch.setattr(cli, step, heavy)
    with pytest.raises(RuntimeError, match="was reached"):
        cli.main(["run", "all", "--preset", "quick", "--out", str(tmp_path)])
    return capsys.readouterr().err


def test_run_says_it_lists_the_units_before_listing_them(tmp_path, monkeypatch, capsys):
    assert "quick: listing the units of fast" in _run_stopped_at("figure_units", tmp_path, monkeypatch, capsys)


def test_run_says_whether_kernels_compile_before_the_first_unit_runs(tmp_path, monkeypatch, capsys):
    err = _run_stopped_at("execute", tmp_path, monkeypatch, capsys).splitlines()
    assert err[0].startswith("quick: listing the units")
    assert err[1].startswith("quick: ") and "units to run" in err[1] and "compile" in err[1], err
