"""The package without its extras: the command line and every figure that does not need torch work
after a plain ``pip install .``; a figure or command that needs an extra says which in one line
and exits 2, without a traceback; the installed package carries the tour's sources and records its
version (not a git commit) in the metadata.

The slow job builds a fresh virtual environment in a temporary folder and installs a copy of this
repository into it, non-editable and without extras (pip reads the index and its cache as
configured); the fast tests hide the extras from one interpreter by an import hook."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

from integrators._install import install_command
from reports import registry

ROOT = Path(__file__).resolve().parents[1]
EXTRA_MODULES = sorted(registry.EXTRAS)  # torch and the notebook stack: what the hook hides

# an interpreter where the extras' modules do not exist: their imports fail as on a base install
HIDE_EXTRAS = textwrap.dedent(f"""
    import importlib.abc, sys
    class _Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in {EXTRA_MODULES!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    sys.meta_path.insert(0, _Absent())
    from reports._cli import main
    raise SystemExit(main(sys.argv[1:]))
""")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SMS_LANGEVIN_REPORT_MODULES")}
    env.update(extra)
    return env


def cli_without_extras(args, tmp_path, modules=None):
    env = _env(PYTHONPATH=str(ROOT))
    if modules:
        env["SMS_LANGEVIN_REPORT_MODULES"] = modules
    return subprocess.run([sys.executable, "-c", HIDE_EXTRAS, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)


def assert_one_line_error(proc, *needles):
    """Exit 2, one line on stderr naming each of ``needles``, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("sms-langevin: error:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.experiment
def test_list_without_torch_lists_every_figure_and_notes_the_torch_extra(tmp_path):
    proc = cli_without_extras(["list"], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    blocks = {}
    figures, note = proc.stdout.split("\n\n")
    assert note.startswith("costs: on 2 idle cores"), note
    for line in figures.splitlines():
        if line and not line.startswith(" "):
            fid = line.split()[0]
            blocks[fid] = ""
        blocks[fid] += line + "\n"
    assert list(blocks) == list(registry.load())
    for fid, mod in registry.load().items():
        needs_torch = "torch" in getattr(mod, "REQUIRES", ())
        assert (f"(needs the torch extra: {install_command('torch', cwd=tmp_path)})" in blocks[fid]) == needs_torch, fid
        assert "units: tiny " in blocks[fid] and ", quick " in blocks[fid], fid  # counted without the extra too


def test_the_torch_backend_without_torch_is_refused_in_one_line_naming_the_install_command(monkeypatch):
    from integrators import Torch

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails, as on a base install
    for name in [m for m in sys.modules if m.startswith("integrators.torch")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError) as caught:
        Torch()
    assert not isinstance(caught.value, ModuleNotFoundError), caught.value
    assert str(caught.value) == f"the torch backend (Torch()) needs torch: {install_command('torch')}"


@pytest.mark.experiment
def test_a_figure_that_needs_torch_is_refused_in_one_line_and_writes_nothing(tmp_path):
    proc = cli_without_extras(["run", "bnn", "--preset", "tiny", "--out", str(tmp_path / "out")], tmp_path)
    assert_one_line_error(proc, "bnn not run", install_command("torch", cwd=tmp_path))
    assert not (tmp_path / "out").exists()


@pytest.mark.experiment
def test_run_all_without_torch_runs_the_others_and_exits_2_naming_the_extra(tmp_path):
    """``run all`` leaves out the figure that needs torch, runs and reports the rest, persists
    nothing for the left-out one (``--resume`` with torch computes it), and exits 2 in one line;
    ``report`` of a run that holds it stops in one line too."""
    out = tmp_path / "out"
    proc = cli_without_extras(["run", "all", "--preset", "tiny", "--out", str(out)], tmp_path,
                              modules="tests.report_fixtures.fast_units,experiments.bnn")
    assert_one_line_error(proc, "bnn not run", install_command("torch", cwd=tmp_path))
    assert sorted(p.name for p in (out / "units").iterdir()) == ["fast"]
    assert json.loads((out / "run.json").read_text())["ids"] == ["fast"]
    assert (out / "report" / "index.html").is_file()
    assert f"- bnn: needs the torch extra: {install_command('torch', cwd=tmp_path)}" in (
        out / "report" / "index.md").read_text()  # the report says what it lacks, not stderr alone
    # a run made where torch was installed, reported where it is not: refused, the report left as it was
    page = (out / "report" / "index.html").read_bytes()
    (out / "run.json").write_text(json.dumps({**json.loads((out / "run.json").read_text()), "ids": ["fast", "bnn"]}))
    proc = cli_without_extras(["report", "--out", str(out)], tmp_path,
                              modules="tests.report_fixtures.fast_units,experiments.bnn")
    assert_one_line_error(proc, "bnn not drawn", install_command("torch", cwd=tmp_path))
    assert (out / "report" / "index.html").read_bytes() == page


@pytest.mark.experiment
def test_tour_without_the_notebook_stack_says_to_install_the_tour_extra(tmp_path):
    proc = cli_without_extras(["tour", "--out", str(tmp_path / "out")], tmp_path)
    assert_one_line_error(proc, install_command("tour", cwd=tmp_path))


def test_an_installation_without_the_tours_sources_is_refused_not_an_empty_tour(tmp_path, monkeypatch):
    where = importlib.import_module("tour._notebooks")  # the package's name ``notebooks`` is the function
    monkeypatch.setattr(where, "NOTEBOOK_DIR", tmp_path)
    with pytest.raises(ValueError, match="sources are not installed"):
        where.notebooks()


def test_pyproject_lists_every_package_and_ships_the_tours_sources():
    """The explicit package list of ``pyproject.toml`` (explicit because ``tour.sources`` maps to
    ``docs/tour``) holds every package folder of the project: a new one cannot be left out of a wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    tops = [p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name not in ("tests", "benchmarks")]
    found = find_packages(where=str(ROOT), include=[f"{t}*" for t in tops] + tops)
    assert sorted(config["packages"]) == sorted([*found, "tour.sources"])
    assert config["package-dir"] == {"tour.sources": "docs/tour"}


def _copy_of_metadata_module(folder: Path):
    """``reports/_metadata.py`` loaded from a copy in ``folder/reports``, as an installed package is."""
    (folder / "reports").mkdir(parents=True)
    shutil.copy(ROOT / "reports" / "_metadata.py", folder / "reports" / "_metadata.py")
    spec = importlib.util.spec_from_file_location("copied_metadata", folder / "reports" / "_metadata.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("inside_a_repository", [False, True])
def test_metadata_of_an_installed_copy_names_its_version_never_a_bare_unknown(tmp_path, inside_a_repository):
    """A package outside a checkout records ``git_commit`` "not a git checkout", where its code came
    from and its version; inside a virtual environment that lies in some other repository, that
    repository's commit is not its own."""
    if inside_a_repository:
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        (tmp_path / "f").write_text("x")
        subprocess.run([*git, "add", "f"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "m"], check=True)
    module = _copy_of_metadata_module(tmp_path / ".venv" / "lib" / "site-packages")
    meta = module.metadata(0, "tiny")
    assert meta["git_commit"] == "not a git checkout"
    assert meta["code"] == "installed package"
    assert meta["sms_langevin"] == module.package_version() != "unknown"
    assert "unknown" not in json.dumps(meta)


def test_metadata_in_this_checkout_records_its_commit():
    from reports._metadata import code_source, git_commit
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not run from a git checkout")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert git_commit() == head and code_source() == "git checkout"


def _copy_of_repository(dest: Path) -> Path:
    """The project's files without the environment, caches and outputs (a build writes into its source)."""
    skip = {".git", ".venv", "out", "build", "site", ".cache", "__pycache__", ".pytest_cache", ".hypothesis",
            ".ruff_cache"}
    shutil.copytree(ROOT, dest, ignore=lambda folder, names: [
        n for n in names if n in skip or n.endswith(".egg-info") or n.startswith((".venv-", "kernel-"))])
    return dest


@pytest.mark.slow
@pytest.mark.experiment
def test_plain_pip_install_gives_a_working_command_line(tmp_path):
    """``pip install .`` (no extras, not editable) into a fresh virtual environment: ``list``,
    ``run demo``, ``run figure1``, ``report`` succeed; ``tour`` finds its installed sources and says
    in one line that it needs the tour extra; no command prints a traceback; the metadata records
    the installed version."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python, cli = venv / "bin" / "python", venv / "bin" / "sms-langevin"
    source = _copy_of_repository(tmp_path / "src")
    # --no-compile: half the install's time; the modules a command imports are compiled when it runs
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", str(source)],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=1200)
    assert install.returncode == 0, install.stderr[-3000:]
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                           cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert probe.stdout.strip() == "True", "torch is not an extra of this installation"

    def sms(*args):
        proc = subprocess.run([str(cli), *args], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                              timeout=1200)
        assert "Traceback" not in proc.stdout + proc.stderr, (args, proc.stderr[-3000:])
        return proc

    listed = sms("list")
    assert listed.returncode == 0 and "(needs the torch extra" in listed.stdout
    out = str(tmp_path / "out")
    for fid in ("demo", "figure1"):
        proc = sms("run", fid, "--preset", "tiny", "--out", out)
        assert proc.returncode == 0, (fid, proc.stderr[-3000:])
    proc = sms("report", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((tmp_path / "out" / "report" / "figure1" / "metadata.json").read_text())
    assert (meta["git_commit"], meta["code"], meta["sms_langevin"]) == (
        "not a git checkout", "installed package", tomllib.loads((ROOT / "pyproject.toml").read_text())[
            "project"]["version"])
    # the installed copy's remedy: the extra from the folder it was installed from (there is no index)
    assert_one_line_error(sms("tour", "--out", out), f"pip install '{source}[tour]'")
    shipped = subprocess.run([str(python), "-c", "from tour import notebooks; print(*(p.name for p in notebooks()))"],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert shipped.stdout.split() == sorted(p.name for p in (ROOT / "docs" / "tour").glob("[0-9][0-9]_*.py"))
    assert "site-packages" in subprocess.run(
        [str(python), "-c", "import tour; print(tour.NOTEBOOK_DIR)"], cwd=tmp_path, env=_env(), capture_output=True,
        text=True).stdout


@pytest.mark.experiment
def test_dask_options_without_dask_are_refused_before_out_is_created(tmp_path):
    for option in (["--local-dask"], ["--scheduler", "tcp://127.0.0.1:1"]):
        proc = cli_without_extras(["run", "demo", "--preset", "tiny", "--out", "out", *option], tmp_path)
        assert_one_line_error(proc, "needs dask.distributed", install_command("dask", cwd=tmp_path))
        assert not (tmp_path / "out").exists()
