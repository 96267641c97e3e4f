"""The test tiers of tests/conftest.py: ``-m "not torch"`` collects without torch, and every test is
in exactly one tier. Each check collects the suite in a subprocess (``--collect-only``: nothing runs)."""

import json
import subprocess
import sys
from pathlib import Path

import conftest
import pytest

ROOT = Path(__file__).resolve().parents[1]
TIERS = ("core", "statistical", "torch", "experiment")

# pytest in a subprocess, with ``torch`` unimportable when asked (a finder first in sys.meta_path); the
# plugin writes each collected test's tier markers, the deselected ones', the collection errors and
# whether torch got imported
COLLECT = r"""
import json, sys
import pytest

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)

if sys.argv[1] == "block":
    sys.meta_path.insert(0, NoTorch())
TIERS = ("core", "statistical", "torch", "experiment")

class Record:
    def __init__(self):
        self.found = {"selected": {}, "deselected": {}, "errors": []}
    def tiers(self, item):
        return [t for t in TIERS if item.get_closest_marker(t)]
    def pytest_deselected(self, items):
        self.found["deselected"].update({item.nodeid: self.tiers(item) for item in items})
    def pytest_collectreport(self, report):
        if report.failed:
            self.found["errors"].append(report.nodeid)
    def pytest_collection_finish(self, session):
        self.found["selected"] = {item.nodeid: self.tiers(item) for item in session.items}
        self.found["torch_imported"] = "torch" in sys.modules

record = Record()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[3:]], plugins=[record])
with open(sys.argv[2], "w") as f:
    json.dump({**record.found, "exit": int(code)}, f)
"""


def collect(tmp_path, *args, block_torch):
    out = tmp_path / "collected.json"
    proc = subprocess.run([sys.executable, "-c", COLLECT, "block" if block_torch else "keep", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def without_torch(tmp_path_factory):
    """``pytest --collect-only -m "not torch" tests`` where torch cannot be imported."""
    return collect(tmp_path_factory.mktemp("no-torch"), "-m", "not torch", "tests", block_torch=True)


def module_of(nodeid):
    return Path(nodeid.split("::")[0]).stem


@pytest.mark.slow
def test_not_torch_collects_without_torch_and_nothing_that_needs_it(without_torch):
    assert without_torch["errors"] == [] and without_torch["exit"] == 0
    assert not without_torch["torch_imported"]
    selected = without_torch["selected"]
    assert len(selected) > 500  # the suite was collected
    needing = {nodeid for nodeid, tiers in selected.items() if "torch" in tiers}
    assert needing == set()
    assert {module_of(n) for n in selected} & conftest.torch_modules() == set()


@pytest.mark.slow
def test_every_test_is_in_exactly_one_tier(without_torch):
    collected = {**without_torch["selected"], **without_torch["deselected"]}
    assert len(without_torch["deselected"]) > 50  # the torch tests of modules that import without torch
    assert {n: t for n, t in collected.items() if len(t) != 1} == {}
    assert {t[0] for t in collected.values()} == set(TIERS)


@pytest.mark.slow
def test_modules_that_import_torch_are_in_the_torch_tier_alone(tmp_path):
    pytest.importorskip("torch")
    paths = sorted(f"tests/{m}.py" for m in conftest.torch_modules() if (ROOT / "tests" / f"{m}.py").exists()
                   and m.startswith("test_"))
    assert len(paths) >= 5
    found = collect(tmp_path, *paths, block_torch=False)
    assert found["errors"] == [] and len(found["selected"]) > 100
    assert {n: t for n, t in found["selected"].items() if t != ["torch"]} == {}


# tests of tests/test_validation.py that need torch without saying so in a marker (they import it, build
# the tensor backend or module mode): conftest marks them
KNOWN_TORCH = ("test_laws_and_histograms_take_0d_arrays_tensors_and_integral_floats",
               "test_nll_takes_half_precision_probabilities",
               "test_every_output_records_the_versions_of_the_libraries_it_ran_on",
               "test_module_sampler_says_when_n_data_exceeds_the_data",
               "test_a_state_dict_is_a_reference_point")


@pytest.mark.slow
def test_the_torch_tests_of_test_validation_are_in_the_torch_tier(without_torch):
    validation = {n: t for part in ("selected", "deselected") for n, t in without_torch[part].items()
                  if n.startswith("tests/test_validation.py::")}
    torch_names = {n.split("::")[1].split("[")[0] for n, t in validation.items() if t == ["torch"]}
    assert set(KNOWN_TORCH) <= torch_names
    by_backend = [n for n in validation if "-torch]" in n or "[torch-" in n or "[torch]" in n]
    assert by_backend and {n: validation[n] for n in by_backend if validation[n] != ["torch"]} == {}
