"""The registry of figures and tables.

The experiment contract: each figure or table is one module (or package) of ``experiments`` with

    ID, TITLE, CLAIM           what it is and what the paper claims
    COST                       {"quick": "...", "full": "..."}: rough cost per preset
    PRESETS                    the presets it knows (``tiny``, the level of make demo, runs ``quick``
                               in a module that does not list it)
    units(preset)              the independent units of work (JSON-serializable dicts)
    run_unit(unit, preset, seed[, *, threads]) -> JSON-serializable result; ``threads`` (optional
                               keyword): the cores the unit may use, given by the executor (None
                               when the unit runs alone in its process), for the unit to pass on
                               to its backends and thread pools
    RESULT                     the structure of that result (:mod:`reports.schema`), checked before draw
    draw(results, preset) -> reports.drawing.Drawing   (figures, tables, texts, measured numbers)
    BACKENDS (optional)        kernels it offers (the command line adds them to its units)
    REQUIRES (optional)        modules of an optional extra that its units and runs import (the
                               module itself imports without them): :func:`lacking`
    LIBRARIES (optional)       other libraries' distributions it measures (their versions join
                               each unit's fingerprint: ``reports._runmeta``)
    missing_input(unit, preset) (optional)  why a unit's input data are absent, else None: asked
                               before the run starts (paths only), so absent data are said at once
    inputs(unit, preset) (optional)  what identifies a unit's input files (name, size): joins the
                               unit's fingerprint, so a unit computed on other data is stale
    ORDER (optional)           an integer literal: its place in the registry, ``list`` and the
                               report (modules without one come last, by name)

Nothing in it writes a file: the command line checks the preset (once, here and in
``cli_common``), runs and persists the units through the executor, and writes what ``draw``
returns (:func:`reports.drawing.write_drawing`), the metadata and the report.  A unit whose input
data is absent returns ``{"missing": why}``, and one that could not run here (a library not
installed) a dict with ``"skipped": why``: either is persisted so that the figure can say what is
absent, but never as done (``_unfinished``): ``--resume`` computes it again.  A run with a
missing-data unit ends with exit code 2 naming it.

Adding a figure is one module (or subpackage) of the ``experiments`` package that declares the
contract: the registry finds it (:func:`integrators.registry.discover`), with no list to edit.  A
member's ``units``, ``run_unit`` and ``draw`` carry a summary line: this docstring is their contract.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

from integrators.registry import discover

PRESETS = ("tiny", "quick", "full")
CONTRACT = ("ID", "TITLE", "CLAIM", "COST", "PRESETS", "RESULT", "units", "run_unit", "draw")
# the modules of the experiments package whose source declares the contract, in their ORDER
DEFAULT_MODULES = discover("experiments", CONTRACT)


def module_preset(mod, preset: str) -> str:
    """The preset a module runs at: ``tiny`` (the level of ``make demo``) is ``quick`` for every
    module without a ``tiny`` level of its own (``PRESETS`` in the module).

    Parameters
    ----------
    mod : module
        A figure or table module.
    preset : str
        The preset asked for.

    Returns
    -------
    str
        ``preset``, or ``"quick"`` where the module does not list it.
    """
    return preset if preset in mod.PRESETS else "quick"


def _module_names() -> tuple[str, ...]:
    """The registry's modules; ``SMS_LANGEVIN_REPORT_MODULES`` (comma-separated) replaces them
    (the tests use a small registry of fast units this way)."""
    env = os.environ.get("SMS_LANGEVIN_REPORT_MODULES")
    return tuple(m.strip() for m in env.split(",") if m.strip()) if env else DEFAULT_MODULES


def load() -> dict:
    """``{figure id: module}`` in registry order.

    Returns
    -------
    dict
        Each module imported, keyed by its ``ID``.

    Raises
    ------
    RuntimeError
        When a module lacks a name of the contract (:data:`CONTRACT`).
    """
    out = {}
    for name in _module_names():
        mod = importlib.import_module(name)
        for attr in CONTRACT:
            if not hasattr(mod, attr):
                raise RuntimeError(f"report module {name} lacks {attr}")
        out[mod.ID] = mod
    return out


def _absent_input(result) -> str | None:
    """Why a unit's input data was absent (its result ``{"missing": why}``), else None."""
    return str(result["missing"]) if isinstance(result, dict) and "missing" in result else None


def _unfinished(result) -> str | None:
    """Why a persisted unit is not done (its input data absent, or skipped for a library that is not
    installed), else None: such a unit is computed again by ``--resume``.

    Parameters
    ----------
    result
        A unit's result.

    Returns
    -------
    str or None
        The reason, or None for a finished unit.
    """
    if isinstance(result, dict) and "skipped" in result:
        return str(result["skipped"])
    return _absent_input(result)


# the optional extras of pyproject.toml ([project.optional-dependencies]) by the modules they provide
EXTRAS = {"torch": "torch", "jupytext": "tour", "nbclient": "tour", "nbconvert": "tour", "nbformat": "tour",
          "ipykernel": "tour", "jupyter_server_mathjax": "tour", "dask": "dask"}


def install_hint(module: str) -> str:
    """What to install for ``module``: its extra (:data:`EXTRAS`) where it has one.

    Parameters
    ----------
    module : str
        An importable name, e.g. ``"torch"``.

    Returns
    -------
    str
        ``"needs the torch extra: pip install 'sms-langevin[torch]'"``, or, for a module of no extra,
        ``"needs <module>, which is not installed"``.
    """
    extra = EXTRAS.get(module.split(".")[0])
    if extra is None:
        return f"needs {module}, which is not installed"
    return f"needs the {extra} extra: pip install 'sms-langevin[{extra}]'"


def lacking(mod) -> str | None:
    """What ``mod`` (a figure module, or any module declaring ``REQUIRES``) needs and this
    installation lacks, in words (``install_hint``), else None; nothing is imported.

    Parameters
    ----------
    mod : module
        A module with an optional ``REQUIRES``: the top-level names its work imports.

    Returns
    -------
    str or None
        The hint for the first absent name, or None when every one is installed.
    """
    for name in getattr(mod, "REQUIRES", ()):
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # an import hook that refuses the name
            found = False
        if not found:
            return install_hint(name)
    return None


def runnable(figures: dict, ids) -> tuple[list[str], str | None]:
    """The figures of ``ids`` this installation can run, and one line naming the others and what
    they need (None when all can run).

    Parameters
    ----------
    figures : dict
        The registry ``{id: module}`` (:func:`load`).
    ids : sequence of str
        Selected ids, each a key of ``figures``.

    Returns
    -------
    ids : list of str
        Those whose ``REQUIRES`` are installed, in order.
    note : str or None
        E.g. ``"bnn not run: needs the torch extra: pip install 'sms-langevin[torch]'"``.
    """
    needs = {fid: lacking(figures[fid]) for fid in ids}
    left_out = [fid for fid in ids if needs[fid]]
    if not left_out:
        return list(ids), None
    hints = dict.fromkeys(needs[fid] for fid in left_out)  # one hint per extra, in order
    return [fid for fid in ids if not needs[fid]], f"{', '.join(left_out)} not run: {'; '.join(hints)}"
