"""Persisted unit results: one JSON file per finished unit, written atomically.

``<out>/units/<figure id>/<unit key>.json`` holds ``{"key", "unit", "result", "meta", "checksum"}``;
the checksum (SHA-256 of the canonical JSON of key, unit and result) detects a corrupt or
truncated file, which is then recomputed, never silently reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path


def unit_key(unit: dict) -> str:
    """A stable file-name-safe key for a unit spec."""
    canon = json.dumps(unit, sort_keys=True, separators=(",", ":"))
    readable = "-".join(f"{v}" for _, v in sorted(unit.items()))
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in readable)[:60]
    return f"{safe}-{hashlib.sha256(canon.encode()).hexdigest()[:10]}"


def unit_seed(run_seed: int, figure_id: str, unit: dict) -> int:
    """Per-unit seed derived from the run seed and the unit alone (not from where or when it runs)."""
    canon = json.dumps([run_seed, figure_id, unit], sort_keys=True)
    return int(hashlib.sha256(canon.encode()).hexdigest()[:8], 16)


def _checksum(key, unit, result) -> str:
    canon = json.dumps([key, unit, result], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


class CorruptUnit(Exception):
    pass


class Store:
    def __init__(self, out: Path | str):
        self.root = Path(out) / "units"

    def path(self, figure_id: str, unit: dict) -> Path:
        return self.root / figure_id / f"{unit_key(unit)}.json"

    def save(self, figure_id: str, unit: dict, result, meta: dict) -> Path:
        path = self.path(figure_id, unit)
        path.parent.mkdir(parents=True, exist_ok=True)
        key = unit_key(unit)
        payload = {"key": key, "unit": unit, "result": result, "meta": meta,
                   "checksum": _checksum(key, unit, result)}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
        return path

    def load(self, figure_id: str, unit: dict):
        """The stored result, ``None`` if absent; raises :class:`CorruptUnit` if unreadable."""
        path = self.path(figure_id, unit)
        if not path.exists():
            return None
        try:
            payload = json.loads(path.read_text())
            ok = payload["checksum"] == _checksum(payload["key"], payload["unit"], payload["result"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CorruptUnit(f"{path}: unreadable ({exc.__class__.__name__})") from None
        if not ok or payload["unit"] != unit:
            raise CorruptUnit(f"{path}: checksum mismatch")
        return payload["result"]

    def remove_stale_temporaries(self) -> int:
        """Delete the temporary files of writes a killed run left behind; return how many."""
        stale = list(self.root.rglob(".tmp-*")) if self.root.exists() else []
        for path in stale:
            path.unlink(missing_ok=True)
        return len(stale)

    def meta(self, figure_id: str, unit: dict) -> dict:
        return json.loads(self.path(figure_id, unit).read_text())["meta"]
