"""The one CSV writer of the reports: rows of dicts, columns in first-seen order."""

from __future__ import annotations

import csv
from pathlib import Path


def write_rows(path: Path, rows: list[dict]) -> Path:
    """Write ``rows`` (dicts; a key absent from a row is an empty cell) to ``path`` as CSV."""
    path = Path(path)
    fields = list(dict.fromkeys(k for row in rows for k in row)) or ["empty"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path
