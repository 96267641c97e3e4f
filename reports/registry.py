"""The registry of figures and tables.

Each figure or table is one module (or package) of ``experiments`` that declares one
:class:`Experiment` as ``EXPERIMENT`` (its contract: what it is, its presets, its units, the
function that runs one unit and the one that draws their results).  Nothing in it writes a file:
the command line checks the preset (once, here and in ``cli_common``), runs and persists the
units through the executor, and writes what ``draw`` returns (:func:`reports.drawing.write_drawing`),
the metadata and the report.  A unit whose input data is absent returns ``{"missing": why}``, and
one that could not run here (a library not installed) a dict with ``"skipped": why``: either is
persisted so that the figure can say what is absent (its ``RESULT`` declares it: ``reports.schema.MISSING``,
``SKIPPED``), but never as done (``_unfinished``):
``--resume`` computes it again.  A run with a missing-data unit ends with exit code 2 naming it.

Adding a figure is one module (or subpackage) of the ``experiments`` package that declares
``EXPERIMENT = Experiment(...)``: the registry finds it (:func:`integrators.registry.discover`), with
no list to edit.  An integer literal ``ORDER`` beside it, read from the source, sets its place in
the registry, ``list`` and the report (modules without one come last, by name).  The functions
such a module defines (its ``units``, ``run_unit``, ``draw``, ...) carry a summary line:
:class:`Experiment`'s docstring is their contract.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from integrators._options import set_fields
from integrators._validation import ListOf as ListOfValues
from integrators._validation import check_parameters, instance_of, optional
from integrators.registry import discover
from reports.schema import ANY, Schema

PRESETS = ("tiny", "quick", "full")
CONTRACT = ("EXPERIMENT",)
# names a figure's ID may not take: the command line's word for every figure, and the report's own parts
# (``report/tour``, written by ``sms-langevin tour``, and the run metadata's section), which share the
# namespace of a figure's folder and anchor
RESERVED_IDS = {"all": "the command line's name for every figure",
                "tour": "the report's folder and section of the guided tour",
                "metadata": "the report's section of the run metadata"}
_DEFAULT_MODULES: tuple[str, ...] | None = None


def default_modules() -> tuple[str, ...]:
    """The modules of the experiments package whose source declares an EXPERIMENT, in their ORDER (also
    ``registry.DEFAULT_MODULES``).

    Found on first use, not on import, so a module there that cannot be read (a syntax error, not
    UTF-8, a bad ``ORDER``) is a :class:`RegistryError` naming it, in the command's one-line error,
    not a traceback of every command.

    Returns
    -------
    tuple of str
        The modules' full names, in report order.

    Raises
    ------
    RegistryError
        If a module of the package cannot be read or declares a bad ``ORDER``.
    """
    global _DEFAULT_MODULES
    if _DEFAULT_MODULES is None:
        try:
            _DEFAULT_MODULES = discover("experiments", CONTRACT)
        except ValueError as exc:
            raise RegistryError(f"report module {exc}") from None
    return _DEFAULT_MODULES


def __getattr__(name):
    if name == "DEFAULT_MODULES":
        return default_modules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_TEXT = instance_of(str, "a string")
_NAMES = ListOfValues(_TEXT, unique=True)
_FUNCTION = instance_of(Callable, "a function")


def _example_units(preset):
    return [{"k": 1}]


def _example_run_unit(unit, preset, seed):
    return {"value": 1.0}


def _example_draw(results, preset):
    from reports.drawing import Drawing
    return Drawing(measured="")


@dataclass(frozen=True, eq=False)
class Experiment:
    """One figure or table of the report: the experiment contract, declared once per module of
    ``experiments`` as ``EXPERIMENT = Experiment(...)``.

    The fields are checked against :attr:`CONSTRAINTS` when the object is made.

    Parameters
    ----------
    ID : str
        Its id (the command line's name for it, its folder in the report and the store).
    TITLE : str
        What it is, in one line (the report's section title).
    CLAIM : str
        What the paper claims that it measures.
    COST : dict
        ``{preset: rough cost in words}``, one entry per preset of ``PRESETS``.
    PRESETS : tuple of str
        The presets it knows; ``tiny`` (the level of ``make demo``) runs ``quick`` where it is not
        listed (:func:`module_preset`).
    RESULT : reports.schema.Schema
        The structure of a unit's result, checked before ``draw``; a unit that may end unfinished
        declares that form too (``OneOf(Record(...), MISSING)``).
    units : callable
        ``units(preset) -> list of dict``: the independent units of work (JSON-serializable).
    run_unit : callable
        ``run_unit(unit, preset, seed[, *, threads]) -> dict``: one unit's JSON-serializable
        result.  ``threads`` (optional keyword): the cores the unit may use, given by the
        executor (None when the unit runs alone in its process), for the unit to pass on to its
        backends and thread pools.
    draw : callable
        ``draw(results, preset) -> reports.drawing.Drawing`` (figures, tables, texts, measured
        numbers) from the ``(unit, result)`` pairs.
    verdict : callable or None, default None
        ``verdict(results, preset) -> reports.verdict.Verdict``: how its claim is judged from the same
        pairs (holds, does not hold, not testable at this preset, with the reason and the numbers).  The
        report prints it atop the section, in the contents and in the claims section; a figure that
        declares none says so there.  Every figure of ``experiments`` declares one.
    BACKENDS : tuple of str, default ()
        The kernels it offers (the command line adds the chosen one to its units).
    REQUIRES : tuple of str, default ()
        Modules of an optional extra that its units and runs import (the module itself imports
        without them): :func:`lacking`.
    LIBRARIES : tuple of str, default ()
        Other libraries' distributions it measures (their versions join each unit's fingerprint:
        ``reports._runmeta``).
    missing_input : callable or None, default None
        ``missing_input(unit, preset) -> str or None``: why a unit's input data are absent, asked
        before the run starts (paths only), so absent data are said at once.
    inputs : callable or None, default None
        ``inputs(unit, preset) -> dict or None``: what identifies a unit's input files (name,
        size); joins the unit's fingerprint, so a unit computed on other data is stale.
    module : str or None, default None
        The module that declares it (its units run and are fingerprinted by that name);
        :func:`load` fills it in.

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each checked field (:mod:`integrators._validation`).

    Raises
    ------
    ValueError
        If a field breaks its constraint, ``ID`` is not a lower-case name (letters, digits, ``_``)
        or is reserved (:data:`RESERVED_IDS`: ``all``, ``tour``, ``metadata``), ``TITLE`` or ``CLAIM``
        is empty, or ``COST`` does not name exactly the presets of ``PRESETS``.
    """

    ID: str
    TITLE: str
    CLAIM: str
    COST: dict
    PRESETS: tuple
    RESULT: Schema
    units: Callable
    run_unit: Callable
    draw: Callable
    BACKENDS: tuple = ()
    REQUIRES: tuple = ()
    LIBRARIES: tuple = ()
    missing_input: Callable | None = None
    inputs: Callable | None = None
    verdict: Callable | None = None
    module: str | None = None

    CONSTRAINTS = {
        "ID": _TEXT, "TITLE": _TEXT, "CLAIM": _TEXT,
        "COST": instance_of(Mapping, "a dict {preset: cost in words}"),
        "PRESETS": ListOfValues(_TEXT, min_len=1, unique=True),
        "RESULT": instance_of(Schema, "a reports.schema.Schema (e.g. Record(...))"),
        "units": _FUNCTION, "run_unit": _FUNCTION, "draw": _FUNCTION,
        "BACKENDS": _NAMES, "REQUIRES": _NAMES, "LIBRARIES": _NAMES,
        "missing_input": optional(_FUNCTION), "inputs": optional(_FUNCTION), "verdict": optional(_FUNCTION),
        "module": optional(_TEXT),
    }
    VALID_EXAMPLE = {"ID": "example", "TITLE": "An example", "CLAIM": "None.",
                     "COST": {"quick": "~1 s", "full": "~1 s"}, "PRESETS": ("quick", "full"),
                     "RESULT": ANY, "units": _example_units, "run_unit": _example_run_unit,
                     "draw": _example_draw}

    def __post_init__(self):
        values = check_parameters({f.name: getattr(self, f.name) for f in fields(self)}, self.CONSTRAINTS)
        for name in ("PRESETS", "BACKENDS", "REQUIRES", "LIBRARIES"):
            values[name] = tuple(values[name])
        if not re.fullmatch(r"[a-z][a-z0-9_]*", values["ID"]):
            raise ValueError(f"ID must be a lower-case name of letters, digits and '_' (it names the command's "
                             f"figure, its folder and its anchor), got {values['ID']!r}")
        if values["ID"] in RESERVED_IDS:
            raise ValueError(f"ID {values['ID']!r} is reserved ({RESERVED_IDS[values['ID']]}); choose another, "
                             f"not one of {', '.join(map(repr, RESERVED_IDS))}")
        for name in ("TITLE", "CLAIM"):
            if not values[name].strip():
                raise ValueError(f"{values['ID']}: {name} must not be empty")
        if set(values["COST"]) != set(values["PRESETS"]):
            raise ValueError(f"{values['ID']}: COST must name exactly the presets of PRESETS "
                             f"{values['PRESETS']}, got {tuple(values['COST'])}")
        set_fields(self, **values)


def module_preset(mod, preset: str) -> str:
    """The preset an experiment runs at: ``preset``, except ``tiny`` (the level of ``make demo``), which is
    ``quick`` for every experiment without a ``tiny`` level of its own (in its ``PRESETS``)."""
    return preset if preset in mod.PRESETS else "quick"


def _module_names() -> tuple[str, ...]:
    """The registry's modules; ``SMS_LANGEVIN_REPORT_MODULES`` (comma-separated) replaces them
    (the tests use a small registry of fast units this way); one set but naming no module, or a module
    twice, is a :class:`RegistryError` naming it."""
    env = os.environ.get("SMS_LANGEVIN_REPORT_MODULES")
    if not env:
        return default_modules()
    names = tuple(m.strip() for m in env.split(",") if m.strip())
    if not names:
        raise RegistryError(f"SMS_LANGEVIN_REPORT_MODULES={env!r} names no module; give comma-separated module "
                            f"names, or unset it for the default registry")
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise RegistryError(f"SMS_LANGEVIN_REPORT_MODULES lists the module {twice!r} more than once; list each "
                            f"module once")
    return names


class RegistryError(RuntimeError):
    """A registry module that cannot serve: it fails to import, declares no :class:`Experiment`, or
    shares its ``ID`` or its ``EXPERIMENT`` with another module; the message names the module."""


def _import(name: str):
    """Module ``name``, or :class:`RegistryError` naming it and the first line of why it failed to import."""
    try:
        return importlib.import_module(name)
    # whatever the module's own code raises on import (its Experiment refused, say), sys.exit too: a module that
    # exits would end every command silently; a KeyboardInterrupt it raises reads as Ctrl-C (cannot be told apart)
    except (Exception, SystemExit) as exc:
        first = (str(exc).splitlines() or [""])[0][:300]
        raise RegistryError(f"report module {name} failed to import: {exc.__class__.__name__}: {first}") from exc


def declared_by(name: str) -> Experiment:
    """The :class:`Experiment` that module ``name`` declares (``EXPERIMENT``), with its ``module``.

    Parameters
    ----------
    name : str
        An importable module name.

    Returns
    -------
    Experiment
        Its ``EXPERIMENT``, ``module`` set to ``name``.

    Raises
    ------
    RegistryError
        When the module fails to import, declares no :class:`Experiment`, or one already bound to
        another module.
    """
    experiment = getattr(_import(name), "EXPERIMENT", None)
    if not isinstance(experiment, Experiment):
        raise RegistryError(f"report module {name} declares no EXPERIMENT = Experiment(...)")
    if experiment.module not in (None, name):
        raise RegistryError(f"report module {name}'s EXPERIMENT is declared by {experiment.module}")
    return dataclasses.replace(experiment, module=name)


def load() -> dict:
    """``{figure id: Experiment}`` in registry order.

    Returns
    -------
    dict
        Each module's :class:`Experiment` (:func:`declared_by`), keyed by its ``ID``.

    Raises
    ------
    RegistryError
        When a module fails to import or declares no :class:`Experiment`, two modules declare the same
        ``ID`` (a copied figure module whose ``ID`` was not changed), or one imports another's ``EXPERIMENT``.
    """
    out, declarers = {}, {}
    for name in _module_names():
        experiment = declared_by(name)
        declared = importlib.import_module(name).EXPERIMENT
        if id(declared) in declarers:
            raise RegistryError(f"report module {name}'s EXPERIMENT is the one {declarers[id(declared)]} declares: "
                               f"declare an Experiment of its own")
        if experiment.ID in out:
            raise RegistryError(f"report modules {out[experiment.ID].module} and {name} both declare ID "
                               f"{experiment.ID!r}: each figure needs an ID of its own")
        declarers[id(declared)] = name
        out[experiment.ID] = experiment
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
    """What to install for ``module`` (an importable name): its extra (:data:`EXTRAS`) where it has one,
    e.g. ``"needs the torch extra: pip install -e '.[torch]'"`` (the command that works from here:
    :func:`integrators._install.install_command`), else ``"needs <module>, which is not installed"``."""
    from integrators._install import install_command

    extra = EXTRAS.get(module.split(".")[0])
    if extra is None:
        return f"needs {module}, which is not installed"
    return f"needs the {extra} extra: {install_command(extra)}"


def lacking(mod) -> str | None:
    """What ``mod`` (an :class:`Experiment`, or any module declaring ``REQUIRES``, the top-level names its
    work imports) needs and this installation lacks: the hint (``install_hint``) for the first absent
    name, else None; nothing is imported."""
    for name in getattr(mod, "REQUIRES", ()):
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # an import hook that refuses the name
            found = False
        if not found:
            return install_hint(name)
    return None


def runnable(figures: dict, ids) -> tuple[list[str], str | None]:
    """``(ids, note)``: the figures of ``ids`` this installation can run (their ``REQUIRES`` installed, in
    order), and one line naming the others and what they need (None when all can run), e.g.
    ``"bnn not run: needs the torch extra: pip install -e '.[torch]'"``."""
    needs = {fid: lacking(figures[fid]) for fid in ids}
    left_out = [fid for fid in ids if needs[fid]]
    if not left_out:
        return list(ids), None
    hints = dict.fromkeys(needs[fid] for fid in left_out)  # one hint per extra, in order
    return [fid for fid in ids if not needs[fid]], f"{', '.join(left_out)} not run: {'; '.join(hints)}"


__all__ = ["Experiment", "PRESETS", "RESERVED_IDS", "RegistryError", "declared_by", "default_modules", "load"]
