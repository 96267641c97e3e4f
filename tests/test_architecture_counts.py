"""``tools/architecture_counts.py``: it runs on this repository and reports every count as a
non-negative integer, and each of its static rules counts exactly what it states on a small
synthetic tree (with a near miss beside every match), so a rule that drifts fails here."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "architecture_counts.py"
_spec = importlib.util.spec_from_file_location("architecture_counts", SCRIPT)
counts_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(counts_module)


def is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def test_counts_this_repository_completely_as_non_negative_integers():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    assert set(out["counts"]) == set(out["rules"]) == set(counts_module.RULES)
    assert all(is_count(v) for v in out["counts"].values()), out["counts"]
    assert {"integrators", "theory_checks"} <= set(out["packages"]) and "tests" not in out["packages"]
    assert set(out["per_package"]) == set(out["packages"])
    for package, stats in out["per_package"].items():
        assert all(is_count(v) for v in stats.values()), (package, stats)
        assert stats["lines"] == sum(stats[f"{k}_lines"] for k in ("code", "docstring", "comment", "blank"))
    assert all(is_count(v) for v in out["all_sizes"].values()), out["all_sizes"]
    for key, value in out["counts"].items():  # what a rule matched is listed, one entry per count
        if out["found"][key]:
            assert len(out["found"][key]) == value, key
    c = out["counts"]
    assert c["source_lines"] == sum(c[f"source_{k}_lines"] for k in ("code", "docstring", "comment", "blank"))
    assert min(c["public_names"], c["source_code_lines"], c["test_lines"], c["raise_value_error"]) > 0


def test_prints_its_tables_with_every_rule():
    proc = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for key, rule in counts_module.RULES.items():
        assert f"{key} " in proc.stdout and rule in proc.stdout, key


def test_refuses_a_root_that_is_not_a_folder(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path / "absent")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "not a folder" in proc.stderr and "Traceback" not in proc.stderr


SYNTHETIC = {
    "pkg/__init__.py": '''"""The package."""

from pkg._private import Engine
from .core import Options, sample

__all__ = ["sample", "Options", "Engine"]
VERSION = 1
''',
    "pkg/core.py": '''import dataclasses
from typing import ClassVar, NamedTuple


@dataclasses.dataclass
class Options:
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    e: int = 0
    f: int = 0
    g: int = 0
    h: int = 0
    i: int = 0
    j: int = 0
    KIND: ClassVar[str] = "x"

    def total(self):
        return self.a

    def _hidden(self):
        return 0


class Nine(NamedTuple):
    a: int
    b: int
    c: int
    d: int
    e: int
    f: int
    g: int
    h: int
    i: int


def sample(a, b, c, d, e, f, g, h, i, *, j=0, **kw):
    raise TypeError("not counted")


def nine(a, b, c, d, e, f, g, h, i, *args):
    return a


class Runner:
    def run(self, a, b, c, d, e, f, g, h, i):
        return a

    @staticmethod
    def build(a, b, c, d, e, f, g, h, i, j):
        return a


if True:
    LIMIT = 1
else:
    LIMIT, _SECRET = 2, 3
''',
    "pkg/_private.py": '''def _helper(a, b, c, d, e, f, g, h, i, j):
    raise ValueError("ten")


PUBLIC_LOOKING = 1


class Engine:
    def run(self):
        return 0

    def _inner(self):
        return 1
''',
    "pkg/plans/__init__.py": '"""Plans."""\n',
    "pkg/plans/sms.py": '''SWEEPS = 2


def batch_index(position, n_batches):
    return position % n_batches if position < n_batches * SWEEPS else 0
''',
    "pkg/walk.py": '''from pkg.plans import sms


def walk(n):
    return [sms.batch_index(p, n) for p in range(sms.SWEEPS * n)]


def sweeps_of(plan):
    return plan.SWEEPS


class Sampler:
    def next_batches(self):
        return 0

    def step(self):
        return self.next_batches()


def plan_name(plan):
    return getattr(plan, "SWEEPS", None)
''',
    "pkg/memory.py": '''def run_bytes(n_chains, dim):
    per_chain = 6 * dim
    return 8.0 * n_chains * per_chain


def available_memory_bytes():
    return 2**30 * 4


def memory_limit(spec):
    return spec.limit


def check(n):
    check_fits("n", 8.0 * n)


def check_plain(n):
    check_fits("n", n)


def check_fits(request, n_bytes):
    return n_bytes
''',
    "pkg/divergence.py": '''import numpy as np


def mark(k, x, div):
    at = div.diverged_at
    for c in range(x.shape[0]):
        if abs(x[c]) > div.bound:
            at[c] = k


def record(diverged_at, k, x):
    bad = ~np.isfinite(x)
    diverged_at.copy_(np.where(bad, k, diverged_at))


def first_bad_step(losses):
    first_bad = None
    for k, loss in enumerate(losses):
        if first_bad is None and not np.isfinite(loss):
            first_bad = k
    return first_bad


def check_input(x):
    bad = ~np.isfinite(x)
    if bad.any():
        raise ValueError("x is not finite")


def boundary_share(res):
    diverged = [r for r in res if r.boundary > 0.5]
    return diverged


def check_start(x0, spec):
    bound = spec.divergence_bound
    if abs(x0) > bound:
        raise ValueError("x0 lies beyond the bound")
''',
    "pkg/lines.py": '''"""Lines.

Three docstring lines."""
# one comment


def f():
    """One docstring line."""
    text = """a string that
is code, not a docstring"""
    return text  # code with a comment
''',
    "pkg/long.py": "LONG = 1\n" + "# filler\n" * 374,
    "other/__init__.py": "",
    "tests/test_a.py": "def test_a():\n    assert True\n\n",
    "benchmarks/__init__.py": "",
    "benchmarks/bench_x.py": "def run_bytes(n):\n    raise ValueError(8 * n)\n",
    "docs/__init__.py": "raise ValueError\n",
    "scripts/tool.py": "raise ValueError\n",
}


def test_each_rule_counts_what_it_states_on_a_synthetic_tree(tmp_path):
    write_tree(tmp_path, SYNTHETIC)
    out = counts_module.count(tmp_path)
    found = {k: sorted(v.split(" ")[1] for v in out["found"][k]) for k in
             ("run_option_places", "memory_formulas", "plan_walkers", "divergence_detectors")}
    assert found == {"run_option_places": ["Options", "Runner.build", "_helper", "sample"],
                     "memory_formulas": ["check", "run_bytes"],
                     "plan_walkers": ["sweeps_of", "walk"],
                     "divergence_detectors": ["first_bad_step", "mark", "record"]}
    names = {n.removeprefix("pkg.") for n in out["found"]["public_names"]}
    assert names == (OFFERED_BY_DEFINITION - {"VERSION", "core.Options.total"}
                     | {"sample", "Options", "Options.total", "Engine", "Engine.run"})
    assert out["all_sizes"] == {"pkg": 3}
    c = out["counts"]
    assert {k: c[k] for k in ("public_names", "run_option_places", "memory_formulas", "plan_walkers",
                              "divergence_detectors", "raise_value_error", "source_files", "test_lines",
                              "test_files", "files_over_374_lines")} == {
        "public_names": 35, "run_option_places": 4, "memory_formulas": 2, "plan_walkers": 2,
        "divergence_detectors": 3, "raise_value_error": 3, "source_files": 11, "test_lines": 3, "test_files": 1,
        "files_over_374_lines": 1}
    assert out["found"]["files_over_374_lines"] == ["pkg/long.py (375 lines)"]
    assert out["per_package"]["other"] == dict.fromkeys(out["per_package"]["other"], 0) | {"files": 1}


def test_a_class_offered_twice_counts_its_methods_once_under_the_first_name(tmp_path):
    write_tree(tmp_path, SYNTHETIC)
    found = counts_module.count(tmp_path)["found"]["public_names"]
    assert "pkg.Options.total" in found and "pkg.core.Options.total" not in found
    assert "pkg.core.Options" in found and "pkg.Engine.run" in found and not any("_private" in n for n in found)


def test_without_all_a_tree_counts_the_names_its_public_modules_define(tmp_path):
    """The rule before __all__ counted: a revision without __all__ keeps its count."""
    write_tree(tmp_path, SYNTHETIC | {"pkg/__init__.py": SYNTHETIC["pkg/__init__.py"].replace("__all__", "_all")})
    out = counts_module.count(tmp_path)
    assert {n.removeprefix("pkg.") for n in out["found"]["public_names"]} == OFFERED_BY_DEFINITION
    assert out["counts"]["public_names"] == len(OFFERED_BY_DEFINITION) == 32 and out["all_sizes"] == {}


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


OFFERED_BY_DEFINITION = {"VERSION", "core.Options", "core.Options.total", "core.Nine", "core.sample", "core.nine",
                         "core.Runner", "core.Runner.run", "core.Runner.build", "core.LIMIT",
                         "plans.sms.SWEEPS", "plans.sms.batch_index",
                         "walk.walk", "walk.sweeps_of", "walk.Sampler", "walk.Sampler.next_batches",
                         "walk.Sampler.step", "walk.plan_name",
                         *(f"memory.{n}" for n in ("run_bytes", "available_memory_bytes", "memory_limit", "check",
                                                   "check_plain", "check_fits")),
                         *(f"divergence.{n}" for n in ("mark", "record", "first_bad_step", "check_input",
                                                       "boundary_share", "check_start")),
                         "lines.f", "long.LONG"}


def test_lines_are_split_into_code_docstring_comment_and_blank():
    text = SYNTHETIC["pkg/lines.py"]
    assert counts_module.line_kinds(text, ast.parse(text)) == Counter(code=4, docstring=4, comment=1, blank=2)
