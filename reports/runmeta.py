"""What a persisted unit's result depends on: its fingerprint (run seed, unit seed, preset, code version).

A unit is reused (by ``run --resume`` or ``report``) only when its stored fingerprint equals the one
the current run would compute it with; otherwise it is recomputed (``run``) or refused (``report``)
with a message saying what differs.  The code version is a hash of the source files that compute
the unit: the figure's own module and every Python file of the computing packages
(:data:`COMPUTING_PACKAGES`); an edit to any of them makes earlier units stale, an edit to the
command line or the report does not.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPUTING_PACKAGES = ("integrators", "bias", "theory_checks", "bnn")


@functools.cache
def code_version(module_name: str) -> str:
    """SHA-256 (first 16 hex digits) of the unit module's source and the computing packages' sources."""
    module_file = Path(importlib.import_module(module_name).__file__).resolve()
    files = {module_file}
    for package in COMPUTING_PACKAGES:
        files.update(p.resolve() for p in (ROOT / package).rglob("*.py"))
    digest = hashlib.sha256()
    for path in sorted(files):
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def fingerprint(module_name: str, run_seed: int, unit_seed: int, preset: str) -> dict:
    """Everything that determines a unit's result besides the unit spec itself.

    Parameters
    ----------
    module_name : str
        The figure's module (its source and the computing packages' give the code version).
    run_seed, unit_seed : int
        The run's seed and the unit's seed derived from it.
    preset : str
        The preset the unit runs at.

    Returns
    -------
    dict
        ``run_seed``, ``unit_seed``, ``preset`` and ``code_version``.
    """
    return {"run_seed": run_seed, "unit_seed": unit_seed, "preset": preset,
            "code_version": code_version(module_name)}


def differences(stored: dict | None, wanted: dict) -> list[str]:
    """Human-readable ``name stored -> wanted`` for every fingerprint entry that differs.

    Parameters
    ----------
    stored : dict or None
        The stored fingerprint (None: unknown).
    wanted : dict
        The fingerprint the current run would compute the unit with.

    Returns
    -------
    list of str
        One ``"key stored (wanted value)"`` per differing entry; empty when they agree.
    """
    stored = stored or {}
    return [f"{key} {stored.get(key, 'unknown')} (wanted {value})"
            for key, value in wanted.items() if stored.get(key) != value]
