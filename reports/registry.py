"""The registry of figures and tables.

The experiment contract: each figure or table is one module with

    ID, TITLE, CLAIM           what it is and what the paper claims
    COST                       {"quick": "...", "full": "..."}: rough cost per preset
    PRESETS                    the presets it knows (``tiny``, the level of make demo, runs ``quick``
                               in a module that does not list it)
    units(preset)              the independent units of work (JSON-serializable dicts)
    run_unit(unit, preset, seed) -> JSON-serializable result
    draw(results, preset) -> reports.drawing.Drawing   (figures, tables, texts, measured numbers)
    BACKENDS (optional)        kernels it offers (the command line adds them to its units)

Nothing in it writes a file: the command line checks the preset (once, here and in
``cli_common``), runs and persists the units through the executor, and writes what ``draw``
returns (:func:`reports.drawing.write_drawing`), the metadata and the report.  A unit whose input
data is absent returns ``{"missing": why}``: it is persisted (the figure says what is absent),
recomputed by ``--resume``, and the run ends with exit code 2 naming it.

Adding a figure is one module and its name in :data:`DEFAULT_MODULES`.
"""

from __future__ import annotations

import importlib
import os

DEFAULT_MODULES = ("reports.fig_demo", "reports.fig_weak_orders", "reports.fig1_wasserstein", "reports.fig_logistic",
                   "reports.fig_ghmc", "reports.fig_conformance", "reports.fig_bnn", "reports.tab_claims")
PRESETS = ("tiny", "quick", "full")
CONTRACT = ("ID", "TITLE", "CLAIM", "COST", "PRESETS", "units", "run_unit", "draw")


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


def module_names() -> tuple[str, ...]:
    """The registry's modules; ``SMS_LANGEVIN_REPORT_MODULES`` (comma-separated) replaces them
    (the tests use a small registry of fast units this way).

    Returns
    -------
    tuple of str
        The module names, in registry order.
    """
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
    for name in module_names():
        mod = importlib.import_module(name)
        for attr in CONTRACT:
            if not hasattr(mod, attr):
                raise RuntimeError(f"report module {name} lacks {attr}")
        out[mod.ID] = mod
    return out


def absent_input(result) -> str | None:
    """Why a unit's input data was absent (its result ``{"missing": why}``), else None.

    Parameters
    ----------
    result
        A unit's result.

    Returns
    -------
    str or None
        The reason, or None when the result is not a missing-input marker.
    """
    return str(result["missing"]) if isinstance(result, dict) and "missing" in result else None
