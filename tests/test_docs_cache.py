"""``make docs`` executes a tour notebook only when its source changed: the executed copy is kept in a
cache keyed by the source's hash (docs/hooks.py) and reused as it is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mkdocs")
pytest.importorskip("jupytext")


@pytest.fixture
def hooks(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("docs_hooks_under_test", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(module, "FROM", tmp_path / "no-tour-here")
    return module


def test_a_notebook_runs_again_only_when_its_source_changes(hooks, tmp_path, monkeypatch):
    from tour import _build as build

    runs = []

    def execute(nb, **kwargs):
        runs.append(nb)
        return nb

    monkeypatch.setattr(build, "execute", execute)
    source = tmp_path / "01_example.py"
    source.write_text("# %% [markdown]\n# # Example\n\n# %%\nx = 1\n")
    first = hooks.executed_notebook(source)
    assert len(runs) == 1 and hooks.stored_hash(first) == hooks.source_hash(source)
    assert hooks.executed_notebook(source) == first and len(runs) == 1  # unchanged: reused, not executed
    source.write_text("# %% [markdown]\n# # Example\n\n# %%\nx = 2\n")
    hooks.executed_notebook(source)
    assert len(runs) == 2 and hooks.stored_hash(first) == hooks.source_hash(source)
