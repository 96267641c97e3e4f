"""Progress of a run on standard error: units done / total, time elapsed and left.

On a terminal, one bar redrawn in place; elsewhere (a log file, a pipe, ``make demo > log``) whole
lines, one per finished unit but at most one every :data:`LINE_EVERY` seconds, and always the first
and the last, so that a log shows the run advancing. A line's note (the unit just finished) is
written whole; the bar's, which must fit its field, is shortened at a word's end, never inside one."""

from __future__ import annotations

import sys
import time

LINE_EVERY = 5.0  # seconds between two lines in a log (a terminal's bar is redrawn at every unit)
ESTIMATE_AFTER = 4  # units finished before the time left is estimated (the first ones also compile)
NOTE_WIDTH = 40  # the bar's field for the note


def describe_unit(fid: str, unit) -> str:
    """A unit in words for a progress note: ``"conformance sampler=posteriors.sghmc target=default"``."""
    if isinstance(unit, dict):
        return " ".join([fid, *(f"{key}={value}" for key, value in unit.items())])
    return f"{fid} {unit}"


def fit_note(note: str, width: int = NOTE_WIDTH) -> str:
    """``note`` in at most ``width`` characters: whole, else its first words and ``"..."`` (a single
    word longer than the field is cut, the only case where a word is)."""
    if len(note) <= width:
        return note
    head = note[:width - 2]  # room for "..." after a space
    cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else note[:width - 3]).rstrip() + "..."


def interleave(kinds: list, first: int = 2) -> list[int]:
    """The order (indices into ``kinds``, each unit's kind in run order) that runs the first ``first`` units of
    every kind before the rest, each group in its given order, so that :class:`TimeLeft` times every kind early."""
    seen: dict = {}
    head, tail = [], []
    for i, kind in enumerate(kinds):
        seen[kind] = seen.get(kind, 0) + 1
        (head if seen[kind] <= first else tail).append(i)
    return head + tail


class TimeLeft:
    """The time left of a run from its units' durations, kind by kind (a kind: the figure).

    Each kind's units left are counted at the mean duration of its finished ones, leaving out its first
    once a later one is timed (the first compiles the kernels); the unit-seconds left are turned into
    wall seconds by the run's own ratio (elapsed over unit-seconds done, which covers parallel workers).
    There is no estimate until every kind with units left has two finished (or none left to run): an
    estimate from one kind's durations, or from a first unit alone, can be off by any factor.
    """

    def __init__(self, kinds: list):
        self.left = {}
        for kind in kinds:
            self.left[kind] = self.left.get(kind, 0) + 1
        self.seconds: dict = {kind: [] for kind in self.left}

    def record(self, kind, seconds: float) -> None:
        """Count one finished unit of ``kind`` that took ``seconds`` (its own compute time)."""
        self.left[kind] -= 1
        self.seconds[kind].append(float(seconds))

    def untimed(self) -> list:
        """The kinds with units left that have fewer than two finished units."""
        return [k for k, n in self.left.items() if n > 0 and len(self.seconds[k]) < 2]

    def estimate(self, elapsed: float) -> float | None:
        """Seconds left after ``elapsed`` wall seconds, or None until every kind left is timed."""
        done = sum(sum(v) for v in self.seconds.values())
        if self.untimed() or done <= 0:
            return None
        per_unit = {k: sum(v[1:]) / len(v[1:]) for k, v in self.seconds.items() if len(v) >= 2}
        work = sum(n * per_unit[k] for k, n in self.left.items() if n > 0)
        return work * elapsed / done


class Progress:
    """Units done / ``total`` of a run, written to ``stream`` (default standard error) after ``label``: a bar on
    a terminal, else lines at least ``every`` seconds apart (``clock``); ``enabled=False`` writes nothing."""

    def __init__(self, total: int, label: str = "", stream=None, enabled: bool | None = None,
                 every: float = LINE_EVERY, clock=None, kinds: list | None = None):
        self.total, self.done, self.label = total, 0, label
        self.time_left = TimeLeft(kinds) if kinds is not None else None  # None: from the count of units alone
        self.stream = stream or sys.stderr
        self.enabled = True if enabled is None else enabled
        self.tty = _isatty(self.stream)
        self.every = every
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.last_line = None  # when the last line was written (not on a terminal)

    def advance(self, note: str = "", *, kind=None, seconds: float | None = None) -> None:
        """Count one finished unit and report it, ``note`` (the figure and unit) beside the count; ``kind`` and
        ``seconds`` (its figure and duration) feed the estimate of a progress made with ``kinds``."""
        self.done += 1
        if self.time_left is not None:
            self.time_left.record(kind, seconds or 0.0)
        if not self.enabled:
            return
        now = self.clock()
        elapsed = now - self.start
        left_text = _left_text(self._left(elapsed))
        if self.tty:
            width = 28
            filled = int(width * self.done / max(self.total, 1))
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                              f"{elapsed:5.0f}s elapsed, {left_text} {fit_note(note):{NOTE_WIDTH}s}")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            due = self.last_line is None or now - self.last_line >= self.every or self.done >= self.total
            if not due:
                return
            self.last_line = now
            self.stream.write(f"{self.label} {self.done}/{self.total} units done, {elapsed:.0f}s elapsed, "
                              f"{left_text} (last: {note})\n")
        self.stream.flush()


    def _left(self, elapsed: float) -> float | None:
        if self.time_left is not None:
            return self.time_left.estimate(elapsed) if self.done < self.total else 0.0
        # the first units carry the kernels' compilation: no estimate from them alone
        if self.done < min(self.total, ESTIMATE_AFTER):
            return None
        return elapsed / self.done * (self.total - self.done)


def _left_text(left: float | None) -> str:
    return "time left: estimating" if left is None else f"~{left:.0f}s left"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
