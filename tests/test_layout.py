"""The layout's rules that a reader of the tree relies on: no file imports another package's
underscore names (a package's private helpers are its own; its private modules, ``_name.py``, are
the implementation other packages and the tests may import), and ``integrators/_api.py`` holds the
public entry points only, no package imports one that sits above it (:data:`LAYERS`), and the
README's map of the code ("What is here") matches the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import project_packages

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = project_packages()


def python_files():
    for folder in (*PACKAGES, "tests", "benchmarks"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def is_module(dotted: str) -> bool:
    folder = ROOT.joinpath(*dotted.split("."))
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def private_imports(path: Path) -> list[str]:
    """``from P... import _x`` and ``m._x`` for a module ``m`` of package ``P``, in a file outside ``P``,
    where ``_x`` is not a module."""
    own = path.relative_to(ROOT).parts[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            package = node.module.split(".")[0]
            if package in PACKAGES and package != own:
                found += [f"from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")
                          and not is_module(f"{node.module}.{a.name}")]
                aliases.update({a.asname or a.name: package for a in node.names})
        elif isinstance(node, ast.Import):
            for a in node.names:
                package = a.name.split(".")[0]
                if package in PACKAGES and package != own:
                    aliases[a.asname or package] = package
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_check_finds_private_imports(tmp_path):
    probe = ROOT / "tests" / "_layout_probe.py"
    probe.write_text("from integrators._api import _fmt\nimport bias._metrics as d\nd._find\nfrom tests import _x\n"
                     "from integrators import _api\n")
    try:
        assert private_imports(probe) == ["from integrators._api import _fmt", "d._find"]
    finally:
        probe.unlink()


@pytest.mark.slow
def test_no_file_imports_another_packages_underscore_names():
    offenders = {str(p.relative_to(ROOT)): found for p in python_files() if (found := private_imports(p))}
    assert offenders == {}


def test_api_holds_the_public_entry_points_only():
    tree = ast.parse((ROOT / "integrators" / "_api.py").read_text())
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert defined == ["sample", "sample_together"]


def readme_map() -> dict[str, str]:
    """``{package folder: its row}`` of the README's "What is here" table."""
    text = (ROOT / "README.md").read_text().split("## What is here", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`") and cells[0].endswith("/`"):
            rows[cells[0].strip("`").rstrip("/")] = cells[1]
    return rows


def test_the_readmes_map_names_every_package_and_only_files_that_exist():
    rows = readme_map()
    assert set(PACKAGES) <= set(rows), f"packages without a row: {sorted(set(PACKAGES) - set(rows))}"
    missing = []
    for folder, row in rows.items():
        for name in {n for n in re.findall(r"`([\w/]+\.py|[\w]+/)`", row)}:
            if not any((ROOT / folder).rglob(name.rstrip("/"))):
                missing.append(f"{folder}/: {name}")
    assert not missing, f"the README's map names what the tree lacks: {missing}"


# each imports only those before it
LAYERS = ("integrators", "data_sets", "theory_checks", "bias", "bnn", "tour", "reports", "experiments")
# bias's coupled h / h/2 runners import integrators alone; verify measures weak orders with them on
# targets without an exact law (DESIGN.md), so theory_checks may import these two modules of bias
SHARED_DOWN = ("bias._coupled", "bias._telescoping")


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        yield from ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [])


def test_no_package_imports_one_that_sits_above_it():
    assert set(LAYERS) == set(PACKAGES)
    upward = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in _imports(path):
                other = name.split(".")[0]
                if other in LAYERS and LAYERS.index(other) > LAYERS.index(package) and not (
                        package == "theory_checks" and name in SHARED_DOWN):
                    upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, upward
    for module in SHARED_DOWN:  # what theory_checks may import stays below it: no cycle
        path = ROOT / (module.replace(".", "/") + ".py")
        above = [name for name in _imports(path)
                 if name.split(".")[0] in LAYERS and name not in SHARED_DOWN and name.split(".")[0] != "integrators"]
        assert not above, f"{module} imports {above}"
