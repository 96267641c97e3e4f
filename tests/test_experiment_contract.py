"""The one experiment contract (:mod:`reports.registry`, :mod:`reports.drawing`): an experiment
declares presets, units, the function that runs one unit and the function that draws the units'
data; it writes no file.  The command line alone lists, runs, persists, resumes, writes and reports.

The first test defines a throw-away experiment here, in its own text, and sees it listed, run,
resumed and drawn into the report with nothing else changed."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from pathlib import Path

import pytest

from reports import _cli as cli
from reports import registry
from reports.drawing import Drawing, write_drawing
from reports.schema import Schema

ROOT = Path(__file__).resolve().parents[1]

THROWAWAY = textwrap.dedent('''
    """A throw-away experiment written by a test: the exact stationary variance of an AR(1) chain."""
    import os

    from reports.drawing import Drawing
    from reports.registry import Experiment
    from reports.schema import NUMBER, Record

    def units(preset):
        return [{"a": a} for a in ((0.1, 0.5, 0.9) if preset != "mine" else (0.3,))]

    def run_unit(unit, preset, seed):
        with open(os.environ["THROWAWAY_CALLS"], "a") as fh:  # the test counts the calls
            fh.write(f"{unit['a']}\\n")
        return {"a": unit["a"], "variance": 1.0 / (1.0 - unit["a"] ** 2), "seed": seed}

    def draw(results, preset):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = [res for _, res in sorted(results, key=lambda r: r[0]["a"])]
        fig, ax = plt.subplots()
        ax.plot([r["a"] for r in rows], [r["variance"] for r in rows], "o-")
        text = "| a | variance |\\n| --- | --- |\\n" + "".join(f"| {r['a']} | {r['variance']:.4f} |\\n" for r in rows)
        return Drawing(measured=f"{len(rows)} coefficients; largest variance {rows[-1]['variance']:.3f}.",
                       figures={"ar1": fig}, tables={"ar1": rows}, texts={"ar1.md": text}, table="ar1.md",
                       metadata={"model": "AR(1)"})

    EXPERIMENT = Experiment(
        ID="throwaway",
        TITLE="Throw-away experiment: AR(1) variance against its coefficient",
        CLAIM="The stationary variance of x' = a x + noise is 1 / (1 - a^2).",
        COST={"quick": "milliseconds", "full": "milliseconds", "mine": "milliseconds"},
        PRESETS=("quick", "full", "mine"),
        RESULT=Record(a=NUMBER, variance=NUMBER),
        units=units, run_unit=run_unit, draw=draw,
    )
''')


@pytest.fixture
def throwaway(tmp_path, monkeypatch):
    """The throw-away experiment as the only module of the registry; yields the file counting calls."""
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "throwaway_experiment.py").write_text(THROWAWAY)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", "throwaway_experiment")
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("THROWAWAY_CALLS", str(calls))
    return calls


def test_a_throwaway_experiment_is_listed_run_resumed_and_reported(throwaway, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["list"]) == 0
    assert "throwaway" in capsys.readouterr().out

    assert cli.main(["run", "all", "--out", str(out)]) == 0
    assert throwaway.read_text().split() == ["0.1", "0.5", "0.9"]
    drawn = out / "report" / "throwaway"
    assert sorted(p.name for p in drawn.iterdir()) == ["ar1.csv", "ar1.md", "ar1.pdf", "ar1.png", "metadata.json"]
    meta = json.loads((drawn / "metadata.json").read_text())
    assert meta["model"] == "AR(1)" and meta["units"] == 3 and meta["preset"] == "quick" and "git_commit" in meta
    index = (out / "report" / "index.html").read_text()
    assert "Throw-away experiment" in index and "throwaway/ar1.png" in index and "5.2632" in index  # its table

    capsys.readouterr()
    assert cli.main(["run", "all", "--out", str(out), "--resume"]) == 0
    assert "3 units already done, 0 to run" in capsys.readouterr().err
    assert len(throwaway.read_text().split()) == 3  # nothing recomputed

    (drawn / "ar1.csv").unlink()
    assert cli.main(["report", "--out", str(out)]) == 0  # redrawn from the persisted units alone
    assert (drawn / "ar1.csv").read_text().startswith("a,seed,variance")  # persisted results come key-sorted
    assert len(throwaway.read_text().split()) == 3


def test_an_experiments_own_preset_is_accepted_and_an_unknown_one_named(throwaway, tmp_path, capsys):
    assert cli.main(["run", "throwaway", "--preset", "mine", "--out", str(tmp_path / "mine")]) == 0
    assert throwaway.read_text().split() == ["0.3"]
    capsys.readouterr()
    assert cli.main(["run", "throwaway", "--preset", "huge", "--out", str(tmp_path / "huge")]) == 2
    assert "unknown preset 'huge'" in capsys.readouterr().err


def test_every_registered_experiment_follows_the_contract():
    for fid, mod in registry.load().items():
        assert isinstance(mod, registry.Experiment) and mod.ID == fid and mod.module.startswith("experiments."), fid
        assert list(inspect.signature(mod.draw).parameters) == ["results", "preset"], fid
        params = inspect.signature(mod.run_unit).parameters
        assert list(params)[:3] == ["unit", "preset", "seed"], fid
        assert [(n, p.kind, p.default) for n, p in list(params.items())[3:]] in (
            [], [("threads", inspect.Parameter.KEYWORD_ONLY, None)]), fid  # the executor's share of the cores
        assert set(mod.COST) >= {"quick", "full"} and {"quick", "full"} <= set(mod.PRESETS), fid
        assert isinstance(mod.RESULT, Schema), fid


# what writes files: calls of these names, and open() (or Path.open()) with a mode that writes
WRITERS = {"savefig", "write_text", "write_bytes", "dump", "to_csv", "writerow", "writerows", "mkdir", "save",
           "savez", "savez_compressed", "savetxt", "copyfile", "copytree", "write_rows",
           "write_metadata", "write_drawing", "write_atomic", "_write_atomic"}
EXPERIMENT_SOURCES = ("experiments", "bias", "bnn", "theory_checks/_claims.py")


def file_writes(path: Path) -> list[str]:
    """``line: call`` for every call in ``path`` that writes a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        mode_at = 0 if isinstance(node.func, ast.Attribute) else 1  # path.open(mode) or open(path, mode)
        mode = [a.value for a in node.args[mode_at:mode_at + 1] if isinstance(a, ast.Constant)] + [
            k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
        shutil_call = isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") == "shutil"
        if name in WRITERS or shutil_call or (name == "open" and any(set(str(m)) & set("wax") for m in mode)):
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            found.append(f"{where}:{node.lineno}: {name}")
    return found


def test_experiments_write_no_files():
    """Every experiment (and the figure modules that wrap them) returns data; ``reports`` writes."""
    files = []
    for pattern in EXPERIMENT_SOURCES:
        hits = [ROOT / pattern] if (ROOT / pattern).is_file() else (
            sorted((ROOT / pattern).rglob("*.py")) if (ROOT / pattern).is_dir() else sorted(ROOT.glob(pattern)))
        files += hits
    assert len(files) > 20
    writes = [w for path in files for w in file_writes(path)]
    assert writes == [], "\n".join(writes)


def test_the_file_check_sees_a_writer(tmp_path):
    """The check above can fail: a module that saves a figure or opens a file for writing is caught."""
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("def draw(fig, p, np, shutil):\n    fig.savefig(p)\n    open(p, 'w').write('x')\n"
                      "    p.open('a')\n    p.open()\n    open(p)\n    np.save(p, 1)\n"
                      "    shutil.move(p, p)\n    p.copy()\n")
    assert sorted(w.split(": ")[1] for w in file_writes(sneaky)) == ["move", "open", "open", "save", "savefig"]


def test_a_drawing_writes_each_output_once(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    drawing = Drawing(measured="m", figures={"f": fig}, tables={"t": [{"a": 1}, {"b": 2}]}, texts={"x.md": "# x"})
    assert write_drawing(drawing, tmp_path / "d") == ["f.png", "f.pdf", "t.csv", "x.md"]
    assert (tmp_path / "d" / "t.csv").read_text().splitlines() == ["a,b", "1,", ",2"]
    with pytest.raises(ValueError, match="names no text"):
        Drawing(measured="m", table="absent.md")


def test_a_copied_figure_module_is_refused_by_name(throwaway, tmp_path, monkeypatch):
    folder = tmp_path / "experiment"  # the fixture's module folder, on sys.path
    source = (folder / "throwaway_experiment.py").read_text()
    (folder / "copied_id.py").write_text(source)  # a copy whose ID was not changed
    (folder / "imported.py").write_text("from throwaway_experiment import EXPERIMENT  # noqa: F401\n")
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", "throwaway_experiment,copied_id")
    with pytest.raises(RuntimeError, match="throwaway_experiment and copied_id both declare ID 'throwaway'"):
        registry.load()
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", "throwaway_experiment,imported")
    with pytest.raises(RuntimeError, match="imported's EXPERIMENT is the one throwaway_experiment declares"):
        registry.load()
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", "throwaway_experiment")
    assert list(registry.load()) == ["throwaway"]


@pytest.mark.parametrize("bad", ["", "all", "tour", "metadata", "../up", "a b", "Figure1"])
def test_an_experiment_id_that_cannot_name_a_command_and_a_folder_is_refused(bad):
    valid = dict(registry.Experiment.VALID_EXAMPLE)
    with pytest.raises(ValueError, match="ID"):
        registry.Experiment(**{**valid, "ID": bad})
    with pytest.raises(ValueError, match="TITLE must not be empty"):
        registry.Experiment(**{**valid, "TITLE": "  "})


def test_the_reports_own_parts_are_reserved_ids():
    """The names the report gives its own parts (the tour's folder and section, the metadata's section) are
    ids no figure may take: a figure named so would share their folder or anchor."""
    from reports import _report

    assert {*_report.KEPT, _report.METADATA_ANCHOR} <= set(registry.RESERVED_IDS)


@pytest.mark.parametrize("reserved", ["tour", "metadata"])
def test_a_figure_module_with_a_reserved_id_is_refused_naming_the_module_and_the_id(throwaway, tmp_path,
                                                                                     monkeypatch, reserved):
    folder = tmp_path / "experiment"
    source = (folder / "throwaway_experiment.py").read_text().replace('ID="throwaway"', f'ID="{reserved}"')
    (folder / f"named_{reserved}.py").write_text(source)
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", f"named_{reserved}")
    with pytest.raises(registry.RegistryError, match=rf"report module named_{reserved} failed to import: "
                                                     rf"ValueError: ID '{reserved}' is reserved"):
        registry.load()


def test_a_given_preset_the_runs_figures_lack_is_blamed_on_the_preset_option_not_on_run_json(throwaway, tmp_path,
                                                                                            monkeypatch, capsys):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", "throwaway_experiment,tests.report_fixtures.fast_units")
    out = tmp_path / "run"
    assert cli.main(["run", "fast", "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["report", "--out", str(out), "--preset", "mine"]) == 2  # a level of throwaway, not of fast
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"sms-langevin: error: --preset (the run in {out} holds fast): preset 'mine' is a "
                           f"level of throwaway only"), line
    assert "run.json" not in line
