"""Every ``benchmarks/bench_*.py`` (found by glob: a new script is covered at once) declares how
``sms-langevin bench`` runs it (``BENCH_ARGS``), starts and finishes with its smallest arguments and
prints its ratios; and ``sms-langevin bench --preset tiny`` passes.  No time is asserted: a benchmark
prints ratios measured in one run, and these tests only check that it gets there.

The scripts compile their Numba kernels in each process, so a run costs tens of CPU seconds even at
the smallest sizes; ``sms-langevin bench --preset tiny`` runs each once (a subprocess) and the
per-script tests read their run from its output wherever that run had the script's smallest
arguments (on a machine without a CUDA device), else run the script themselves."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from reports._bench_command import read_bench_args
from reports.registry import PRESETS

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("bench_*.py"))
RATIO = re.compile(r"ratio[^\n]*\n?[^\n]*?\d+\.\d+", re.IGNORECASE)  # a ratio, its number on that line or the next
TIMEOUT = 1800  # a guard against a hung run, not a measurement


def bench_args(script: Path) -> dict:
    """The script's ``BENCH_ARGS``, read by the function ``sms-langevin bench`` reads it with."""
    spec = read_bench_args(script)
    assert spec is not None, f"{script.name} declares no BENCH_ARGS (how `sms-langevin bench` runs it)"
    return spec


def smallest(script: Path, out: Path) -> list[str]:
    spec = bench_args(script)
    args = spec.get("smallest", spec["cpu"].get("tiny") if isinstance(spec["cpu"], dict) else None)
    assert isinstance(args, list), (f"{script.name}: `sms-langevin bench` skips it on a CPU at preset tiny, so "
                                    f"BENCH_ARGS needs a 'smallest' list of arguments for the tests")
    return [a.replace("{out}", str(out)) for a in args]


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    """``sms-langevin bench --preset tiny`` once: its process and, per script it ran, (where, exit
    code, the script's output)."""
    out = tmp_path_factory.mktemp("bench") / "out"
    proc = subprocess.run([sys.executable, "-m", "reports", "bench", "--preset", "tiny", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    runs = {m[1]: (m[2], int(m[4]), m[3])
            for m in re.finditer(r"^== (bench_\w+\.py) \(([^)]*)\): [^\n]*\n(.*?)^== \1: exit (-?\d+)",
                                 proc.stdout, re.MULTILINE | re.DOTALL)}
    return proc, runs


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_declares_how_bench_runs_it(script):
    spec = bench_args(script)
    assert set(spec) <= {"cpu", "cuda", "requires", "smallest"}, spec
    assert "cpu" in spec, f"{script.name}: BENCH_ARGS needs a 'cpu' entry (a machine without a GPU)"
    for device in ("cpu", "cuda"):
        entries = spec.get(device, "")
        if isinstance(entries, str):
            continue  # a reason to skip it there, at every preset
        assert set(entries) == set(PRESETS), f"{script.name}: BENCH_ARGS[{device!r}] must give every preset"
        for preset, entry in entries.items():
            assert isinstance(entry, str) or all(isinstance(a, str) for a in entry), (device, preset, entry)
    assert all(isinstance(m, str) for m in spec.get("requires", [])), spec


def test_sms_langevin_bench_tiny_passes(bench_run):
    proc, runs = bench_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for script in SCRIPTS:
        assert re.search(rf"^== {re.escape(script.name)} \([^)]*\): \S", proc.stdout, re.MULTILINE), \
            f"{script.name} neither run nor skipped with a note"
    assert re.search(r"^== \d+ benchmarks passed, \d+ skipped, 0 failed$", proc.stdout, re.MULTILINE), proc.stdout
    skipped = re.findall(r"^== (bench_\w+\.py) \([^)]*\): skipped, (.+)$", proc.stdout, re.MULTILINE)
    assert len(runs) + len(skipped) == len(SCRIPTS), (sorted(runs), skipped)
    assert all(len(why) > 10 for _, why in skipped), skipped  # each says why


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_runs_with_its_smallest_arguments(script, bench_run, tmp_path):
    spec, (_, runs) = bench_args(script), bench_run
    where, code, output = runs.get(script.name, (None, None, ""))
    if "smallest" in spec or where != "cpu, tiny":  # the bench run did not make its smallest run: make it here
        for module in spec.get("requires", []):  # as `sms-langevin bench` does where one is absent
            pytest.importorskip(module, reason=f"{script.name} declares that it requires {module}")
        args = smallest(script, tmp_path / "out")
        if "HEAD" in args and subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode:
            pytest.skip("not a git checkout: no revision to compare with")
        proc = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT)
        code, output = proc.returncode, proc.stdout + proc.stderr
    assert code == 0, output[-4000:]
    assert RATIO.search(output), f"{script.name} printed no ratio:\n{output[-4000:]}"


def test_bench_against_revision_refuses_a_revision_it_cannot_export():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_against_revision.py"),
                           "no-such-revision-anywhere"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot export integrators/ at revision 'no-such-revision-anywhere'" in proc.stderr.splitlines()[-1]
