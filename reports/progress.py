"""A progress bar on standard error: units done / total and time left; silent when not a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str = "", stream=None, enabled: bool | None = None):
        self.total, self.done, self.label = total, 0, label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.time()

    def advance(self, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.time() - self.start
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        width = 28
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                          f"{elapsed:5.0f}s elapsed, ~{left:4.0f}s left {note[:40]:40s}")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()
