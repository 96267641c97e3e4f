"""A second fixture figure (two trivial units, no sampler) so the tests can run one figure of two."""

from __future__ import annotations

from pathlib import Path

ID = "other"
TITLE = "Other fixture figure"
CLAIM = "A second tiny figure used by the tests."
COST = {"quick": "~0 s", "full": "~0 s"}


def units(preset: str) -> list[dict]:
    return [{"i": i} for i in range(2)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    return {"value": unit["i"] + seed % 7}


def draw(results: list, out_dir: Path, preset: str) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "other.csv").write_text("i,value\n" + "".join(f"{u['i']},{r['value']}\n" for u, r in results))
    return {"files": ["other.csv"], "measured": f"{len(results)} units."}
