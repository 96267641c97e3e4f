"""Persisted unit results: one JSON file per finished unit, written atomically.

``<out>/units/<figure id>/<unit key>.json`` holds ``{"key", "unit", "result", "meta", "checksum"}``;
the checksum (SHA-256 of the canonical JSON of key, unit, result and meta) detects a corrupt or
truncated file, which is then recomputed, never silently reused.  ``meta["fingerprint"]``
(:mod:`reports.runmeta`) says what the result depends on; :meth:`Store.load` given the wanted
fingerprint raises :class:`StaleUnit` when it differs.

A run holds ``<out>/.lock`` (an advisory ``flock``, released by the OS even when the run is
killed) for as long as it writes there; a second run into the same folder is refused
(:class:`Busy`), so it can neither interleave units nor delete the first run's temporary files.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path

from reports.runmeta import differences


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


def _checksum(key, unit, result, meta) -> str:
    canon = json.dumps([key, unit, result, meta], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


class CorruptUnit(Exception):
    pass


class StaleUnit(Exception):
    """A readable unit computed with another seed, preset or code version than the one wanted."""


class Busy(Exception):
    """Another run holds the output folder's lock."""


class FolderLock:
    """``with FolderLock(out):`` holds ``out/.lock`` exclusively or raises :class:`Busy` at once."""

    def __init__(self, out: Path | str):
        self.path = Path(out) / ".lock"
        self.fh = None

    def __enter__(self):
        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "unknown"
            self.fh.close()
            raise Busy(f"another sms-langevin process (pid {holder}) is writing to {self.path.parent}; "
                       f"wait for it to finish or use another --out") from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"{os.getpid()}\n")
        self.fh.flush()
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
        self.fh.close()


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
                   "checksum": _checksum(key, unit, result, meta)}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
        return path

    def _payload(self, figure_id: str, unit: dict) -> dict | None:
        path = self.path(figure_id, unit)
        if not path.exists():
            return None
        try:
            payload = json.loads(path.read_text())
            ok = payload["checksum"] == _checksum(payload["key"], payload["unit"], payload["result"],
                                                  payload["meta"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CorruptUnit(f"{path}: unreadable ({exc.__class__.__name__})") from None
        if not ok or payload["unit"] != unit or not isinstance(payload["meta"], dict):
            raise CorruptUnit(f"{path}: checksum mismatch")
        return payload

    def load(self, figure_id: str, unit: dict, fingerprint: dict | None = None):
        """The stored result, ``None`` if absent; raises :class:`CorruptUnit` if unreadable and
        :class:`StaleUnit` if ``fingerprint`` is given and the stored one differs from it."""
        payload = self._payload(figure_id, unit)
        if payload is None:
            return None
        if fingerprint is not None:
            diff = differences(payload["meta"].get("fingerprint"), fingerprint)
            if diff:
                raise StaleUnit(f"{self.path(figure_id, unit)} was computed with " + ", ".join(diff))
        return payload["result"]

    def remove_stale_temporaries(self) -> int:
        """Delete the temporary files of writes a killed run left behind; return how many."""
        stale = list(self.root.rglob(".tmp-*")) if self.root.exists() else []
        for path in stale:
            path.unlink(missing_ok=True)
        return len(stale)

    def meta(self, figure_id: str, unit: dict) -> dict:
        payload = self._payload(figure_id, unit)
        return {} if payload is None else payload["meta"]
