"""The claims table (theory_checks): every claim, measured, with a verdict."""

from __future__ import annotations

from pathlib import Path

from theory_checks import claims

ID = "claims"
TITLE = "Claims table: every claim of the design, measured"
CLAIM = "Every row states the paper's claim; a claim that fails is reported, never hidden."
COST = {"quick": "~15 s", "full": "~1 min"}


def units(preset: str) -> list[dict]:
    return [{"section": f.__name__} for f in claims.SECTIONS]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    section = {f.__name__: f for f in claims.SECTIONS}[unit["section"]]
    return {"rows": section(preset)}


def draw(results: list, out_dir: Path, preset: str) -> dict:
    rows = [r for _, res in results for r in res["rows"]]
    out_dir.mkdir(parents=True, exist_ok=True)
    claims.write_csv(rows, out_dir / "claims.csv")  # the report carries the run's metadata
    claims.write_markdown(rows, out_dir / "claims.md", preset)
    n_fail = sum(r["verdict"] == claims.FAILS for r in rows)
    return {"files": ["claims.md", "claims.csv"], "table": "claims.md",
            "measured": f"{len(rows)} claims measured; {n_fail} fail."}
