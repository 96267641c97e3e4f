"""What the documentation's prose promises, checked on the sources: no sentence of a guide ends in a
colon with nothing after it, every guide that runs `sms-langevin` says where it comes from (the
project's `.venv`), and `SampleResult.summary()` prints the R-hat the guides say it prints; the
user pages name a public route where there is one, never "these machines", list every API page
on the home page and the extras `make demo` installs.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators._chain_summary import format_values
from integrators._result import SampleResult

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GUIDES = sorted((DOCS / "guides").glob("*.md")) + [DOCS / "getting-started.md"]
USER_PAGES = [*GUIDES, DOCS / "index.md", DOCS / "method.md", ROOT / "README.md"]
# `a.b._c.name` or `a._c.name(...)`: a name reached through a private module
PRIVATE_ROUTE = re.compile(r"`((?:[A-Za-z]\w*\.)+_\w+(?:\.\w+)*)\.([A-Za-z]\w*)(?:\([^`]*\))?`")
FENCE = re.compile(r"^(```|~~~)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
VENV = re.compile(r"source \.venv/bin/activate|\.venv/bin/sms-langevin")


def blocks(text: str) -> list[str]:
    """The page as blocks: fenced code blocks whole, the rest split at blank lines."""
    out, current, fenced = [], [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            if not fenced and current:
                out.append("\n".join(current))
                current = []
            current.append(line)
            if fenced:
                out.append("\n".join(current))
                current = []
            fenced = not fenced
        elif not fenced and not line.strip():
            if current:
                out.append("\n".join(current))
                current = []
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def dangling_colons(text: str) -> list[str]:
    """Prose blocks ending in ':' whose next block is not a code block, a list or a table."""
    parts = blocks(text)
    bad = []
    for k, block in enumerate(parts):
        if FENCE.match(block.lstrip()) or block.lstrip().startswith(("#", "|")):
            continue
        if block.rstrip().endswith(":"):
            after = parts[k + 1].lstrip() if k + 1 < len(parts) else ""
            if not (FENCE.match(after) or LIST_ITEM.match(after) or after.startswith("|")):
                bad.append(block.strip().splitlines()[-1])
    return bad


def test_dangling_colon_detector_sees_a_removed_block():
    assert dangling_colons("Run this:\n\nThen that.\n") == ["Run this:"]
    assert dangling_colons("Run this:\n\n```bash\nls\n```\n\nThen that:\n\n- one\n\nAnd:\n\n| a |\n") == []
    assert dangling_colons("End:") == ["End:"]


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.name)
def test_no_paragraph_ends_in_a_colon_with_nothing_after(page):
    assert dangling_colons(page.read_text()) == []


SAMPLING = (DOCS / "guides" / "sampling.md").read_text()


def _section(text: str, title: str) -> str:
    """The text of a ``###`` section of a guide, up to the next heading."""
    start = text.index(f"### {title}\n")
    following = re.search(r"^#", text[start + 4:], re.MULTILINE)
    return text[start:start + 4 + following.start()] if following else text[start:]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_docs_say_a_test_function_sees_a_copy_of_the_state():
    from integrators import sample

    assert "its `x` is a copy of the chain's state" in _flat(SAMPLING)
    assert "``x`` is a copy of the chain's state" in _flat(sample.__doc__)


def test_the_docs_say_helpers_of_user_code_are_not_bounds_checked_and_how_to_check_them():
    """Where ``test_functions`` is documented (the guide and ``sample``), the limit and both ways to
    turn the checks on for a helper."""
    from integrators import sample

    guide = _flat(SAMPLING[SAMPLING.index("**Helpers are not checked.**"):].split("\n\n")[0])
    doc = _flat(sample.__doc__.split("test_functions :")[1].split("n_test_functions :")[0])
    for text in (guide, doc):
        assert "@numba.njit(boundscheck=True)" in text and "NUMBA_BOUNDSCHECK=1" in text, text
    assert "not checked" in guide and "are not" in doc


def test_the_docs_say_compiled_user_code_that_never_returns_cannot_be_interrupted_and_how_to_bound_it():
    """The sampling guide's section, the verify guide on ``max_seconds``, and ``sample``'s docstring."""
    from integrators import sample

    section = _flat(_section(SAMPLING, "User code that never returns"))
    for said in ("Ctrl-C is not acted on", "`max_seconds` cannot stop it", "read between checks",
                 "SIGTERM", "SIGKILL", "`timeout 600 python", "subprocess.run(", "--workers 2"):
        assert said in section, said
    verify_guide = _flat((DOCS / "guides" / "verify.md").read_text())
    assert ("The cap is read between checks: it stops the next check from starting, not a check that is running, "
            "and it cannot stop compiled code that never returns") in verify_guide
    assert "User code that never returns" in verify_guide
    assert "cannot be stopped by Ctrl-C" in _flat(sample.__doc__) and "User code that never returns" in sample.__doc__


RUNNERS = [page for page in GUIDES if "sms-langevin" in page.read_text()]  # the guides that run the command


def test_some_guides_run_the_command():
    assert len(RUNNERS) >= 3, [p.name for p in RUNNERS]


@pytest.mark.parametrize("page", RUNNERS, ids=lambda p: p.name)
def test_a_guide_that_runs_sms_langevin_says_to_use_the_venv(page):
    parts = blocks(page.read_text())
    first = next(k for k, b in enumerate(parts) if "sms-langevin" in b)
    assert any(VENV.search(b) for b in parts[:first + 1]), (
        f"{page.name} runs sms-langevin (first: {parts[first][:80]!r}) before saying to activate .venv "
        "(`source .venv/bin/activate`) or to call `.venv/bin/sms-langevin`")


@st.composite
def results(draw):
    n_chains = draw(st.integers(1, 5))
    d = draw(st.integers(1, 3))
    finite = st.floats(-10, 10, allow_nan=False)
    mean = np.array(draw(st.lists(finite, min_size=n_chains * d, max_size=n_chains * d))).reshape(n_chains, d)
    spread = np.array(draw(st.lists(st.floats(0.01, 10), min_size=n_chains * d, max_size=n_chains * d)))
    diverged_at = np.array(draw(st.lists(st.sampled_from([-1, -1, 7]), min_size=n_chains, max_size=n_chains)))
    n_steps = draw(st.integers(2, 50))
    burn_in = draw(st.integers(0, n_steps - 1))
    nan = np.full((n_chains, d), np.nan)
    return SampleResult("ubu", "sms", 0.1, 1.0, n_steps, burn_in, 0, mean, mean**2 + spread.reshape(n_chains, d),
                        None, None, None, diverged_at, nan, nan)


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@settings(max_examples=60, deadline=None)  # one chain left: its standard errors are NaN, by design
@given(results())
def test_summary_prints_rhat_where_the_result_has_it(res):
    line = res.summary()
    if not np.any(res.ok):
        assert "DIVERGED" in line and "R-hat=" not in line
    elif res.rhat is None:  # one chain left, or one post-burn-in step
        assert "R-hat=" not in line
    else:
        assert f"R-hat={format_values(res.rhat)}" in line


def public_route(module: str, name: str) -> str | None:
    """``parent.name`` where the public package above ``module``'s first private part offers the same
    object as ``module.name``; None where it does not (or either cannot be imported here)."""
    parts = module.split(".")
    parent = ".".join(parts[:next(i for i, p in enumerate(parts) if p.startswith("_"))])
    try:
        obj = getattr(importlib.import_module(module), name)
        offered = getattr(importlib.import_module(parent), name, None)
    except (ImportError, AttributeError):
        return None
    return f"{parent}.{name}" if offered is obj else None


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.name)
def test_user_pages_name_the_public_route_where_there_is_one(page):
    found = [(f"{m}.{n}", public_route(m, n)) for m, n in PRIVATE_ROUTE.findall(page.read_text())]
    assert not [pair for pair in found if pair[1]], [pair for pair in found if pair[1]]


def test_the_public_route_check_sees_a_private_path_to_a_public_name():
    assert public_route("theory_checks._claims", "claims_table") == "theory_checks.claims_table"
    assert public_route("reports._progress", "fit_note") is None


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.name)
def test_user_pages_do_not_speak_of_the_developers_machines(page):
    text = " ".join(page.read_text().split())
    assert not re.search(r"\b(these|the reference) machines\b", text, re.I)


def test_the_home_pages_api_row_links_every_api_page():
    row = next(line for line in (DOCS / "index.md").read_text().splitlines() if line.startswith("| API reference"))
    linked = set(re.findall(r"\]\(api/([\w-]+)\.md\)", row))
    assert linked == {p.stem for p in (DOCS / "api").glob("*.md")}


def test_getting_started_names_the_extras_make_demo_installs():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    extras = re.search(r'install --quiet -e "(\.\[[\w,]+\])"', target).group(1)
    page = (DOCS / "getting-started.md").read_text()
    assert 'make demo` installs' in page and f'pip install -e "{extras}"' in page


def test_make_docs_states_its_cost_before_it_builds_as_the_readme_does():
    recipe = (ROOT / "Makefile").read_text().split("\ndocs:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    first = recipe[0].strip()
    assert first.startswith("@echo ") and "mkdocs" in recipe[1], recipe
    costs = re.findall(r"(?:about|under) \d+ minutes", first)
    readme = " ".join((ROOT / "README.md").read_text().split())
    said = readme.split("`make docs` builds the documentation site", 1)[1].split(". ", 1)[0]
    assert len(costs) == 2 and all(cost in said for cost in costs), (costs, said)
