"""The claims table (theory_checks): every claim, measured, with a verdict."""

from __future__ import annotations

from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import TEXT, ListOf, Record
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict
from theory_checks import _claims as claims

ORDER = 80  # its place in the registry, the list and the report


def units(preset: str) -> list[dict]:
    """The independent units of work of the claims table: one per section (``{"section": name}``)."""
    return [{"section": f.__name__} for f in claims.SECTIONS]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    """Compute one unit: the section's rows, each claim measured with its verdict."""
    section = {f.__name__: f for f in claims.SECTIONS}[unit["section"]]
    return {"rows": section(preset)}


def _counts(rows: list[dict]) -> str:
    """The rows measured, the claims among them and how many hold, in one phrase (the measured line and
    the verdict's numbers say the same)."""
    judged = [r for r in rows if r["verdict"] != claims.NOT_ASSERTED]
    held = sum(r["verdict"] != claims.FAILS for r in judged)
    hold = "all hold" if held == len(judged) > 1 else f"{held} hold{'s' if held == 1 else ''}"
    return (f"{len(rows)} row{'s' if len(rows) != 1 else ''} measured: {len(judged)} claim"
            f"{'s' if len(judged) != 1 else ''}, {hold}; {len(rows) - len(judged)} without a claim")


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the claims table: its figures, tables and measured numbers."""
    rows = [r for _, res in results for r in res["rows"]]
    return Drawing(measured=f"{_counts(rows)}.", tables={"claims": rows},
                   texts={"claims.md": claims.markdown(rows, preset)}, table="claims.md")


def verdict(results: list, preset: str) -> Verdict:
    """Every claim row's own verdict taken together: does not hold if a row fails, holds otherwise
    (rows measured without a claim do not count)."""
    rows = [r for _, res in results for r in res["rows"]]
    failed = [r["claim"] for r in rows if r["verdict"] == claims.FAILS]
    judged = [r for r in rows if r["verdict"] != claims.NOT_ASSERTED]
    numbers = _counts(rows)
    if failed:
        return Verdict(DOES_NOT_HOLD, f"{len(failed)} claim{'s' if len(failed) != 1 else ''} fail: {'; '.join(failed)}",
                       numbers)
    if not judged:
        return Verdict(NOT_TESTABLE, "no row of this run carries a claim", numbers)
    return Verdict(HOLDS, "no claim of the table fails (each row's rule is given under the table)", numbers)


EXPERIMENT = Experiment(
    ID="claims",
    TITLE="Claims table: every claim of the design, measured",
    CLAIM="Every row states the paper's claim; a claim that fails is reported, never hidden.",
    COST={"quick": "~10 s (~45 s the first time: it compiles every scheme x plan kernel)", "full": "~1 min"},
    PRESETS=tuple(claims.PRESETS),  # tiny runs the quick table
    RESULT=Record(rows=ListOf(Record(claim=TEXT, expected=TEXT, measured=TEXT, uncertainty=TEXT, verdict=TEXT,
                                     source=TEXT, command=TEXT))),
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT"]
