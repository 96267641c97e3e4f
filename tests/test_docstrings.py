"""Every public name of the packages has a numpydoc docstring that the docs build renders.

The public names are discovered, never listed: walking the packages at the repository's root,
a name is public when it is (a) in some module's ``__all__`` (private modules included), (b) a
function or class not starting with ``_`` defined in a public module (no part of its dotted path
starts with ``_``; a package's ``__init__`` is the package), or (c) a method, static method, class
method or property not starting with ``_`` defined on such a class (inherited ones are checked
where they are defined).  An object offered by several modules is checked once.  Data (registries,
constants) carries no docstring of its own and is skipped.  Private names are not checked.

The API pages (``docs/api/*.md``) render exactly the public modules, one ``::: module`` entry each
with no options (:func:`test_the_api_pages_render_exactly_the_public_modules`); mkdocstrings
renders a module's ``__all__`` and the names it defines, which are the names (a) and (b) above.
Each docstring is parsed with ``numpydoc.docscrape`` and must satisfy the rule below; one test
lists every offender.

The rule:

1. A docstring is present, starts with a summary line, and parses without numpydoc warnings
   (unknown or misformatted sections).
2. A function or method whose signature has parameters (other than ``self`` / ``cls``) has a
   ``Parameters`` section listing every one of them (``*args`` / ``**kwargs`` as such), and lists
   nothing that is not in the signature (unless the signature takes ``**kwargs``).
3. A function or method that returns something (a return annotation other than ``None``, or, when
   unannotated, a ``return <value>`` in its own body) has a ``Returns`` section; a generator has
   ``Yields``.
4. A callable has a ``Raises`` section naming ``ValueError`` (resp. ``TypeError``) when it raises
   that exception in its own body, when it calls a checker of the validation layer
   (:mod:`integrators._validation`, which raises ``ValueError`` naming the argument), and, for a
   class, when its ``__init__`` / ``__post_init__`` does so or it declares ``CONSTRAINTS`` (checked by
   the validation layer when it is made).  The entry points in :data:`VALIDATING_ENTRY_POINTS`
   validate their input one call deeper (in the spec they build) and must name ``ValueError`` too.
5. A class whose constructor takes parameters (dataclass fields and named-tuple fields count)
   documents every one of them in a ``Parameters`` or ``Attributes`` section.
6. A property has a docstring (numpydoc renders it as an attribute: a summary, no sections needed).
7. A registry member implements a contract its package documents once (every scheme's ``step``,
   every plan's ``force_scale``, every adapter's ``step``, every experiment's ``units``, ``run_unit``
   and ``draw``: :class:`reports.registry.Experiment`): the functions, classes and methods a
   member module defines need a summary line and parse cleanly (rule 1), with no sections required.
   The member modules are found by the registries' own rule (:data:`integrators.registry.CONTRACTS`):
   a public module of a package a registry discovers, declaring the names it requires at module level.
8. A public module that declares ``__all__`` offers those names; the functions and classes it
   defines but leaves out of it (and out of every other ``__all__``) are implementation that its
   package and the tests import: like rule 7, a summary line and a clean parse (rule 1).  What
   users import is documented fully, the rest briefly.

When griffe is installed, a second test loads the same packages with griffe's numpy parser (the
parser mkdocstrings uses for the strict docs build) and requires that parsing every public name's
docstring logs no warning.

A new public module fails the page test until it has its ``::: module`` entry on an API page.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import logging
import re
import textwrap
import warnings
from pathlib import Path

import pytest
from conftest import torch_modules

numpydoc_docscrape = pytest.importorskip("numpydoc.docscrape")

ROOT = Path(__file__).resolve().parents[1]
API_PAGES = ROOT / "docs" / "api"
ENTRY = re.compile(r"^:::\s*([\w.]+)\s*$")


def _is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def source_modules(root=ROOT) -> dict:
    """Dotted name -> path of every module of the packages at the repository's root (private ones too)."""
    modules = {}
    for top in sorted(root.iterdir()):
        if not (top / "__init__.py").is_file() or not top.name.isidentifier():
            continue
        for path in sorted(top.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if all(part.isidentifier() for part in parts) and (path.parent / "__init__.py").is_file():
                modules[".".join(parts)] = path
    return modules


def _declares_all(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets = [target for node in tree.body if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
               for target in getattr(node, "targets", [getattr(node, "target", None)])]
    return any(getattr(target, "id", None) == "__all__" for target in targets)


MODULES = source_modules()
# the public modules (no part of the dotted path starts with '_'): the ones the API pages render
PUBLIC_MODULES = sorted(name for name in MODULES if _is_public_module(name))
# private modules whose ``__all__`` names are public too (rule a)
PRIVATE_ALL = sorted(name for name, path in MODULES.items()
                     if not _is_public_module(name) and _declares_all(path))
PACKAGES = PUBLIC_MODULES + PRIVATE_ALL


def _module_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        for target in getattr(node, "targets", [getattr(node, "target", None)]):
            for name in getattr(target, "elts", [target]):  # a, b = ... binds both
                if isinstance(name, ast.Name):
                    names.add(name.id)
    return names


def registry_contracts() -> dict[str, tuple[str, ...]]:
    """What each registry's package requires of a member (:data:`integrators.registry.CONTRACTS`), after
    importing every public module, so that every registry has run its discovery."""
    from integrators.registry import CONTRACTS
    from reports.registry import default_modules

    for name in PUBLIC_MODULES:
        if name not in torch_modules_unloaded():
            importlib.import_module(name)
    default_modules()  # the figures are discovered on first use
    return dict(CONTRACTS)


def member_modules() -> set[str]:
    """The registry member modules (rule 7): public modules of a package some registry discovers,
    declaring every name its contract requires."""
    out = set()
    for package, required in registry_contracts().items():
        out.update(name for name, path in MODULES.items()
                   if name.rpartition(".")[0] == package and _is_public_module(name)
                   and set(required) <= _module_level_names(path))
    return out



def offered_ids(modules=MODULES) -> set[int]:
    """``id`` of every object some module's ``__all__`` offers (private modules included)."""
    out = set()
    for name, path in modules.items():
        if _declares_all(path) and name not in torch_modules_unloaded():
            module = importlib.import_module(name)
            out.update(id(vars(module)[n]) for n in module.__all__ if n in vars(module))
    return out


def torch_modules_unloaded() -> set[str]:
    """The modules that need torch, when torch is not installed (nothing to import there)."""
    try:
        absent = importlib.util.find_spec("torch") is None
    except ImportError:  # an import blocker (the tier tests' "no torch" collection) raises instead
        absent = True
    return set(torch_modules()) if absent else set()


MEMBER_MODULES = member_modules()


def left_out_of_all(owner, offered: set[int]) -> bool:
    """Rule 8: ``owner`` (a function or class; a member is judged by its class) is defined in a
    public module that declares ``__all__``, and no ``__all__`` offers it."""
    module_name = getattr(_python_function(owner), "__module__", None)
    if module_name is None or not _is_public_module(module_name):
        return False
    return (hasattr(importlib.import_module(module_name), "__all__")
            and not {id(owner), id(_python_function(owner))} & offered)


def _api_entries():
    spec = importlib.util.spec_from_file_location("api_entries", ROOT / "docs" / "api_entries.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def api_table(pages=API_PAGES) -> dict:
    """``{module: page name}`` for every ``::: module`` entry of the API pages as the site renders them
    (``::: package.*`` expanded), in page order."""
    table = {}
    for page in sorted(Path(pages).glob("*.md")):
        for line in _api_entries().expand(page.read_text(encoding="utf-8")).splitlines():
            entry = ENTRY.match(line)
            if not entry:
                continue
            if entry.group(1) in table:
                raise AssertionError(f"{page.name}: {entry.group(1)} is rendered twice")
            table[entry.group(1)] = page.name
    return table


TABLE = api_table()


# public entry points whose input is checked one call deeper (the RunSpec they build, the checks they run)
VALIDATING_ENTRY_POINTS = {
    "integrators.sample",
    "integrators.sample_together",
    "integrators.sms_ghmc",
    "integrators.RunSpec.from_options",
    "theory_checks.verify",
}

CHECKED_EXCEPTIONS = ("ValueError", "TypeError")


# ------------------------------------------------------------------ collecting the public names
def _is_function(obj) -> bool:
    return inspect.isfunction(obj) or hasattr(obj, "py_func")  # a Numba dispatcher wraps py_func


def _python_function(obj):
    return getattr(obj, "py_func", obj)


def _public_objects(package: str, lazy=None):
    """``(qualified name, object)`` for the public functions and classes of one module: its ``__all__``
    (rule a) and, for a public module, the non-underscore ones it defines itself (rule b).  ``lazy``:
    only the names its module ``__getattr__`` loads when first used (True: they need torch), only the
    others (False), or all (None)."""
    module = importlib.import_module(package)
    names = list(getattr(module, "__all__", ()))
    if _is_public_module(package):
        names += [name for name, obj in vars(module).items()
                  if not name.startswith("_") and name not in names
                  and (inspect.isclass(obj) or _is_function(obj))
                  and getattr(obj, "__module__", None) == package]
    for name in names:
        if lazy is not None and (name not in vars(module)) != lazy:
            continue
        obj = getattr(module, name)
        if inspect.isclass(obj) or _is_function(obj):
            yield f"{package}.{name}", obj


def _members(qualname: str, cls):
    """``(qualified name, kind, function or property)`` for the public members defined on ``cls``."""
    for name, attr in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(attr, property):
            yield f"{qualname}.{name}", "property", attr
        elif isinstance(attr, staticmethod) and _is_function(attr.__func__):
            yield f"{qualname}.{name}", "staticmethod", _python_function(attr.__func__)
        elif isinstance(attr, classmethod):
            yield f"{qualname}.{name}", "classmethod", attr.__func__
        elif _is_function(attr):
            yield f"{qualname}.{name}", "method", _python_function(attr)


def public_names(packages=PACKAGES, *, lazy=None):
    """Every ``(qualified name, kind, object)`` the rule applies to, in a stable order; an object
    offered by several modules (a package re-exporting it) is checked once, by its first name."""
    out, seen = [], set()
    for package in packages:
        for qualname, obj in _public_objects(package, lazy):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                out.append((qualname, "class", obj))
                out.extend(_members(qualname, obj))
            else:
                out.append((qualname, "function", _python_function(obj)))
    return out


# ------------------------------------------------------------------ reading code and docstrings
def _own_body_nodes(func):
    """The AST nodes of ``func``'s own body (nested functions and classes excluded); [] without source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return []
    top = tree.body[0]
    nodes, todo = [], list(ast.iter_child_nodes(top))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        nodes.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return nodes


def _validation_names(func) -> set[str]:
    """Global names of ``func``'s module bound to checkers of the validation layer (not its message helpers,
    such as ``printable``, which check nothing and raise nothing)."""
    from integrators._validation import Constraint, printable

    names = set()
    for name, value in getattr(func, "__globals__", {}).items():
        if isinstance(value, Constraint) or (
                inspect.isfunction(value) and value.__module__ == "integrators._validation" and value is not printable):
            names.add(name)
    return names


def _raised(func) -> set[str]:
    """The checked exceptions ``func`` raises in its own body or through the validation layer."""
    out = set()
    checkers = _validation_names(func)
    for node in _own_body_nodes(func):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in CHECKED_EXCEPTIONS:
                out.add(exc.id)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in checkers:
            out.add("ValueError")
    return out


def _returns_value(func) -> str | None:
    """``"Returns"`` or ``"Yields"`` when ``func`` gives something back, else None."""
    nodes = _own_body_nodes(func)
    if any(isinstance(node, ast.Yield | ast.YieldFrom) for node in nodes):
        return "Yields"
    annotation = inspect.signature(func).return_annotation
    if annotation is not inspect.Signature.empty:
        return None if annotation in (None, "None") else "Returns"
    for node in nodes:
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return "Returns"
    return None


def _parameters(func, kind: str) -> tuple[list[str], bool]:
    """The names a ``Parameters`` section must list, and whether the signature takes ``**kwargs``."""
    params = list(inspect.signature(func).parameters.values())
    if kind in ("method", "classmethod") and params:
        params = params[1:]
    names = [p.name for p in params]
    return names, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _listed(section) -> set[str]:
    names = set()
    for entry in section:
        for name in entry.name.split(","):
            name = name.strip().lstrip("*")
            if name:
                names.add(name)
    return names


def _exceptions_listed(section) -> set[str]:
    text = " ".join(f"{entry.name} {entry.type}" for entry in section)
    return {exc for exc in CHECKED_EXCEPTIONS if exc in text}


def _parse(doc: str):
    """The parsed docstring and the numpydoc warnings it gave (an exception counts as one)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            parsed = numpydoc_docscrape.NumpyDocString(inspect.cleandoc(doc))
        except Exception as exc:  # noqa: BLE001  (numpydoc raises ValueError on a malformed docstring)
            return None, [str(exc)]
    return parsed, [str(w.message) for w in caught]


def _class_constructor(cls):
    """``(parameter names, own __init__ / __post_init__ functions)`` of a class."""
    own = [vars(cls)[name] for name in ("__init__", "__post_init__") if inspect.isfunction(vars(cls).get(name))]
    if issubclass(cls, BaseException) and "__init__" not in vars(cls):
        return [], own  # an exception's (*args) is the message
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return [], own
    names = [p.name for p in params if p.kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                      inspect.Parameter.VAR_KEYWORD)]
    return names, own


def _defined_in(obj) -> str | None:
    return getattr(_python_function(obj), "__module__", None)


def problems(qualname: str, kind: str, obj, *, brief: bool = False) -> list[str]:
    """What is wrong with one public name's docstring (empty when nothing is); ``brief``: rule 8
    applies (a summary line suffices)."""
    doc = obj.__doc__ if kind != "property" else obj.fget.__doc__
    if not doc or not doc.strip():
        return ["no docstring"]
    parsed, parse_warnings = _parse(doc)
    out = [f"numpydoc: {w}" for w in parse_warnings]
    if parsed is None:
        return out
    if not parsed["Summary"]:
        out.append("no summary line")
    if kind == "property" or _defined_in(obj) in MEMBER_MODULES:
        return out
    if brief:
        return out
    if kind == "class":
        names, own = _class_constructor(obj)
        listed = _listed(parsed["Parameters"]) | _listed(parsed["Attributes"])
        missing = [name for name in names if name not in listed]
        if missing:
            out.append(f"Parameters/Attributes do not list {missing}")
        raised = set().union(*(_raised(func) for func in own)) if own else set()
        if "CONSTRAINTS" in vars(obj):
            raised.add("ValueError")
    else:
        names, takes_kwargs = _parameters(obj, kind)
        listed = _listed(parsed["Parameters"])
        missing = [name for name in names if name not in listed]
        if missing:
            out.append(f"Parameters do not list {missing}")
        extra = sorted(listed - set(names))
        if extra and not takes_kwargs:
            out.append(f"Parameters list {extra}, not in the signature")
        needed = _returns_value(obj)
        if needed and not parsed[needed]:
            out.append(f"no {needed} section")
        raised = _raised(obj)
    if qualname in VALIDATING_ENTRY_POINTS:
        raised.add("ValueError")
    undocumented = sorted(raised - _exceptions_listed(parsed["Raises"]))
    if undocumented:
        out.append(f"Raises does not name {undocumented}")
    return out


# ------------------------------------------------------------------ the tests
# each check runs twice: on the modules that import without torch, and on those that need it (torch tier)
BACKENDS = pytest.mark.parametrize("backend", ["numba", "torch"])


def names_on(backend: str):
    """The public names checked without torch (the modules that import without it, less the names
    they load lazily because those need torch), or with it (the rest)."""
    if backend == "numba":
        return public_names(on("numba", PACKAGES), lazy=False)
    return public_names(on("torch", PACKAGES)) + public_names(on("numba", PACKAGES), lazy=True)


def on(backend: str, modules) -> list[str]:
    """The modules that need torch to import (``backend="torch"``), or the others."""
    return [m for m in modules if (m in torch_modules()) == (backend == "torch")]


@BACKENDS
def test_the_rule_covers_the_public_names(backend):
    names = [qualname for qualname, _, _ in names_on(backend)]
    assert len(names) == len(set(names)) and names
    if backend == "numba":  # a package's __all__, a public module's own names, a private module's __all__
        expected = {"integrators.sample", "reports.store.Store", "theory_checks._monte_carlo.target_law_check"}
        assert expected <= set(names)


@BACKENDS
def test_every_public_name_has_a_numpydoc_docstring(backend):
    offenders, offered, owner = [], offered_ids(), None
    for qualname, kind, obj in names_on(backend):  # a class comes before its members
        owner = obj if kind in ("function", "class") else owner
        brief = left_out_of_all(owner, offered)
        offenders.extend(f"{qualname}: {problem}" for problem in problems(qualname, kind, obj, brief=brief))
    assert not offenders, f"{len(offenders)} docstring problems:\n" + "\n".join(offenders)


def test_the_rule_fails_on_a_bare_function():
    def bare(x, *, y=1) -> int:
        """Add."""
        if x is None:
            raise ValueError("x")
        return x + y

    found = problems("bare", "function", bare)
    assert any("Parameters do not list ['x', 'y']" in p for p in found)
    assert any("no Returns section" in p for p in found)
    assert any("Raises does not name ['ValueError']" in p for p in found)


def test_names_left_out_of_all_need_a_summary_only_and_the_offered_ones_the_whole_rule():
    offered = offered_ids()
    names = {qualname: obj for qualname, kind, obj in public_names(on("numba", PACKAGES), lazy=False)
             if kind in ("function", "class")}
    brief = {qualname for qualname, obj in names.items() if left_out_of_all(obj, offered)}
    assert {"reports.store.FolderLock", "theory_checks.oracle.step_map"} <= brief
    assert not {"reports.store.Store", "theory_checks.oracle.stationary_moments", "integrators.sample",
                "integrators.plans.Plan", "reports.registry.Experiment"} & brief

    def bare(x):
        """Add."""
        return x

    bare.__module__ = "theory_checks.oracle"  # defined in a module with __all__, offered by none
    assert left_out_of_all(bare, offered) and not problems("theory_checks.oracle.bare", "function", bare, brief=True)
    assert not left_out_of_all(bare, offered | {id(bare)})
    assert problems("theory_checks.oracle.bare", "function", bare)


def test_registry_members_are_found_by_the_rule():
    assert {"integrators.schemes.ubu", "integrators.plans.sms", "experiments.demo",
            "theory_checks.adapters.blackjax_adapter"} <= MEMBER_MODULES
    assert not {"integrators.schemes", "integrators.plans", "integrators.registry"} & MEMBER_MODULES


def _griffe_path(obj) -> str:
    """Where griffe finds ``obj``: its defining module and qualified name."""
    target = _python_function(obj.fget if isinstance(obj, property) else obj)
    return f"{target.__module__}.{target.__qualname__}"


def _griffe_warnings(griffe, caplog, docstring) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="griffe"):
        docstring.parse(griffe.Parser.numpy)
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_griffe_warnings_are_caught(caplog):
    griffe = pytest.importorskip("griffe")
    function = griffe.Function("f", parameters=griffe.Parameters(griffe.Parameter("x")))
    bad = griffe.Docstring("Sum.\n\nParameters\n----------\ny : int\n    Not in the signature.\n", parent=function)
    assert any("'y' does not appear in the function signature" in w for w in _griffe_warnings(griffe, caplog, bad))


@BACKENDS
def test_griffe_parses_every_public_docstring_without_warnings(caplog, backend):
    griffe = pytest.importorskip("griffe")
    roots = {module.split(".")[0] for module in PACKAGES}
    loader = griffe.GriffeLoader(docstring_parser=griffe.Parser.numpy)
    for root in sorted(roots):
        loader.load(root)
    loader.resolve_aliases(implicit=False, external=False)
    problems_found = []
    for qualname, _, obj in names_on(backend):
        path = _griffe_path(obj)
        path = qualname if "<locals>" in path else path  # a decorator's wrapper: where the source defines it
        try:
            item = loader.modules_collection[path]
        except KeyError:
            problems_found.append(f"{qualname}: griffe does not find {path}")
            continue
        if item.docstring is None:
            problems_found.append(f"{qualname}: griffe reads no docstring")
            continue
        problems_found.extend(f"{qualname}: griffe: {w}"
                              for w in _griffe_warnings(griffe, caplog, item.docstring))
    assert not problems_found, "\n".join(problems_found)


def test_the_api_pages_render_exactly_the_public_modules():
    """Each public module is one ``::: module`` entry of an API page, with no options (mkdocstrings
    renders its ``__all__`` and its own non-underscore names: the names checked above, none exempt),
    and no private module is rendered."""
    assert sorted(TABLE) == PUBLIC_MODULES, (
        f"missing: {sorted(set(PUBLIC_MODULES) - set(TABLE))}, not public: {sorted(set(TABLE) - set(PUBLIC_MODULES))}")
    for page in API_PAGES.glob("*.md"):
        lines = page.read_text(encoding="utf-8").splitlines()
        options = [line for i, line in enumerate(lines[1:], 1) if line.startswith(" ") and ENTRY.match(lines[i - 1])]
        assert not options, f"{page.name}: an entry has options (members, filters, docstrings: brief): {options}"


def test_the_api_pages_are_the_navigation_of_the_api_reference():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((API_PAGES.parents[1] / "mkdocs.yml").read_text(encoding="utf-8"))
    section = next(item["API reference"] for item in config["nav"]
                   if isinstance(item, dict) and "API reference" in item)
    listed = sorted(next(iter(entry.values())) for entry in section)
    assert listed == sorted(f"api/{page.name}" for page in API_PAGES.glob("*.md"))
    assert "integrators" in TABLE and "theory_checks" in TABLE and "integrators.plans.sms" in TABLE



def dedented_docstring_lines(path: Path) -> list[int]:
    """The line numbers of docstring lines indented less than their opening quotes (from there on,
    numpydoc and griffe take the sections for plain text: they render as raw code)."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or not node.body:
            continue
        doc = node.body[0]
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            continue
        found += [n for n in range(doc.lineno + 1, doc.end_lineno + 1)
                  if lines[n - 1].strip() and len(lines[n - 1]) - len(lines[n - 1].lstrip()) < doc.col_offset]
    return found


def test_no_docstring_line_is_dedented_below_its_quotes(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('def f():\n    """One.\n\nmore, dedented.\n\n    Returns\n    -------\n    int\n    """\n')
    assert dedented_docstring_lines(bad) == [4]
    found = [f"{path.relative_to(ROOT)}:{n}" for path in MODULES.values() for n in dedented_docstring_lines(path)]
    assert not found, found
