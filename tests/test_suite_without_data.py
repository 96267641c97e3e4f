"""The suite in a clone without the development data folder (``../shared/data``): the tests that read
it are marked ``data`` and skip with the reason; under ``$SMS_LANGEVIN_REQUIRE_DATA`` (set by
``.ci/run``, where the folder exists) they fail instead. Each check runs pytest in a subprocess with
``--without-dev-data`` (tests/conftest.py), which hides the folder from the loaders."""

import os
import re
import subprocess
import sys
from pathlib import Path

import conftest
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # pytest in subprocesses

# tests that read the folder, one per module that has them (the issue's: the device run of the X-ray level)
DATA_TESTS = ["tests/test_data.py::test_medmnist_reads_the_shared_chest_xray_subset",
              "tests/test_data_layout.py::test_the_shared_subset_loads_as_before"]
if conftest.torch_importable():
    DATA_TESTS.append("tests/test_bnn_regime.py::test_the_prepared_device_run_of_a_level_draws_its_tables")


def run_without_data(*, require: bool):
    env = {k: v for k, v in os.environ.items() if k not in (conftest.REQUIRE_DATA_ENV, "SMS_LANGEVIN_DATA_DIR")}
    if require:
        env[conftest.REQUIRE_DATA_ENV] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider",
                           "--without-dev-data", *DATA_TESTS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_data_tests_skip_with_the_reason_where_the_folder_is_absent():
    proc = run_without_data(require=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"{len(DATA_TESTS)} skipped" in proc.stdout and "passed" not in proc.stdout, proc.stdout[-3000:]
    assert re.search(rf"SKIPPED \[{len(DATA_TESTS)}\] .*needs the development data folder beside the checkout",
                     proc.stdout), proc.stdout[-3000:]  # (one line for the same reason)


def test_data_tests_fail_where_the_folder_is_required_but_absent():
    proc = run_without_data(require=True)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(rf"\b{len(DATA_TESTS)} errors?\b", proc.stdout), proc.stdout[-3000:]  # (failed in setup)
    assert f"${conftest.REQUIRE_DATA_ENV} is set, so a data test may not skip" in proc.stdout


def test_ci_requires_the_data_before_it_runs_the_tests():
    script = (ROOT / ".ci" / "run").read_text()
    export = re.search(rf"^export {conftest.REQUIRE_DATA_ENV}=1$", script, re.M)
    run = re.search(r"^make test$", script, re.M)
    assert export is not None and run is not None and export.start() < run.start()
