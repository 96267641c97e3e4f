"""The command line: units are reused only when their fingerprint matches, two runs into
one folder cannot corrupt each other, and every user error is one line with exit code 2 (through
the real entry point as a subprocess, and a hypothesis fuzz of the parser's own options)."""

import contextlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import STATUS_LINE
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

ROOT = Path(__file__).resolve().parents[1]
FAST = "tests.report_fixtures.fast_units"
OTHER = "tests.report_fixtures.other_units"


def cli(args, env_extra=None, modules=FAST, cwd=ROOT, **kwargs):
    env = os.environ.copy()
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SMS_LANGEVIN_REPORT_MODULES"] = modules
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "reports", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, **kwargs)


START_LINE = STATUS_LINE  # the lines a command prints before any unit: not errors


def one_line_error(proc, *words):
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if not START_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("sms-langevin: error:"), proc.stderr
    for word in words:
        assert word in lines[0], proc.stderr
    return lines[0]


def unit_files(out):
    return sorted(p for p in (Path(out) / "units").rglob("*.json") if not p.name.startswith("."))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick_seed0")
    proc = cli(["run", "all", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    return out


def test_resume_recomputes_units_of_another_seed_or_preset(tmp_path, quick_run):
    out = tmp_path / "d"
    shutil.copytree(quick_run, out)
    other = cli(["run", "all", "--seed", "7", "--preset", "full", "--resume", "--out", str(out)])
    assert other.returncode == 0, other.stderr
    assert "0 units already done, 6 to run" in other.stderr
    assert "run_seed 0 (wanted 7)" in other.stderr and "preset quick (wanted full)" in other.stderr
    assert (out / "report/fast/fast.csv").read_bytes() != (quick_run / "report/fast/fast.csv").read_bytes()
    assert '"preset": "full"' in (out / "report/fast/metadata.json").read_text()
    assert all(json.loads(p.read_text())["meta"]["fingerprint"]["run_seed"] == 7 for p in unit_files(out))


def test_report_refuses_units_of_another_preset_and_a_changed_meta(tmp_path, quick_run):
    one_line_error(cli(["report", "--out", str(quick_run), "--preset", "full"]), "preset quick (wanted full)",
                   f"--out {quick_run}")
    out = tmp_path / "tampered"
    shutil.copytree(quick_run, out)
    victim = unit_files(out)[0]
    payload = json.loads(victim.read_text())
    payload["meta"]["fingerprint"]["run_seed"] = 3  # relabel a unit: its meta is under the checksum
    victim.write_text(json.dumps(payload))
    one_line_error(cli(["report", "--out", str(out)]), "checksum mismatch", f"--out {out}")


def forge_fingerprints(paths, **entries):
    """Set ``entries`` in the fingerprint of each unit file of ``paths``, its checksum recomputed: as if the
    units had been computed so."""
    from reports.store import checksum
    for path in paths:
        payload = json.loads(path.read_text())
        payload["meta"]["fingerprint"].update(entries)
        payload["checksum"] = checksum(payload["key"], payload["unit"], payload["result"], payload["meta"])
        path.write_text(json.dumps(payload))


def test_a_changed_code_version_makes_units_stale(tmp_path, quick_run):
    out = tmp_path / "code"
    shutil.copytree(quick_run, out)
    from reports.store import Store
    forge_fingerprints(unit_files(out), code_version="0" * 16)  # as if computed by other code
    assert Store(out).meta("fast", {"k": 2, "plan": "sms"})["fingerprint"]["code_version"] == "0" * 16
    one_line_error(cli(["report", "--out", str(out)]), "code_version")


def test_report_draws_units_of_other_library_versions_saying_so_and_resume_recomputes_them(tmp_path):
    """Installing an extra (``make test-fast`` installs the adapters) changes the measured libraries' versions:
    ``report`` still draws the units, in the report and in one line naming the versions and the rerun, while
    ``run --resume`` recomputes them, and any other difference is still refused."""
    out, lib = tmp_path / "lib", "tests.report_fixtures.library_units"
    assert cli(["run", "all", "--out", str(out)], modules=lib).returncode == 0
    forge_fingerprints(unit_files(out), libraries={"numpy": "0.0.1"})
    drawn = cli(["report", "--out", str(out)], modules=lib)
    assert drawn.returncode == 0, drawn.stderr
    notes = [line for line in drawn.stderr.splitlines() if "other versions" in line]
    assert len(notes) == 1 and notes[0].startswith("note: withlib:"), notes
    assert "2 of 2 units with numpy 0.0.1 (now " in notes[0] and "sms-langevin run withlib --resume" in notes[0], notes
    section = (out / "report" / "index.md").read_text().split("<a id='withlib'></a>")[1]
    assert "Note: drawn from units computed with other versions of the libraries" in section
    meta = json.loads((out / "report" / "withlib" / "metadata.json").read_text())
    assert "numpy 0.0.1" in meta["other_library_versions"]
    forge_fingerprints(unit_files(out)[:1], code_version="0" * 16)  # another difference is refused as before
    one_line_error(cli(["report", "--out", str(out)], modules=lib), "code_version")
    again = cli(["run", "all", "--resume", "--out", str(out)], modules=lib)
    assert again.returncode == 0 and "resuming: 0 units already done, 2 to run" in again.stderr, again.stderr
    assert "Note:" not in (out / "report" / "index.md").read_text()


def test_a_run_into_a_folder_another_process_writes_to_is_refused(tmp_path, quick_run):
    """The lock a run holds (the same FolderLock every run takes): a second run or report into the
    folder is refused at once and leaves the first one's in-flight temporary files alone."""
    from reports.store import FolderLock
    out = tmp_path / "busy"
    shutil.copytree(quick_run, out)
    in_flight = out / "units" / "fast" / ".tmp-inflight.json"
    in_flight.write_text("{}")
    with FolderLock(out):
        one_line_error(cli(["run", "all", "--out", str(out)]), "another sms-langevin process", str(out))
        one_line_error(cli(["report", "--out", str(out)]), "another sms-langevin process")
        assert in_flight.exists(), "a refused run must not touch the other run's files"
    resumed = cli(["run", "all", "--resume", "--out", str(out)], env_extra={"FAST_UNITS_FAIL": "1"})
    assert resumed.returncode == 0 and "6 units already done" in resumed.stderr, resumed.stderr
    assert not in_flight.exists(), "once free, the folder's stale temporaries are cleaned up"


def test_unwritable_unit_folder_mid_run_is_one_line(tmp_path):
    out = tmp_path / "ro"
    (out / "units").mkdir(parents=True)
    (out / "units" / "fast").write_text("a file where the run needs a folder")
    one_line_error(cli(["run", "all", "--out", str(out)]), "units/fast", "--resume")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("address,words", [
    ("bogus", ["bogus", "host:port"]), ("http://127.0.0.1:8786", ["http", "protocol"]),
    ("tcp://127.0.0.1:{port}", ["127.0.0.1", "cannot connect"]), ("tcp://127.0.0.1:99999", ["host:port"]),
])
def test_bad_scheduler_is_one_line_naming_the_address(tmp_path, address, words):
    address = address.format(port=_free_port())
    out = tmp_path / "never"
    one_line_error(cli(["run", "all", "--scheduler", address, "--out", str(out)]), address, *words)
    assert not out.exists(), "a run that fails its argument checks must not create its folder"


def test_empty_out_and_failed_checks_create_nothing(tmp_path):
    one_line_error(cli(["run", "all", "--out", ""], cwd=tmp_path), "--out")
    one_line_error(cli(["report", "--out", ""], cwd=tmp_path), "--out")
    one_line_error(cli(["run", "all", "--workers", "0", "--out", "new"], cwd=tmp_path), "--workers")
    one_line_error(cli(["run", "all", "--seed", str(2**64), "--out", "new"], cwd=tmp_path), "--seed", "2**64")
    one_line_error(cli(["run", "all", "--seed", "-1", "--out", "new"], cwd=tmp_path), "--seed")
    one_line_error(cli(["run", "nope", "--out", "new"], cwd=tmp_path), "unknown id")
    one_line_error(cli(["tour", "nonexistent_notebook", "--out", "new"], cwd=tmp_path), "nonexistent_notebook")
    assert list(tmp_path.iterdir()) == []


def test_bench_fails_when_a_benchmark_fails_and_writes_nothing_uninvited(tmp_path):
    bench = tmp_path / "benches"
    bench.mkdir()
    (bench / "bench_fails.py").write_text("raise SystemExit(3)\n")
    (bench / "bench_writes.py").write_text(
        "import argparse, pathlib\np = argparse.ArgumentParser()\np.add_argument('--preset')\n"
        "p.add_argument('--out')\na = p.parse_args()\npathlib.Path(a.out).mkdir(parents=True)\n"
        "print('PRESET', a.preset, 'OUT', a.out)\n")
    work = tmp_path / "cwd"
    work.mkdir()
    proc = cli(["bench", "--dir", str(bench)], cwd=work)
    one_line_error(proc, "1 of 2 benchmarks failed", "bench_fails.py")
    assert "PRESET quick" in proc.stdout and list(work.iterdir()) == [], "no ./out without --out"
    (bench / "bench_fails.py").unlink()
    ok = cli(["bench", "--dir", str(bench), "--out", str(tmp_path / "b"), "--preset", "full"])
    assert ok.returncode == 0 and "PRESET full" in ok.stdout, ok.stderr
    assert (tmp_path / "b" / "bench_writes").is_dir()


def test_hints_name_the_out_folder_and_a_lost_run_json_rebuilds_what_was_run(tmp_path):
    out = tmp_path / "two"
    modules = f"{FAST},{OTHER}"
    assert cli(["run", "other", "--out", str(out)], modules=modules).returncode == 0
    (out / "run.json").write_text("{not json")
    proc = cli(["report", "--out", str(out)], modules=modules)
    assert proc.returncode == 0, proc.stderr
    assert "rebuilding other" in proc.stderr and (out / "report/other/other.csv").exists()
    (out / "run.json").write_text(json.dumps({"preset": "quick", "seed": 0, "ids": ["other"]}))
    for meta, words in (({"preset": "quick", "seed": 0, "ids": "other"}, "ids must be a list of figure ids"),
                        ({"preset": "bogus", "seed": 0, "ids": ["other"]}, "run.json: unknown preset 'bogus'")):
        (out / "run.json").write_text(json.dumps(meta))
        one_line_error(cli(["report", "--out", str(out)], modules=modules), words)
    (out / "run.json").write_text(json.dumps({"preset": "quick", "seed": 0, "ids": ["other"]}))
    victim = unit_files(out)[0]
    victim.write_text(victim.read_text()[:30])
    line = one_line_error(cli(["report", "--out", str(out)], modules=modules), "unreadable")
    assert f"--resume --preset quick --seed 0 --out {out}" in line


# ----------------------------------------------------------------------------- the fuzz test

def _options():
    """Every option string the CLI declares, per command (read from its own parser)."""
    from reports._cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {name: [s for a in p._actions for s in a.option_strings] for name, p in sub.choices.items()}


OPTIONS = _options()
BAD_VALUES = ["", "-1", "0", "abc", "1e9", "quick", "full", "bogus", "nope", "all", "fast", "--", "http://x:1",
              "tcp://127.0.0.1:1", "/proc/forbidden", "/nonexistent-dir", "9" * 30, "\x00"]


@st.composite
def argv(draw, tmp):
    """A command's valid base (cheap: the fast fixture units, a trivial benchmark) followed by random
    options of that command, each with a good or bad value (a later option overrides an earlier one)."""
    command = draw(st.sampled_from(sorted(OPTIONS) + ["frobnicate"]))
    base = {"run": ["run", "fast", "--out", str(tmp / "out")], "report": ["report", "--out", str(tmp / "out")],
            "bench": ["bench", "--dir", str(tmp / "benches")], "claims": ["claims", "--preset", "bogus"],
            "tour": ["tour", "99_no_such_notebook"]}  # the tour's valid runs execute notebooks: too slow here
    args = list(base.get(command, [command]))
    if command == "run" and draw(st.booleans()):
        args[1:2] = draw(st.lists(st.sampled_from(["all", "fast", "nope", "-x"]), min_size=0, max_size=2))
    values = BAD_VALUES + [str(tmp / "out"), str(tmp / "benches")]
    options = [o for o in OPTIONS.get(command, ["--help"]) if o not in ("--local-dask",)]  # no cluster start-up
    for _ in range(draw(st.integers(0, 3))):
        option = draw(st.sampled_from(options + ["--bogus-option"]))
        args.append(option)
        if draw(st.booleans()):
            args.append(draw(st.sampled_from(values)))
    if command in ("claims", "bench") and "--help" not in args and "-h" not in args:
        args += ["--preset", "bogus"]  # keep the valid, expensive runs (the claims table, benchmarks) out
    return args


def run_main(args):
    from reports._cli import main
    err, out = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(FUZZ_DIR)  # an output folder given as a relative path lands in the fuzz folder
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse's --help
                code = exc.code
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


FUZZ_DIR = Path(tempfile.mkdtemp(prefix="sms-langevin-fuzz-"))
(FUZZ_DIR / "benches").mkdir(exist_ok=True)
(FUZZ_DIR / "benches" / "bench_ok.py").write_text("print('ok')\n")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=argv(FUZZ_DIR))
@example(args=["run", "fast", "--out", str(FUZZ_DIR / "out"), "--scheduler", "bogus"])  # tracebacks on old main
@example(args=["run", "fast", "--out", str(FUZZ_DIR / "out"), "--scheduler", "http://x:1"])
def test_cli_fuzz_never_gives_a_traceback(args):
    old = os.environ.get("SMS_LANGEVIN_REPORT_MODULES")
    os.environ["SMS_LANGEVIN_REPORT_MODULES"] = FAST
    try:
        code, err = run_main(args)
    finally:
        if old is None:
            os.environ.pop("SMS_LANGEVIN_REPORT_MODULES")
        else:
            os.environ["SMS_LANGEVIN_REPORT_MODULES"] = old
    assert "Traceback" not in err
    assert code in (0, 2), (args, code, err)
    if code == 2:
        errors = [ln for ln in err.splitlines() if ln.startswith("sms-langevin: error:")]
        assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], (args, err)


def test_more_local_workers_than_cores_are_reduced_to_the_cores(tmp_path):
    """``--workers 100000`` once started that many processes (each compiling kernels): a run that
    never ended.  Now it runs on as many processes as the machine has cores and says so."""
    from reports._executor import local_cores

    proc = cli(["run", "fast", "--workers", "100000", "--out", str(tmp_path / "w")])
    assert proc.returncode == 0, proc.stderr
    assert f"--workers 100000 reduced to {local_cores()}" in proc.stderr


def test_the_first_line_says_whether_kernels_compile_first(tmp_path, monkeypatch):
    """Before any unit runs, one line says how many units there are and whether this machine holds the
    compiled kernels (integrators._disk_cache) or compiles them first, instead of a silent start."""
    cold = cli(["run", "fast", "--out", str(tmp_path / "a")], env_extra={"NUMBA_CACHE_DIR": str(tmp_path / "c")})
    assert cold.returncode == 0, cold.stderr
    first = next(ln for ln in cold.stderr.splitlines() if "units to run" in ln)
    assert "units to run; first run of this code on this machine" in first and str(tmp_path / "c") in first, first
    from integrators._disk_cache import cache_folder

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "c"))
    cache_folder().mkdir(parents=True, exist_ok=True)
    (cache_folder() / "run_chains-0.nbi").write_bytes(b"")  # a kernel kept by an earlier run
    warm = cli(["run", "fast", "--out", str(tmp_path / "b")], env_extra={"NUMBA_CACHE_DIR": str(tmp_path / "c")})
    assert "compiled kernels found in" in next(ln for ln in warm.stderr.splitlines() if "units to run" in ln)


def test_units_skipped_for_an_absent_library_are_not_done_on_resume(tmp_path):
    """A unit that could not run (its library not installed) is persisted so the figure names it, but
    ``--resume`` after installing the library computes it: never "already done", never a stale report."""
    out, lib = tmp_path / "lib", "tests.report_fixtures.library_units"
    first = cli(["run", "all", "--out", str(out)], env_extra={"LIBRARY_UNITS_ABSENT": "1"}, modules=lib)
    assert first.returncode == 0, first.stderr
    assert "numpy is not installed" in (out / "report" / "index.html").read_text()
    again = cli(["run", "all", "--resume", "--out", str(out)], modules=lib)
    assert again.returncode == 0, again.stderr
    assert "resuming: 0 units already done, 2 to run" in again.stderr
    report = (out / "report" / "index.html").read_text()
    assert "not installed" not in report and "2 units measured" in report
    done = cli(["run", "all", "--resume", "--out", str(out)], modules=lib)
    assert "resuming: 2 units already done, 0 to run" in done.stderr


def test_rerun_hints_quote_an_out_folder_with_spaces(tmp_path):
    import shlex

    out = tmp_path / "my results; $HOME"
    assert cli(["run", "all", "--out", str(out)]).returncode == 0
    unit_files(out)[0].unlink()
    line = one_line_error(cli(["report", "--out", str(out)]), "not computed")
    command = shlex.split(re.search(r"`([^`]*)`", line).group(1))
    assert command[:3] == ["sms-langevin", "run", "fast"] and command[command.index("--out") + 1] == str(out)


@pytest.mark.parametrize("result", [{"mean": "zero", "variance": 1.0}, {"variance": 1.0}, [1, 2], None, 3.5],
                         ids=["wrong-type", "lacking-key", "list", "null", "number"])
def test_a_unit_file_of_the_wrong_structure_is_one_line_naming_it(tmp_path, quick_run, result):
    """A consistent checksum (it is plain SHA-256: anyone can recompute it) does not make a result
    drawable: the figure's RESULT schema refuses it before draw, naming the file and the rerun."""
    from reports.store import checksum

    out = tmp_path / "edited"
    shutil.copytree(quick_run, out)
    path = unit_files(out)[0]
    payload = json.loads(path.read_text())
    payload["result"] = result
    payload["checksum"] = checksum(payload["key"], payload["unit"], result, payload["meta"])
    path.write_text(json.dumps(payload))
    line = one_line_error(cli(["report", "--out", str(out)]), str(path), "not a result of fast",
                          "sms-langevin run fast --resume")
    assert "Traceback" not in line
    resumed = cli(["run", "all", "--resume", "--out", str(out)])
    assert resumed.returncode == 0, resumed.stderr
    assert "not a result of fast" in resumed.stderr and "5 units already done, 1 to run" in resumed.stderr


def test_bench_in_an_installed_package_says_where_the_benchmarks_are(tmp_path, monkeypatch):
    import argparse

    from reports import _bench_command as bench_command
    from reports._cli_common import CliError

    monkeypatch.setattr(bench_command, "__file__", str(tmp_path / "site-packages" / "reports" / "_bench_command.py"))
    with pytest.raises(CliError, match="not installed with the package: run `sms-langevin bench` in a clone"):
        bench_command.cmd_bench(argparse.Namespace(preset="quick", dir=None, out=None), {})


def test_main_in_process_gives_the_callers_ctrl_c_back_after_an_interrupt(monkeypatch, capsys):
    import signal

    from reports import _cli as cli_module

    def interrupted(args, figures):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the command runs
        time.sleep(5)
        raise AssertionError("the interrupt should have stopped the command")

    monkeypatch.setattr(cli_module, "cmd_list", interrupted)
    before = signal.getsignal(signal.SIGINT)
    assert cli_module.main(["list"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before
