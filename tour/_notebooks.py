"""Where the tour's notebooks live and in which order: the files ``docs/tour/NN_name.py`` are the
registry (their two-digit prefix is the order), so adding a notebook is adding a file.  An installed
package carries the same files as ``tour/sources/`` (``pyproject.toml`` maps that package folder
to ``docs/tour``)."""

from __future__ import annotations

from pathlib import Path

_INSTALLED = Path(__file__).resolve().parent / "sources"  # in site-packages: the wheel's copy
NOTEBOOK_DIR = _INSTALLED if _INSTALLED.is_dir() else Path(__file__).resolve().parents[1] / "docs" / "tour"


def notebooks(names=None) -> list[Path]:
    """The notebook sources in order; ``names`` (stems or their two-digit prefixes, e.g. ``"02"``)
    selects some of them and raises ``ValueError`` naming one that matches none.

    Parameters
    ----------
    names : sequence of str, optional
        Notebooks to select; None or empty: all of them.

    Returns
    -------
    list of Path
        The selected sources, in the tour's order.

    Raises
    ------
    ValueError
        When a name matches no notebook, or when no source is found at all (an installation
        without the tour's files): never an empty tour.
    """
    found = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
    if not found:
        raise ValueError(f"the tour's notebook sources are not installed (no NN_*.py in {NOTEBOOK_DIR}); "
                         f"reinstall sms-langevin, or run the tour from a clone of its repository")
    if not names:
        return found
    chosen = []
    for name in names:
        match = [p for p in found if p.stem == name or p.stem.split("_", 1)[0] == name]
        if not match:
            raise ValueError(f"no tour notebook {name!r}; known: {', '.join(p.stem for p in found)}")
        chosen += [p for p in match if p not in chosen]
    return chosen
