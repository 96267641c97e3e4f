"""A registry of one kind of thing (schemes, plans): name -> module, or an object with the
module's attributes.  Everything that iterates over schemes or plans reads its registry; user
code adds to it with ``register`` and nothing else changes."""

from __future__ import annotations

from collections.abc import Callable


class Registry(dict):
    """``kind`` names the things (for messages), ``required`` the attributes each declares,
    ``check(item)`` raises ``ValueError`` for a bad declaration beyond that."""

    def __init__(self, kind: str, required: tuple, check: Callable | None = None, items=()):
        super().__init__()
        self.kind, self.required, self._check = kind, tuple(required), check
        for item in items:
            self.register(item)

    def validate(self, item) -> None:
        missing = [a for a in self.required if not hasattr(item, a)]
        if missing:
            raise ValueError(f"a {self.kind} must declare {', '.join(self.required)}; {item!r} lacks {missing}")
        if not isinstance(item.NAME, str) or not item.NAME:
            raise ValueError(f"a {self.kind}'s NAME must be a non-empty string, got {item.NAME!r}")
        if self._check is not None:
            self._check(item)

    def register(self, item, *, replace: bool = False):
        """Add ``item`` under its ``NAME``; every table, figure, oracle and test that iterates
        over this registry then finds it.  Returns the item."""
        self.validate(item)
        if item.NAME in self and self[item.NAME] is not item and not replace:
            raise ValueError(f"a {self.kind} named {item.NAME!r} is already registered (pass replace=True)")
        self[item.NAME] = item
        return item

    def unregister(self, name: str) -> None:
        if name not in self:
            raise ValueError(f"unknown {self.kind} {name!r}; choose from {sorted(self)}")
        del self[name]

    def resolve(self, item):
        """The item registered under a name, or the item itself (validated)."""
        if isinstance(item, str):
            if item not in self:
                raise ValueError(f"unknown {self.kind} {item!r}; choose from {sorted(self)}")
            return self[item]
        self.validate(item)
        return item
