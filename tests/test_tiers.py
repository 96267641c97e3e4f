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
    def tiers(self, item):  # a torch test of an experiment module keeps the module's mark: its tier is torch
        found = [t for t in TIERS if item.get_closest_marker(t)]
        return [t for t in found if t != "experiment"] if "torch" in found else found
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


# tests that need torch only through a subprocess, a script or a documentation page: conftest finds each
# from its code (a string of code it runs, a call with backend="torch", the script's or the page's imports)
# or its declaration (importorskip), never from a list; here, the ones known to need it
THROUGH_ANOTHER_PROCESS = (
    "tests/test_registered_schemes.py::test_importing_the_torch_backend_after_registering_a_scheme_works",
    "tests/test_cross_cpu.py::test_pinned_tests_pass_with_the_libraries_at_their_baseline",
    "tests/test_verify.py::test_the_target_law_check_asserts_nothing_for_rr_and_is_inconclusive_on_the_torch_step",
    "tests/test_validation.py::test_the_torch_and_end_to_end_refusals_compile_no_kernel",
    "tests/test_reports.py::test_bnn_runs_on_a_local_dask_cluster_one_run_per_worker",
    "tests/test_benchmarks.py::test_benchmark_runs_with_its_smallest_arguments[bench_torch.py]",
    "tests/test_benchmarks.py::test_benchmark_runs_with_its_smallest_arguments[bench_bnn_gpu.py]",
    "tests/test_docs_code.py::test_python_blocks_run[guides/torch.md]",
    "tests/test_docs_code.py::test_python_blocks_run[guides/bnn.md]",
    "tests/test_docs_site.py::test_search_finds_sample",
    "tests/test_docstrings.py::test_every_public_name_has_a_numpydoc_docstring[torch]",
)


@pytest.mark.slow
def test_tests_that_need_torch_through_another_process_are_in_the_torch_tier(without_torch):
    deselected, selected = without_torch["deselected"], without_torch["selected"]
    assert {n: deselected.get(n) for n in THROUGH_ANOTHER_PROCESS if deselected.get(n) != ["torch"]} == {}
    # and their counterparts without torch stay in their tiers
    for nodeid in ("tests/test_validation.py::test_the_refusal_tables_compile_no_kernel",
                   "tests/test_docstrings.py::test_every_public_name_has_a_numpydoc_docstring[numba]",
                   "tests/test_docs_code.py::test_python_blocks_run[getting-started.md]",
                   "tests/test_benchmarks.py::test_benchmark_runs_with_its_smallest_arguments[bench_kernels.py]"):
        assert nodeid in selected and selected[nodeid] != ["torch"], nodeid


def test_code_needs_torch_where_it_imports_torch_or_a_module_that_does():
    assert conftest.code_needs_torch("import torch")
    assert conftest.code_needs_torch("x = 1\nfrom integrators.torch._chains import sample")
    assert conftest.code_needs_torch("def f():\n    from bnn import models\n")  # imported when called
    assert not conftest.code_needs_torch("import numpy as np\nfrom integrators import sample")
    assert not conftest.code_needs_torch("the torch backend: import it")  # prose, not code
    assert not conftest.code_needs_torch("print('import torch')")  # a string, not an import


def test_a_script_needs_torch_by_its_imports_or_its_declared_requirements(tmp_path):
    script = tmp_path / "bench_x.py"
    for text, needs in [("import numpy\n", False), ("import torch\n", True),
                        ("try:\n    import torch\nexcept ImportError:\n    torch = None\n", False),
                        ("from experiments.bnn._pipeline import run\n", True),
                        ('BENCH_ARGS = {"cpu": "no", "requires": ["torch"]}\n', True),
                        ('BENCH_ARGS = {"cpu": "no", "requires": ["blackjax"]}\n', False)]:
        script.write_text(text)
        conftest._parsed.cache_clear()
        assert conftest.script_needs_torch(script) is needs, text
        assert conftest.value_needs_torch(script) is needs, text


def test_a_function_needs_torch_where_it_runs_code_or_a_backend_that_does(tmp_path):
    module = tmp_path / "test_made_up.py"
    module.write_text(
        'SCRIPT = "import sys\\nimport integrators.torch\\n"\n'
        'PLAIN = "import sys\\nimport integrators\\n"\n'
        'def helper():\n    return SCRIPT\n'
        'def test_runs_the_script():\n    run(helper())\n'
        'def test_runs_plain_code():\n    run(PLAIN)\n'
        'def test_verifies_on_torch():\n    verify("ubu", backend="torch")\n'
        'def test_verifies_on_numba():\n    verify("ubu", backend="numba")\n'
        'def test_documents_it():\n    """import torch"""\n')
    conftest._parsed.cache_clear()
    found = conftest._torch_functions(str(module))
    assert found == {"helper", "test_runs_the_script", "test_verifies_on_torch"}


def test_a_declarer_needs_torch_where_checking_it_imports_torch():
    from bnn._config import RunConfig
    from integrators._spec import RunSpec
    from theory_checks._verify import verify

    assert conftest.declarer_needs_torch(RunConfig)  # its checks read bnn.models
    assert not conftest.declarer_needs_torch(RunSpec) and not conftest.declarer_needs_torch(verify)
