"""Every command and code block of the README runs in the suite.

Each shell line of a ```bash block is looked up in :data:`COMMANDS`, which says what the suite runs
for it: the command itself, the same command with small arguments where the documented one takes
minutes (the substitution is written next to it, for a reader to see), or the test elsewhere in the
suite that already runs it.  A README line missing from the table fails, and so does an entry whose
README line is gone, so the two cannot drift apart.  Every ```python block is executed as written.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # and each test but the torch one (tests/conftest.py) an experiment

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Run:
    """Run ``argv`` (``sms-langevin`` in this process, ``python`` with this interpreter, ``make -n``
    for a Makefile target); ``{tmp}`` is a fresh folder, ``{scheduler}`` a local Dask scheduler."""

    argv: tuple
    why: str = ""        # why the arguments differ from the README's, if they do
    expect: str = ""     # text the output must contain


SL = ".venv/bin/sms-langevin "
COMMANDS = {
    # set-up: the recipes are checked; what they run is below or is this suite itself
    "make demo": Run(("make", "-n", "demo"), "installs and runs every figure (4 min): its recipe is checked, "
                     "and `run` of the figures is exercised below", expect="sms-langevin run all --preset tiny"),
    "make test": Run(("make", "-n", "test"), "this suite is what it runs", expect="pytest"),
    # regenerate a figure
    SL + "list": Run(("sms-langevin", "list"), expect="figure1"),
    SL + "run figure1 claims --preset quick --out out/quick": Run(
        ("sms-langevin", "run", "figure1", "--preset", "tiny", "--out", "{tmp}"),
        "figure1 claims -> figure1 at tiny cut to two step sizes (the small_figure1 fixture); the claims table at "
        "quick is tests/test_theory_checks.py::test_quick_claims_table"),
    SL + "run all --preset full --out out/full --resume": Run(
        ("sms-langevin", "run", "weak_orders", "--preset", "full", "--out", "{tmp}", "--resume"),
        "all -> weak_orders (exact, seconds at full)"),
    SL + "report --out out/tiny": Run(
        ("sms-langevin", "report", "--out", "{previous}"), "the folder of the previous command's run"),
    # what runs where
    SL + "run all --preset tiny --out out/dask --workers 2 --local-dask": Run(
        ("sms-langevin", "run", "weak_orders", "--preset", "tiny", "--out", "{tmp}", "--workers", "2", "--local-dask"),
        "all -> weak_orders"),
    SL + "run figure1 --backend torch --device cpu --preset tiny --out out/fig1-torch": Run(
        ("sms-langevin", "run", "figure1", "--backend", "torch", "--device", "cpu", "--preset", "tiny",
         "--out", "{tmp}"),
        "figure1's tiny preset cut to h = 1/4, 1/8, 1,000 samples a point, burn-in 4 (tiny: minutes on a CPU)"),
}


def readme_shell_lines() -> list[str]:
    """The commands of the README's ```bash blocks, comments and blank lines dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.splitlines():
            command = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(" ".join(command.split()))
    return lines


@pytest.mark.experiment
def test_every_readme_command_has_an_entry_and_every_entry_a_command():
    lines = readme_shell_lines()
    assert len(lines) == len(set(lines)), "a README command appears twice"
    assert set(lines) - set(COMMANDS) == set(), "README commands the suite does not run: add them to COMMANDS"
    assert set(COMMANDS) - set(lines) == set(), "COMMANDS entries no longer in the README"


@pytest.fixture(scope="module")
def scheduler():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def small_figure1(monkeypatch, one_torch_thread):
    """Figure 1's tiny preset cut to two step sizes, 1,000 samples a point and a burn-in of 4 time
    units (the eager torch step's fixed cost makes the full tiny preset minutes on a CPU)."""
    from experiments.figure1 import _compute as figure1
    from experiments.figure1 import _setup as figure1_setup
    monkeypatch.setitem(figure1.PRESETS, "tiny", {**figure1.PRESETS["tiny"], "ks": (2, 3), "samples_per_unit": 1000})
    monkeypatch.setattr(figure1_setup, "BURN_IN_TIME", 4.0)


def _run(entry: Run, tmp: Path, previous: Path, capsys, request) -> str:
    subst = {"{tmp}": str(tmp), "{previous}": str(previous)}
    if "{scheduler}" in entry.argv:
        subst["{scheduler}"] = request.getfixturevalue("scheduler")
    argv = [subst.get(a, a).replace("{tmp}", str(tmp)) for a in entry.argv]
    if argv[0] == "sms-langevin":
        from reports._cli import main
        code = main(argv[1:])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        return captured.out + captured.err
    if argv[0] == "python":
        argv[0] = sys.executable
        tmp.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def test_readme_commands_run(tmp_path, capsys, request, small_figure1):
    """Each runnable entry in README order; ``{previous}`` is the folder of the entry before it."""
    previous = tmp_path
    for i, line in enumerate(readme_shell_lines()):
        entry = COMMANDS[line]
        out = tmp_path / f"cmd{i}"
        output = _run(entry, out, previous, capsys, request)
        assert entry.expect in output, f"{line}: expected {entry.expect!r} in its output"
        if "{tmp}" in " ".join(entry.argv):
            previous = out


@pytest.mark.experiment
def test_readme_python_blocks_run(capsys):
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "DIVERGED" in out and "ubu x sms" in out
