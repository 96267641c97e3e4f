"""Malformed input never ends in a traceback: generated IDX headers and CIFAR-10 batches give an array
or a DataError naming the file; generated unit files and registry modules give the command line's
one line and exit code 2 (or a run that recomputes the damaged unit)."""

import contextlib
import gzip
import io
import json
import os
import pickle
import re
import secrets
import struct
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from data_sets import DataError, load_medmnist
from data_sets._idx import IDX_TYPES, MAX_IDX_BYTES, read_idx

FAST = "tests.report_fixtures.fast_units"


# ------------------------------------------------------------------------------------ data headers

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(type_code=st.sampled_from([*IDX_TYPES, 0x00, 0x07, 0xFF]), dims=st.lists(st.integers(0, 2**32 - 1), max_size=5),
       body=st.binary(max_size=64), gz=st.booleans(), magic=st.sampled_from([0, 1, 0x0801]))
@example(type_code=0x0E, dims=[2**32 - 1] * 4, body=b"", gz=False, magic=0)  # overflows int64 in numpy's product
@example(type_code=0x08, dims=[2**16, 2**16], body=b"", gz=True, magic=0)  # 4 GiB claimed
@example(type_code=0x08, dims=[1] * 255, body=b"x", gz=False, magic=0)  # more dimensions than numpy allows
def test_a_generated_idx_file_is_an_array_or_a_data_error_naming_it(tmp_path_factory, type_code, dims, body, gz,
                                                                     magic):
    raw = struct.pack(">HBB", magic, type_code, len(dims)) + struct.pack(f">{len(dims)}I", *dims) + body
    path = tmp_path_factory.mktemp("idx") / ("f.idx.gz" if gz else "f.idx")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    try:
        out = read_idx(path)
    except DataError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    assert out.shape == tuple(dims) and out.nbytes == len(body)


def test_a_gzipped_idx_that_expands_beyond_the_cap_is_refused_unread(tmp_path):
    """A header within the cap, data that would expand far beyond it: read as far as the header says."""
    path = tmp_path / "bomb.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(struct.pack(">HBBI", 0, 0x08, 1, 16))
        for _ in range(64):  # 64 MiB of zeros, about 64 KiB on disk
            fh.write(bytes(2**20))
    with pytest.raises(DataError, match="header says shape \\(16,\\) \\(16 bytes of data\\) but the file holds more"):
        read_idx(path)
    big = tmp_path / "big.gz"
    big.write_bytes(gzip.compress(struct.pack(">HBBII", 0, 0x08, 2, 2**16, 2**16)))
    with pytest.raises(DataError, match=f"more than the {MAX_IDX_BYTES} bytes"):
        read_idx(big)


_KEYS = st.one_of(st.sampled_from([b"data", b"labels", "data", "labels"]), st.binary(max_size=6),
                  st.text(max_size=4), st.integers())
_VALUES = st.recursive(st.none() | st.integers() | st.binary(max_size=8) | st.floats(allow_nan=True),
                       lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.one_of(st.dictionaries(_KEYS, _VALUES, max_size=4), _VALUES), protocol=st.integers(2, 5))
@example(batch={b"\xff\xfe": 1}, protocol=2)  # a key that is not UTF-8
@example(batch={b"data": [[1, 2], [3]], b"labels": [0, 1]}, protocol=4)  # ragged rows
def test_a_generated_cifar_batch_is_read_or_a_data_error_naming_it(tmp_path_factory, batch, protocol):
    from data_sets._loaders import unpickle_batch
    path = tmp_path_factory.mktemp("cifar") / "data_batch_1"
    path.write_bytes(pickle.dumps(batch, protocol=protocol))
    try:
        unpickle_batch(path)
    except DataError as exc:
        assert str(path) in str(exc)


# ------------------------------------------------------------------------- the command line's inputs

def main(args, modules=FAST):
    from reports._cli import main as cli_main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(args)
    return code, err.getvalue()


def assert_no_traceback(code, err):
    assert "Traceback" not in err, err
    assert code in (0, 2), (code, err)
    if code == 2:
        lines = err.strip().splitlines()
        assert lines[-1].startswith("sms-langevin: error:") and len(
            [ln for ln in lines if ln.startswith("sms-langevin: error:")]) == 1, err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run49")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
        code, err = main(["run", "fast", "--out", str(out)])
    assert code == 0, err
    return out


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                     max_size=3), max_leaves=10)


@pytest.mark.slow
@pytest.mark.experiment
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(st.binary(max_size=80).map(lambda b: b.decode("latin-1")), _JSON.map(json.dumps),
                         st.builds(lambda d: "[" * d + "]" * d, st.integers(1, 200_000)),
                         st.builds(lambda key, value: json.dumps({"key": "x", "unit": {}, "result": {key: value},
                                                                  "meta": {}, "checksum": "0" * 64}),
                                   st.text(max_size=5), _JSON)),
       command=st.sampled_from(["report", "resume"]))
@example(content="[" * 100_000 + "]" * 100_000, command="report")
def test_a_generated_unit_file_gives_one_line_or_a_recomputed_unit(finished_run, monkeypatch, content, command):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    path = sorted((finished_run / "units" / "fast").glob("*.json"))[0]
    kept = path.read_text()
    try:
        path.write_text(content)
        args = ["report", "--out", str(finished_run)] if command == "report" else \
            ["run", "fast", "--resume", "--out", str(finished_run)]
        assert_no_traceback(*main(args))
    finally:
        path.write_text(kept)


_STATEMENTS = st.sampled_from([
    "X = 1", "import no_such_module_49", "raise ValueError('no')", "def f(:", "EXPERIMENT = 3",
    "EXPERIMENT = None",
    "from tests.report_fixtures.fast_units import EXPERIMENT",
    "import dataclasses\nfrom tests.report_fixtures.fast_units import EXPERIMENT as E\n"
    "EXPERIMENT = dataclasses.replace(E, module=None, ID='other49')",
    "from reports.registry import Experiment\nEXPERIMENT = Experiment(ID='x', TITLE='', CLAIM='c', "
    "COST={'quick': 1}, PRESETS=('quick',), RESULT=None, units=len, run_unit=len, draw=len)",
])


@pytest.mark.slow
@pytest.mark.experiment
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statements=st.lists(_STATEMENTS, min_size=1, max_size=3))
def test_a_generated_registry_module_gives_one_line_not_a_traceback(tmp_path_factory, monkeypatch, statements):
    """The registry is read before any command runs: ``list`` stands for them all."""
    folder = tmp_path_factory.mktemp("reg")
    name = f"reg49_{secrets.token_hex(4)}"
    (folder / f"{name}.py").write_text("\n".join(statements) + "\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", f"{FAST},{name}")
    try:
        assert_no_traceback(*main(["list"]))
    finally:
        sys.modules.pop(name, None)


def test_an_npz_member_declaring_more_than_the_cap_is_refused_uninflated(tmp_path, monkeypatch):
    import numpy as np

    from data_sets import _loaders
    path = tmp_path / "pneumoniamnist.npz"
    np.savez_compressed(path, train_images=np.zeros((64, 28, 28), np.uint8))
    monkeypatch.setattr(_loaders, "MAX_IDX_BYTES", 1000)  # the member inflates to 50 kB
    with pytest.raises(DataError, match="inflate"):
        load_medmnist(path)


@pytest.mark.parametrize("header", [b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), ",  # unclosed
                                    b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} }",  # SyntaxError
                                    b"{'descr': '<f8', 'fortran_order': False, 'shape': {[]: 1}}"])  # unhashable
def test_an_npz_member_with_a_malformed_npy_header_is_a_data_error_naming_file_and_member(tmp_path, header):
    import io
    import zipfile

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3))
    good = buffer.getvalue()
    header = header.ljust(118) + b"\n"  # (numpy pads the header to a multiple of 64 bytes with the 10 before it)
    path = tmp_path / "pneumoniamnist.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("train_images.npy", good[:8] + len(header).to_bytes(2, "little") + header + good[128:])
    with pytest.raises(DataError, match=re.escape(f"{path}: member train_images is not a readable array")):
        load_medmnist(path)


# ----------------------------------------------------------- forged units that pass their checksum

def forge(path, *, result=None, meta=None):
    """Rewrite the unit file ``path`` with ``result`` and ``meta`` updates, its checksum recomputed (as a
    hand-written file would be): only the schema stands between it and ``draw``."""
    from reports.store import checksum
    payload = json.loads(path.read_text())
    payload["result"] = payload["result"] if result is None else result
    payload["meta"].update(meta or {})
    payload["checksum"] = checksum(payload["key"], payload["unit"], payload["result"], payload["meta"])
    path.write_text(json.dumps(payload))


@pytest.mark.parametrize("result, meta, words", [
    ({"missing": "forged"}, None, "not a result of fast (result: lacks 'mean', 'variance')"),
    (None, {"fingerprint": 3}, "damaged (meta['fingerprint']: expected an object"),
    (None, {"wall_seconds": "x"}, "damaged (meta['wall_seconds']: expected a number of seconds"),
    (None, {"wall_seconds": 1e308}, "damaged (meta['wall_seconds']: expected a number of seconds"),
])
def test_a_forged_unit_that_passes_its_checksum_is_refused_by_name_with_the_remedy(finished_run, monkeypatch,
                                                                                   result, meta, words):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    path = sorted((finished_run / "units" / "fast").glob("*.json"))[0]
    kept = path.read_text()
    try:
        forge(path, result=result, meta=meta)
        code, err = main(["report", "--out", str(finished_run)])
        assert_no_traceback(code, err)
        assert code == 2 and str(path) in err and words in err and "--resume" in err, err
    finally:
        path.write_text(kept)


def test_lists_read_point_by_point_must_have_one_length():
    from reports.schema import NUMBER, ListOf, Nullable, Record, SameLength, SchemaError
    from reports.schema import check as check_schema
    declared = SameLength(Record(hs=ListOf(NUMBER), bias=ListOf(Nullable(NUMBER))), "hs", "bias")
    check_schema({"hs": [0.5, 0.25], "bias": [None, 0.1]}, declared)
    with pytest.raises(SchemaError, match=r"lists of different lengths \('hs' 1, 'bias' 2\)"):
        check_schema({"hs": [0.5], "bias": [None, 0.1]}, declared)
    with pytest.raises(ValueError, match="ListOf fields"):
        SameLength(Record(hs=NUMBER, bias=ListOf()), "hs", "bias")


def test_the_weak_order_figure_declares_its_step_sizes_and_biases_of_one_length():
    from experiments.weak_orders import EXPERIMENT
    from reports.schema import SchemaError
    with pytest.raises(SchemaError, match="lists of different lengths"):
        EXPERIMENT.RESULT.check({"hs": [0.5, 0.25, 0.125], "bias": [0.1], "slope": None, "unstable": []})


@pytest.mark.parametrize("bad", [float("inf"), object()])
def test_metadata_json_is_strict_json_or_refused_by_name(tmp_path, bad):
    from reports.drawing import write_metadata
    write_metadata(tmp_path / "metadata.json", {"seconds": 1.5})
    with pytest.raises(ValueError, match=r"bad.json: the metadata hold a value JSON cannot hold"):
        write_metadata(tmp_path / "bad.json", {"seconds": bad})
    assert not (tmp_path / "bad.json").exists()


@pytest.mark.parametrize("metadata,words", [({"x": object()}, "key 'x': TypeError"), ({1: "x"}, "key 1: not a string"),
                                            ({"x": float("nan")}, "key 'x': ValueError"),
                                            ({"x": (1, 2)}, "key 'x': it comes back from JSON changed")])
def test_a_drawing_refuses_metadata_json_would_not_keep_naming_the_key(metadata, words):
    from reports.drawing import Drawing
    with pytest.raises(ValueError, match=re.escape(words)):
        Drawing("m", metadata=metadata)


@pytest.mark.parametrize("content", ["[" * 100_000 + "]" * 100_000, '{"ids": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_a_run_json_nested_too_deeply_is_unreadable_and_the_report_rebuilt_from_the_units(finished_run, monkeypatch,
                                                                                         content):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    path = finished_run / "run.json"
    kept = path.read_text()
    try:
        path.write_text(content)
        code, err = main(["report", "--out", str(finished_run)])
        assert code == 0 and "Traceback" not in err, err
        assert f"{path} unreadable (RecursionError); rebuilding fast" in err, err
    finally:
        path.write_text(kept)


def test_a_lost_run_json_and_a_damaged_first_unit_infer_the_preset_from_the_readable_units(tmp_path, monkeypatch):
    """Not 'a sound unit was computed with preset full (wanted quick)' and a remedy that recomputes all at quick."""
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "out"
    assert main(["run", "fast", "--preset", "full", "--out", str(out)])[0] == 0
    (out / "run.json").write_text("{bad")
    first = sorted((out / "units" / "fast").glob("*.json"))[0]  # the one the preset was read from
    first.write_bytes(bytes(range(256)) * 2)
    code, err = main(["report", "--out", str(out)])
    assert_no_traceback(code, err)
    assert f"rebuilding fast at preset full from the units found in {out / 'units'}; unreadable unit files: " \
           f"{first}" in err, err
    assert code == 2 and err.strip().splitlines()[-1].startswith(f"sms-langevin: error: {first}: unreadable"), err
    assert "--preset full" in err and "wanted quick" not in err, err


@pytest.mark.parametrize("content", ['{"mine": 1}\n', "[1, 2]\n", '"notes"\n'])
def test_a_run_json_sms_langevin_did_not_write_is_refused_by_name_before_any_unit(tmp_path, monkeypatch, content):
    """JSON without a run record's keys is the user's file, not a record to replace (garbage is rebuilt)."""
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(content)
    code, err = main(["run", "fast", "--out", str(out)])
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"sms-langevin: error: {out / 'run.json'} is not a run record of sms-langevin (JSON without any of its "
        f"keys preset, seed, ids, backend, left_out); it would be replaced by the run's record: move it away or "
        f"use another --out"), err
    assert (out / "run.json").read_text() == content and not list(out.glob("units/*/*.json"))
    (out / "run.json").unlink()
    (out / "run.json").mkdir()  # a folder: named as run.json, not as a temporary file of the write
    code, err = main(["run", "fast", "--out", str(out)])
    assert code == 2 and f"{out / 'run.json'} is a folder, not the run record" in err and ".tmp-" not in err, err


def test_a_truncated_run_json_of_a_run_is_rewritten_by_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "out"
    assert main(["run", "fast", "--out", str(out)])[0] == 0
    (out / "run.json").write_text((out / "run.json").read_text()[:20])
    code, err = main(["run", "fast", "--out", str(out), "--resume"])
    assert code == 0, err
    assert json.loads((out / "run.json").read_text())["ids"] == ["fast"]


def test_an_id_named_twice_runs_once_and_is_recorded_once_saying_so(tmp_path, monkeypatch):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "out"
    code, err = main(["run", "fast", "fast", "--out", str(out)])
    assert code == 0 and "note: fast named more than once; running each once" in err, err
    assert "6 units to run" in err and "/12 units" not in err, err
    assert json.loads((out / "run.json").read_text())["ids"] == ["fast"]


# ------------------------------------------------------------- an experiment module's own code

_MODULE = '''
import os
import sys
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import NUMBER, Record
from reports.verdict import HOLDS, Verdict

if os.environ.get("EXITS_IN") == "import":
    raise SystemExit(0)


def units(preset):
    if os.environ.get("FAILS_IN") == "units":
        raise KeyError("no such level")
    return [{"k": 1}, {"k": 2}]


def run_unit(unit, preset, seed):
    if os.environ.get("FAILS_IN") == "run_unit":
        raise ZeroDivisionError("planted")
    if os.environ.get("EXITS_IN") == "run_unit":
        raise SystemExit(3)
    unit.pop("k")  # a unit edited in place must not change the unit its result is saved under
    if os.environ.get("HUGE"):
        return {"value": 10**400}
    return {"value": 1.0}


def draw(results, preset):
    if os.environ.get("FAILS_IN") == "draw":
        raise IndexError("planted in draw")
    if os.environ.get("EXITS_IN") == "draw":
        sys.exit("planted exit")
    return Drawing(measured="ok")


class Unchecked(Verdict):
    def __post_init__(self):  # a subclass that skips the fields' check
        pass


def verdict(results, preset):
    if os.environ.get("FAILS_IN") == "verdict":
        raise ValueError("planted in verdict")
    if os.environ.get("BAD_VERDICT") == "made":
        return Verdict(HOLDS, ["a", "list"])
    if os.environ.get("BAD_VERDICT") == "unchecked":
        return Unchecked(HOLDS, "r", numbers=3.5)
    return Verdict(HOLDS, "r", "n")


EXPERIMENT = Experiment(ID="own_code", TITLE="t", CLAIM="c", COST={"quick": "1 s", "full": "1 s"},
                        PRESETS=("quick", "full"), RESULT=Record(value=NUMBER), units=units, run_unit=run_unit,
                        draw=draw, verdict=verdict)
'''


@pytest.fixture
def own_code(tmp_path, monkeypatch):
    name = f"own_code_{secrets.token_hex(4)}"
    (tmp_path / f"{name}.py").write_text(_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", name)
    yield name, tmp_path / "out"
    sys.modules.pop(name, None)


def test_a_run_unit_that_edits_its_unit_is_given_a_copy(own_code):
    name, out = own_code
    code, err = main(["run", "own_code", "--out", str(out)])
    assert code == 0, err


def _own_code_fails(command: str, out, monkeypatch, variable: str, where: str):
    """``(exit code, standard error)`` of ``command`` once the module's code fails ``where`` (``variable`` set);
    ``report`` after a run that succeeded."""
    if command == "report":
        assert main(["run", "own_code", "--out", str(out)])[0] == 0
    monkeypatch.setenv(variable, where)
    args = {"list": ["list"], "run": ["run", "own_code", "--out", str(out)], "report": ["report", "--out", str(out)]}
    return main(args[command])


@pytest.mark.parametrize("function, command, words", [
    ("units", "list", "own_code: units('quick') (in {name}) raised KeyError: 'no such level' (at "),
    ("run_unit", "run", 'run_unit({{"k": 1}}) (in {name}) raised ZeroDivisionError: planted (at '),
    ("draw", "report", "own_code: draw (in {name}) raised IndexError: planted in draw (at "),
    ("verdict", "report", "own_code: verdict (in {name}) raised ValueError: planted in verdict (at "),
])
def test_an_exception_of_the_modules_own_code_is_one_line_naming_function_module_and_exception(
        own_code, monkeypatch, function, command, words):
    name, out = own_code
    code, err = _own_code_fails(command, out, monkeypatch, "FAILS_IN", function)
    assert_no_traceback(code, err)
    assert code == 2 and words.format(name=name) in err and f"{name}.py:" in err, err


@pytest.mark.parametrize("function", ["draw", "verdict"])
def test_an_exception_of_draw_or_verdict_blames_the_module_not_the_units_that_passed_their_checks(
        own_code, monkeypatch, function):
    """Not 'a unit file may be damaged: delete it': the units are sound, and deleting one fixes nothing."""
    name, out = own_code
    code, err = _own_code_fails("report", out, monkeypatch, "FAILS_IN", function)
    assert_no_traceback(code, err)
    assert code == 2 and "damaged" not in err and "delete" not in err, err
    assert (f"passed their checks, so the fault is in {function} of {name}: fix it and run "
            f"`sms-langevin report --out {out}` (the units are kept)") in err, err
    monkeypatch.delenv("FAILS_IN")
    assert main(["report", "--out", str(out)])[0] == 0  # the remedy works once the code is fixed


def test_a_result_with_an_integer_too_large_for_a_float_is_refused_naming_the_field_and_not_saved(
        own_code, monkeypatch):
    """Not saved, then refused by draw's OverflowError with a hint to delete a damaged unit file."""
    name, out = own_code
    monkeypatch.setenv("HUGE", "1")
    code, err = main(["run", "own_code", "--out", str(out)])
    assert_no_traceback(code, err)
    assert code == 2 and "result['value']: expected a finite number, got an integer too large for a float" in err, err
    assert "it was not saved" in err and not list((out / "units" / "own_code").glob("*.json")), err


@pytest.mark.parametrize("where, command, words", [
    ("import", "list", "report module {name} failed to import: SystemExit: 0"),
    ("run_unit", "run", 'run_unit({{"k": 1}}) (in {name}) raised SystemExit: 3 (at '),
    ("draw", "report", "own_code: draw (in {name}) raised SystemExit: planted exit (at "),
])
def test_sys_exit_in_the_modules_own_code_is_one_line_naming_module_and_function(own_code, monkeypatch, where,
                                                                                 command, words):
    """Not a silent exit 0 or a bare exit 3: the module's exit is its error, said like any other."""
    name, out = own_code
    code, err = _own_code_fails(command, out, monkeypatch, "EXITS_IN", where)
    assert_no_traceback(code, err)
    assert code == 2 and words.format(name=name) in err, err


@pytest.mark.parametrize("bad, words", [
    ("made", "own_code: verdict (in {name}) raised ValueError: reason must be a string (one sentence), got "
             "['a', 'list'] (at "),
    ("unchecked", "own_code: verdict (in {name}) returned a Verdict whose numbers must be a string (the measured "
                  "numbers), got 3.5; the report in "),
])
def test_a_verdict_with_fields_of_the_wrong_kind_is_one_line_naming_the_module_and_its_verdict(
        own_code, monkeypatch, bad, words):
    """Not written into metadata.json and the report as it is, nor refused later by a step that names ``draw``."""
    name, out = own_code
    code, err = _own_code_fails("report", out, monkeypatch, "BAD_VERDICT", bad)
    assert_no_traceback(code, err)
    assert code == 2 and words.format(name=name) in err, err


@pytest.mark.parametrize("value", ["tests.report_fixtures.fast_units,tests.report_fixtures.fast_units",
                                   "tests.report_fixtures.fast_units, tests.report_fixtures.other_units , "
                                   "tests.report_fixtures.fast_units"])
def test_a_module_listed_twice_in_the_modules_variable_is_one_line_naming_it(monkeypatch, value):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", value)
    code, err = main(["list"])
    assert_no_traceback(code, err)
    assert err.strip().splitlines()[-1] == ("sms-langevin: error: SMS_LANGEVIN_REPORT_MODULES lists the module "
                                            "'tests.report_fixtures.fast_units' more than once; list each module "
                                            "once"), err


ESC = "\x1b[2J"  # a terminal's clear-screen sequence


@pytest.mark.parametrize("args, modules, words", [
    (["run", "all", f"fig{ESC}"], FAST, "got all fig\\x1b[2J"),
    (["run", "fast", "--device", f"cpu{ESC}"], FAST, "--device cpu\\x1b[2J needs --backend torch"),
    (["run", "fast", "--data-dir", f"/no/such{ESC}\ndir"], FAST, "--data-dir /no/such\\x1b[2J\\ndir: no such folder"),
    (["report", "--out", f"/no/such{ESC}"], FAST, "no persisted results in /no/such\\x1b[2J"),
    (["list"], f"no_such{ESC}module", "report module no_such\\x1b[2Jmodule failed to import"),
])
def test_control_characters_of_the_users_input_are_escaped_in_the_one_line_error(tmp_path, monkeypatch, args,
                                                                                modules, words):
    """A figure id, option value, path or module name echoed in an error cannot clear the screen or break the line."""
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", modules)
    code, err = main([*args, "--out", str(tmp_path / "out")] if "--out" not in args and args[0] == "run" else args)
    assert_no_traceback(code, err)
    assert code == 2 and "\x1b" not in err and words in err.strip().splitlines()[-1], err


def test_control_characters_in_a_data_files_name_are_escaped_in_the_data_error(tmp_path):
    from data_sets import load_cifar10
    with pytest.raises(DataError) as caught:
        load_cifar10(tmp_path / f"cifar{ESC}")
    message = str(caught.value)
    assert "\x1b" not in message and f"cifar\\x1b[2J{os.sep}data_batch_1: file not found" in message, message


@pytest.mark.parametrize("value", [" , ,", ","])
def test_a_modules_variable_naming_no_module_is_one_line_naming_it(monkeypatch, value):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", value)
    code, err = main(["list"])
    assert_no_traceback(code, err)
    assert code == 2 and f"SMS_LANGEVIN_REPORT_MODULES={value!r} names no module" in err, err


@pytest.mark.parametrize("field, value, words", [
    ("measured", 3, "measured must be a string"),
    ("figures", {"a": 3}, "figures['a'] must be a matplotlib figure"),
    ("tables", {"t": [1]}, "tables['t'][0] must be a dict (one row)"),
    ("tables", {"t": {"a": 1}}, "tables['t'] must be a list or tuple"),
    ("texts", {"t": b"bytes"}, "texts['t'] must be a string"),
    ("metadata", [1], "metadata must be a dict"),
])
def test_a_drawing_refuses_contents_of_the_wrong_kind_naming_the_field(field, value, words):
    from reports.drawing import Drawing
    with pytest.raises(ValueError, match=re.escape(words)):
        Drawing(**{"measured": "1 unit.", field: value})


def test_a_drawings_table_without_rows_is_written_as_its_header_or_left_out_without_columns(tmp_path):
    from reports._tables import write_rows
    from reports.drawing import Drawing, write_drawing
    with pytest.raises(ValueError, match="t.csv: a table with no rows needs its columns"):
        write_rows(tmp_path / "t.csv", [])
    with pytest.raises(ValueError, match="columns names 'u', no table of this drawing"):
        Drawing(measured="0 units.", tables={"t": []}, columns={"u": ["a"]})
    with pytest.raises(ValueError, match=re.escape("columns['t'] must be a list or tuple of 1 or more entries")):
        Drawing(measured="0 units.", tables={"t": []}, columns={"t": []})
    drawing = Drawing(measured="0 units.", tables={"t": [], "r": [{"b": 1}]},
                      columns={"t": ["a", "b"], "r": ["a", "b"]})
    assert write_drawing(drawing, tmp_path) == ["t.csv", "r.csv"]
    assert (tmp_path / "t.csv").read_text().splitlines() == ["a,b"]
    assert (tmp_path / "r.csv").read_text().splitlines() == ["a,b", ",1"]
    bare = Drawing(measured="0 units.", tables={"t": [], "r": [{"b": 1}]})  # no header known for t
    assert write_drawing(bare, tmp_path / "bare") == ["r.csv"] and not (tmp_path / "bare" / "t.csv").exists()
    drawing = Drawing(measured="1 unit.", tables={"t": [{"a": 1, "c": 2}]}, columns={"t": ["a", "b"]})
    with pytest.raises(ValueError, match=r"t.csv: a row holds 'c', which is not one of its columns \['a', 'b'\]"):
        write_drawing(drawing, tmp_path)


def test_a_figures_input_hooks_that_raise_or_return_the_wrong_kind_are_one_line_naming_the_hook():
    """``inputs`` and ``missing_input`` are the figure's own code, as ``units`` and ``draw`` are: an exception, or
    a value the store could not keep unchanged, is a one-line error naming the hook and the module."""
    from types import SimpleNamespace

    from reports._cli import CliError, absent_inputs, unit_inputs

    def raising(unit, level):
        raise KeyError("boom")

    def figure(**hooks):
        return SimpleNamespace(ID="fig", module="probe.fig", **{"inputs": None, "missing_input": None, **hooks})

    with pytest.raises(CliError, match=r"fig: inputs \(in probe.fig\) raised KeyError"):
        unit_inputs(figure(inputs=raising), {"i": 0}, "tiny")
    for bad in ({"size": (1, 2)}, {"size": float("nan")}, [1]):
        with pytest.raises(CliError, match=r"fig: inputs \(in probe.fig\) returned"):
            unit_inputs(figure(inputs=lambda unit, level, bad=bad: bad), {"i": 0}, "tiny")
    assert unit_inputs(figure(inputs=lambda unit, level: {"size": [1, 2]}), {"i": 0}, "tiny") == {"size": [1, 2]}
    task = ("probe.fig", {"i": 0}, "tiny", None)
    with pytest.raises(CliError, match=r"fig: missing_input \(in probe.fig\) raised KeyError"):
        absent_inputs({"fig": figure(missing_input=raising)}, [task])
    with pytest.raises(CliError, match="must return None or a string"):
        absent_inputs({"fig": figure(missing_input=lambda unit, level: 5)}, [task])
    assert absent_inputs({"fig": figure(missing_input=lambda unit, level: "no file")}, [task]) == [(task, "no file")]


def test_a_unit_with_the_keys_the_backend_fills_is_refused_for_a_figure_with_backends():
    """Two units differing only in ``backend`` would become one unit once the run's backend is merged in:
    one file, the same result drawn twice. Refused by name, as every unit's contract is."""
    from types import SimpleNamespace

    from reports._cli import CliError, figure_units

    figure = SimpleNamespace(ID="fig", module="probe.fig", BACKENDS=("numba", "torch"),
                             units=lambda level: [{"i": 0, "backend": "a"}, {"i": 0, "backend": "b"}])
    with pytest.raises(CliError, match=r"fig: units\('tiny'\) \(in probe.fig\) returned unit .* key 'backend'"):
        figure_units(figure, "tiny", {"backend": "torch", "device": "cpu"})
    figure.units = lambda level: [{"i": 0}, {"i": 1}]
    assert figure_units(figure, "tiny", {"backend": "torch", "device": "cpu"})[1] == {"i": 1, "backend": "torch",
                                                                                 "device": "cpu"}
