"""The command that installs one of the project's extras from where the user stands.

The project is on no package index, so ``pip install 'sms-langevin[torch]'`` works nowhere; what
works depends on how the running code got here. Every message that names an extra (``torch``,
``tour``, ``dask``, ``adapters``) takes its command from :func:`install_command`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "sms-langevin"
SOURCE_ROOT = Path(__file__).resolve().parents[1]  # the checkout's root when the code runs from one


def is_source_tree(folder) -> bool:
    """Whether ``folder`` holds this project's ``pyproject.toml`` (a clone or an unpacked source)."""
    try:
        return tomllib.loads((Path(folder) / "pyproject.toml").read_text())["project"]["name"] == DISTRIBUTION
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _installed_from() -> tuple[Path | None, bool]:
    """The local folder the installed distribution was built from (PEP 610's ``direct_url.json``)
    and whether it was an editable install; ``(None, False)`` where unknown."""
    try:
        text = importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        record = json.loads(text or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None, False
    url = urlparse(record.get("url", ""))
    if url.scheme != "file":
        return None, False
    return Path(unquote(url.path)), bool(record.get("dir_info", {}).get("editable"))


def _requirements(extra: str) -> list[str]:
    """The installed distribution's requirements of ``extra`` (from its metadata), else ``[]``."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [r.split(";")[0].strip() for r in requires if marker in r.replace("'", '"')]


def install_command(extra: str, *, cwd=None) -> str:
    """The ``pip`` command that installs ``extra`` for the code that is running, seen from ``cwd``
    (default: the working folder), the first that applies of:

    1. the code runs from a source tree (a clone, editable or on ``PYTHONPATH``):
       ``pip install -e '.[extra]'`` (the tree's path where ``cwd`` is elsewhere);
    2. it was installed from a local folder that still holds the source: ``pip install '<folder>[extra]'``
       (``.`` where that is ``cwd``), with ``-e`` for an editable install;
    3. ``cwd`` is a source tree of the project: ``pip install '.[extra]'``;
    4. the extra's own requirements, read from the installed metadata;
    5. ``pip install 'sms-langevin[extra]'`` (an index that carries the project).
    """
    here = Path.cwd() if cwd is None else Path(cwd)

    def spec(folder: Path) -> str:
        where = "." if folder.resolve() == here.resolve() else os.fspath(folder)
        return shlex.quote(f"{where}[{extra}]")

    if is_source_tree(SOURCE_ROOT):
        return f"pip install -e {spec(SOURCE_ROOT)}"
    folder, editable = _installed_from()
    if folder is not None and is_source_tree(folder):
        return f"pip install {'-e ' if editable else ''}{spec(folder)}"
    if is_source_tree(here):
        return f"pip install {spec(here)}"
    requirements = _requirements(extra)
    if requirements:
        return "pip install " + " ".join(shlex.quote(r) for r in requirements)
    return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
