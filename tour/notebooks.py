"""Where the tour's notebooks live and in which order: the files ``docs/tour/NN_name.py`` are the
registry (their two-digit prefix is the order), so adding a notebook is adding a file."""

from __future__ import annotations

from pathlib import Path

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "docs" / "tour"


def notebooks(names=None) -> list[Path]:
    """The notebook sources in order; ``names`` (stems or their two-digit prefixes, e.g. ``"02"``)
    selects some of them and raises ``ValueError`` naming one that matches none."""
    found = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
    if not names:
        return found
    chosen = []
    for name in names:
        match = [p for p in found if p.stem == name or p.stem.split("_", 1)[0] == name]
        if not match:
            raise ValueError(f"no tour notebook {name!r}; known: {', '.join(p.stem for p in found)}")
        chosen += [p for p in match if p not in chosen]
    return chosen
