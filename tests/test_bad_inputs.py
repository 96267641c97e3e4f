"""Bad input at the command line's boundaries ends in one line and exit code 2 naming what is wrong:
results that are not what their figure declares (a NaN, not JSON), damaged unit and run files,
broken registry modules, data settings that are not folders."""

import contextlib
import io
import json
import math
import re

import pytest

from reports.store import Store, checksum

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

FAST = "tests.report_fixtures.fast_units"


def main(args, monkeypatch, modules=FAST):
    from reports._cli import main as cli_main
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", modules)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(args)
    return code, err.getvalue()


def one_line(code, err, *words):
    lines = err.strip().splitlines()
    assert code == 2 and lines and lines[-1].startswith("sms-langevin: error:"), err
    assert "Traceback" not in err, err
    for word in words:
        assert word in lines[-1], err
    return lines[-1]


@pytest.mark.parametrize("planted,words", [("nan", ["expected a finite number", "nan", '"k": 2']),
                                           ("not-json", ["JSON cannot hold", "set"])])
def test_a_result_that_is_not_its_figures_is_refused_when_made_naming_the_unit(tmp_path, monkeypatch, planted,
                                                                                words):
    monkeypatch.setenv("FAST_UNITS_BAD", planted)
    code, err = main(["run", "fast", "--out", str(tmp_path)], monkeypatch)
    one_line(code, err, "fast: run_unit(", *words)
    assert not list((tmp_path / "units").rglob("*.json"))


def test_a_result_that_does_not_pickle_is_the_same_one_line_in_process_and_from_workers(tmp_path, monkeypatch):
    """Not the process pool's raw pickling traceback and exit code 1."""
    monkeypatch.setenv("FAST_UNITS_BAD", "unpicklable")
    lines = [one_line(*main(["run", "fast", "--out", str(tmp_path / w), "--workers", w], monkeypatch),
                      "fast: run_unit(", "JSON cannot hold", "function", "it was not saved") for w in ("1", "2")]
    assert lines[0].split(" returned ")[1] == lines[1].split(" returned ")[1], lines
    assert not list(tmp_path.rglob("units/*/*.json"))


@pytest.fixture()
def nan_stored(tmp_path, monkeypatch):
    """A finished run whose first unit file holds a NaN mean under a valid checksum."""
    code, err = main(["run", "fast", "--out", str(tmp_path)], monkeypatch)
    assert code == 0, err
    path = next(p for p in sorted((tmp_path / "units" / "fast").glob("*.json")))
    payload = json.loads(path.read_text())
    payload["result"]["mean"] = math.nan
    payload["checksum"] = checksum(payload["key"], payload["unit"], payload["result"], payload["meta"])
    path.write_text(json.dumps(payload))
    return tmp_path, path


def test_report_refuses_a_stored_nan_and_resume_recomputes_it(nan_stored, monkeypatch):
    out, path = nan_stored
    code, err = main(["report", "--out", str(out)], monkeypatch)
    one_line(code, err, path.name, "expected a finite number")
    code, err = main(["run", "fast", "--resume", "--out", str(out)], monkeypatch)
    assert code == 0 and "recomputing" in err, err
    assert math.isfinite(json.loads(path.read_text())["result"]["mean"])


def test_a_run_json_seed_beyond_64_bits_is_one_line(tmp_path, monkeypatch):
    code, err = main(["run", "fast", "--out", str(tmp_path)], monkeypatch)
    assert code == 0, err
    record = json.loads((tmp_path / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps({**record, "seed": 10**30}))
    one_line(*main(["report", "--out", str(tmp_path)], monkeypatch), "run.json", "seed must be < 2**64")


def test_a_unit_file_of_deeply_nested_brackets_is_unreadable_not_a_crash(tmp_path, monkeypatch):
    code, err = main(["run", "fast", "--out", str(tmp_path)], monkeypatch)
    assert code == 0, err
    path = sorted((tmp_path / "units" / "fast").glob("*.json"))[0]
    path.write_text("[" * 100_000 + "]" * 100_000)
    one_line(*main(["report", "--out", str(tmp_path)], monkeypatch), path.name, "unreadable")
    code, err = main(["run", "fast", "--resume", "--out", str(tmp_path)], monkeypatch)
    assert code == 0 and "recomputing" in err, err
    assert Store(tmp_path).load("fast", json.loads(path.read_text())["unit"]) is not None


@pytest.mark.parametrize("value,words", [("", ["--data-dir must name a folder"]),
                                         ("~nobody-of-this-machine/x", ["--data-dir ~nobody-of-this-machine/x"]),
                                         ("d" * 5000, ["--data-dir ddd", "characters"])])
def test_a_data_dir_that_is_no_folder_is_one_line_before_anything_runs(tmp_path, monkeypatch, value, words):
    monkeypatch.setenv("FAST_UNITS_FAIL", "1")
    one_line(*main(["run", "fast", "--out", str(tmp_path / "o"), "--data-dir", value], monkeypatch), *words)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", ["file", "fifo", "absent"])
def test_a_data_dir_variable_that_is_no_folder_is_refused_as_the_option_is(tmp_path, monkeypatch, kind):
    """Not a run whose every unit is saved as 'absent': the same refusal, by name, before OUT exists."""
    import os
    value = tmp_path / "data"
    if kind == "file":
        value.write_text("x")
    elif kind == "fifo":
        os.mkfifo(value)
    monkeypatch.setenv("SMS_LANGEVIN_DATA_DIR", str(value))
    why = f"$SMS_LANGEVIN_DATA_DIR {value}: {'no such folder' if kind == 'absent' else 'not a folder'}"
    one_line(*main(["run", "fast", "--out", str(tmp_path / "o")], monkeypatch), why)
    assert not (tmp_path / "o").exists()


def test_an_out_that_is_a_file_is_one_line_saying_so(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("x")
    one_line(*main(["run", "fast", "--out", str(tmp_path / "f")], monkeypatch), "is a file, not a folder")


# ------------------------------------------------------------ registry modules and the experiment contract

FAST_SOURCE = '''
from tests.report_fixtures.fast_units import EXPERIMENT as _FAST
import dataclasses
EXPERIMENT = dataclasses.replace(_FAST, ID={id!r}, module=None, {changes})
'''


def registry_module(tmp_path, monkeypatch, source: str) -> str:
    """A registry module of ``source`` under a fresh name, importable for this test."""
    import secrets
    name = f"reg49_{secrets.token_hex(4)}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("source,words", [
    ("X = 1\n", ["declares no EXPERIMENT"]),
    ("import no_such_module_49\n", ["failed to import: ModuleNotFoundError"]),
    ("def broken(:\n", ["failed to import: SyntaxError"]),
    ("raise RuntimeError('boom')\n", ["failed to import: RuntimeError: boom"]),
    ("from reports.registry import Experiment\nEXPERIMENT = Experiment(ID='Bad ID', TITLE='t', CLAIM='c', COST={}, "
     "PRESETS=('quick',), RESULT=None, units=len, run_unit=len, draw=len)\n", ["failed to import: ValueError"]),
])
def test_a_broken_registry_module_is_one_line_naming_it(tmp_path, monkeypatch, source, words):
    name = registry_module(tmp_path, monkeypatch, source)
    line = one_line(*main(["list"], monkeypatch, modules=f"{FAST},{name}"), *words)
    assert name in line


def test_two_modules_declaring_one_id_is_one_line_naming_both(tmp_path, monkeypatch):
    name = registry_module(tmp_path, monkeypatch, FAST_SOURCE.format(id="fast", changes="TITLE='copy'"))
    one_line(*main(["list"], monkeypatch, modules=f"{FAST},{name}"), "both declare ID 'fast'", name)


@pytest.mark.parametrize("units,words", [("lambda preset: {1, 2}", ["must return a non-empty list", "set"]),
                                         ("lambda preset: []", ["must return a non-empty list"]),
                                         ("lambda preset: [{'k': 1}, {'k': 1}]", ["the same unit twice"]),
                                         ("lambda preset: [{'k': {1}}]", ["JSON objects"]),
                                         ("lambda preset: ['k']", ["JSON objects", "str"]),
                                         ("lambda preset: [{'k': float('nan')}]", ["JSON objects", "nan"]),
                                         ("lambda preset: [{1: 'x'}]", ["JSON objects", "{1: 'x'}", "changed"]),
                                         ("lambda preset: [{'k': (1, 2)}]", ["JSON objects", "(1, 2)", "changed"])])
def test_units_that_break_the_contract_are_one_line_naming_the_figure(tmp_path, monkeypatch, units, words):
    name = registry_module(tmp_path, monkeypatch, FAST_SOURCE.format(id="odd", changes=f"units={units}"))
    one_line(*main(["run", "odd", "--out", str(tmp_path / "o")], monkeypatch, modules=name), "odd: units(", *words)


def test_a_draw_returning_none_is_one_line_and_the_report_is_kept(tmp_path, monkeypatch):
    draw = "draw=lambda r, p: None if __import__('os').environ.get('DRAW_NONE_49') else _FAST.draw(r, p)"
    name = registry_module(tmp_path, monkeypatch, FAST_SOURCE.format(id="fast", changes=draw))
    code, err = main(["run", "fast", "--out", str(tmp_path)], monkeypatch, modules=name)
    assert code == 0, err
    before = (tmp_path / "report" / "index.html").read_text()
    monkeypatch.setenv("DRAW_NONE_49", "1")
    one_line(*main(["report", "--out", str(tmp_path)], monkeypatch, modules=name), "draw", "got NoneType None")
    assert (tmp_path / "report" / "index.html").read_text() == before


def test_all_among_other_ids_is_one_line_saying_it_stands_alone(tmp_path, monkeypatch):
    one_line(*main(["run", "all", "fast", "--out", str(tmp_path)], monkeypatch), "`all` stands alone")


@pytest.mark.parametrize("source", [b"EXPERIMENT = (\n", b"# \xff\xfe\nEXPERIMENT = None\n",
                                    b"ORDER = 1e400\nEXPERIMENT = None\n", b'ORDER = "first"\nEXPERIMENT = None\n',
                                    b"ORDER = 1" + b"0" * 100 + b"\nEXPERIMENT = None\n",
                                    b"ORDER = {[]: 1}\nEXPERIMENT = None\n", b"ORDER: int\nEXPERIMENT = None\n"])
def test_an_unreadable_module_dropped_into_experiments_is_one_line_naming_it(tmp_path, monkeypatch, source):
    """Found when a command asks for the registry (not when ``reports.registry`` is imported), and said in the
    command's one-line error (exit 2), not a traceback of every command."""
    import contextlib
    import io

    import experiments
    from reports import _cli, registry
    (tmp_path / "dropped_in.py").write_bytes(source)
    monkeypatch.setattr(experiments, "__path__", [*experiments.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_DEFAULT_MODULES", None)
    monkeypatch.delenv("SMS_LANGEVIN_REPORT_MODULES", raising=False)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = _cli.main(["list"])
    assert code == 2 and len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
    assert "experiments.dropped_in" in err.getvalue() and "Traceback" not in err.getvalue()


@pytest.mark.parametrize("where", ["texts", "tables", "figures"])
@pytest.mark.parametrize("name", ["../../../escaped.md", "/tmp/abs_escaped.md", "..", "sub/x.md", ""])
def test_a_drawing_name_that_is_not_a_plain_file_name_is_refused_and_nothing_is_written(tmp_path, where, name):
    from reports.drawing import Drawing, write_drawing
    out = tmp_path / "a" / "b" / "c" / "fig"
    out.parent.mkdir(parents=True)
    from matplotlib.figure import Figure
    value = {"texts": "E", "tables": [{"a": 1}], "figures": Figure()}[where]
    with pytest.raises(ValueError, match="not a plain file name"):
        write_drawing(Drawing("m", **{where: {name: value}}), out)
    assert not out.exists() and sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "c"]


@pytest.mark.parametrize("parts,written", [({"texts": {"metadata.json": "x"}}, "metadata.json"),
                                           ({"tables": {"t": [{"a": 1}]}, "texts": {"t.csv": "x"}}, "t.csv"),
                                           ({"figures": {"f": None}, "texts": {"f.pdf": "x"}}, "f.pdf")])
def test_a_drawing_file_name_written_twice_or_reserved_is_refused_by_name_and_nothing_is_written(tmp_path, parts,
                                                                                                written):
    from matplotlib.figure import Figure

    from reports.drawing import Drawing, write_drawing
    parts = {part: {k: Figure() if v is None else v for k, v in named.items()} for part, named in parts.items()}
    out = tmp_path / "fig"
    with pytest.raises(ValueError, match=f"writes {re.escape(written)}"):
        write_drawing(Drawing("m", **parts), out)
    assert not out.exists()


def test_a_figure_beyond_the_declared_pixels_is_refused_when_the_drawing_is_made():
    from matplotlib.figure import Figure

    from reports.drawing import MAX_FIGURE_PIXELS, PNG_DPI, Drawing
    side = (MAX_FIGURE_PIXELS * 1.01) ** 0.5 / PNG_DPI  # just over the limit at the PNG's resolution
    Drawing("m", figures={"f": Figure(figsize=(side / 1.02, side / 1.02))})
    with pytest.raises(ValueError, match=r"figures\['f'\].*megapixels, more than the"):
        Drawing("m", figures={"f": Figure(figsize=(side, side))})


def test_a_figure_that_cannot_be_allocated_when_written_is_a_value_error_naming_it(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from reports.drawing import Drawing, write_drawing
    figure = Figure()
    drawing = Drawing("m", figures={"big": figure})
    monkeypatch.setattr(figure, "savefig", lambda *a, **k: (_ for _ in ()).throw(MemoryError("std::bad_alloc")))
    with pytest.raises(ValueError, match="figure 'big' is too large to draw as PNG"):
        write_drawing(drawing, tmp_path / "fig")


@pytest.mark.parametrize("kind", ["not_utf8", "folder"])
@pytest.mark.parametrize("name", ["list_attr_celeba.txt", "list_eval_partition.txt"])
def test_a_celeba_list_file_that_is_not_utf8_text_is_a_data_error_naming_it(tmp_path, kind, name):
    from data_sets import DataError
    from data_sets._loaders import load_celeba
    (tmp_path / "img_align_celeba").mkdir()
    if name != "list_attr_celeba.txt":
        (tmp_path / "list_attr_celeba.txt").write_text("1\nBlond_Hair Brown_Hair\na.jpg 1 -1\n")
    if kind == "folder":
        (tmp_path / name).mkdir()
    else:
        (tmp_path / name).write_bytes(b"1\n\xff\xfe\x00bad\n")
    with pytest.raises(DataError, match=name):
        load_celeba(tmp_path)


def test_a_decompression_bomb_image_is_a_data_error_naming_it(tmp_path, monkeypatch):
    from PIL import Image

    from data_sets import DataError, load_chest_xray
    for split in ("train", "test"):
        for cls in ("NORMAL", "PNEUMONIA"):
            (tmp_path / split / cls).mkdir(parents=True)
    Image.new("L", (64, 64)).save(tmp_path / "train" / "NORMAL" / "big.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # 64 x 64 is more than twice that: a bomb
    with pytest.raises(DataError, match="big.png"):
        load_chest_xray(tmp_path, size=8)


@pytest.mark.parametrize("loader", ["load_chest_xray", "load_celeba"])
def test_the_image_loaders_refuse_a_size_above_their_declared_bound_before_reading(tmp_path, loader):
    import data_sets
    from data_sets._loaders import MAX_IMAGE_SIDE
    with pytest.raises(ValueError, match=f"at most {MAX_IMAGE_SIDE}"):
        getattr(data_sets, loader)(tmp_path, size=10**6)
