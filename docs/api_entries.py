"""The API pages' module entries: ``::: package.*`` on a page of ``docs/api/`` stands for one
``::: module`` entry per public module of ``package`` (its ``.py`` files and subpackages whose names do
not start with ``_``, by name). A registry's package (schemes, plans, figures, adapters) is listed so:
a new member file is on its page with no edit. Read by ``docs/hooks.py`` when the site is built and
by the docstring tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = re.compile(r"^:::\s*([\w.]+)\s*$")
MEMBERS = re.compile(r"^:::\s*([\w.]+)\.\*\s*$")


def public_members(package: str, root: Path = ROOT) -> list[str]:
    """The public modules directly inside ``package`` (dotted names), by name."""
    folder = root.joinpath(*package.split("."))
    if not (folder / "__init__.py").is_file():
        raise ValueError(f"::: {package}.*: {folder} is not a package")
    names = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
    names += [d.name for d in folder.iterdir() if (d / "__init__.py").is_file()]
    return [f"{package}.{name}" for name in sorted(names) if not name.startswith("_") and name.isidentifier()]


def expand(markdown: str, root: Path = ROOT) -> str:
    """``markdown`` with every ``::: package.*`` line replaced by the entries of :func:`public_members`."""
    lines = []
    for line in markdown.splitlines():
        found = MEMBERS.match(line)
        if found is None:
            lines.append(line)
            continue
        for module in public_members(found.group(1), root):
            lines += [f"::: {module}", ""]
    return "\n".join(lines) + ("\n" if markdown.endswith("\n") else "")
