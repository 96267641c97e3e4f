"""A report is replaced whole or not at all: a write that fails part-way (a full disk, injected here
into every file the report writes in turn) leaves the previous report byte for byte, or none, never
a half-written file, and the one-line error names the command to rerun."""

import builtins
import errno
import io
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from reports import _cli as cli  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

FAST = "tests.report_fixtures.fast_units"
ROOM = 100  # bytes each failing file gets before the disk is full


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


class FullDisk:
    """``open`` (and ``io.open``, which ``Path.write_text`` and ``os.fdopen`` use) whose ``fail_at``-th file opened for
    writing under ``out`` (outside its units, run.json, lock and write probe) takes ``ROOM`` bytes,
    then raises ENOSPC."""

    def __init__(self, out: Path, fail_at: int):
        self.out, self.fail_at, self.opened, self.failed = str(out), fail_at, 0, False
        self.real = builtins.open

    def __call__(self, file, mode="r", *args, **kwargs):
        fh = self.real(file, mode, *args, **kwargs)
        path = os.fspath(file) if isinstance(file, str | os.PathLike) else ""
        if isinstance(file, int):  # os.fdopen of write_atomic's temporary file: its name, from /proc
            path = os.readlink(f"/proc/self/fd/{file}")
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        inside = path.startswith(self.out + os.sep) and Path(path).name not in (".lock", ".write-test") and (
            Path(path).relative_to(self.out).parts[0] not in ("units", "run.json")) and not (
            Path(path).parent == Path(self.out) and Path(path).name.startswith(".tmp-"))  # run.json's temporary
        if not inside or not any(m in mode for m in "wax+"):
            return fh
        self.opened += 1
        return _Filling(fh, self) if self.opened - 1 == self.fail_at else fh


class _Filling:
    def __init__(self, fh, disk):
        self._fh, self._disk, self._room = fh, disk, ROOM

    def write(self, data):
        if len(data) <= self._room:
            self._room -= len(data)
            return self._fh.write(data)
        self._fh.write(data[:self._room])
        self._fh.flush()
        self._room, self._disk.failed = 0, True
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self._fh.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()

    def __iter__(self):
        return iter(self._fh)

    def __getattr__(self, name):
        return getattr(self._fh, name)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run of the fast registry, in process, with a tour page written into its report (as
    ``sms-langevin tour`` writes one)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path_factory.mktemp("atomic") / "run"
    assert cli.main(["run", "all", "--out", str(out)]) == 0
    tour = out / "report" / "tour"
    tour.mkdir()
    (tour / "index.html").write_text("<html>" + "a notebook, executed " * 20 + "</html>\n")  # > ROOM
    assert cli.main(["report", "--out", str(out)]) == 0
    mp.undo()
    return out


def fail_each_write(monkeypatch, capsys, out, argv, writes=7):
    """Run ``argv`` once per file the report writes (``writes`` of them), that file failing part-way;
    yield each run's stderr (the run failed with exit 2)."""
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    monkeypatch.setenv("FAST_UNITS_FAIL", "1")  # a report never runs a unit
    capsys.readouterr()
    for n in range(100):
        disk = FullDisk(out, n)
        with monkeypatch.context() as m:
            m.setattr(builtins, "open", disk)
            m.setattr(io, "open", disk)
            code = cli.main(argv)
        err = capsys.readouterr().err
        if not disk.failed:
            assert code == 0, err
            assert n == writes, f"{n} files written, not {writes}: is the injection missing some?"
            return
        yield n, code, err
    pytest.fail("the report never finished")


@pytest.mark.parametrize("hard_links", [True, False], ids=["tour-linked", "tour-copied"])
def test_a_report_failing_at_any_write_leaves_the_previous_report(tmp_path, finished_run, monkeypatch, capsys,
                                                                  hard_links):
    """Every write fails in turn; where the filesystem has no hard links the tour is copied into the
    new report, and that copy fails in turn too."""
    import shutil
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    if not hard_links:
        def no_link(*args, **kwargs):
            raise OSError(errno.EPERM, "hard links not supported here")
        monkeypatch.setattr(os, "link", no_link)
        monkeypatch.setattr(shutil, "_USE_CP_SENDFILE", False)  # copies through write(), where the disk fills
    before = snapshot(out / "report")
    assert "tour/index.html" in before and "fast/fast.csv" in before
    assert "href='tour/index.html'" in (out / "report" / "index.html").read_text()
    argv = ["report", "--out", str(out)]
    for n, code, err in fail_each_write(monkeypatch, capsys, out, argv, writes=7 if hard_links else 8):
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, f"write {n}: {err}"
        assert "No space left on device" in lines[0] and f"rerun `sms-langevin report --out {out}`" in lines[0], \
            lines[0]
        assert "--resume" not in lines[0], lines[0]
        assert snapshot(out / "report") == before, f"write {n} failing changed the previous report"
        assert sorted(p.name for p in out.iterdir()) == [".lock", "report", "run.json", "units"], \
            f"write {n} failing left temporary files"
    # the report that finished is whole, and kept the tour
    assert snapshot(out / "report")["fast/fast.csv"] == before["fast/fast.csv"]
    assert (out / "report" / "tour" / "index.html").read_bytes() == before["tour/index.html"]
    assert "href='tour/index.html'" in (out / "report" / "index.html").read_text()


def test_a_first_report_failing_part_way_leaves_none(tmp_path, finished_run, monkeypatch, capsys):
    import shutil
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    shutil.rmtree(out / "report")
    for n, code, err in fail_each_write(monkeypatch, capsys, out, ["report", "--out", str(out)]):
        assert code == 2 and err.count("\n") == 1 and "sms-langevin report --out" in err, f"write {n}: {err}"
        assert not (out / "report").exists(), f"write {n} failing left a partial report"
        assert sorted(p.name for p in out.iterdir()) == [".lock", "run.json", "units"]
    assert (out / "report" / "index.html").exists() and (out / "report" / "fast" / "metadata.json").exists()


def test_run_failing_in_its_drawing_says_resume_and_keeps_the_report(tmp_path, finished_run, monkeypatch, capsys):
    import shutil
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    before = snapshot(out / "report")
    argv = ["run", "all", "--resume", "--out", str(out)]
    for n, code, err in fail_each_write(monkeypatch, capsys, out, argv):
        line = err.strip().splitlines()[-1]
        assert code == 2 and "rerun with --resume" in line and "sms-langevin report" not in line, f"write {n}: {err}"
        assert snapshot(out / "report") == before, f"write {n} failing changed the previous report"
        if n == 2:
            break


def test_a_killed_report_build_is_cleaned_up_and_an_interrupted_swap_restored(tmp_path, finished_run,
                                                                              monkeypatch):
    import shutil
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    before = snapshot(out / "report")
    (out / ".report-tmp-123-dead").mkdir()
    (out / ".report-tmp-123-dead" / "half.csv").write_text("k,pl")
    os.rename(out / "report", out / ".report-old-123-dead")  # killed between the swap's two renames
    from reports._report import remove_stale_staging
    assert remove_stale_staging(out) == 1
    assert snapshot(out / "report") == before
    assert sorted(p.name for p in out.iterdir()) == [".lock", "report", "run.json", "units"]
    (out / ".report-tmp-456-dead").mkdir()
    assert cli.main(["report", "--out", str(out)]) == 0
    assert not list(out.glob(".report-*"))


class _Log(io.StringIO):
    """A stream that is not a terminal (a log file, a pipe)."""

    def isatty(self):
        return False


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.floats(0.0, 20.0, allow_nan=False), min_size=1, max_size=40),
       every=st.floats(0.0, 10.0, allow_nan=False))
def test_progress_into_a_log_writes_whole_lines_at_most_every_few_seconds(gaps, every):
    """Not on a terminal (``make demo > log``): whole lines, the first and the last unit always,
    and between them one line whenever ``every`` seconds have passed since the last (a clock
    advanced by ``gaps`` stands in for the units' durations)."""
    from reports._progress import Progress
    now = [0.0]
    stream = _Log()
    progress = Progress(len(gaps), label="tiny", stream=stream, every=every, clock=lambda: now[0])
    expected, last = [], None
    for i, gap in enumerate(gaps, start=1):
        now[0] += gap
        progress.advance(f"fig unit {i}")
        if last is None or now[0] - last >= every or i == len(gaps):
            expected.append(i)
            last = now[0]
    text = stream.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert [int(line.split()[1].split("/")[0]) for line in lines] == expected
    assert all(f"/{len(gaps)} units done" in line and line.startswith("tiny ") for line in lines)
    assert f"(last: fig unit {len(gaps)})" in lines[-1]


def test_progress_on_a_terminal_is_one_bar_and_off_when_disabled():
    from reports._progress import Progress
    bar, off = _Terminal(), _Log()
    for stream, enabled in ((bar, None), (off, False)):
        progress = Progress(3, label="quick", stream=stream, enabled=enabled)
        for _ in range(3):
            progress.advance("x")
    assert bar.getvalue().count("\r") == 3 and bar.getvalue().count("\n") == 1 and "3/3" in bar.getvalue()
    assert off.getvalue() == ""


def test_progress_notes_are_whole_in_a_log_and_cut_between_words_on_a_terminal():
    """A unit's note (``'target': 'defaul`` was a line's end) is written whole into a log; the bar's
    field takes whole words and ``...``."""
    from reports._progress import NOTE_WIDTH, Progress, describe_unit, fit_note
    note = describe_unit("conformance", {"sampler": "posteriors.sghmc_with_a_long_name", "target": "default"})
    assert note == "conformance sampler=posteriors.sghmc_with_a_long_name target=default"
    log, bar = _Log(), _Terminal()
    for stream in (log, bar):
        Progress(1, label="tiny", stream=stream).advance(note)
    assert log.getvalue().endswith(f"(last: {note})\n")
    shown = bar.getvalue().rsplit(" left ", 1)[1].rstrip()
    assert shown == "conformance..." and len(shown) <= NOTE_WIDTH  # the next word did not fit
    words = note.split()
    for width in range(4, len(note) + 1):
        cut = fit_note(note, width)
        assert len(cut) <= width and (cut == note or cut.endswith("..."))
        kept = cut.removesuffix("...").split()
        assert cut == note or kept == words[:len(kept)] or len(kept) == 1 and words[0].startswith(kept[0])


def test_a_run_into_a_log_reports_its_progress(tmp_path):
    """``sms-langevin run`` with standard error into a pipe (not a terminal) prints its progress."""
    import subprocess
    env = {**os.environ, "SMS_LANGEVIN_REPORT_MODULES": FAST,
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "reports", "run", "all", "--out", str(tmp_path / "run")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "6/6 units done" in proc.stderr, proc.stderr


def test_the_report_opens_with_an_introduction_and_contents_and_says_each_sections_preset(tmp_path, monkeypatch):
    """A tiny run of modules without a tiny level: the introduction names the preset, the seed and
    the command that regenerates the report; the contents link to every section (each link's
    target exists); each section says it ran its quick level."""
    import re
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", f"{FAST},tests.report_fixtures.other_units")
    out = tmp_path / "run"
    assert cli.main(["run", "all", "--preset", "tiny", "--seed", "3", "--out", str(out)]) == 0
    page = (out / "report" / "index.html").read_text()
    intro = page[page.index("<p class='intro'>"):page.index("<nav>")]
    assert "preset tiny, run seed 3" in intro and "sms-langevin run all --preset tiny --seed 3 --out OUT" in intro
    nav = page[page.index("<nav>"):page.index("</nav>")]
    links = re.findall(r"href='#([^']+)'", nav)
    assert links == ["fast", "other", "metadata"], links
    assert all(f"id='{anchor}'" in page for anchor in links)
    sections = page.split("<h2 ")[1:]
    for section in sections[:2]:
        assert "Preset: tiny (runs this section&#x27;s quick level)." in section, section[:300]
    md = (out / "report" / "index.md").read_text()
    assert all(f"<a id='{anchor}'></a>" in md and f"](#{anchor})" in md for anchor in links)
    assert md.count("Preset: tiny (runs this section's quick level).") == 2


def test_the_reports_metadata_records_the_code_as_each_figure_does(tmp_path, monkeypatch):
    """The report's ``metadata.json`` holds every field that says which code and machine computed the
    units (version, where the code came from, commit, libraries), with the figures' values."""
    from reports._metadata import code_metadata
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    out = tmp_path / "run"
    assert cli.main(["run", "all", "--preset", "tiny", "--out", str(out)]) == 0
    report = json.loads((out / "report" / "metadata.json").read_text())
    figure = json.loads((out / "report" / "fast" / "metadata.json").read_text())
    fields = list(code_metadata())
    assert {"sms_langevin", "code", "git_commit", "python", "numpy"} <= set(fields)
    assert {k: report[k] for k in fields} == {k: figure[k] for k in fields}
    assert report["left_out"] == {} and report["run_seed"] == figure["run_seed"]


def test_a_figure_left_out_of_a_run_is_named_in_the_report_with_the_reason(tmp_path, monkeypatch, capsys):
    """``run all`` where one figure cannot run (an extra missing) reports the others and says, in the
    report itself and its metadata, which was left out and why; ``report`` redraws it the same way."""
    from reports import registry
    why = "needs the imaginary extra: pip install -e '.[imaginary]'"
    monkeypatch.setattr(registry, "lacking", lambda mod: why if getattr(mod, "ID", None) == "other" else None)
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", f"{FAST},tests.report_fixtures.other_units")
    out = tmp_path / "run"
    assert cli.main(["run", "all", "--preset", "tiny", "--out", str(out)]) == 2  # not all that was asked
    assert "other not run: " + why in capsys.readouterr().err
    for command in (None, ["report", "--out", str(out)]):
        if command:
            assert cli.main(command) == 0
        page, md = (out / "report" / "index.html").read_text(), (out / "report" / "index.md").read_text()
        assert "<h2 id='left-out'>Not in this report</h2>" in page and "href='#left-out'" in page
        assert f"- other: {why}" in md and "## Not in this report" in md
        assert json.loads((out / "report" / "metadata.json").read_text())["left_out"] == {"other": why}


def test_the_regenerate_command_names_the_drawn_figures_with_backend_flags_only_where_one_offers_backends(
        tmp_path, monkeypatch):
    """``run`` refuses --backend where no figure offers one: a run recorded with one (twin, which offers it,
    beside fast) whose report draws fast alone (twin gone from the registry) regenerates as fast alone, without the
    flags; with twin drawn too, with them."""
    from reports import registry
    from reports._report import write_report
    from reports.verdict import HOLDS, Verdict
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", f"{FAST},tests.report_fixtures.other_units")
    (tmp_path / "run.json").write_text(json.dumps({"preset": "quick", "seed": 0, "ids": ["twin", "fast"],
                                                   "backend": {"backend": "torch", "device": "cpu"}}))

    def drawn(*modules):
        experiments = [registry.declared_by(m) for m in modules]
        return {e.ID: {"module": e, "info": {"files": [], "measured": "m.", "verdict": Verdict(HOLDS, "r")},
                       "meta": {}, "wall": 0.0} for e in experiments}

    write_report(tmp_path / "report", drawn(FAST), "quick")
    assert "Regenerate it with `sms-langevin run fast --preset quick --seed 0 --out OUT`" in \
        (tmp_path / "report" / "index.md").read_text()
    write_report(tmp_path / "report", drawn("tests.report_fixtures.backend_units", FAST), "quick")
    assert ("Regenerate it with `sms-langevin run twin fast --preset quick --seed 0 --backend torch --device cpu "
            "--out OUT`") in (tmp_path / "report" / "index.md").read_text()


def test_a_section_with_its_own_level_says_the_preset_alone():
    from experiments.bnn import EXPERIMENT as fig_bnn
    from experiments.weak_orders import EXPERIMENT as fig_weak_orders
    from reports import _report as report
    assert report.section_preset(fig_bnn, "tiny") == "tiny"
    assert report.section_preset(fig_weak_orders, "tiny") == "tiny (runs this section's quick level)"
    assert report.section_preset(fig_weak_orders, "full") == "full"


def _ensemble_rows(dataset, sms, swa, std, groups):
    return [{"dataset": dataset, "method": m, "size": 1, "metric": "nll", "mean": v, "std": std, "n_groups": groups}
            for m, v in (("SMS-UBU", sms), ("SWA", swa))]


@settings(max_examples=80, deadline=None)
@given(sms=st.floats(0.01, 3.0), swa=st.floats(0.01, 3.0), std=st.floats(0.0, 0.5), groups=st.integers(1, 64),
       testable=st.booleans())
def test_bnn_verdict_names_a_direction_only_where_the_run_tests_the_claim(sms, swa, std, groups, testable):
    from scipy.stats import t

    from experiments.bnn import ensemble_verdict
    from experiments.bnn._verdicts import MIN_DF
    text = ensemble_verdict(_ensemble_rows("d", sms, swa, std, groups), "d", 1, "nll", testable)
    assert text.startswith(f"nll {sms:.4f} vs SWA {swa:.4f} (")
    if not testable or groups - 1 < MIN_DF:  # too few runs, or too few degrees of freedom: no direction
        assert "no test" in text and "higher" not in text and "lower" not in text
        return
    half = t.isf(0.025, groups - 1) * (2 * std**2) ** 0.5 / groups**0.5
    word = "lower" if sms - swa < -half else "higher" if sms - swa > half else "not distinguishable"
    assert f"({word}:" in text and f"{groups - 1} d.f." in text and f"{groups} groups" in text


@settings(max_examples=60, deadline=None)
@given(counts=st.dictionaries(st.sampled_from(["digits", "xray", "xray_stratified", "cifar10"]),
                              st.integers(1, 70), min_size=1))
def test_bnn_section_says_when_its_preset_cannot_test_the_claim(counts):
    from experiments.bnn import MIN_RUNS_TO_TEST, too_small
    text = too_small("tiny", {d: [{}] * n for d, n in counts.items()})
    small = {d: n for d, n in counts.items() if d != "cifar10" and n < MIN_RUNS_TO_TEST}
    assert bool(text) == bool(small)
    if small:
        assert text.startswith("The tiny preset cannot test this claim: ")
        assert all(f"{n} run{'s' if n != 1 else ''}, {d}" in text for d, n in small.items())
