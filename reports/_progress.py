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


class Progress:
    """Units done / ``total`` of a run, written to ``stream`` (default standard error) after ``label``: a bar on
    a terminal, else lines at least ``every`` seconds apart (``clock``); ``enabled=False`` writes nothing."""

    def __init__(self, total: int, label: str = "", stream=None, enabled: bool | None = None,
                 every: float = LINE_EVERY, clock=None):
        self.total, self.done, self.label = total, 0, label
        self.stream = stream or sys.stderr
        self.enabled = True if enabled is None else enabled
        self.tty = _isatty(self.stream)
        self.every = every
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.last_line = None  # when the last line was written (not on a terminal)

    def advance(self, note: str = "") -> None:
        """Count one finished unit and report it, ``note`` (the figure and unit) beside the count."""
        self.done += 1
        if not self.enabled:
            return
        now = self.clock()
        elapsed = now - self.start
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        # the first units carry the kernels' compilation: no estimate from them alone
        left_text = f"~{left:.0f}s left" if self.done >= min(self.total, ESTIMATE_AFTER) else "time left: estimating"
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


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
