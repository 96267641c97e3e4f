"""The guided tour: its notebooks run top to bottom, use only the README's public API, and its
exercise checker tells right from wrong (with a hint, never the answer)."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
from helpers import project_packages
from hypothesis import given, settings
from hypothesis import strategies as st

from tour import EXERCISES, check, notebooks, question
from tour._exercises import Computed, Hashed

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = project_packages()

# The right answers of the stored (hashed) exercises: the tests must know them; the notebooks and
# the checker's source do not show them.
HASHED_ANSWERS = {"1.2": "baoab", "1.3": 0.125, "2.1": 1.0, "2.2": 2.0, "2.3": 4, "3.1": 5.25e-3, "3.2": 4.0,
                  "4.1": 2.0, "4.2": 0.5, "5.2": 4.0, "5.3": 1.0, "6.1": 50**0.5, "6.2": 50.0, "6.3": "no",
                  "7.1": 0.5, "7.2": "stationarity", "7.3": 2.0}


def computed_truth(exercise_id: str) -> float:
    """The computed exercises' answers, derived here independently of the checker."""
    if exercise_id == "1.1":
        from integrators import GaussianTarget
        from theory_checks.oracle import stationary_full
        target = GaussianTarget.one_d_example()
        _, cov = stationary_full("em", target, 0.125, 1.0)   # the Lyapunov route, not stationary_moments
        return float(cov[0, 0] / target.covariance[0, 0])
    if exercise_id == "5.1":  # W1 of two centered normals by quadrature of |F1 - F2|
        from scipy import integrate, special
        value, _ = integrate.quad(lambda t: abs(special.ndtr(t) - special.ndtr(t / 1.1)), -30, 30, limit=200)
        return value
    raise KeyError(exercise_id)


def right_answer(exercise_id: str):
    return HASHED_ANSWERS[exercise_id] if exercise_id in HASHED_ANSWERS else computed_truth(exercise_id)


# ------------------------------------------------------------------------------- the checker
def test_every_exercise_has_a_known_answer_and_appears_in_a_notebook():
    assert set(HASHED_ANSWERS) | {"1.1", "5.1"} == set(EXERCISES)
    text = "\n".join(p.read_text() for p in notebooks())
    for exercise_id in EXERCISES:
        assert f'check("{exercise_id}"' in text, f"exercise {exercise_id} is asked in no notebook"


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_right_answer_passes_and_wrong_answer_fails_with_a_hint(exercise_id, capsys):
    answer = right_answer(exercise_id)
    assert check(exercise_id, answer) is True
    assert "right" in capsys.readouterr().out
    wrong = "em" if isinstance(answer, str) else (answer * 3.0 + 1.0)
    assert check(exercise_id, wrong) is False
    out = capsys.readouterr().out
    assert "not yet" in out and "Hint:" in out and EXERCISES[exercise_id].hint in out
    out = out.split("Hint:", 1)[1]
    shown = [str(answer)] if isinstance(answer, str) else [f"{answer:g}", f"{answer:.3g}", f"{answer:.4f}"]
    for text in shown:
        assert not re.search(rf"(?<![\d.]){re.escape(text)}(?![\d])", out), f"the answer {text} was printed"


@pytest.mark.parametrize("exercise_id", sorted(k for k, v in EXERCISES.items() if isinstance(v, Hashed) and v.tol))
@settings(max_examples=25, deadline=None)
@given(offset=st.floats(-1.0, 1.0))
def test_numeric_answers_pass_within_the_tolerance_and_fail_beyond_twice_it(exercise_id, offset):
    exercise = EXERCISES[exercise_id]
    truth = float(HASHED_ANSWERS[exercise_id])
    assert exercise.is_right(exercise_id, truth + 0.9 * exercise.tol * offset)
    beyond = truth + math.copysign(2.1 * exercise.tol + abs(offset) * 5 * exercise.tol, offset or 1.0)
    assert not exercise.is_right(exercise_id, beyond)


def test_computed_answers_accept_their_relative_tolerance_only():
    for exercise_id, exercise in EXERCISES.items():
        if isinstance(exercise, Computed):
            truth = computed_truth(exercise_id)
            assert exercise.is_right(exercise_id, truth * (1 + 0.5 * exercise.rel_tol))
            assert not exercise.is_right(exercise_id, truth * (1 + 3 * exercise.rel_tol))


def test_words_are_normalized_and_answers_are_not_stored_readably():
    assert EXERCISES["1.2"].is_right("1.2", " BAOAB ") and not EXERCISES["1.2"].is_right("1.2", "ubu")
    source = (ROOT / "tour" / "_exercises.py").read_text()
    assert "'baoab'" in source  # only inside the question's list of choices
    assert not re.search(r"5\.25e-3|0\.00525", source)


def test_checker_bad_input_names_it():
    with pytest.raises(ValueError, match="unknown exercise 'nope'"):
        check("nope", 1.0)
    with pytest.raises(ValueError, match="expects a number"):
        check("2.1", "one")
    with pytest.raises(ValueError, match="finite"):
        check("2.1", float("nan"))
    assert "weak order" in question("2.2")


# ---------------------------------------------------------------------------- the public API
def public_modules() -> set[str]:
    """Modules the README documents: the files of its "What is here" table and dotted names in
    backticks (``experiments.figure1.run_points`` documents ``experiments.figure1``)."""
    text = (ROOT / "README.md").read_text()
    modules = set()
    for line in text.splitlines():
        row = re.match(r"\|\s*`(\w+)/`\s*\|(.*)\|\s*$", line)
        if row and row.group(1) in PROJECT_PACKAGES:
            pkg = row.group(1)
            modules.add(pkg)
            for name in re.findall(r"`(\w+)(?:\.py|/)`", row.group(2)):
                modules.add(f"{pkg}.{name}")
    packages = "|".join(PROJECT_PACKAGES)
    for dotted in re.findall(rf"`((?:{packages})(?:\.\w+)*)", text):
        parts = dotted.split(".")
        for k in range(1, len(parts) + 1):
            modules.add(".".join(parts[:k]))
    return modules


def private_uses(source: str, public: set[str]) -> list[str]:
    """Imports of undocumented project modules or of names starting with ``_``, and attribute
    accesses of such names, in a notebook's code."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.split(".")[0] in PROJECT_PACKAGES and mod not in public:
                problems.append(f"from {mod} import ... (module not documented in the README)")
            problems += [f"from {mod} import {a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROJECT_PACKAGES and alias.name not in public:
                    problems.append(f"import {alias.name} (module not documented in the README)")
                if any(part.startswith("_") for part in alias.name.split(".")):
                    problems.append(f"import {alias.name}")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_") and not (node.attr.startswith("__") and node.attr.endswith("__")):
                problems.append(f"attribute .{node.attr}")
    return problems


def code_of(path: Path) -> str:
    from tour._build import read
    return "\n".join(c.source for c in read(path).cells if c.cell_type == "code")


def test_the_private_api_check_catches_private_names():
    public = public_modules()
    assert {"integrators", "integrators._brownian", "theory_checks.oracle", "experiments.figure1",
            "tour"} <= public
    assert {"bnn", "bnn.training", "bnn._metrics", "integrators.torch", "theory_checks"} <= public
    assert private_uses("from integrators._api import _fmt", public)
    assert private_uses("from integrators._rng import lane_states", public)   # rng.py: not in the README
    assert private_uses("import integrators._kernel as k\nk._KERNELS", public)
    assert not private_uses("from integrators import sample\nimport numpy as np\nx.__doc__", public)


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_notebook_uses_only_the_documented_public_api(path):
    assert private_uses(code_of(path), public_modules()) == []


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_notebook_source_states_its_goal_and_ends_with_exercises(path):
    from tour._build import read, title_and_promise
    nb = read(path)
    title, promise = title_and_promise(nb)
    assert title != "untitled" and "able to" in promise
    headings = [c.source for c in nb.cells if c.cell_type == "markdown" and "## " in c.source]
    assert "Exercises" in headings[-1]
    assert "check(" in nb.cells[-1].source
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "sources carry no outputs"
    assert not list(path.parent.glob("*.ipynb")), "notebooks are stored as jupytext sources only"


def test_tour_has_its_seven_notebooks_in_order():
    stems = [p.stem for p in notebooks()]
    assert [s[:2] for s in stems] == ["01", "02", "03", "04", "05", "06", "07"]
    assert notebooks(["03"])[0].stem.startswith("03")
    with pytest.raises(ValueError, match="no tour notebook 'nope'"):
        notebooks(["nope"])


# ------------------------------------------------------------------------------- execution
# Every notebook's execution (each in a kernel of its own, its figures counted, no NaN printed) is
# checked where the documentation site builds the tour's pages: tests/test_docs_site.py.


def test_the_authors_digest_reproduces_every_stored_answer():
    from tour._exercises import digest
    for exercise_id, answer in HASHED_ANSWERS.items():
        exercise = EXERCISES[exercise_id]
        assert set(digest(exercise_id, answer, tol=exercise.tol)) == set(exercise.digests), exercise_id
