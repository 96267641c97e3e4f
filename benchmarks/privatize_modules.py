"""Make implementation modules private (issue 36, item 5): ``git mv pkg/mod.py pkg/_mod.py`` for
every module the table ``benchmarks/public_surface.toml`` lists as private, then rewrite every
reference to the old module names across the tracked files.  Standard library only; re-runnable:
a module already private is not moved again, and a second run changes nothing.

    python benchmarks/privatize_modules.py [--table PATH] [--dry-run] [--allow-dirty]

The table: one ``[packages."<dotted package>"]`` entry per package, with

* ``private``: module (or subpackage) names to make private;
* ``public``: ``{module = "why"}`` of the modules that stay public (read by nobody but people);
* ``members_declare`` (optional): the names a registry member declares; every other module of the
  package (not ``__init__``, not ``__main__``) is private too, so a package whose modules another
  branch renamed or added is handled by the rule, not by a list;
* ``all``: the names its ``__init__`` lists in ``__all__`` (written by hand; printed here as a check).

A module that is not where the table says (moved by another branch) is skipped with a warning.

What is rewritten, for each old dotted name ``a.b.mod`` -> ``a.b._mod`` (longest-first, nested
packages included), in ``.py .md .toml .yml .yaml .cfg .ini .txt`` files and ``Makefile``:

* every dotted name whose prefix is an old module, outside attribute chains (``x.a.b.mod`` is
  left): imports, ``::: a.b.mod`` API entries, registry strings, monkeypatch targets ``"a.b.mod.f"``,
  ``pyproject`` entry points ``a.b.mod:f``;
* paths ``a/b/mod.py`` (and ``a/b/sub/`` for a subpackage);
* ``from a.b import mod`` and relative ``from . import mod`` -> ``from a.b import _mod as mod``;
  ``from .mod import x`` -> ``from ._mod import x`` (Python files, parsed with ``ast``);
* in what users read (README.md, docs/**/*.md, docs/tour/*.py): ``from a._mod import x, y`` ->
  ``from a import x, y`` when ``a/__init__.py``'s ``__all__`` lists every one of the names and defines
  none of them itself (so run this again after the ``__init__`` lists are written);
* the README's map (rows ``| `folder/` | ...``): a bare ``name.py`` that is now ``_name.py``.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = Path(__file__).resolve().with_name("public_surface.toml")
SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt"}
DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
SINGLE_FROM = re.compile(r"^(\s*)from ([\w.]+) import ([\w, ]+?)\s*$")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def declares(path: Path, names) -> bool:
    """Whether a module's source assigns or defines every one of ``names`` at top level."""
    todo, found = list(ast.parse(path.read_text(encoding="utf-8")).body), set()
    while todo:  # the top level, and the bodies of if/try there (as integrators.registry.discover reads it)
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                found.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            todo += [*node.body, *node.orelse, *getattr(node, "finalbody", ()),
                     *(n for handler in getattr(node, "handlers", ()) for n in handler.body)]
    return set(names) <= found


def plan(root: Path, table: dict) -> tuple[list[tuple[Path, Path]], dict[str, str], list[str]]:
    """``(moves to make, {old dotted name: new dotted name} of every private module, warnings)``."""
    moves, renames, warnings = [], {}, []
    for package, entry in table["packages"].items():
        folder = root / package.replace(".", "/")
        if not (folder / "__init__.py").is_file():
            warnings.append(f"skip package {package}: {folder.relative_to(root)}/__init__.py not found")
            continue
        names = list(entry.get("private", []))
        if "members_declare" in entry:
            for path in sorted(folder.glob("*.py")):
                name = path.stem
                if not name.startswith("_") and name not in names and name not in entry.get("public", {}) \
                        and not declares(path, entry["members_declare"]):
                    names.append(name)
        for name in names:
            old, new = folder / f"{name}.py", folder / f"_{name}.py"
            if not old.exists():
                old, new = folder / name, folder / f"_{name}"
            if old.exists() and new.exists():
                warnings.append(f"skip {package}.{name}: both {old.relative_to(root)} and "
                                f"{new.relative_to(root)} exist")
                continue
            if old.exists():
                moves.append((old, new))
            elif not (new.exists() or (folder / f"_{name}.py").exists()):
                warnings.append(f"skip {package}.{name}: not found in {folder.relative_to(root)}/")
                continue
            renames[f"{package}.{name}"] = f"{package}._{name}"
    return moves, renames, warnings


def rename_dotted(name: str, renames: dict[str, str]) -> str:
    """``name`` with every prefix that is an old module name replaced by its private name."""
    parts = name.split(".")
    out = list(parts)
    for k in range(2, len(parts) + 1):
        old = ".".join(parts[:k])
        if old in renames:
            out[k - 1] = renames[old].rsplit(".", 1)[1]
    return ".".join(out)


def module_of(root: Path, path: Path) -> tuple[str, bool]:
    """The dotted module a Python file is, and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def rewrite_imports(text: str, module: str, is_package: bool, renames: dict[str, str],
                    exported: dict[str, set[str]]) -> str:
    """``from P import mod`` -> ``from P import _mod as mod`` (unless ``P.__all__`` lists ``mod``: then it
    imports what ``P`` exports) and relative module paths renamed."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = []
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        new_source = rename_dotted(source, renames)
        changed = bool(node.level) and new_source != source  # an absolute module path: rewrite_text renames it
        names = []
        for alias in node.names:
            full = f"{source}.{alias.name}"
            if full in renames and alias.name not in exported.get(source, ()):
                names.append(f"_{alias.name} as {alias.asname or alias.name}")
                changed = True
            else:
                names.append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
        if not changed:
            continue
        head = "." * node.level + ".".join(new_source.split(".")[len(base):]) if node.level else source
        indent = lines[node.lineno - 1][:node.col_offset]
        statement = f"from {head} import {', '.join(names)}"
        if len(indent) + len(statement) > 120:
            statement = f"from {head} import (\n" + "".join(f"{indent}    {n},\n" for n in names) + f"{indent})"
        edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, statement))
    for start, col, end, end_col, statement in sorted(edits, reverse=True):
        first, last = lines[start - 1], lines[end - 1]
        lines[start - 1:end] = [first[:col] + statement + last[end_col:]]
    return "".join(lines)


MODULE_CONTEXT = re.compile(r"(\bfrom |\bimport |import_module\(['\"]|^\s*::: )$")


def rewrite_text(text: str, renames: dict[str, str], exported: dict[str, set[str]]) -> str:
    """Dotted names and paths of old modules renamed.  ``pkg.name`` alone, where ``pkg.__all__`` lists
    ``name`` (``theory_checks.verify``, ``tour.notebooks``: a module and the function it exports), names
    the exported object and is left, except as the module of an import, ``import_module`` or ``:::``."""
    def rename(m):
        name = m.group(0)
        package, _, last = name.rpartition(".")
        line_start = text.rfind("\n", 0, m.start()) + 1
        if last in exported.get(package, ()) and not MODULE_CONTEXT.search(text[line_start:m.start()]):
            return name
        return rename_dotted(name, renames)

    text = DOTTED.sub(rename, text)
    for old, new in renames.items():
        o, n = old.replace(".", "/"), new.replace(".", "/")
        text = re.sub(rf"(?<![\w/.]){re.escape(o)}(?=\.py\b|/)", n, text)
    return text


def package_all(root: Path, package: str) -> set[str]:
    """The literal ``__all__`` of a package's ``__init__`` (empty where there is none)."""
    init = root / package.replace(".", "/") / "__init__.py"
    if not init.is_file():
        return set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return set()
    return set()


def package_defines(root: Path, package: str) -> set[str]:
    """The names a package's ``__init__`` assigns or defines at top level (not the ones it imports)."""
    body = ast.parse((root / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8")).body
    return {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))} | \
        {t.id for n in body if isinstance(n, (ast.Assign, ast.AnnAssign))
         for t in ast.walk(n.targets[0] if isinstance(n, ast.Assign) else n.target) if isinstance(t, ast.Name)}


def point_users_at_packages(root: Path, text: str, renames: dict[str, str]) -> str:
    """In what users read: ``from a._mod import x`` -> ``from a import x`` where ``a.__all__`` has every name."""
    private = set(renames.values())

    def fix(line: str) -> str:
        m = SINGLE_FROM.match(line.rstrip("\n"))
        if not m or m.group(2) not in private:
            return line
        package = m.group(2).rsplit(".", 1)[0]
        names = [n.strip().split(" ")[0] for n in m.group(3).split(",") if n.strip()]
        if not names or not set(names) <= package_all(root, package) or set(names) & package_defines(root, package):
            return line  # a name the package defines itself (figure1's PRESETS) is not the module's
        return f"{m.group(1)}from {package} import {m.group(3).strip()}" + ("\n" if line.endswith("\n") else "")

    return "".join(fix(line) for line in text.splitlines(keepends=True))


def readme_map(root: Path, text: str) -> str:
    """In the README's rows ``| `folder/` | ... `name.py` ... |``: a file named there that the folder
    lacks, but whose ``_name.py`` it holds (at any depth), is named by its new name."""
    def fix(line: str) -> str:
        m = re.match(r"\|\s*`([\w/]+?)/`\s*\|", line)
        if not m or not (root / m.group(1)).is_dir():
            return line
        folder = root / m.group(1)

        def name(n):
            stem = n.group(1)
            if any(folder.rglob(f"{stem}.py")) or not any(folder.rglob(f"_{stem}.py")):
                return n.group(0)
            return f"`_{stem}.py`"
        return re.sub(r"`(\w+)\.py`", name, line)

    return "".join(fix(line) for line in text.splitlines(keepends=True))


def user_facing(rel: str) -> bool:
    return rel == "README.md" or (rel.startswith("docs/") and rel.endswith(".md")) or \
        re.fullmatch(r"docs/tour/[^/]+\.py", rel) is not None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to change (default: this one)")
    parser.add_argument("--table", type=Path, default=TABLE, help="the public surface (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    parser.add_argument("--allow-dirty", action="store_true", help="run on a tree with uncommitted changes")
    parser.add_argument("--ruff", default=shutil.which("ruff") or str(Path(sys.executable).with_name("ruff")),
                        help="ruff, run to sort the imports of the rewritten files (default: %(default)s)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not args.allow_dirty and git(root, "status", "--porcelain", "--untracked-files=no").strip():
        parser.error("the tree has uncommitted changes (commit them, or pass --allow-dirty)")
    table = tomllib.loads(args.table.read_text(encoding="utf-8"))
    moves, renames, warnings = plan(root, table)
    for warning in warnings:
        print(f"warning: {warning}")
    for old, new in moves:
        print(f"git mv {old.relative_to(root)} {new.relative_to(root)}")
        if not args.dry_run:
            git(root, "mv", str(old.relative_to(root)), str(new.relative_to(root)))
    # RESULTS.md records past runs under the names they had
    skip = {args.table.resolve(), Path(__file__).resolve(), (root / "benchmarks/RESULTS.md").resolve()}
    exported = {package: package_all(root, package) for package in {old.rsplit(".", 1)[0] for old in renames}}
    changed, rewritten_py = 0, []
    for rel in git(root, "ls-files").splitlines():
        path = root / rel
        if path.resolve() in skip or not path.is_file() or not (path.suffix in SUFFIXES or path.name == "Makefile"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = text
        if path.suffix == ".py":
            module, is_package = module_of(root, path)
            new = rewrite_imports(new, module, is_package, renames, exported)
        new = rewrite_text(new, renames, exported)
        if user_facing(rel):
            new = point_users_at_packages(root, new, renames)
        if rel == "README.md":
            new = readme_map(root, new)
        if new != text:
            changed += 1
            n_lines = sum(a != b for a, b in zip(text.splitlines(), new.splitlines(), strict=False))
            print(f"rewrote {rel} ({n_lines} lines)")
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")
                rewritten_py += [rel] if path.suffix == ".py" else []
    if rewritten_py:  # a renamed module sorts elsewhere among its imports
        if Path(args.ruff).is_file():
            proc = subprocess.run([args.ruff, "check", "--fix", "--select", "I001", "--quiet", *rewritten_py],
                                  cwd=root, capture_output=True, text=True)
            print(f"sorted imports with ruff ({args.ruff}): exit {proc.returncode}")
        else:
            print(f"warning: no ruff at {args.ruff}: sort the imports of the {len(rewritten_py)} rewritten .py "
                  "files (ruff check --fix --select I001)")
    for package, entry in table["packages"].items():
        declared = package_all(root, package)
        if "all" in entry and declared != set(entry["all"]):
            print(f"note: {package}.__all__ differs from the table: missing {sorted(set(entry['all']) - declared)}, "
                  f"extra {sorted(declared - set(entry['all']))}")
    print(f"{len(moves)} modules moved, {len(renames)} private in all, {changed} files rewritten"
          f"{' (dry run)' if args.dry_run else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
