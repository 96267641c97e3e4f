"""Every code example of the documentation site runs: each ```python block of docs/**/*.md (the tour
and the API pages aside: the tour's notebooks are executed by tests/test_tour.py and the site's
build) is executed, the blocks of one page in order in one namespace, all pages in one subprocess
(so Numba compiles a scheme once); each ```bash block's `sms-langevin ...` lines run in order with
the substitutions below.  The substitutions are the whole difference between what a page shows
and what runs here: keep them few and visible.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import code_needs_torch

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SKIPPED_FOLDERS = ("tour", "api")
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)

# (page, text in the page, what runs instead, why): python blocks
PYTHON_SUBSTITUTIONS = [
    ("getting-started.md", "n_chains=200, n_steps=2000, burn_in=200", "n_chains=50, n_steps=400, burn_in=50",
     "the same calls, fewer chains and steps"),
]
# (pattern, replacement, why): every `sms-langevin` line of a bash block, applied in order
BASH_SUBSTITUTIONS = [
    (r"^run bnn .*$", "run bnn --help", "the BNN figure takes minutes at every preset: its arguments parse"),
    (r"--preset (quick|full)\b", "--preset tiny", "the tiny level of the same figures"),
    (r"--workers \d+", "--workers 1", "one process: the suite runs beside other tests"),
    (r"--out (\S+)", r"--out {tmp}/\1", "into the test's folder"),
]


def on_one_core():
    """A ``preexec_fn`` that keeps a subprocess on one core, another per pytest-xdist worker: the
    kernel's threads and Figure 1's pool default to the cores a process may run on (None where
    the platform sets no affinity)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    core = cores[int(worker) % len(cores) if worker.isdigit() else 0]
    return lambda: os.sched_setaffinity(0, {core})


def blocks(page: Path, language: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) == language]


def pages(language: str) -> list[Path]:
    found = sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in SKIPPED_FOLDERS)
    return [p for p in found if blocks(p, language)]


def page_id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def python_source(page: Path) -> list[str]:
    codes = blocks(page, "python")
    for name, old, new, _ in PYTHON_SUBSTITUTIONS:
        if name == page_id(page):
            assert any(old in c for c in codes), f"substitution {old!r} no longer matches {name}"
            codes = [c.replace(old, new) for c in codes]
    return codes


RUNNER = textwrap.dedent("""
    import json, sys, time, traceback
    sys.path.insert(0, {root!r})
    import matplotlib
    matplotlib.use("Agg")
    pages = json.load(open(sys.argv[1]))
    outcome = {{}}
    for name, codes in pages.items():
        namespace = {{"__name__": "__docs__"}}
        t0 = time.time()
        try:
            for k, code in enumerate(codes):
                exec(compile(code, f"{{name}} block {{k + 1}}", "exec"), namespace)
            outcome[name] = {{"ok": True, "seconds": time.time() - t0}}
        except BaseException:
            outcome[name] = {{"ok": False, "error": traceback.format_exc()[-3000:]}}
    json.dump(outcome, open(sys.argv[2], "w"))
""")


def python_page(page: Path):
    """The page as a test parameter: in the torch tier where its code imports torch or a module that does."""
    needs = code_needs_torch("\n".join(blocks(page, "python")))
    return pytest.param(page_id(page), marks=[pytest.mark.torch] if needs else [])


@pytest.fixture(scope="module")
def python_outcome(tmp_path_factory, request):
    """Each selected page's outcome (the pages of the tests this run selected, in one subprocess)."""
    tmp = tmp_path_factory.mktemp("docs-python")
    selected = {item.callspec.params["page"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_python_blocks_run"}
    (tmp / "pages.json").write_text(json.dumps({page_id(p): python_source(p) for p in pages("python")
                                                if page_id(p) in selected}))
    (tmp / "runner.py").write_text(RUNNER.format(root=str(ROOT)))
    proc = subprocess.run([sys.executable, str(tmp / "runner.py"), str(tmp / "pages.json"), str(tmp / "out.json")],
                          cwd=tmp, capture_output=True, text=True, timeout=900, preexec_fn=on_one_core())
    assert (tmp / "out.json").exists(), proc.stderr[-3000:]
    return json.loads((tmp / "out.json").read_text())


@pytest.mark.parametrize("page", [python_page(p) for p in pages("python")])
def test_python_blocks_run(page, python_outcome):
    result = python_outcome[page]
    assert result["ok"], f"a python block of docs/{page} failed:\n{result['error']}"


def cli() -> list[str]:
    script = Path(sys.executable).parent / "sms-langevin"
    return [str(script)] if script.exists() else [sys.executable, "-m", "reports"]


def bash_commands(page: Path, tmp: Path) -> list[list[str]]:
    """The `sms-langevin` lines of the page's bash blocks, substituted, as argument lists."""
    commands = []
    for block in blocks(page, "bash"):
        for line in block.splitlines():
            line = line.split(" #")[0].strip()
            if not line.startswith("sms-langevin "):
                continue  # make targets and other tools: not run here
            args = line[len("sms-langevin "):]
            for pattern, replacement, _ in BASH_SUBSTITUTIONS:
                args = re.sub(pattern, replacement.replace("{tmp}", str(tmp)), args)
            commands.append(shlex.split(args))
    return commands


@pytest.mark.parametrize("page", [page_id(p) for p in pages("bash")])
def test_bash_blocks_run(page, tmp_path):
    commands = bash_commands(DOCS / page, tmp_path)
    for args in commands:
        proc = subprocess.run(cli() + args, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                              preexec_fn=on_one_core())
        assert proc.returncode == 0, f"docs/{page}: sms-langevin {' '.join(args)} failed:\n{proc.stderr[-2000:]}"


def test_every_bash_block_with_the_command_is_run():
    """The bash blocks name the command as a reader types it; none hides it behind a path."""
    for page in pages("bash"):
        for block in blocks(page, "bash"):
            assert "bin/sms-langevin" not in block, f"docs/{page_id(page)}: write `sms-langevin ...`"
