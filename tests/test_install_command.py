"""The command a one-line message gives for an extra works where it is run (the project is on no
package index): from a source tree, an installed copy's source folder, a clone as the working
folder, or the installed metadata's requirements; and every message takes it from one function."""

import ast
import re
from pathlib import Path

import pytest

from integrators import _install
from integrators._install import install_command

ROOT = Path(__file__).resolve().parents[1]


def source_tree(folder: Path, name: str = "sms-langevin") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0.1.0"\n')
    return folder


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The code as an installed copy (no source tree beside it), installed from nowhere known."""
    monkeypatch.setattr(_install, "SOURCE_ROOT", tmp_path / "site-packages")
    monkeypatch.setattr(_install, "_installed_from", lambda: (None, False))
    return tmp_path


def test_from_this_checkout_the_command_is_an_editable_install_of_it(tmp_path):
    assert install_command("torch", cwd=ROOT) == "pip install -e '.[torch]'"
    assert install_command("tour", cwd=tmp_path) == f"pip install -e '{ROOT}[tour]'"


def test_an_installed_copy_names_the_folder_it_was_installed_from(installed, monkeypatch):
    src = source_tree(installed / "clone")
    monkeypatch.setattr(_install, "_installed_from", lambda: (src, False))
    assert install_command("torch", cwd=installed) == f"pip install '{src}[torch]'"
    assert install_command("torch", cwd=src) == "pip install '.[torch]'"
    (src / "pyproject.toml").unlink()  # that folder is gone: the next rule
    assert not install_command("torch", cwd=installed).startswith(f"pip install '{src}")


def test_an_installed_copy_run_in_a_clone_installs_from_the_clone(installed):
    clone = source_tree(installed / "clone")
    assert install_command("dask", cwd=clone) == "pip install '.[dask]'"
    other = source_tree(installed / "other", name="another-project")
    assert install_command("dask", cwd=other) != "pip install '.[dask]'"


def test_elsewhere_the_extras_own_requirements_else_the_distribution(installed, monkeypatch):
    requires = ['numpy>=1.26', 'torch<2.14,>=2.11; extra == "torch"', "dask[distributed]>=2024.1; extra == 'dask'"]
    monkeypatch.setattr(_install.importlib.metadata, "requires", lambda name: requires)
    assert install_command("torch", cwd=installed) == "pip install 'torch<2.14,>=2.11'"
    assert install_command("dask", cwd=installed) == "pip install 'dask[distributed]>=2024.1'"
    assert install_command("tour", cwd=installed) == "pip install 'sms-langevin[tour]'"


def test_an_unquotable_path_is_quoted_for_the_shell(tmp_path, monkeypatch):
    src = source_tree(tmp_path / "my clone")
    monkeypatch.setattr(_install, "SOURCE_ROOT", src)
    assert install_command("torch", cwd=tmp_path) == f"pip install -e '{src}[torch]'"


def _strings(tree):
    """The string constants of a module that are not docstrings (messages, f-string parts)."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_message_spells_an_install_command_of_its_own():
    """A literal ``pip install 'sms-langevin[...]'`` or ``'.[extra]'`` in a message of the packages
    would not follow the install; docstrings may show examples."""
    found = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        if path.parts[len(ROOT.parts)] in ("tests", ".venv", "benchmarks", "docs") or path.name == "_install.py":
            continue
        for node in _strings(ast.parse(path.read_text())):
            if re.search(r"sms-langevin\[|'\.\[|pip install -e", node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
