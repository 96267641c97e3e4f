"""The registry of figures and tables.

Each figure or table is one module in ``reports/`` with

    ID, TITLE, CLAIM           what it is and what the paper claims
    COST                       {"quick": "...", "full": "..."}: rough cost per preset
    units(preset)              the independent units of work (JSON-serializable dicts)
    run_unit(unit, preset, seed) -> JSON-serializable result
    draw(results, out_dir, preset) -> {"files": [...], "measured": "..."}
    PRESETS (optional)         the presets it knows (default quick, full; ``tiny`` maps to quick)

A unit whose input data is absent returns ``{"missing": why}``: it is persisted (the figure says
what is absent), recomputed by ``--resume``, and the run ends with exit code 2 naming it.

so adding a figure touches one file (and the list below).
"""

from __future__ import annotations

import importlib
import os

DEFAULT_MODULES = ("reports.fig_demo", "reports.fig_weak_orders", "reports.fig1_wasserstein", "reports.fig_logistic",
                   "reports.fig_ghmc", "reports.fig_conformance", "reports.fig_bnn", "reports.tab_claims")
PRESETS = ("tiny", "quick", "full")
MODULE_PRESETS = ("quick", "full")  # what a module handles unless it declares PRESETS


def module_preset(mod, preset: str) -> str:
    """The preset a module runs at: ``tiny`` (the level of ``make demo``) is ``quick`` for every
    module without a ``tiny`` level of its own (``PRESETS`` in the module)."""
    own = getattr(mod, "PRESETS", MODULE_PRESETS)
    return preset if preset in own else "quick"


def module_names() -> tuple[str, ...]:
    """The registry's modules; ``SMS_LANGEVIN_REPORT_MODULES`` (comma-separated) replaces them
    (the tests use a small registry of fast units this way)."""
    env = os.environ.get("SMS_LANGEVIN_REPORT_MODULES")
    return tuple(m.strip() for m in env.split(",") if m.strip()) if env else DEFAULT_MODULES


def load() -> dict:
    """``{figure id: module}`` in registry order."""
    out = {}
    for name in module_names():
        mod = importlib.import_module(name)
        for attr in ("ID", "TITLE", "CLAIM", "COST", "units", "run_unit", "draw"):
            if not hasattr(mod, attr):
                raise RuntimeError(f"report module {name} lacks {attr}")
        out[mod.ID] = mod
    return out


def absent_input(result) -> str | None:
    """Why a unit's input data was absent (its result ``{"missing": why}``), else None."""
    return str(result["missing"]) if isinstance(result, dict) and "missing" in result else None
