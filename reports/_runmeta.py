"""What a persisted unit's result depends on: its fingerprint (run seed, unit seed, preset, code version,
and the versions of the other libraries the figure measures).

A unit is reused by ``run --resume`` only when its stored fingerprint equals the one the current run
would compute it with; otherwise it is recomputed, with a message saying what differs.  ``report``
holds a unit to the same fingerprint less the measured libraries' versions (:func:`drawable`): a unit
of another seed, preset, code or input is refused, but one computed before a library was installed or
upgraded is drawn as it was computed, and the report says so (:func:`library_changes`).

The code version is a hash of the source files that compute the unit: the figure's own module and
every Python file of the computing packages (:data:`COMPUTING_PACKAGES`); an edit to any of them makes
earlier units stale, an edit to the command line or the report does not.  A figure that measures other
libraries names their distributions in ``LIBRARIES`` (optional in its
:class:`reports.registry.Experiment`); their installed versions, or ``"not installed"``, join the
fingerprint, so installing or upgrading one makes its units stale for ``run --resume``; likewise what
a figure's ``inputs(unit, preset)`` says of a unit's input files (stale for both commands).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
from pathlib import Path

from integrators._files import source_bytes
from integrators._validation import shown

ROOT = Path(__file__).resolve().parents[1]
COMPUTING_PACKAGES = ("integrators", "data_sets", "bias", "theory_checks", "bnn")


@functools.cache
def code_version(module_name: str) -> str:
    """SHA-256 (first 16 hex digits) of the unit module's source and the computing packages' sources."""
    module_file = Path(importlib.import_module(module_name).__file__).resolve()
    files = {module_file}
    for package in COMPUTING_PACKAGES:
        files.update(p.resolve() for p in (ROOT / package).rglob("*.py"))
    digest = hashlib.sha256()
    for path in sorted(files):
        if (text := source_bytes(path)) is not None:
            rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            digest.update(str(rel).encode() + b"\0" + text + b"\0")
    return digest.hexdigest()[:16]


def library_versions(module_name: str) -> dict:
    """``{distribution: version or "not installed"}`` of the figure module's ``LIBRARIES`` (from installed
    metadata, not imported); empty where it declares none."""
    names = importlib.import_module(module_name).EXPERIMENT.LIBRARIES
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def fingerprint(module_name: str, run_seed: int, unit_seed: int, preset: str, *, inputs: dict | None = None) -> dict:
    """Everything besides the unit spec that determines a unit's result: ``run_seed``, ``unit_seed``,
    ``preset``, ``code_version``, and where they apply ``libraries`` (:func:`library_versions`) and ``inputs``
    (what identifies the unit's input files, so a unit computed on other data is stale)."""
    out = {"run_seed": run_seed, "unit_seed": unit_seed, "preset": preset, "code_version": code_version(module_name)}
    libraries = library_versions(module_name)
    if libraries:
        out["libraries"] = libraries
    if inputs:
        out["inputs"] = inputs
    return out


def shortened(value) -> str:
    """A stored value as said in a message, cut where long (a forged one of thousands of digits or hundreds of
    nested lists) by :func:`integrators._validation.shown`."""
    return str(value) if len(str(value)) <= 80 else shown(value)


def differences(stored: dict | None, wanted: dict) -> list[str]:
    """One ``"key stored (wanted value)"`` per fingerprint entry that differs between ``stored`` (None:
    unknown) and ``wanted``; empty when they agree."""
    stored = stored or {}
    return [f"{key} {shortened(stored.get(key, 'unknown'))} (wanted {shortened(value)})"
            for key, value in wanted.items() if stored.get(key) != value]


def drawable(wanted: dict) -> dict:
    """The part of a fingerprint ``wanted`` that ``report`` holds a stored unit to: all of it but the measured
    libraries' versions.  A unit computed with other versions is still this code's result for this seed,
    preset and input, so it is drawn (and said to be), while ``run --resume`` recomputes it."""
    return {key: value for key, value in wanted.items() if key != "libraries"}


def library_changes(stored: dict | None, wanted: dict) -> list[str]:
    """One ``"<library> <stored version> (now <installed version>)"`` per measured library whose version
    differs between a unit's ``stored`` fingerprint and ``wanted``; empty when they agree."""
    before = (stored or {}).get("libraries") or {}
    if not isinstance(before, dict):  # a hand-edited fingerprint: every library counts as changed
        before = {}
    return [f"{name} {shortened(before.get(name, 'unknown'))} (now {version})"
            for name, version in (wanted.get("libraries") or {}).items() if before.get(name) != version]
