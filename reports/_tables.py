"""The one CSV writer of the reports: rows of dicts, columns in first-seen order."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from integrators._files import write_atomic


def write_rows(path: Path, rows: list[dict]) -> Path:
    """Write ``rows`` (dicts; a key absent from a row is an empty cell) to ``path`` as CSV."""
    path = Path(path)
    fields = list(dict.fromkeys(k for row in rows for k in row)) or ["empty"]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields, restval="")
    writer.writeheader()
    writer.writerows(rows)
    return write_atomic(path, text.getvalue())  # a hard link there is replaced, never written through
