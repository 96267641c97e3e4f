"""Nothing outside the output folder is written, replaced or deleted through a link planted inside it:
the write test, ``units/``, a figure's folder, a unit file, ``report/``, the report's ``tour`` and the
tour's pages are each refused by name (or never followed), and the link's target is left as it was."""

import contextlib
import io
import os
from pathlib import Path

import pytest
from helpers import message_lines

from reports._metadata import unwritable
from reports._report import remove_stale_staging, staging_folder, swap_in
from reports.store import Store, UnsafePath, own_path, own_tree

FAST = "tests.report_fixtures.fast_units"
UNIT = {"k": 2, "plan": "sms"}


def victim(tmp_path) -> Path:
    path = tmp_path / "victim"
    path.write_text("data\n")
    return path


def test_the_write_test_never_writes_through_a_planted_link(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    target = victim(tmp_path)
    (out / ".write-test").symlink_to(target)
    assert unwritable(out) is None
    assert target.read_text() == "data\n"
    assert (out / ".write-test").is_symlink()


def test_an_out_that_is_a_file_is_named_as_one(tmp_path):
    target = victim(tmp_path)
    assert unwritable(target) == "it is a file, not a folder"
    assert target.read_text() == "data\n"


@pytest.mark.parametrize("below", ["", "sub"])
def test_an_out_that_is_or_lies_below_a_link_to_a_missing_folder_is_named_as_one(tmp_path, below):
    """Not mkdir's bare 'File exists'."""
    link = tmp_path / "dang"
    link.symlink_to(tmp_path / "nowhere")
    shown = "it" if not below else str(link)
    assert unwritable(link / below if below else link) == (
        f"{shown} is a symbolic link to {tmp_path / 'nowhere'}, a folder that does not exist; create that folder "
        f"or give another --out")
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()
    (tmp_path / "nowhere").mkdir()  # the remedy
    assert unwritable(link / below if below else link) is None


@pytest.mark.parametrize("where", ["units", "units/fast"])
def test_a_linked_units_folder_is_refused_and_nothing_lands_at_its_target(tmp_path, where):
    out, elsewhere = tmp_path / "o", tmp_path / "elsewhere"
    (out / where).parent.mkdir(parents=True)
    elsewhere.mkdir()
    (out / where).symlink_to(elsewhere)
    store = Store(out)
    with pytest.raises(UnsafePath, match=where.split("/")[-1]):
        store.save("fast", UNIT, {"mean": 0.0, "variance": 1.0}, {})
    with pytest.raises(UnsafePath):
        store.load("fast", UNIT)
    with pytest.raises(UnsafePath) if where == "units" else contextlib.nullcontext():
        store.remove_stale_temporaries(["fast"])
    assert list(elsewhere.iterdir()) == []


def test_a_unit_file_that_is_a_link_is_neither_read_nor_replaced(tmp_path):
    out = tmp_path / "o"
    store = Store(out)
    path = store.path("fast", UNIT)
    path.parent.mkdir(parents=True)
    target = victim(tmp_path)
    path.symlink_to(target)
    with pytest.raises(UnsafePath, match=path.name):
        store.load("fast", UNIT)
    with pytest.raises(UnsafePath, match=path.name):
        store.save("fast", UNIT, {"mean": 0.0, "variance": 1.0}, {})
    assert target.read_text() == "data\n" and path.is_symlink()


def test_a_folder_in_place_of_a_unit_file_is_named_as_the_unit(tmp_path):
    store = Store(tmp_path)
    store.path("fast", UNIT).mkdir(parents=True)
    with pytest.raises(UnsafePath, match=f"{store.path('fast', UNIT).name} is a folder"):
        store.save("fast", UNIT, {"mean": 0.0, "variance": 1.0}, {})


def test_a_tmp_folder_under_units_is_left_alone_and_stale_temporaries_go(tmp_path):
    store = Store(tmp_path)
    (store.root / "fast" / ".tmp-dir").mkdir(parents=True)
    (store.root / "fast" / ".tmp-file1234.json").write_text("{")  # the names mkstemp gives
    target = victim(tmp_path)
    (store.root / "fast" / ".tmp-link_abc.json").symlink_to(target)
    assert store.remove_stale_temporaries(["fast"]) == 2
    assert (store.root / "fast" / ".tmp-dir").is_dir() and target.read_text() == "data\n"


def test_a_linked_report_is_refused_and_no_old_link_is_left(tmp_path):
    out, elsewhere = tmp_path / "o", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (out / "report").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="report"):
        remove_stale_staging(out)
    staging = out / "staging"
    staging.mkdir()
    with pytest.raises(UnsafePath, match="report"):
        swap_in(staging, out / "report")
    assert (elsewhere / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["report", "staging"]


def test_a_linked_report_tour_is_refused_when_staging(tmp_path):
    out, elsewhere = tmp_path / "o", tmp_path / "elsewhere"
    (out / "report").mkdir(parents=True)
    elsewhere.mkdir()
    (out / "report" / "tour").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="tour"):
        staging_folder(out)


def test_a_link_left_as_a_killed_swaps_old_report_is_removed_not_followed(tmp_path):
    out, elsewhere = tmp_path / "o", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (out / ".report-old-1-ab").symlink_to(elsewhere)
    remove_stale_staging(out)
    assert not (out / "report").exists() and not (out / ".report-old-1-ab").is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "mine"


def test_own_tree_names_a_link_inside_the_tour_folder(tmp_path):
    tour = tmp_path / "report" / "tour"
    (tour / "mathjax").mkdir(parents=True)
    (tour / "mathjax" / "MathJax.js").symlink_to(victim(tmp_path))
    with pytest.raises(UnsafePath, match="MathJax.js"):
        own_tree(tmp_path, tour)
    assert own_path(tmp_path, tmp_path / "report" / "absent" / "x") == tmp_path / "report" / "absent" / "x"


def main(args, monkeypatch):
    from reports._cli import main as cli_main
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(args)
    return code, err.getvalue()


@pytest.mark.slow
@pytest.mark.experiment
def test_run_keeps_a_linked_write_test_target_and_refuses_a_linked_units_in_one_line(tmp_path, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    target = victim(tmp_path)
    (out / ".write-test").symlink_to("../victim")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "units").symlink_to(elsewhere)
    code, err = main(["run", "fast", "--out", str(out)], monkeypatch)
    assert code == 2 and len(message_lines(err)) == 1, err
    assert "units is a symbolic link" in err
    assert target.read_text() == "data\n" and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("resume", [[], ["--resume"]])
def test_a_resumed_run_deletes_only_its_own_temporaries_in_its_figures_folders(tmp_path, monkeypatch, resume):
    """A user's .tmp-draft.tex (in a folder of no figure, or in a figure's) is not the store's to delete."""
    out = tmp_path / "o"
    mine = {out / "units" / "mine" / ".tmp-draft.tex", out / "units" / "mine" / ".tmp-abcd1234.json",
            out / "units" / "fast" / ".tmp-notes.txt", out / "units" / "fast" / ".tmp-sub" / ".tmp-abcd1234.json"}
    for path in mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    stale = out / "units" / "fast" / ".tmp-k2_zz9qa.json"  # one a killed run's write_atomic left
    stale.write_text("{")
    code, err = main(["run", "fast", "--out", str(out), *resume], monkeypatch)
    assert code == 0, err
    assert all(path.read_text() == "x\n" for path in mine) and not stale.exists()


@pytest.mark.parametrize("resume", [[], ["--resume"]])
def test_run_refuses_a_linked_run_json_by_name_before_any_unit_and_keeps_its_target(tmp_path, monkeypatch, resume):
    """Not silently replaced by a regular file at the end of the run, as links at units/ and report/ are refused."""
    out = tmp_path / "o"
    out.mkdir()
    target = victim(tmp_path)
    (out / "run.json").symlink_to(target)
    code, err = main(["run", "fast", "--out", str(out), *resume], monkeypatch)
    assert code == 2 and len(message_lines(err)) == 1, err
    assert f"{out / 'run.json'} is a symbolic link (to {target}); sms-langevin writes inside --out" in err, err
    assert target.read_text() == "data\n" and (out / "run.json").is_symlink()
    assert not list(out.glob("units/*/*.json")), "refused before any unit ran"


@pytest.mark.slow
@pytest.mark.experiment
def test_tour_refuses_a_link_inside_its_folder_before_running_a_notebook(tmp_path, monkeypatch):
    from tour import _build as tour_build
    pytest.importorskip("jupytext")
    out = tmp_path / "o"
    (out / "report" / "tour").mkdir(parents=True)
    target = victim(tmp_path)
    (out / "report" / "tour" / "index.html").symlink_to(target)

    def never(*args, **kwargs):
        raise AssertionError("the tour ran into a folder holding a link")

    monkeypatch.setattr(tour_build, "build", never)
    code, err = main(["tour", "01", "--out", str(out)], monkeypatch)
    assert code == 2 and "index.html is a symbolic link" in err, err
    assert target.read_text() == "data\n"


def test_report_tour_link_check_runs_with_no_links(tmp_path):
    (tmp_path / "report" / "tour").mkdir(parents=True)
    (tmp_path / "report" / "tour" / "page.html").write_text("x")
    assert own_tree(tmp_path, tmp_path / "report" / "tour") == tmp_path / "report" / "tour"
    os.symlink("page.html", tmp_path / "report" / "tour" / "alias.html")
    with pytest.raises(UnsafePath, match="alias.html"):
        own_tree(tmp_path, tmp_path / "report" / "tour")


def plant_hard_links(folder: Path, names, tmp_path: Path) -> list[Path]:
    """A file outside ``folder`` (content ``data``) hard-linked under each of ``names`` in it: the victims."""
    victims = []
    for i, name in enumerate(names):
        target = tmp_path / f"victim{i}"
        target.write_text("data\n")
        os.link(target, folder / name)
        victims.append(target)
    return victims


@pytest.mark.slow
def test_tour_replaces_hard_links_in_its_folder_and_never_writes_through_them(tmp_path, monkeypatch):
    """Every page, the executed notebook, the index, the metadata and MathJax's files are written through a
    temporary file and a rename: a hard link planted under one of their names keeps its other name's content."""
    from tour import _build as tour_build
    pytest.importorskip("jupytext")
    pytest.importorskip("nbconvert")
    pytest.importorskip("jupyter_server_mathjax")
    out = tmp_path / "o"
    tour = out / "report" / "tour"
    (tour / "mathjax" / "config").mkdir(parents=True)
    names = ["metadata.json", "index.html", "01_splittings.html", "01_splittings.ipynb", "mathjax/config/Safe.js"]
    victims = plant_hard_links(tour, names, tmp_path)
    monkeypatch.setattr(tour_build, "execute", lambda nb, **kwargs: nb)  # no kernel: the pages are what matters
    code, err = main(["tour", "01", "--out", str(out)], monkeypatch)
    assert code == 0, err
    assert [v.read_text() for v in victims] == ["data\n"] * len(victims)
    for name in names:
        assert (tour / name).stat().st_nlink == 1 and (tour / name).read_text() != "data\n", name
    assert "01_splittings.html" in (tour / "index.html").read_text()
    assert not [p for p in tour.rglob(".tmp-*")]


def test_write_drawing_and_metadata_replace_hard_links_never_write_through_them(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reports.drawing import Drawing, write_drawing, write_metadata
    out = tmp_path / "o"
    out.mkdir()
    names = ["fig.png", "fig.pdf", "rows.csv", "table.md", "metadata.json"]
    victims = plant_hard_links(out, names, tmp_path)
    fig = plt.figure()
    drawing = Drawing("m", figures={"fig": fig}, tables={"rows": [{"a": 1}]}, texts={"table.md": "| t |"})
    written = write_drawing(drawing, out)
    write_metadata(out / "metadata.json", {"seed": 0})
    assert written == names[:4]
    assert [v.read_text() for v in victims] == ["data\n"] * len(victims)
    assert (out / "rows.csv").read_text() == "a\n1\n" and (out / "table.md").read_text() == "| t |\n"
    assert (out / "fig.png").read_bytes()[:4] == b"\x89PNG" and (out / "fig.pdf").read_bytes()[:4] == b"%PDF"
    assert all((out / name).stat().st_nlink == 1 for name in names)


def no_hang(call, *fifos, seconds=20):
    """``call()``'s value, failing (not hanging) when it blocks, as an open of a planted fifo would: it runs in a
    thread, and a thread still blocked after ``seconds`` is released by opening ``fifos`` for writing."""
    import threading
    box = {}

    def body():
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(seconds)
        raise AssertionError(f"blocked for {seconds} s on a fifo")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.mark.parametrize("with_report", [True, False])
def test_fifos_planted_as_stale_staging_are_unlinked_unopened(tmp_path, with_report):
    out = tmp_path / "o"
    out.mkdir()
    if with_report:
        (out / "report").mkdir()
        (out / "report" / "index.html").write_text("kept\n")
    os.mkfifo(out / ".report-tmp-9-zz")
    os.mkfifo(out / ".report-old-9-zz")
    assert no_hang(lambda: remove_stale_staging(out), out / ".report-tmp-9-zz", out / ".report-old-9-zz") == 2
    assert sorted(p.name for p in out.iterdir()) == (["report"] if with_report else [])
    if with_report:
        assert (out / "report" / "index.html").read_text() == "kept\n"


def test_a_fifo_in_place_of_a_unit_file_is_a_damaged_unit_replaced_when_saved(tmp_path):
    from reports.store import CorruptUnit
    store = Store(tmp_path / "o")
    path = store.path("fast", UNIT)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(CorruptUnit, match="not a regular file"):
        no_hang(lambda: store.load("fast", UNIT), path)
    store.save("fast", UNIT, {"mean": 0.0, "variance": 1.0}, {})
    assert store.load("fast", UNIT) == {"mean": 0.0, "variance": 1.0}


def test_a_fifo_in_place_of_run_json_is_read_as_unreadable_not_waited_on(tmp_path, capsys, monkeypatch):
    from reports import registry
    from reports._run_record import read_run
    from reports.store import UnsafePath, read_regular
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "o"
    store = Store(out)
    store.save("fast", UNIT, {"mean": 0.0, "variance": 1.0}, {"fingerprint": {"preset": "quick", "run_seed": 3}})
    os.mkfifo(out / "run.json")
    with pytest.raises(UnsafePath, match="run.json is a fifo"):
        no_hang(lambda: read_regular(out / "run.json"), out / "run.json")
    preset, seed, ids, _ = no_hang(lambda: read_run(out, registry.load(), None), out / "run.json")
    assert (preset, seed, ids) == ("quick", 3, ["fast"])
    assert "run.json unreadable" in capsys.readouterr().err


def test_a_report_folder_of_the_users_own_files_is_never_replaced(tmp_path, monkeypatch):
    """``--out`` holding a ``report/`` that sms-langevin did not write (no report's index.html): ``run`` refuses
    in one line before any unit runs and ``swap_in`` refuses too; a report it wrote is replaced."""
    out = tmp_path / "o"
    (out / "report" / "chapter1").mkdir(parents=True)
    (out / "report" / "chapter1" / "thesis.tex").write_text("mine")
    code, err = main(["run", "fast", "--out", str(out)], monkeypatch)
    assert code == 2 and len(message_lines(err)) == 1 and "not a report sms-langevin wrote" in err, err
    assert not (out / "units").exists() or not any((out / "units").rglob("*.json"))  # refused before any unit
    staging = out / "staging"
    staging.mkdir()
    with pytest.raises(UnsafePath, match="not a report sms-langevin wrote"):
        swap_in(staging, out / "report")
    assert (out / "report" / "chapter1" / "thesis.tex").read_text() == "mine"
    (out / "report" / "chapter1" / "thesis.tex").unlink()
    (out / "report" / "chapter1").rmdir()
    (out / "report" / "index.html").write_text("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                                               "<title>SMS-Langevin report</title></head></html>")
    swap_in(staging, out / "report")  # a report of an earlier run: replaced
    assert not (out / "report" / "index.html").exists() and not staging.exists()


def test_a_folder_at_the_lock_is_named_as_no_lock_file_before_any_unit(tmp_path, monkeypatch):
    """Not 'Is a directory: OUT/.lock (finished units are saved...)' when no unit ran."""
    out = tmp_path / "o"
    (out / ".lock").mkdir(parents=True)
    for args in (["run", "fast"], ["report"]):
        code, err = main([*args, "--out", str(out)], monkeypatch)
        assert code == 2 and message_lines(err) == [
            f"sms-langevin: error: {out / '.lock'} is a folder, not the lock file sms-langevin keeps there; move it "
            f"away or use another --out"], err
    assert (out / ".lock").is_dir() and not (out / "units").exists()


@pytest.mark.parametrize("resume", [[], ["--resume"]])
def test_a_file_at_report_is_refused_by_name_before_any_unit_and_kept(tmp_path, monkeypatch, resume):
    """Not 'Not a directory: OUT/report/tour' after every unit ran (and the file never moved aside and deleted)."""
    out = tmp_path / "o"
    out.mkdir()
    (out / "report").write_text("mine\n")
    code, err = main(["run", "fast", "--out", str(out), *resume], monkeypatch)
    assert code == 2 and f"{out / 'report'} is a file, not the report's folder" in message_lines(err)[-1], err
    assert (out / "report").read_text() == "mine\n" and not list(out.glob("units/*/*.json"))


@pytest.mark.parametrize("modules,words", [(FAST, "applies to no figure of this registry (none offers backends)"),
                                           (f"{FAST},tests.report_fixtures.backend_units", "applies to twin only")])
def test_backend_names_the_figures_of_the_registry_that_offer_backends(tmp_path, monkeypatch, modules, words):
    """Not 'applies to figure1 only' where the registry has no figure1."""
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", modules)
    from reports._cli import main as cli_main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(["run", "fast", "--backend", "torch", "--out", str(tmp_path / "o")])
    assert code == 2 and message_lines(err.getvalue()) == [
        f"sms-langevin: error: --backend torch {words}; selected: fast"], err.getvalue()
