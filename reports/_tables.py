"""The one CSV writer of the reports: rows of dicts, columns in first-seen order or as given."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from integrators._files import write_atomic


def write_rows(path: Path, rows: list[dict], columns=None) -> Path:
    """Write ``rows`` (dicts; a key absent from a row is an empty cell) to ``path`` as CSV, under the header
    ``columns`` (None: the rows' keys in first-seen order).  A table with no rows needs its ``columns``: it is
    written as its header alone; a ``ValueError`` names ``path`` where it has neither, or a row holds a key
    that is not one of ``columns``."""
    path = Path(path)
    if columns is None and not rows:
        raise ValueError(f"{path.name}: a table with no rows needs its columns (the header its CSV is written with)")
    fields = list(dict.fromkeys(k for row in rows for k in row)) if columns is None else list(columns)
    extra = next((k for row in rows for k in row if k not in fields), None)
    if extra is not None:
        raise ValueError(f"{path.name}: a row holds {extra!r}, which is not one of its columns {fields}")
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields, restval="")
    writer.writeheader()
    writer.writerows(rows)
    return write_atomic(path, text.getvalue())  # a hard link there is replaced, never written through
