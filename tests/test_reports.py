"""The reports command: resumable runs, Dask, report rebuilding, the HTML in a real browser, errors."""

import os
import re
import shutil
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


def cli(args, env_extra=None, **kwargs):
    env = os.environ.copy()
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["SMS_LANGEVIN_REPORT_MODULES"] = FAST
    env.update(env_extra or {})
    kwargs.setdefault("cwd", ROOT)
    return subprocess.run([sys.executable, "-m", "reports", *args], env=env, capture_output=True, text=True, **kwargs)


def unit_files(out):
    """Finished unit files (not the temporary files of a write in flight)."""
    return sorted(p for p in (Path(out) / "units").rglob("*.json") if not p.name.startswith("."))


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    proc = cli(["run", "all", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    return out


def test_killed_run_resumes_with_identical_csv(tmp_path, reference_run):
    out = tmp_path / "killed"
    env = os.environ.copy()
    env.update({"PYTHONPATH": str(ROOT), "SMS_LANGEVIN_REPORT_MODULES": FAST, "FAST_UNITS_SLEEP": "0.7"})
    proc = subprocess.Popen([sys.executable, "-m", "reports", "run", "all", "--out", str(out)], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while len(unit_files(out)) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = {p: p.stat().st_mtime_ns for p in unit_files(out)}
    assert 1 <= len(done) < 6, "the run should be killed mid-way"
    resumed = cli(["run", "all", "--out", str(out), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(done)} units already done, {6 - len(done)} to run" in resumed.stderr
    for path, mtime in done.items():
        assert path.stat().st_mtime_ns == mtime, "a finished unit was recomputed"
    assert len(unit_files(out)) == 6
    assert not list((out / "units").rglob(".tmp-*")), "stale temporary files were not cleaned up"
    assert (out / "report/fast/fast.csv").read_bytes() == (reference_run / "report/fast/fast.csv").read_bytes()


def test_local_dask_cluster_gives_identical_csv(tmp_path, reference_run):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "dask"
    proc = cli(["run", "all", "--out", str(out), "--workers", "2", "--local-dask"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report/fast/fast.csv").read_bytes() == (reference_run / "report/fast/fast.csv").read_bytes()


def test_process_workers_give_identical_csv(tmp_path, reference_run):
    out = tmp_path / "procs"
    proc = cli(["run", "all", "--out", str(out), "--workers", "2"])
    assert proc.returncode == 0, proc.stderr
    assert (out / "report/fast/fast.csv").read_bytes() == (reference_run / "report/fast/fast.csv").read_bytes()


def test_report_rebuilds_without_running_a_sampler(tmp_path, reference_run):
    out = tmp_path / "rebuild"
    shutil.copytree(reference_run, out)
    shutil.rmtree(out / "report")
    proc = cli(["report", "--out", str(out)], env_extra={"FAST_UNITS_FAIL": "1"})
    assert proc.returncode == 0, proc.stderr
    assert (out / "report/index.html").exists() and (out / "report/fast/fast.png").exists()
    meta = (out / "report/fast/metadata.json").read_text()
    assert "git_commit" in meta and '"preset": "quick"' in meta
    assert (out / "report/fast/fast.csv").read_bytes() == (reference_run / "report/fast/fast.csv").read_bytes()


@pytest.fixture(scope="module")
def toured_run(tmp_path_factory, reference_run):
    """A copy of the reference run with one tour notebook executed into it (``sms-langevin tour``)."""
    out = tmp_path_factory.mktemp("toured") / "run"
    shutil.copytree(reference_run, out)
    # from a folder other than the code's (the kernel's sockets must not depend on the working folder)
    proc = cli(["tour", "--out", str(out), "02"], timeout=600, cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    return out


def test_tour_command_writes_pages_linked_from_the_report(toured_run):
    tour = toured_run / "report" / "tour"
    page = (tour / "02_stochastic_gradients.html").read_text()
    assert page.count("data:image/png;base64") >= 1 and "data-images-ok" in page
    assert "02_stochastic_gradients.html" in (tour / "index.html").read_text()
    assert "git_commit" in (tour / "metadata.json").read_text()
    assert "href='tour/index.html'" in (toured_run / "report" / "index.html").read_text()
    assert "(tour/index.html)" in (toured_run / "report" / "index.md").read_text()


def test_tour_bad_notebook_is_one_line_and_exit_2(tmp_path):
    proc = cli(["tour", "--out", str(tmp_path), "nope"])
    lines = message_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1 and "no tour notebook" in lines[0], proc.stderr


def images_loaded(browser, flags, page: Path) -> None:
    """Open ``page`` headless and assert that its load check saw every image load."""
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    ok = re.search(r'data-images-ok="(\d+)"', dom)
    total = re.search(r'data-images-total="(\d+)"', dom)
    assert ok and total, f"the load check of {page.name} did not run"
    assert int(total.group(1)) >= 1 and ok.group(1) == total.group(1), f"an image of {page.name} failed to load"


def test_html_report_in_headless_chromium(toured_run):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium); .ci/run installs it")
    index = toured_run / "report" / "index.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={toured_run / 'chromium-profile'}", "--virtual-time-budget=5000"]
    images_loaded(browser, flags, index)
    images_loaded(browser, flags, toured_run / "report" / "tour" / "02_stochastic_gradients.html")
    for page in (index, toured_run / "report" / "tour" / "index.html"):
        for href in re.findall(r"href=['\"]([^'\"]+)['\"]", page.read_text()):
            if not href.startswith(("http:", "https:", "#")):
                assert (page.parent / href).exists(), f"broken link {href} in {page.name}"
    shot = toured_run / "report" / "screenshot.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,1600", index.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 5000


@pytest.mark.parametrize("args,message", [
    (["run", "nope"], "unknown id"),
    (["run", "all", "--preset", "huge"], "unknown preset"),
    (["run", "all", "--out", "/proc/forbidden"], "cannot write"),
    (["frobnicate"], "invalid choice"),
    (["report", "--out", "/nonexistent-dir"], "no persisted results"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    proc = cli(args)
    assert proc.returncode == 2
    lines = message_lines(proc.stderr)
    assert len(lines) == 1 and message in lines[0], proc.stderr


def test_corrupt_unit_is_reported_and_recomputed(tmp_path, reference_run):
    out = tmp_path / "corrupt"
    shutil.copytree(reference_run, out)
    victim = unit_files(out)[0]
    victim.write_text(victim.read_text()[:40])
    proc = cli(["report", "--out", str(out)])
    assert proc.returncode == 2 and len(message_lines(proc.stderr)) == 1
    assert "unreadable" in proc.stderr or "checksum" in proc.stderr
    resumed = cli(["run", "all", "--out", str(out), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert "recomputing" in resumed.stderr and "5 units already done, 1 to run" in resumed.stderr
    assert (out / "report/fast/fast.csv").read_bytes() == (reference_run / "report/fast/fast.csv").read_bytes()


def test_list_shows_every_registered_figure():
    proc = cli(["list"])
    assert proc.returncode == 0 and "fast" in proc.stdout and "cost" in proc.stdout


def test_tampered_unit_fails_its_checksum(tmp_path, reference_run):
    """A unit file that parses but whose result was altered is detected, not reused."""
    import json
    out = tmp_path / "tampered"
    shutil.copytree(reference_run, out)
    victim = unit_files(out)[0]
    payload = json.loads(victim.read_text())
    payload["result"]["mean"] += 1.0
    victim.write_text(json.dumps(payload))
    proc = cli(["report", "--out", str(out)])
    assert proc.returncode == 2 and "checksum mismatch" in proc.stderr


def test_bnn_runs_on_a_local_dask_cluster_one_run_per_worker(tmp_path):
    """Two BNN runs (the real unit function at a micro size) on a local Dask cluster of two
    workers: both persisted, drawn, and each equal to the same run computed in this process."""
    pytest.importorskip("dask.distributed")
    import json

    import numpy as np

    from reports.store import unit_seed
    from tests.report_fixtures import bnn_micro

    out = tmp_path / "bnn-dask"
    proc = cli(["run", "all", "--out", str(out), "--workers", "2", "--local-dask"], timeout=300,
               env_extra={"SMS_LANGEVIN_REPORT_MODULES": "tests.report_fixtures.bnn_micro"})
    assert proc.returncode == 0, proc.stderr
    assert (out / "report/bnn_micro/bnn_ensembles.csv").exists()
    stored = {json.dumps(d["unit"], sort_keys=True): d for d in map(json.loads, map(Path.read_text, unit_files(out)))}
    assert len(stored) == 2
    unit = bnn_micro.units("quick")[1]
    here = bnn_micro.run_unit(unit, "quick", unit_seed(0, "bnn_micro", unit))
    there = stored[json.dumps(unit, sort_keys=True)]["result"]
    assert there["seed"] == here["seed"]
    for method in ("Adam", "SWA", "SMS-UBU"):
        np.testing.assert_allclose(there["methods"][method]["probs"], here["methods"][method]["probs"], atol=1e-6,
                                   err_msg=method)
