"""Adding a built-in scheme, a plan, a figure or a library's adapters is new files only.

In a copy of the source packages, each extension point gets new files and nothing else: a scheme
(a copy of ``em.py`` under another ``NAME``: its ``UPDATE`` gives the torch backend and the fused
kernel their step), a plan (a copy of ``rr.py``
declaring its batch rule and no kernel code), a figure module and an adapter module.  A fresh
interpreter with the copy first on ``sys.path`` must find each in its registry (the figure also
in the command line's ``list``) with no registry or list edited: the copy differs from the
source by the new files alone.
"""

from __future__ import annotations

import filecmp
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ToyULA, project_packages

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = project_packages()

FIGURE = '''\
"""A figure added by tests/test_extension_points.py."""

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, Record


def units(preset):
    return [{"a": 0.5}]


def run_unit(unit, preset, seed):
    return {"a": unit["a"]}


def draw(results, preset):
    return Drawing(measured={"a": results[0][1]["a"]})


EXPERIMENT = Experiment(
    ID="extension_probe", TITLE="A figure that is one new file", CLAIM="Adding a figure is one module.",
    COST={"quick": "milliseconds", "full": "milliseconds"}, PRESETS=("quick", "full"), RESULT=Record(a=NUMBER),
    units=units, run_unit=run_unit, draw=draw,
)
'''


def _new_files(root: Path) -> dict:
    """``{path relative to root: text}`` of one new file per extension point."""
    scheme = (ROOT / "integrators/schemes/em.py").read_text()
    plan = (ROOT / "integrators/plans/rr.py").read_text()
    assert "\nORDER = 1  #" in scheme and '    NAME="em",\n' in scheme and "UPDATE=" in scheme
    assert '    NAME="rr",\n' in plan
    adapter = "import numpy as np\n\nLIBRARY = \"toy\"\n\n\n" + textwrap.dedent(inspect.getsource(ToyULA)) \
        + "\n\nADAPTERS = (ToyULA(),)\n"
    return {
        "scheme": {"integrators/schemes/em_copy.py": scheme.replace("\nORDER = 1  #", "\nORDER = 5  #")
                   .replace('    NAME="em",\n', '    NAME="em_copy",\n')},
        "plan": {"integrators/plans/rr_copy.py": plan.replace('    NAME="rr",\n', '    NAME="rr_copy",\n')},
        "figure": {"experiments/extension_probe.py": FIGURE},
        "adapter": {"theory_checks/adapters/toy_adapter.py": adapter},
    }


PROBE = '''
import contextlib, io, json, sys
root = sys.argv[1]
import experiments, integrators, reports, theory_checks
assert all(m.__file__.startswith(root) for m in (experiments, integrators, reports, theory_checks)), "not the copy"
from integrators.plans import PLANS
from integrators.schemes import SCHEMES
from reports import registry
from reports._cli import main
from theory_checks.adapters import ADAPTERS
listed = io.StringIO()
with contextlib.redirect_stdout(listed):
    rc = main(["list"])
found = {"scheme": list(SCHEMES), "plan": list(PLANS), "figure": list(registry.load()),
         "adapter": list(ADAPTERS), "list": listed.getvalue(), "rc": rc}
try:
    from integrators.torch.schemes import TORCH_STEPS
    found["torch"] = list(TORCH_STEPS)
except ImportError as exc:
    found["torch"] = str(exc)
try:
    from integrators.torch._fused import FUSED_STEPS
    found["fused"] = list(FUSED_STEPS)
except ImportError as exc:
    found["fused"] = str(exc)
print(json.dumps(found))
'''


def built_in(package: str, declares: str) -> list[str]:
    """The names of ``package``'s members in this tree, in the registry's order."""
    from integrators.registry import discover_modules

    return [getattr(module, declares).NAME for module in discover_modules(package, (declares,))]


def _tracked() -> list[str]:
    """The repository's files (git's list; every file under the source folders where git is absent)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [str(p.relative_to(ROOT)) for folder in (*PACKAGES, "docs", "tests")
                for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def _touched(copy: Path) -> tuple[list[str], list[str]]:
    """Files of the copy that are new, and files that differ from the source (the whole repository)."""
    new, changed = [], []
    for path in sorted(copy.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        rel = path.relative_to(copy)
        source = ROOT / rel
        if not source.exists():
            new.append(str(rel))
        elif not filecmp.cmp(path, source, shallow=False):
            changed.append(str(rel))
    return new, changed


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    copy = tmp_path_factory.mktemp("extended")
    for name in _tracked():  # the whole repository, docs and tests included
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    files = _new_files(copy)
    for group in files.values():
        for rel, text in group.items():
            (copy / rel).write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("SMS_LANGEVIN_REPORT_MODULES", "PYTHONPATH")}
    env["PYTHONPATH"] = str(copy)
    run = subprocess.run([sys.executable, "-c", PROBE, str(copy)], cwd=copy, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return files, json.loads(run.stdout.strip().splitlines()[-1]), _touched(copy), copy


def test_each_extension_point_is_its_new_files_alone(extended):
    files, _, (new, changed), _ = extended
    assert changed == []
    assert sorted(new) == sorted(rel for group in files.values() for rel in group)
    assert {kind: len(group) for kind, group in files.items()} == {"scheme": 1, "plan": 1, "figure": 1, "adapter": 1}


def test_the_api_pages_of_the_copy_render_every_new_module(extended):
    """The copy's API pages, as its docs build expands them (``docs/api_entries.py``), have an entry for
    each new file: nothing to add to ``docs/``."""
    files, _, _, copy = extended
    spec = importlib.util.spec_from_file_location("copy_api_entries", copy / "docs" / "api_entries.py")
    entries = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entries)
    rendered = {m.group(1) for page in (copy / "docs" / "api").glob("*.md")
                for line in entries.expand(page.read_text(encoding="utf-8"), copy).splitlines()
                if (m := entries.ENTRY.match(line))}
    new_modules = {rel.removesuffix(".py").replace("/", ".") for group in files.values()
                   for rel in group}
    assert new_modules <= rendered, sorted(new_modules - rendered)


def test_a_new_scheme_file_is_a_registered_scheme(extended):
    _, found, _, _ = extended
    # the copy's own members, in their ORDER, then the new one (ORDER 5: after every built-in scheme)
    assert found["scheme"] == [*built_in("integrators.schemes", "SCHEME"), "em_copy"]


def test_a_new_plan_file_is_a_registered_plan(extended):
    _, found, _, _ = extended
    plans = built_in("integrators.plans", "PLAN")
    at = plans.index("rr") + 1  # the copy declares rr's ORDER: ties are ordered by name
    assert found["plan"] == [*plans[:at], "rr_copy", *plans[at:]]


def test_a_new_figure_module_is_in_the_registry_and_the_list(extended):
    _, found, _, _ = extended
    assert found["figure"][-1] == "extension_probe" and found["figure"][0] == "demo"  # no ORDER: after the rest
    assert found["rc"] == 0 and "extension_probe" in found["list"] and "A figure that is one new file" in found["list"]


def test_a_new_adapter_module_joins_the_adapters(extended):
    _, found, _, _ = extended
    assert "toy.ula" in found["adapter"] and found["adapter"][0] == "posteriors.sgld"


def test_a_new_scheme_file_has_its_tensor_step(extended):
    pytest.importorskip("torch")
    _, found, _, _ = extended
    assert isinstance(found["torch"], list) and "em_copy" in found["torch"], found["torch"]


def test_a_new_scheme_file_runs_in_the_fused_kernel(extended):
    pytest.importorskip("triton")
    _, found, _, _ = extended
    assert isinstance(found["fused"], list) and "em_copy" in found["fused"], found["fused"]
