"""A registry of one kind of thing (schemes, plans, adapters): name -> an object with the kind's
attributes (a :class:`integrators.Scheme`, a :class:`integrators.Plan`, ...).  Everything that
iterates over schemes or plans reads its registry; user code adds to it with ``register`` and
nothing else changes.  The built-in members are the objects that the modules of the kind's package
declare (``SCHEME``, ``PLAN``; the modules found by :func:`discover`): a new file is a new member,
with no list to edit."""

from __future__ import annotations

import ast
import importlib
import math
import pkgutil
from collections.abc import Callable

from integrators._validation import FailedCheck

__all__ = ["CONTRACTS", "MAX_ORDER", "Registry", "discover", "discover_modules"]


class Registry(dict):
    """A registry of schemes or plans: a dict from each item's ``NAME`` to the item.

    Parameters
    ----------
    kind : str
        What the items are, for messages (``"scheme"``, ``"plan"``).
    required : tuple of str
        The attributes each item declares (``NAME`` among them).
    check : callable or None, optional
        ``check(item)``: raises ``ValueError`` for a bad declaration beyond the attributes.
    items : iterable, optional
        The items registered at once.

    Raises
    ------
    ValueError
        If an item of ``items`` is refused by :meth:`register`.
    """

    def __init__(self, kind: str, required: tuple, check: Callable | None = None, items=()):
        super().__init__()
        self.kind, self.required, self._check = kind, tuple(required), check
        for item in items:
            self.register(item)

    def validate(self, item) -> None:
        """Check that ``item`` declares what the registry requires.

        Parameters
        ----------
        item : object
            A scheme or plan.

        Raises
        ------
        ValueError
            If it lacks a required attribute, its ``NAME`` is not a non-empty string, or ``check``
            refuses it.
        """
        missing = [a for a in self.required if not hasattr(item, a)]
        if missing:
            raise ValueError(f"a {self.kind} must declare {', '.join(self.required)}; {item!r} lacks {missing}")
        if not isinstance(item.NAME, str) or not item.NAME:
            raise ValueError(f"a {self.kind}'s NAME must be a non-empty string, got {item.NAME!r}")
        if self._check is not None:
            try:
                self._check(item)
            except FailedCheck:
                raise
            except ValueError as error:  # it has the attributes: its check, not its kind, refused it
                raise FailedCheck(str(error)) from error

    def register(self, item, *, replace: bool = False):
        """Add ``item`` under its ``NAME``.

        Every table, figure, oracle and test that iterates over this registry then finds it.

        Parameters
        ----------
        item : object
            A scheme or plan (:meth:`validate`).
        replace : bool, default False
            Whether it may replace another item of the same name.

        Returns
        -------
        object
            The item.

        Raises
        ------
        ValueError
            If it is refused by :meth:`validate`, or another item has its name and ``replace`` is
            false.
        """
        self.validate(item)
        if item.NAME in self and self[item.NAME] is not item and not replace:
            raise ValueError(f"a {self.kind} named {item.NAME!r} is already registered (pass replace=True)")
        self[item.NAME] = item
        return item

    def unregister(self, name: str) -> None:
        """Remove the item registered under ``name``.

        Parameters
        ----------
        name : str
            Its name.

        Raises
        ------
        ValueError
            If no item has that name.
        """
        if name not in self:
            raise ValueError(f"unknown {self.kind} {name!r}; choose from {sorted(self)}")
        del self[name]

    def resolve(self, item):
        """The item registered under a name, or the item itself (validated).

        Parameters
        ----------
        item : str or object
            A name, or a scheme or plan.

        Returns
        -------
        object
            The registered item, or ``item`` itself.

        Raises
        ------
        ValueError
            If the name is unknown, or the item is refused by :meth:`validate`.
        """
        if isinstance(item, str):
            if item not in self:
                raise ValueError(f"unknown {self.kind} {item!r}; choose from {sorted(self)}")
            return self[item]
        self.validate(item)
        return item


def _declared(path: str, required=()) -> dict:
    """``{name: value node}`` of the names a module's source assigns or defines at top level
    (imports excluded: a name a module imports is not one it declares); empty, without parsing,
    when a name of ``required`` does not occur in the text."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not all(name in text for name in required):
        return {}
    tree = ast.parse(text, path)
    out, todo = {}, list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):  # ``ORDER: int`` (no value) declares None
                        out[name.id] = node.value
        elif isinstance(node, ast.If | ast.Try):  # e.g. a definition under ``try: ... except ImportError``
            todo.extend([*node.body, *getattr(node, "orelse", ()), *getattr(node, "finalbody", ()),
                         *(n for handler in getattr(node, "handlers", ()) for n in handler.body)])
    return out


MAX_ORDER = 10**6  # a module's ORDER: an integer literal in [-MAX_ORDER, MAX_ORDER]

CONTRACTS: dict[str, tuple[str, ...]] = {}
"""Every package :func:`discover` has searched, by name, and the names its members declare: the
registries' own statement of what makes a module a member (tools and tests read it, no table)."""


def discover(package, required) -> tuple[str, ...]:
    """The modules of ``package`` whose source declares every name of ``required``, by full name.

    Read from the source with :func:`pkgutil.iter_modules` and :mod:`ast`, so nothing is imported:
    private modules (``_name``) and ``__main__`` are skipped, and a name a module only imports
    does not count.  Order: by the module's ``ORDER`` (an integer literal; where the order
    matters, e.g. the figures of the report), modules without one after those with one, ties
    by name.  Adding a module to the package is all it takes to join its kind.

    Parameters
    ----------
    package : str or module
        An imported package (or its name).
    required : sequence of str
        The names a member declares.

    Returns
    -------
    tuple of str
        The members' full module names, in order.

    Raises
    ------
    ValueError
        If a member's source cannot be read or parsed (naming it), or its ``ORDER`` is not an integer
        literal within ``[-MAX_ORDER, MAX_ORDER]``.
    """
    package = importlib.import_module(package) if isinstance(package, str) else package
    CONTRACTS[package.__name__] = tuple(required)
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        full = f"{package.__name__}.{info.name}"
        spec = info.module_finder.find_spec(full)
        origin = getattr(spec, "origin", None)
        if origin is None or not origin.endswith(".py"):
            continue
        try:
            names = _declared(origin, required)
        except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError, OSError) as exc:
            first = (str(exc).splitlines() or [""])[0][:200]
            raise ValueError(f"{full}: its source cannot be read ({exc.__class__.__name__}: {first})") from None
        if not all(name in names for name in required):
            continue
        order = math.inf
        if "ORDER" in names:
            node = names["ORDER"]
            try:
                order = None if node is None else ast.literal_eval(node)
            # what literal_eval raises on a non-literal ({[]: 1} is TypeError) or a huge or deep one
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                order = None
            if isinstance(order, bool) or not isinstance(order, int) or not -MAX_ORDER <= order <= MAX_ORDER:
                shown = "an annotation without a value" if node is None else ast.unparse(node)[:80]
                raise ValueError(f"{full}: ORDER must be an integer literal from {-MAX_ORDER} to {MAX_ORDER}, "
                                 f"got {shown}")
        found.append((order, info.name, full))
    return tuple(full for _, _, full in sorted(found))


def discover_modules(package, required) -> tuple:
    """The modules :func:`discover` finds, imported.

    Parameters
    ----------
    package : str or module
        An imported package (or its name).
    required : sequence of str
        The names a member declares.

    Returns
    -------
    tuple of module
        The members, in :func:`discover`'s order.

    Raises
    ------
    ValueError
        If a member's ``ORDER`` is not an integer literal.
    """
    return tuple(importlib.import_module(name) for name in discover(package, required))
