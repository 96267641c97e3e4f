"""The command line's torch route (``--backend torch --device cpu``) end to end: ``run``,
``--resume``, ``report`` and the rerun command it suggests all keep the backend; and the smaller
things a newcomer meets first (help with defaults, no command, ``claims --preset tiny``, ``report``
against a folder that a run is still writing)."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from reports.store import FolderLock  # noqa: E402

pytestmark = pytest.mark.slow  # an experiment that needs torch: the torch tier (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
TWIN = "tests.report_fixtures.backend_units"


def cli(args, modules=TWIN):
    env = os.environ.copy()
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SMS_LANGEVIN_REPORT_MODULES"] = modules
    return subprocess.run([sys.executable, "-m", "reports", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_torch_backend_runs_resumes_and_reports(tmp_path):
    out = tmp_path / "run"
    torch_args = ["--backend", "torch", "--device", "cpu", "--preset", "tiny", "--out", str(out)]
    proc = cli(["run", "twin", *torch_args])
    assert proc.returncode == 0, proc.stderr
    with open(out / "report" / "twin" / "twin.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["backend"] for r in rows] == ["torch"] * 3 and {r["device"] for r in rows} == {"cpu"}
    meta = json.loads((out / "report" / "twin" / "metadata.json").read_text())
    assert meta["backend"] == "torch" and meta["device"] == "cpu"
    assert json.loads((out / "run.json").read_text())["backend"] == {"backend": "torch", "device": "cpu"}

    resumed = cli(["run", "twin", "--resume", *torch_args])
    assert resumed.returncode == 0, resumed.stderr
    assert "3 units already done, 0 to run" in resumed.stderr

    (out / "report" / "twin" / "twin.csv").unlink()
    redrawn = cli(["report", "--out", str(out)])
    assert redrawn.returncode == 0, redrawn.stderr
    assert (out / "report" / "twin" / "twin.csv").exists()

    (out / "run.json").unlink()  # lost: the backend is read back from the unit files
    redrawn = cli(["report", "--out", str(out)])
    assert redrawn.returncode == 0, redrawn.stderr


def test_a_missing_torch_unit_suggests_a_rerun_that_keeps_the_backend(tmp_path):
    out = tmp_path / "run"
    assert cli(["run", "twin", "--backend", "torch", "--device", "cpu", "--out", str(out)]).returncode == 0
    next((out / "units" / "twin").glob("*.json")).unlink()
    proc = cli(["report", "--out", str(out)])
    assert proc.returncode == 2
    assert "1 of 3 units not computed" in proc.stderr and "--backend torch --device cpu" in proc.stderr
    rerun = proc.stderr.split("run `sms-langevin ", 1)[1].split("`")[0].split()
    assert cli(rerun).returncode == 0
    assert cli(["report", "--out", str(out)]).returncode == 0


def test_numba_and_torch_units_of_one_figure_do_not_mix(tmp_path):
    out = tmp_path / "run"
    assert cli(["run", "twin", "--out", str(out)]).returncode == 0
    assert cli(["run", "twin", "--backend", "torch", "--device", "cpu", "--out", str(out)]).returncode == 0
    assert len(list((out / "units" / "twin").glob("*.json"))) == 6
    assert json.loads((out / "report" / "twin" / "metadata.json").read_text())["backend"] == "torch"


def test_help_shows_the_defaults_a_copied_command_runs_with():
    proc = cli(["run", "--help"])
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "(default: quick)" in text and "(default: out/run)" in text and "(default: 1)" in text


def test_no_command_prints_the_commands():
    proc = cli([])
    assert proc.returncode == 2
    for command in ("list", "run", "report", "claims", "bench", "tour"):
        assert command in proc.stderr


def test_claims_takes_every_preset_run_claims_takes(tmp_path, monkeypatch):
    import dataclasses

    from experiments import claims as tab_claims
    from reports import _cli as cli_module

    seen = []

    def fake_unit(unit, preset, seed):
        seen.append(preset)
        return {"rows": [{"claim": unit["section"], "source": "s", "expected": "e", "measured": "m",
                          "uncertainty": "u", "verdict": "holds", "command": "c"}]}
    monkeypatch.setattr(tab_claims, "EXPERIMENT", dataclasses.replace(tab_claims.EXPERIMENT, run_unit=fake_unit))
    assert cli_module.main(["claims", "--preset", "tiny", "--out", str(tmp_path)]) == 0
    assert set(seen) == {"quick"} and len(seen) == len(tab_claims.EXPERIMENT.units("quick"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.csv", "claims.md", "metadata.json"]
    assert cli_module.main(["claims", "--preset", "huge", "--out", str(tmp_path)]) == 2


@pytest.mark.parametrize("units_written", [False, True])
def test_report_on_a_folder_a_run_is_writing_is_one_line(tmp_path, units_written):
    out = tmp_path / "run"
    out.mkdir()
    if units_written:
        (out / "units" / "twin").mkdir(parents=True)
    with FolderLock(out):
        proc = cli(["report", "--out", str(out)])
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("sms-langevin report: starting")]
    assert len(lines) == 1 and "another sms-langevin process" in lines[0], proc.stderr


def test_figure1_runs_its_own_tiny_level():
    """``run figure1 --preset tiny`` runs Figure 1's tiny preset (it ran quick while the registry did
    not know of it: minutes more on the torch route)."""
    from experiments.figure1 import EXPERIMENT as fig1_wasserstein
    from reports import registry

    assert registry.module_preset(fig1_wasserstein, "tiny") == "tiny"
    assert len(fig1_wasserstein.units("tiny")) == 12  # a unit per scheme and step size, three points each


def test_tour_refuses_a_folder_a_run_is_writing(tmp_path):
    """The tour writes into OUT/report, which a run or report replaces whole: it takes the lock."""
    out = tmp_path / "run"
    out.mkdir()
    with FolderLock(out):
        proc = cli(["tour", "--out", str(out), "02"])
    assert proc.returncode == 2 and "another sms-langevin process" in proc.stderr, proc.stderr


def test_absent_data_is_not_a_success_and_resume_computes_it_once_there(tmp_path):
    """Units that found no data are drawn as absent but end the run with exit 2 naming the file, and
    ``--resume`` computes them once the file is there (it reused the absent results for good)."""
    data = tmp_path / "data.txt"
    env = os.environ.copy()
    env.update(PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""), DATA_UNITS_FILE=str(data),
               SMS_LANGEVIN_REPORT_MODULES="tests.report_fixtures.data_units")
    out = str(tmp_path / "run")

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "reports", "run", "withdata", "--out", out, *extra], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)

    proc = run()
    assert proc.returncode == 2, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if ln.startswith("note: ")]  # before any unit ran
    assert notes[0].startswith("note: withdata: 2 units will be skipped, their data are absent"), proc.stderr
    assert proc.stderr.index(notes[0]) < proc.stderr.index("units to run"), proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(error) == 1 and str(data) in error[0] and "--resume" in error[0], proc.stderr
    data.write_text("2.5")
    proc = run("--resume")
    assert proc.returncode == 0 and "0 units already done, 2 to run" in proc.stderr, proc.stderr
    with open(tmp_path / "run" / "report" / "withdata" / "withdata.csv") as fh:
        assert [float(r["value"]) for r in csv.DictReader(fh)] == [2.5, 5.0]
    data.write_text("2.75")  # other data (the figure's inputs name the file and its size): the units are stale
    proc = run("--resume")
    assert proc.returncode == 0 and "0 units already done, 2 to run" in proc.stderr, proc.stderr
    assert "inputs" in proc.stderr  # the warning says what differs


def test_data_dir_reaches_the_workers_and_a_bad_one_is_refused_before_out(tmp_path):
    """``--data-dir`` is checked before ``--out`` is created, and the units (in worker processes too)
    find their files there; without the precheck hook, absent data are found when the unit runs."""
    env = os.environ.copy()
    env.pop("DATA_UNITS_FILE", None)
    env.pop("SMS_LANGEVIN_DATA_DIR", None)
    env.update(PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
               SMS_LANGEVIN_REPORT_MODULES="tests.report_fixtures.data_units")

    def run(*extra, **more):
        return subprocess.run([sys.executable, "-m", "reports", "run", "withdata", *extra], cwd=ROOT,
                              env={**env, **more}, capture_output=True, text=True, timeout=120)

    out = tmp_path / "run"
    for bad, words in ((tmp_path / "nope", "no such folder"), (tmp_path / "a-file", "not a folder")):
        if bad.name == "a-file":
            bad.write_text("x")
        proc = run("--data-dir", str(bad), "--out", str(out))
        assert proc.returncode == 2 and f"--data-dir {bad}: {words}" in proc.stderr, proc.stderr
        assert not out.exists()
    data = tmp_path / "data"
    data.mkdir()
    proc = run("--data-dir", str(data), "--out", str(out), DATA_UNITS_NO_PRECHECK="1")
    assert proc.returncode == 2 and "note:" not in proc.stderr and "found no data" in proc.stderr, proc.stderr
    (data / "withdata.txt").write_text("1.5")
    proc = run("--data-dir", str(data), "--out", str(out), "--resume", "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    with open(out / "report" / "withdata" / "withdata.csv") as fh:
        assert [float(r["value"]) for r in csv.DictReader(fh)] == [1.5, 3.0]
