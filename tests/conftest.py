"""The suite's settings, and its tiers, assigned here to every collected test.

Each test is in exactly one tier, marked with it (the first that applies):

* ``torch``: it needs torch. Decided statically (:func:`needs_torch`): its module, at module level,
  imports torch or a project module that does (transitively), or calls
  ``pytest.importorskip("torch")``; or the test function's body, a helper, fixture or module-level
  string of its module that it uses, imports either, calls ``pytest.importorskip("torch")``, calls
  something with ``backend="torch"`` or holds Python code (a subprocess's script) that imports
  either; or it uses the ``one_torch_thread`` fixture; or it is parametrized with
  ``backend="torch"``, a backend whose ``NAME`` is ``"torch"`` or a Python script that imports
  either (:func:`script_needs_torch`); or it is marked ``torch`` (a documentation page whose code
  imports either: :func:`code_needs_torch`).
* ``experiment``: marked so in its file (a figure, a report, the command line, a notebook); a
  torch experiment is marked ``slow`` only, and is in the torch tier (one of a module marked
  ``experiment`` keeps that mark, so ``-m experiment`` selects it too; ``-m "not torch"`` does not).
* ``statistical``: marked ``slow`` in its file: Monte Carlo against standard errors,
  compilation-heavy runs.
* ``core``: everything else.

Experiments and statistical tests also carry ``slow``, so ``-m "not slow"`` is the quick tier (core
and the quick torch tests).

A test that reads the development data folder beside the checkout (``../shared/data``, which a
user's clone has not) is marked ``data``: where the folder's file is absent it is skipped with the
reason, and fails instead where :data:`REQUIRE_DATA_ENV` is set (CI, which has the folder: a data
test skipped there would be a check that never runs). ``--without-dev-data`` runs the suite as a
clone without the folder would (the loaders look there no more).

Where torch cannot be imported, test modules that need it at module level are not collected (said
in the report's header), so ``-m "not torch"`` runs without torch; nor are they where ``-m``
deselects the torch tier (``-m core``), which saves importing them.
"""

import ast
import functools
import importlib.util
import itertools
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))
# Triton without a GPU runs kernels in its interpreter, chosen when triton is imported (the fused kernel's tests)
if not os.path.exists("/dev/nvidiactl"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest_plugins = ["theory_checks.pytest_plugin"]  # fixtures verify_scheme, registered

# Numba compiles on first use: no deadlines; a small, fixed example budget keeps the suite short.
settings.register_profile(
    "project", deadline=None, max_examples=25, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("project")

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
TORCH_FIXTURES = frozenset({"one_torch_thread"})
OPTIONAL = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


# ------------------------------------------------------------------ the development data folder
REQUIRE_DATA_ENV = "SMS_LANGEVIN_REQUIRE_DATA"  # set (non-empty) by .ci/run: a skipped data test fails there


def pytest_addoption(parser):
    parser.addoption("--without-dev-data", action="store_true",
                     help="run as a clone without ../shared/data would: the loaders do not look there and the "
                          "tests marked data skip (or fail under $" + REQUIRE_DATA_ENV + ")")


def pytest_configure(config):
    if config.getoption("--without-dev-data"):
        import data_sets._find as find
        absent = Path(config.rootpath) / ".no-dev-data" / "shared" / "data"  # a folder that does not exist
        find.DEV_DATA, find.SHARED_XRAY = absent, absent / find.SHARED_XRAY.name


def dev_data_missing() -> str | None:
    """Why the tests marked ``data`` cannot run here (the development data file is absent), or None."""
    from data_sets import _find as find
    if find.SHARED_XRAY.is_file():
        return None
    return (f"needs the development data folder beside the checkout (../shared/data/{find.SHARED_XRAY.name}), "
            "absent here (a clone has none; CI has it)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("data") is None:
        return
    reason = dev_data_missing()
    if reason is None:
        return
    if os.environ.get(REQUIRE_DATA_ENV):
        pytest.fail(f"{reason}; ${REQUIRE_DATA_ENV} is set, so a data test may not skip", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def one_torch_thread():
    """Small tensors: one intra-op thread (a loaded machine stalls torch's thread pool)."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ------------------------------------------------------------------ which modules need torch
def _project_modules():
    """Dotted name -> path: the packages at the repository's root, and the modules of tests/ (on sys.path)."""
    modules = {}
    for top in sorted(ROOT.iterdir()):
        if not (top / "__init__.py").exists() or not top.name.isidentifier():
            continue
        for path in sorted(top.rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if all(part.isidentifier() for part in parts) and (path.parent / "__init__.py").exists():
                modules[".".join(parts)] = path
    for path in TESTS.glob("*.py"):
        modules.setdefault(path.stem, path)
    for init in TESTS.glob("*/__init__.py"):  # packages of tests/ (report_fixtures): by both names
        for path in sorted(init.parent.rglob("*.py")):
            parts = path.relative_to(TESTS).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules.setdefault(".".join(parts), path)
            modules.setdefault(".".join(("tests", *parts)), path)
    return modules


def _is_type_checking(test):
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _catches_import_error(handlers):
    for handler in handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if handler.type is None or any(isinstance(k, ast.Name) and k.id in OPTIONAL for k in kinds):
            return True
    return False


def _imports_run_on_import(body):
    """The import statements that run when ``body`` runs: not inside functions, not under
    ``if TYPE_CHECKING:``, not in a ``try`` that catches ImportError (an optional import)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports_run_on_import(node.orelse)
        elif isinstance(node, ast.Try | getattr(ast, "TryStar", ast.Try)):
            if not _catches_import_error(node.handlers):
                yield from _imports_run_on_import(node.body)
            for part in (node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _imports_run_on_import(part)
        else:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(node, field, None), list):
                    yield from _imports_run_on_import(getattr(node, field))


def _all_imports(function):
    """Every import statement inside a function's body (it may run when the function is called)."""
    return [node for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)]


def _imported_names(node, module, is_package, modules):
    """The modules an import statement imports: external top-level names and project modules (with
    their parent packages)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
    found = set()
    for target in targets:
        parts = target.split(".")
        if parts[0] not in modules:
            found.add(parts[0])  # external: its top-level name
        for i in range(1, len(parts) + 1):
            if ".".join(parts[:i]) in modules:
                found.add(".".join(parts[:i]))
    return found


def _calls_importorskip_torch(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value == "torch":
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "importorskip":
                return True
    return False


@functools.cache
def _parsed(path):
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def torch_modules():
    """The project's modules whose module-level imports need torch, transitively (with torch itself)."""
    modules = _project_modules()
    needs = {}
    for name, path in modules.items():
        try:
            tree = _parsed(path)
        except SyntaxError:
            needs[name] = set()
            continue
        is_package = path.name == "__init__.py"
        found = set()
        for node in _imports_run_on_import(tree.body):
            found |= _imported_names(node, name, is_package, modules)
        if _calls_importorskip_torch(ast.Module(body=[n for n in tree.body if not isinstance(
                n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)], type_ignores=[])):
            found.add("torch")
        # a module's parent packages are imported before it
        parts = name.split(".")
        found |= {".".join(parts[:i]) for i in range(1, len(parts))} & modules.keys()
        needs[name] = found - {name}
    torchy = {"torch"}
    changed = True
    while changed:
        changed = False
        for name, found in needs.items():
            if name not in torchy and found & torchy:
                torchy.add(name)
                changed = True
    return frozenset(torchy)


def _code_imports(text, modules):
    """The modules a string of Python code imports (anywhere in it), or nothing where it is not code."""
    if "import" not in text:
        return set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found = set()
    for node in _all_imports(tree):
        found |= _imported_names(node, "__code__", False, modules)
    return found


def _docstring(node):
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[0].value
    return None


def _runs_torch_code(node, modules, torchy):
    """Whether ``node`` holds a string of Python code (run in a subprocess, say) that imports torch or
    a project module that needs it (docstrings aside)."""
    doc = _docstring(node)
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n is not doc
               and _code_imports(n.value, modules) & torchy for n in ast.walk(node))


def _calls_torch_backend(node):
    """Whether ``node`` calls something with the keyword ``backend="torch"``."""
    return any(isinstance(n, ast.keyword) and n.arg == "backend" and isinstance(n.value, ast.Constant)
               and n.value.value == "torch" for n in ast.walk(node))


def script_needs_torch(path):
    """Whether running the Python script at ``path`` needs torch: an import it runs on import (not an
    optional one), or a module named in its ``BENCH_ARGS["requires"]`` (what it imports when it runs),
    is torch or a project module that needs it."""
    modules, torchy = _project_modules(), torch_modules()
    tree = _parsed(path)
    found = set()
    for node in _imports_run_on_import(tree.body):
        found |= _imported_names(node, "__main__", False, modules)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BENCH_ARGS" for t in node.targets):
            try:
                found |= set(ast.literal_eval(node.value).get("requires", []))
            except (ValueError, AttributeError):
                pass
    return bool(found & torchy)


def code_needs_torch(text):
    """Whether a piece of Python code (a documentation page's code block) imports torch or a project
    module that needs it."""
    return bool(_code_imports(text, _project_modules()) & torch_modules())


def value_needs_torch(value):
    """Whether a test's parameter value needs torch: a backend whose ``NAME`` is ``"torch"``, keywords
    that name the backend ``"torch"``, a function of a test module that needs torch when called, or a
    Python script that needs it (:func:`script_needs_torch`)."""
    if getattr(value, "NAME", None) == "torch":
        return True
    if isinstance(value, dict):
        return any((key == "backend" and v == "torch") or value_needs_torch(v) for key, v in value.items())
    module = getattr(value, "__module__", None)
    if callable(value) and module is not None and (TESTS / f"{module}.py").is_file():
        return getattr(value, "__qualname__", "") in _torch_functions(TESTS / f"{module}.py", module)
    return isinstance(value, Path) and value.suffix == ".py" and value.is_file() and script_needs_torch(value)


def declarer_needs_torch(obj):
    """Whether calling ``obj`` (a function or a class of the project) needs torch: its module does, or
    it (a method of it) or a function of its module that it uses imports torch when called."""
    module = obj.__module__
    if module in torch_modules():
        return True
    path = _project_modules().get(module)
    if path is None:
        return False
    torchy = _torch_functions(path, module)
    name = obj.__qualname__
    return name in torchy or any(key.startswith(name + ".") for key in torchy)


@functools.cache
def _torch_functions(path, name=None):
    """Names of the module-level functions (tests, helpers, fixtures) and methods of a module that
    need torch when called: they import torch or a module that needs it, call
    ``pytest.importorskip("torch")``, call with ``backend="torch"``, run a string of code that imports
    it, or use such a function or module-level string of the same module."""
    tree = _parsed(path)
    modules, torchy = _project_modules(), torch_modules()
    name = name or Path(path).stem
    functions = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            functions.update({f"{node.name}.{f.name}": f for f in node.body
                              if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)})
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions[node.name] = node
    needing = set()
    for key, function in functions.items():
        imported = set()
        for node in _all_imports(function):
            imported |= _imported_names(node, name, False, modules)
        if imported & torchy or _calls_importorskip_torch(function) or TORCH_FIXTURES & {
                a.arg for a in function.args.args} or _calls_torch_backend(function) \
                or _runs_torch_code(function, modules, torchy):
            needing.add(key)
    for node in tree.body:  # module-level strings of code that imports torch (a subprocess's script)
        if isinstance(node, ast.Assign) and _runs_torch_code(node, modules, torchy):
            needing |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    uses = {key: {n.id for n in ast.walk(f) if isinstance(n, ast.Name)} for key, f in functions.items()}
    changed = True
    while changed:
        changed = False
        for key in functions.keys() - needing:
            if uses[key] & needing:
                needing.add(key)
                changed = True
    return frozenset(needing & functions.keys())


def module_needs_torch(path):
    """Whether importing the test module at ``path`` needs torch."""
    return Path(path).stem in torch_modules()


def needs_torch(item):
    """Whether a collected test needs torch (the rules in this module's docstring)."""
    path = Path(str(item.path))
    if item.get_closest_marker("torch") or TORCH_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        for key, value in callspec.params.items():
            if (key == "backend" and value == "torch") or value_needs_torch(value):
                return True
    if path.suffix != ".py" or path.parent != TESTS:
        return False
    if module_needs_torch(path):
        return True
    function = getattr(item, "originalname", None) or item.name.split("[")[0]
    if getattr(item, "cls", None) is not None:
        function = f"{item.cls.__name__}.{function}"
    torchy = _torch_functions(path)
    return function in torchy or bool(torchy & set(getattr(item, "fixturenames", ())))


@functools.cache
def torch_importable():
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def deselects_torch(markexpr):
    """Whether ``-m markexpr`` deselects every test of the torch tier, whatever its other markers
    (``core``, ``not torch``): then the modules that need torch need not be imported."""
    if not markexpr:
        return False
    from _pytest.mark.expression import Expression  # pytest's own parser of -m
    tiers = {"torch": True, "core": False, "statistical": False, "experiment": False}
    others = sorted(set(re.findall(r"[A-Za-z_][\w.]*", markexpr)) - {"and", "or", "not", *tiers})
    if len(others) > 8:
        return False
    expression = Expression.compile(markexpr)
    for values in itertools.product((False, True), repeat=len(others)):
        markers = {**dict(zip(others, values, strict=True)), **tiers}
        if expression.evaluate(lambda name, /, markers=markers, **kwargs: markers.get(name, False)):
            return False
    return True


def pytest_ignore_collect(collection_path, config):
    path = Path(str(collection_path))
    if path.suffix == ".py" and path.parent == TESTS and path.name.startswith("test_") \
            and module_needs_torch(path):
        if not torch_importable():
            not_collected = config.stash.setdefault(_NOT_COLLECTED, [])
            if path.name not in not_collected:  # (asked once per collector above it)
                not_collected.append(path.name)
            return True
        if deselects_torch(config.getoption("markexpr", "")):
            return True  # every test in it would be deselected
    return None


_NOT_COLLECTED = pytest.StashKey[list]()


def pytest_report_header(config):
    if not torch_importable():
        return "torch not importable: test modules that need it at module level are not collected"
    return None


def pytest_terminal_summary(terminalreporter, config):
    skipped = config.stash.get(_NOT_COLLECTED, [])
    if skipped:
        terminalreporter.write_line(f"torch not importable: {len(skipped)} test modules not collected: "
                                    + ", ".join(sorted(skipped)))


# ------------------------------------------------------------------ tiers
def tier_of(item):
    """The one tier of a collected test (see this module's docstring)."""
    if needs_torch(item):
        return "torch"
    if item.get_closest_marker("experiment"):
        return "experiment"
    return "statistical" if item.get_closest_marker("slow") else "core"


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(item)
        for marker in (tier, "slow") if tier in ("experiment", "statistical") else (tier,):
            if not item.get_closest_marker(marker):
                item.add_marker(marker)
