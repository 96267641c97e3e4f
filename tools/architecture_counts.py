"""Counts of the architecture's repeated concepts, read statically from a source tree (issue 36's
"before and after" table): nothing is imported, every count is a rule over the syntax trees
(``ast``) and tokens (``tokenize``) of the files, so two revisions are compared by running this
on two checkouts.

The source packages are the top-level folders of ``--root`` that hold an ``__init__.py``, except
``tests``, ``benchmarks`` and ``docs`` (here: integrators, data_sets, bias, theory_checks, bnn, reports, experiments,
tour); found by listing, so a package added or renamed is counted without editing this file.
Every rule is approximate and stated in :data:`RULES`, printed with the counts; the output also
lists what each rule matched (``path:line name``) so that a reader can audit it.

    PYTHONPATH=. python tools/architecture_counts.py [--root PATH] [--json]

``--root`` defaults to this repository; ``--json`` prints one JSON object (``counts``,
``per_package``, ``all_sizes``, ``rules``, ``found``) instead of tables.  To count an older
revision, check it out beside this one and point ``--root`` at it
(``git worktree add --detach /tmp/old REV``).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_SOURCE = {"tests", "benchmarks", "docs"}  # top-level folders that are never source packages
LONG_FILE = 374  # a file with more lines than this counts as "near the 400-line limit or over it"
MANY_PARAMETERS = 10  # a signature or dataclass with this many or more describes a run's options
FINITE_TESTS = {"isfinite", "isnan", "isinf"}
BOUND = re.compile(r"(^|_)bound($|_)", re.IGNORECASE)  # bound, divergence_bound; not boundary
IN_PLACE = {"copy_", "fill_", "masked_fill_", "index_fill_", "index_put_", "__setitem__"}

RULES = {
    "public_names": "the names users can import: for each public module (no part of the dotted module path "
                    "starts with '_'; a package's __init__ is the package), its literal __all__ where it declares "
                    "one (names it imports included), else its module-level names defined (def, class, "
                    "assignment; imports excluded) not starting with '_'; plus the methods not starting with '_' "
                    "(properties included) of the classes among those names, followed through imports to their "
                    "definition and counted once per class wherever it is offered",
    "run_option_places": f"functions and methods (nested ones included, public or not) with >= {MANY_PARAMETERS} "
                         "named parameters (self/cls and *args/**kwargs not counted), and classes declared with "
                         f"@dataclass or as NamedTuple with >= {MANY_PARAMETERS} annotated fields",
    "memory_formulas": "functions whose name contains 'memory' or 'bytes' and that return arithmetic (+ - * / // "
                       "**) reading one of their parameters directly or through a local assigned from them; plus "
                       "functions that pass check_fits(...) a byte count written as arithmetic in the call; each "
                       "function counted once",
    "plan_walkers": "functions (methods and nested ones included) that call a plan's rule batch_index(...) or the "
                    "kernel's next_batches(...) (by name, or as an attribute of anything but self), or read SWEEPS, "
                    "outside the plan declarations (modules that define batch_index or assign SWEEPS at module "
                    "level)",
    "divergence_detectors": "functions that both test a state (a call of isfinite/isnan/isinf, or a comparison "
                            "with an operand naming 'bound' as a word of a snake_case name: bound, divergence_bound, "
                            "not boundary) and record a divergence (a store into, or an in-place tensor method "
                            "copy_/fill_/masked_fill_/... of, a name containing 'diverg' or a local alias of one such "
                            "as at = div.diverged_at; or a store into a name containing 'bad' of a value that is not "
                            "the test itself, e.g. first_bad = step)",
    "raise_value_error": "raise statements whose exception is ValueError or ValueError(...)",
    "source_code_lines": "physical lines of the source packages' .py files that are neither docstring, comment-only "
                         "nor blank (tokenize)",
    "source_docstring_lines": "lines spanned by docstrings: a string expression first in a module, class or "
                              "function body (blank lines inside included)",
    "source_comment_lines": "lines whose only tokens are comments",
    "source_blank_lines": "whitespace-only lines outside docstrings",
    "source_lines": "all physical lines of the source packages' .py files",
    "source_files": "the source packages' .py files",
    "test_lines": "all physical lines of tests/**/*.py",
    "test_files": "tests/**/*.py files",
    "files_over_374_lines": f"source .py files with more than {LONG_FILE} physical lines",
}
LISTED = ("run_option_places", "memory_formulas", "plan_walkers", "divergence_detectors", "files_over_374_lines")


# ----------------------------------------------------------------------------- reading the tree
def source_packages(root: Path) -> list[str]:
    """The top-level folders of ``root`` holding an ``__init__.py``, less :data:`NOT_SOURCE`."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
                  and p.name not in NOT_SOURCE and not p.name.startswith("."))


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def identifiers(node: ast.AST) -> list[str]:
    """Names and attribute names inside ``node`` (not strings)."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
    return out


def own_nodes(func: ast.AST):
    """The nodes of a function's body, not descending into nested functions or classes (lambdas and
    comprehensions are the function's own)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def functions(tree: ast.Module):
    """``(qualified name, node, is a method)`` of every function in ``tree``, nested ones included."""
    def visit(node, prefix, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{prefix}{child.name}", child, in_class
                yield from visit(child, f"{prefix}{child.name}.", False)
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.", True)
            else:
                yield from visit(child, prefix, in_class)
    yield from visit(tree, "", False)


def classes(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield node


def call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


# ----------------------------------------------------------------------------- the rules
def module_level_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Names bound at module level (inside module-level if/try/with too), imports excluded."""
    names: dict[str, ast.AST] = {}

    def targets(t):
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from targets(e)
        elif isinstance(t, ast.Starred):
            yield from targets(t.value)

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[node.name] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    names.update(dict.fromkeys(targets(t), node))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                names.update(dict.fromkeys(targets(node.target), node))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(node, part, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
    visit(tree.body)
    return names


def imported_names(module: str, tree: ast.Module, is_package: bool) -> dict[str, tuple[str, str]]:
    """``{name: (module, name there)}`` of the top-level ``from X import a as b`` of a module (relative
    imports resolved against ``module``)."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = module.split(".") if is_package else module.split(".")[:-1]
            parts = parts[:len(parts) - node.level + 1]
            source = ".".join(parts + ([node.module] if node.module else []))
        else:
            source = node.module
        for alias in node.names:
            if alias.name != "*":
                out[alias.asname or alias.name] = (source, alias.name)
    return out


def all_names(tree: ast.Module) -> list[str] | None:
    """The strings of a literal ``__all__`` (``+=`` of literals added); None where there is none."""
    names = None
    for node in tree.body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else None)
        if not (isinstance(target, ast.Name) and target.id == "__all__"):
            continue
        if isinstance(node.value, (ast.List, ast.Tuple, ast.Set)):
            new = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            names = new if isinstance(node, (ast.Assign, ast.AnnAssign)) or names is None else names + new
    return names


def all_size(tree: ast.Module) -> int | None:
    """The length of a literal ``__all__``; None where there is none."""
    names = all_names(tree)
    return None if names is None else len(names)


def public_names(trees: dict[str, tuple[ast.Module, bool]]) -> dict[str, list[str]]:
    """``{module: the public names it offers}`` by the rule of :data:`RULES`; ``trees`` maps every
    module to ``(syntax tree, is a package)``, so an offered class is followed to its definition."""
    defined = {m: module_level_names(t) for m, (t, _) in trees.items()}
    imports = {m: imported_names(m, t, pkg) for m, (t, pkg) in trees.items()}

    def definition(module, name, depth=0):
        if depth > 20 or module not in trees:
            return None
        if name in defined[module]:
            return module, name, defined[module][name]
        if name in imports[module]:
            return definition(*imports[module][name], depth + 1)
        return None

    out, seen = {}, set()
    for module, (tree, _) in trees.items():
        if not is_public_module(module):
            out[module] = []
            continue
        offered = all_names(tree)
        if offered is None:
            offered = [n for n in defined[module] if not n.startswith("_")]
        found = []
        for name in offered:
            found.append(f"{module}.{name}")
            where = definition(module, name)
            if where and isinstance(where[2], ast.ClassDef) and where[:2] not in seen:
                seen.add(where[:2])
                found += [f"{module}.{name}.{m.name}" for m in where[2].body
                          if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and not m.name.startswith("_")]
        out[module] = found
    return out


def n_parameters(func, is_method: bool) -> int:
    a = func.args
    named = [*a.posonlyargs, *a.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)
    if is_method and not static and named:
        named = named[1:]
    return len(named) + len(a.kwonlyargs)


def record_fields(cls: ast.ClassDef) -> int | None:
    """The annotated fields of a dataclass or NamedTuple class; None for other classes."""
    def named(node, word):
        node = node.func if isinstance(node, ast.Call) else node
        return (isinstance(node, ast.Name) and node.id == word) or (isinstance(node, ast.Attribute)
                                                                      and node.attr == word)
    if not (any(named(d, "dataclass") for d in cls.decorator_list) or any(named(b, "NamedTuple") for b in cls.bases)):
        return None
    return sum(1 for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
               and "ClassVar" not in identifiers(n.annotation))


def has_arithmetic(node) -> bool:
    return any(isinstance(n, ast.BinOp) for n in ast.walk(node))


def memory_formula(name: str, func) -> bool:
    for node in own_nodes(func):
        if isinstance(node, ast.Call) and call_name(node) == "check_fits":
            size = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords
                                                                  if k.arg == "n_bytes"), None)
            if size is not None and has_arithmetic(size):
                return True
    if "memory" not in name.lower() and "bytes" not in name.lower():
        return False
    a = func.args
    inputs = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    assigns = [n for n in own_nodes(func) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    changed = True
    while changed:  # locals computed from the parameters
        changed = False
        for n in assigns:
            if set(identifiers(n.value)) & inputs:
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    new = {x.id for x in ast.walk(t) if isinstance(x, ast.Name)} - inputs
                    if new:
                        inputs |= new
                        changed = True
    return any(isinstance(n, ast.Return) and n.value is not None and has_arithmetic(n.value)
               and set(identifiers(n.value)) & inputs for n in own_nodes(func))


def declares_plan(tree: ast.Module) -> bool:
    names = module_level_names(tree)
    return isinstance(names.get("batch_index"), ast.FunctionDef) or "SWEEPS" in names


def walks_plan(func) -> bool:
    for node in own_nodes(func):
        if isinstance(node, ast.Call) and call_name(node) in ("batch_index", "next_batches"):
            f = node.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"):
                return True
        if isinstance(node, ast.Name) and node.id == "SWEEPS" and isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "SWEEPS" and isinstance(node.ctx, ast.Load):
            return True
    return False


def detects_divergence(func) -> bool:
    def is_test(node):
        return ((isinstance(node, ast.Call) and call_name(node) in FINITE_TESTS)
                or (isinstance(node, ast.Compare)
                    and any(BOUND.search(i) for op in [node.left, *node.comparators] for i in identifiers(op))))

    nodes = list(own_nodes(func))
    if not any(is_test(n) for n in nodes):
        return False
    aliases = set()
    for n in nodes:  # local names bound to a divergence record (at = div.diverged_at), mutated through them
        if (isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Attribute))
                and any("diverg" in i.lower() for i in identifiers(n.value))):
            aliases |= {t.id for t in n.targets if isinstance(t, ast.Name)}

    def record(target):
        """(names a divergence record, names a 'bad' record); a subscript's index is not the record,
        and rebinding an alias is no store into the record."""
        ids = identifiers(target.value if isinstance(target, ast.Subscript) else target)
        alias = not isinstance(target, ast.Name) and any(i in aliases for i in ids)
        return alias or any("diverg" in i.lower() for i in ids), any("bad" in i.lower() for i in ids)

    for n in nodes:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                diverg, bad = record(t)
                if diverg or (bad and not any(is_test(x) for x in ast.walk(n.value))):
                    return True
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in IN_PLACE
                and record(n.func.value)[0]):
            return True
    return False


def raises_value_error(tree: ast.Module) -> list[int]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "ValueError":
                out.append(node.lineno)
    return out


def line_kinds(text: str, tree: ast.Module) -> Counter:
    """Physical lines by kind: docstring, comment, blank, code (in that order of precedence)."""
    lines = text.splitlines()
    doc = set()
    for node in [tree, *(n for n in ast.walk(tree)
                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]:
        body = node.body
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            doc.update(range(body[0].lineno, body[0].end_lineno + 1))
    code, comment = set(), set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            comment.add(tok.start[0])
        elif tok.type not in skip:
            code.update(range(tok.start[0], tok.end[0] + 1))
    kinds = Counter()
    for i, line in enumerate(lines, start=1):
        kinds["docstring" if i in doc else "code" if i in code else "comment" if i in comment
              else "blank" if not line.strip() else "code"] += 1
    return kinds


# ----------------------------------------------------------------------------- counting
def count(root: Path) -> dict:
    """Every count of :data:`RULES` over the source packages of ``root``, with what each rule matched."""
    root = root.resolve()
    packages = source_packages(root)
    found = {key: [] for key in RULES}
    per_package, all_sizes = {}, {}
    parsed = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            parsed[path] = rel, text, ast.parse(text, filename=rel), module_name(root, path)
    offered = public_names({module: (tree, path.name == "__init__.py")
                            for path, (_, _, tree, module) in parsed.items()})
    for package in packages:
        stats = Counter()
        for path in sorted((root / package).rglob("*.py")):
            rel, text, tree, module = parsed[path]
            kinds = line_kinds(text, tree)
            n_lines = len(text.splitlines())
            names = offered[module]
            raises = raises_value_error(tree)
            stats.update(files=1, lines=n_lines, public_names=len(names), raise_value_error=len(raises),
                         **{f"{k}_lines": v for k, v in kinds.items()})
            found["public_names"] += names
            found["raise_value_error"] += [f"{rel}:{line}" for line in raises]
            if n_lines > LONG_FILE:
                found["files_over_374_lines"].append(f"{rel} ({n_lines} lines)")
            if path.name == "__init__.py" and (size := all_size(tree)) is not None:
                all_sizes[module] = size
            plan_module = declares_plan(tree)
            for qualname, func, is_method in functions(tree):
                where = f"{rel}:{func.lineno} {qualname}"
                if (n := n_parameters(func, is_method)) >= MANY_PARAMETERS:
                    found["run_option_places"].append(f"{where} ({n} parameters)")
                if memory_formula(func.name, func):
                    found["memory_formulas"].append(where)
                if not plan_module and walks_plan(func):
                    found["plan_walkers"].append(where)
                if detects_divergence(func):
                    found["divergence_detectors"].append(where)
            for cls in classes(tree):
                if (n := record_fields(cls) or 0) >= MANY_PARAMETERS:
                    found["run_option_places"].append(f"{rel}:{cls.lineno} {cls.name} ({n} fields)")
        per_package[package] = {key: stats[key] for key in
                                ("files", "lines", "code_lines", "docstring_lines", "comment_lines", "blank_lines",
                                 "public_names", "raise_value_error")}
    totals = Counter()
    for stats in per_package.values():
        totals.update(stats)
    tests = sorted((root / "tests").rglob("*.py")) if (root / "tests").is_dir() else []
    counts = {key: len(found[key]) for key in ("public_names", "run_option_places", "memory_formulas",
                                                "plan_walkers", "divergence_detectors", "raise_value_error")}
    counts.update(source_code_lines=totals["code_lines"], source_docstring_lines=totals["docstring_lines"],
                  source_comment_lines=totals["comment_lines"], source_blank_lines=totals["blank_lines"],
                  source_lines=totals["lines"], source_files=totals["files"],
                  test_lines=sum(len(p.read_text(encoding="utf-8").splitlines()) for p in tests),
                  test_files=len(tests), files_over_374_lines=len(found["files_over_374_lines"]))
    assert set(counts) == set(RULES), set(counts) ^ set(RULES)
    return {"root": str(root), "revision": revision(root), "packages": packages, "counts": counts,
            "per_package": per_package, "all_sizes": all_sizes, "rules": RULES, "found": found}


def revision(root: Path) -> str | None:
    """The commit checked out at ``root`` (None outside a git checkout)."""
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def print_tables(result: dict) -> None:
    print(f"architecture counts of {result['root']} at {result['revision'] or '(no git revision)'}")
    print(f"source packages: {', '.join(result['packages'])}\n")
    width = max(map(len, RULES))
    for key, value in result["counts"].items():
        print(f"{key:<{width}}  {value:>7}  {RULES[key]}")
    columns = list(next(iter(result["per_package"].values()), {}))
    print(f"\n{'package':<16}" + "".join(f"{c:>18}" for c in columns))
    for package, stats in result["per_package"].items():
        print(f"{package:<16}" + "".join(f"{stats[c]:>18}" for c in columns))
    if result["all_sizes"]:
        print("\n__all__ sizes: " + ", ".join(f"{m} {n}" for m, n in result["all_sizes"].items()))
    for key in LISTED:
        print(f"\n{key} ({len(result['found'][key])}):")
        for entry in result["found"][key]:
            print(f"  {entry}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT, help="the source tree to count (default: this repository)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root}: not a folder")
    result = count(args.root)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print_tables(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
