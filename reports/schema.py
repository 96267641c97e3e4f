"""The structure of a persisted unit's result, declared by each experiment as ``RESULT`` and checked
before ``draw`` sees it.

A unit file's checksum catches a file damaged by accident; it is plain SHA-256 of the content, so
it cannot catch a file written by hand (or by an older version of a figure) whose content is
consistent but whose structure ``draw`` does not expect.  The schema does: :func:`check` walks a
result against its declaration and names the first place that differs, so the command line can
refuse the file in one line instead of a traceback from deep inside a figure.

The declarations are data, built from a few pieces::

    RESULT = Record(h=NUMBER, w1=NUMBER, diverged=BOOL, plan=TEXT, hs=ListOf(NUMBER))

``NUMBER`` is a finite number: a NaN or an infinity is refused unless the field declares it with
``NUMBER_OR_NONFINITE`` (a diverged point's distance, say), and neither takes an integer past a float's
range (``10**400``, which ``draw`` could not read as a float), so a unit whose value overflowed is
refused when it is made, naming the unit, instead of being drawn or kept by ``--resume``.
``Record`` requires its keys (but those declared ``Omittable``) and allows others (a newer field does
not break an older reader); ``SameLength`` adds that some of a record's lists are read point by point,
so they must have one length; ``MapOf`` is a dict with any text keys; ``OneOf`` takes the first
alternative that fits.  A unit that is not done (``{"missing": why}``, or a dict with ``"skipped": why``:
``reports.registry._unfinished``) is checked like any other, so a figure whose units may end that way
declares it (``OneOf(Record(...), MISSING)``), and one forged into a figure whose ``draw`` does not
expect it is refused by name.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing


class SchemaError(ValueError):
    """A result whose structure differs from its experiment's declaration."""


class Schema:
    """One piece of a declaration: :meth:`check` raises :class:`SchemaError` naming where it differs."""

    def check(self, value, where: str = "result") -> None:
        """Raise :class:`SchemaError` naming the first place where ``value`` differs.

        Parameters
        ----------
        value
            The value read from a unit file.
        where : str
            Its path inside the result, for the message.

        Raises
        ------
        SchemaError
            Where the structure differs.
        """
        self._check(value, where)

    def _check(self, value, where: str) -> None:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.__class__.__name__


def _what(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int) and not isinstance(value, bool) and not _float_sized(value):
        # repr of a huge int is long, or raises past Python's digit limit
        return f"an integer too large for a float ({value.bit_length()} bits)"
    return f"{type(value).__name__} {value!r}"[:60]


class _Leaf(Schema):
    def __init__(self, name: str, accepts):
        self.name, self.accepts = name, accepts

    def _check(self, value, where):
        if not self.accepts(value):
            raise SchemaError(f"{where}: expected {self.name}, got {_what(value)}")

    def __str__(self):
        return self.name


def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _finite(v) -> bool:
    if isinstance(v, numbers.Integral):
        # an int past a float's range (10**400) is saved fine but overflows where it is drawn
        return _float_sized(v)
    try:
        return math.isfinite(v)
    except (TypeError, ValueError, OverflowError):
        return False


def _float_sized(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


NUMBER = _Leaf("a finite number", lambda v: _real(v) and _finite(v))
NUMBER_OR_NONFINITE = _Leaf("a number (NaN and infinities allowed)", lambda v: _real(v) and _float_sized(v))
INTEGER = _Leaf("an integer", lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool))
TEXT = _Leaf("a string", lambda v: isinstance(v, str))
BOOL = _Leaf("true or false", lambda v: isinstance(v, bool))
NULL = _Leaf("null", lambda v: v is None)
ANY = _Leaf("anything", lambda v: True)


SECONDS = _Leaf("a number of seconds from 0 to 1e9", lambda v: _real(v) and _finite(v) and 0 <= v <= 1e9)


class Omittable(Schema):
    """A key of a :class:`Record` that may be absent; where present it is ``inner``.

    Parameters
    ----------
    inner : Schema
        What the value must be where the key is present.
    """

    def __init__(self, inner: Schema):
        self.inner = inner

    def _check(self, value, where):
        self.inner._check(value, where)

    def __str__(self):
        return f"{self.inner}, or absent"


class Nullable(Schema):
    """``inner`` or null.

    Parameters
    ----------
    inner : Schema
        What a value that is not null must be.
    """

    def __init__(self, inner: Schema):
        self.inner = inner

    def _check(self, value, where):
        if value is not None:
            self.inner._check(value, where)

    def __str__(self):
        return f"{self.inner} or null"


class ListOf(Schema):
    """A list whose every item is ``item``.

    Parameters
    ----------
    item : Schema, default ANY
        What each item must be.
    """

    def __init__(self, item: Schema = ANY):
        self.item = item

    def _check(self, value, where):
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected a list of {self.item}, got {_what(value)}")
        for i, entry in enumerate(value):
            self.item._check(entry, f"{where}[{i}]")

    def __str__(self):
        return f"a list of {self.item}"


class Record(Schema):
    """An object with (at least) these keys, each of its schema; other keys are allowed.

    Parameters
    ----------
    **fields : Schema
        The required keys and what each value must be.
    """

    def __init__(self, **fields: Schema):
        self.fields = fields

    def _check(self, value, where):
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object with keys {', '.join(self.fields)}, got {_what(value)}")
        lacking = [k for k, schema in self.fields.items() if k not in value and not isinstance(schema, Omittable)]
        if lacking:
            raise SchemaError(f"{where}: lacks {', '.join(repr(k) for k in lacking)}")
        for key, schema in self.fields.items():
            if key in value:
                schema._check(value[key], f"{where}[{key!r}]")

    def __str__(self):
        return f"an object with keys {', '.join(self.fields)}"


class SameLength(Schema):
    """A :class:`Record` whose lists under ``keys`` have one length: values read point by point (the step
    sizes and the bias at each), where a shorter list would lose or misplace points.

    Parameters
    ----------
    record : Record
        The record; each of ``keys`` must be one of its fields, declared ``ListOf``.
    *keys : str
        The fields of one length (two or more).

    Raises
    ------
    ValueError
        When the declaration is not of that form.
    """

    def __init__(self, record: Record, *keys: str):
        if not isinstance(record, Record) or len(keys) < 2 or not all(
                isinstance(record.fields.get(k), ListOf) for k in keys):
            raise ValueError(f"SameLength takes a Record and two or more of its ListOf fields, got {record} and "
                             f"{keys}")
        self.record, self.keys = record, keys

    def _check(self, value, where):
        self.record._check(value, where)
        lengths = {k: len(value[k]) for k in self.keys}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{k!r} {n}" for k, n in lengths.items())
            raise SchemaError(f"{where}: lists of different lengths ({shown}); they are read point by point")

    def __str__(self):
        return f"{self.record}, lists {', '.join(self.keys)} of one length"


class MapOf(Schema):
    """An object with any string keys whose every value is ``value``.

    Parameters
    ----------
    value : Schema, default ANY
        What each value must be.
    """

    def __init__(self, value: Schema = ANY):
        self.value = value

    def _check(self, value, where):
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object of {self.value}, got {_what(value)}")
        for key, entry in value.items():
            self.value._check(entry, f"{where}[{key!r}]")

    def __str__(self):
        return f"an object of {self.value}"


class OneOf(Schema):
    """The first of ``options`` that fits; where none does, the message names each one's problem.

    Parameters
    ----------
    *options : Schema
        The alternatives, in order.
    """

    def __init__(self, *options: Schema):
        self.options = options

    def _check(self, value, where):
        problems = []
        for option in self.options:
            try:
                option._check(value, where)
                return
            except SchemaError as exc:
                problems.append(str(exc))
        raise SchemaError(" / ".join(problems) if len(problems) > 1 else problems[0])

    def __str__(self):
        return " or ".join(str(o) for o in self.options)


MISSING = Record(missing=TEXT)  # a unit whose input data are absent
SKIPPED = Record(skipped=TEXT)  # a unit skipped for a library that is not installed

_BY_TYPE = {float: NUMBER, int: INTEGER, str: TEXT, bool: BOOL}


def from_dataclass(cls, *, nonfinite=()) -> Record:
    """The record of a dataclass's fields (the keys its constructor takes from a result); a field's
    schema follows its annotation where that is ``float``, ``int``, ``str`` or ``bool`` (or one of
    them or None), anything otherwise; fields with defaults are not required.  A ``float`` field is
    ``NUMBER`` (finite), or ``NUMBER_OR_NONFINITE`` where ``nonfinite`` names it.

    Parameters
    ----------
    cls : type
        A dataclass.
    nonfinite : tuple of str, default ()
        The ``float`` fields that may hold NaN or an infinity (e.g. a diverged point's distance).

    Returns
    -------
    Record

    Raises
    ------
    ValueError
        If ``nonfinite`` names a field ``cls`` lacks.
    """
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(nonfinite) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"nonfinite names fields {cls.__name__} lacks: {', '.join(unknown)}")
    fields = {}
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
            continue
        hint = hints.get(field.name)
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if hint is float and field.name in nonfinite:
            fields[field.name] = NUMBER_OR_NONFINITE
        elif hint in _BY_TYPE:
            fields[field.name] = _BY_TYPE[hint]
        elif len(args) == 1 and args[0] in _BY_TYPE and type(None) in typing.get_args(hint):
            fields[field.name] = Nullable(_BY_TYPE[args[0]])
        else:
            fields[field.name] = ANY
    return Record(**fields)


def check(result, schema: Schema) -> None:
    """Raise :class:`SchemaError` naming the first place where ``result`` differs from ``schema``.

    Parameters
    ----------
    result
        A unit's result, as read from its file.
    schema : Schema
        The experiment's ``RESULT``.

    Raises
    ------
    SchemaError
        Where the structure differs.
    """
    schema.check(result)

__all__ = ["ANY", "BOOL", "INTEGER", "MISSING", "MapOf", "Schema", "NUMBER", "NUMBER_OR_NONFINITE", "Nullable",
           "ListOf", "Omittable", "OneOf", "Record", "SECONDS", "SKIPPED", "SameLength", "SchemaError", "TEXT", "check",
           "from_dataclass"]
