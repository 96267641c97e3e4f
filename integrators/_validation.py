"""The validation layer: one checker per kind of argument, each returning the value in its
canonical type or raising a ``ValueError`` that names the argument, the value and what is allowed.
The entry points of every package check their input through these instead of private helpers of
``integrators._api``.  Each returns what the algorithms behind it may trust.

Declared constraints (in the spirit of scikit-learn's parameter constraints) name what an argument
may be, once, beside the thing that takes it::

    CONSTRAINTS = {"h": POSITIVE, "n_chains": at_least(1), "seed": SEED, "divergence_bound": optional(POSITIVE)}
    values = check_parameters(values, CONSTRAINTS)

:class:`integrators._spec.RunSpec` and its option objects declare theirs so; :func:`check_parameters`
applies them in order and returns the canonical values.

A 0-d array (numpy or torch) counts as its one number wherever a number is asked for, as a
Python or numpy scalar does; arrays of positions (``x0``, ``v0``, ``x_ref``, the box) must hold
numbers, not booleans.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import re
from collections.abc import Mapping

import numpy as np

MIN_STEP_OVER_FRICTION = 1e-12  # below this h / gamma positions move ~sqrt(2 h / gamma) per step: frozen
# More steps than any run finishes (2.8e14: three days of one chain at a nanosecond a step), and far
# inside the int64 step indices and stream counters of both backends (a step's draws times n_steps).
MAX_STEPS = 2**48


def scalar(value):
    """``value``'s one number if it is a 0-d array or tensor (``np.array(0.1)``,
    ``torch.tensor(3)``), else ``value`` unchanged: every checker of a number takes a 0-d array as
    that number."""
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        try:
            return value.item()
        except (TypeError, ValueError, RuntimeError):
            return value
    return value


def finite_array(name, value, ndim=None, dtype=float, *, booleans=True):
    """``value`` as a contiguous real array of ``dtype`` (``ndim`` dimensions if given), finite where
    it is floating point; complex values and non-numbers are refused by name, and booleans too
    with ``booleans=False`` (a position of ``True`` is a mistake, not the number 1)."""
    if getattr(value, "requires_grad", False) is True:  # a tensor of an autograd graph: its values only, said so
        raise ValueError(f"{name} is a tensor that requires grad; pass its values, {name}.detach()")
    try:
        complex_values = np.iscomplexobj(value)
        raw = np.asarray(value)
        if not booleans and raw.dtype.kind == "b":
            raise ValueError(f"{name} must be an array of numbers, got booleans: {value!r}")
        if raw.dtype.kind == "O":  # float() reads None as NaN: not a non-finite number but no number at all
            odd = [v for v in raw.flat if v is None or isinstance(v, str | bytes)]
            if odd:
                raise ValueError(f"{name} must be an array of numbers, but it holds values that are not numbers, "
                                 f"such as {shown(odd[0])}")
        arr = np.asarray(value, dtype=dtype if not complex_values else complex)
    except (TypeError, ValueError, OverflowError, RuntimeError) as error:  # RuntimeError: a tensor numpy cannot read
        if str(error).startswith(f"{name} must be"):
            raise
        why = f" ({str(error).splitlines()[0][:160]})" if isinstance(error, RuntimeError) and str(error) else ""
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}{why}") from None
    if complex_values:  # numpy would drop the imaginary part with only a warning
        raise ValueError(f"{name} must be real, got complex values")
    arr = np.ascontiguousarray(arr) if arr.ndim else arr  # (ascontiguousarray makes a 0-d array 1-d)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


def positive_float(name, value):
    value = scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an integer beyond the float range
        raise ValueError(f"{name} must be positive and finite, got an integer beyond the float range") from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def positive_real(name, value) -> float:
    """A finite positive real number from user code (a plan's force scale): Python and numpy numbers and
    0-d arrays, not bools, strings or None (``float("2")`` would pass a string off as a number)."""
    value = scalar(value)
    ok = not isinstance(value, bool | np.bool_) and isinstance(value, numbers.Real)
    number = float(value) if ok and abs(value) < 1e308 else math.nan
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite positive real number, got {value!r}")
    return number


def batch_indices(name, value, n_data: int, batch_size: int):
    """An explicit batch of data indices (a numpy array, a tensor or a list): one dimension of integers in
    ``[0, n_data)``, non-empty and at most ``batch_size`` long, else ``ValueError`` naming it.  A negative
    index would pick from the end, an empty or longer batch scale the force wrongly: all silently."""
    arr = value if hasattr(value, "dtype") and hasattr(value, "shape") else np.asarray(value)
    kind = str(arr.dtype)
    if "int" not in kind:  # ("int64", "uint8", "torch.int32"; not bool or float)
        raise ValueError(f"{name} must hold integer data indices, got dtype {kind}")
    if len(arr.shape) != 1 or arr.shape[0] == 0 or arr.shape[0] > batch_size:
        raise ValueError(f"{name} must be one dimension of 1 to batch_size={batch_size} indices, got shape "
                         f"{tuple(arr.shape)}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high >= n_data:
        raise ValueError(f"{name} holds the index {low if low < 0 else high}, outside [0, n_data={n_data})")
    return value


def int_at_least(name, value, low):
    value = scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return int(value)


def whole_number(name, value, low) -> int:
    """A count that may arrive as a float with an integral value (``1000.0``), not a fraction or a bool."""
    value = scalar(value)
    if not isinstance(value, bool) and isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        if math.isfinite(value) and value == int(value):
            value = int(value)
    return int_at_least(name, value, low)


def real_number(name, value) -> float:
    """A finite real number: Python and numpy numbers, 0-d arrays and tensors (not bools or strings)."""
    try:
        number = math.nan if isinstance(value, bool | str) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return number


def boolean(name, value) -> bool:
    """A yes/no option: ``True`` or ``False`` only (a string such as "no" would read as true)."""
    value = scalar(value)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def file_path(name, value, *, none: bool = False):
    """``value`` unchanged if it is a non-empty file or folder path (``str`` or ``os.PathLike``; ``None`` too
    with ``none=True``), else a ``ValueError`` naming ``name``: every loader and finder of a data file checks
    its path here, so ``None`` or a number reads as what it is, not as pathlib's TypeError."""
    if value is None and none:
        return None
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        allowed = "a non-empty file or folder path (str or os.PathLike)" + (" or None" if none else "")
        raise ValueError(refusal(name, value, allowed))
    return value


def seed_value(value, name: str = "seed") -> int:
    """A seed: an integer in ``[0, 2**64)`` (the streams take its 64 bits: a larger one would repeat
    a smaller one's numbers)."""
    value = int_at_least(name, value, 0)
    if value >= 2**64:
        raise ValueError(f"{name} must be < 2**64, got {value}")
    return value


def step_count(name, value, low) -> int:
    """A number of steps: an integer in ``[low, MAX_STEPS]`` (:data:`MAX_STEPS` is ``2**48``)."""
    value = int_at_least(name, value, low)
    if value > MAX_STEPS:
        raise ValueError(f"{name} must be <= 2**48 = {MAX_STEPS} (more steps than any run finishes), got {value}")
    return value


def batch_size_for(target, value, *, plan: str | None = None) -> int:
    """A batch size: an integer in ``[1, n_data]`` (``target``: a target, or its number of data terms);
    ``None`` is refused for ``plan``, whose batches need a size (every backend says it so)."""
    if value is None and plan is not None:
        raise ValueError(f"batch_size is required for plan {plan!r}")
    n_data = target if isinstance(target, numbers.Integral) else target.n_data
    value = int_at_least("batch_size", value, 1)
    if value > n_data:
        raise ValueError(f"batch_size={value} is larger than the data ({n_data} terms)")
    return value


def step_over_friction(h: float, gamma: float) -> None:
    """Refuse ``h / gamma`` below :data:`MIN_STEP_OVER_FRICTION`: the chains' positions would move
    by about ``sqrt(2 h / gamma)`` a step, i.e. not at all (every backend applies this one rule)."""
    if h / gamma < MIN_STEP_OVER_FRICTION:
        raise ValueError(f"gamma={gamma!r} is too large for h={h!r}: positions would move by about "
                         f"sqrt(2 h / gamma) = {math.sqrt(2 * h / gamma):.2g} per step (frozen chains); "
                         f"need h / gamma >= {MIN_STEP_OVER_FRICTION:g}")


def divergence_bound_for(target, value):
    """``value``, or by default the target's own scale (``target.divergence_bound()``): every
    backend and the coupled chains call a chain diverged at the same place."""
    return positive_float("divergence_bound", target.divergence_bound() if value is None else value)


def initial_state(name, value, n_chains, dim, default):
    arr = default if value is None else finite_array(name, value, booleans=False)
    if arr.ndim == 0 and dim == 1:  # one number for a one-dimensional target
        arr = arr.reshape(1)
    if arr.ndim == 1:
        if arr.shape != (dim,):
            raise ValueError(f"{name} must have shape {(dim,)} or {(n_chains, dim)}, got {arr.shape}")
        arr = np.broadcast_to(arr, (n_chains, dim))
    if arr.shape != (n_chains, dim):
        raise ValueError(f"{name} must have shape {(dim,)} or {(n_chains, dim)}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return np.array(arr, dtype=float, order="C")


def callable_taking(name, fn, n_args: int, form: str):
    """``fn`` if it is callable with ``n_args`` positional arguments, else a ``ValueError`` naming ``name`` and
    saying what it must be (``form``, its contract, such as ``"loss_fn(model, indices)"``): a number or a
    function of the wrong arity reads as that, not as the TypeError of the call deep inside a step."""
    if not callable(fn):
        raise ValueError(refusal(name, fn, f"a function {form}"))
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: its own call says what is wrong
        return fn
    try:
        signature.bind(*[None] * n_args)
    except TypeError:
        label = printable(getattr(fn, "__qualname__", None) or type(fn).__name__)
        raise ValueError(f"{name} must take {n_args} positional arguments, {form}, got {label}{signature}") from None
    return fn


def test_functions_and_data(test_functions, n_test_functions, test_data) -> tuple:
    """Check ``test_functions`` (a Numba function of three positional arguments) and ``test_data``
    (a tuple of numpy arrays of numbers) before anything compiles; returns ``test_data`` as a tuple."""
    if n_test_functions and test_functions is None:
        raise ValueError("n_test_functions > 0 needs test_functions")
    if test_functions is None:
        if not (isinstance(test_data, tuple) and not test_data):  # read only by test_functions
            raise ValueError(f"test_data is given but test_functions is not: test_data is passed only to "
                             f"test_functions, got test_data={test_data!r}")
        return ()
    if not n_test_functions:
        raise ValueError("test_functions needs n_test_functions >= 1 (how many values it writes to out)")
    if not hasattr(test_functions, "py_func"):
        raise ValueError(f"test_functions must be a Numba function (decorate f(x, out, test_data) with "
                         f"@numba.njit), got {type(test_functions).__name__}")
    try:
        inspect.signature(test_functions.py_func).bind(None, None, None)
    except TypeError:
        raise ValueError(f"test_functions must take three positional arguments f(x, out, test_data), got "
                         f"{test_functions.py_func.__name__}{inspect.signature(test_functions.py_func)}") from None
    if not isinstance(test_data, tuple):
        raise ValueError(f"test_data must be a tuple of numpy arrays, got {type(test_data).__name__}")
    for i, arr in enumerate(test_data):
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
            raise ValueError(f"test_data[{i}] must be a numpy array of numbers, got {type(arr).__name__}"
                             + (f" of dtype {arr.dtype}" if isinstance(arr, np.ndarray) else ""))
    return test_data


# ------------------------------------------------------------------ declared constraints
def shown(value) -> str:
    """``value`` as an error message quotes it: its ``repr``, cut to about 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else f"{type(value).__name__} {text[:60]}..."


def printable(text) -> str:
    """``text`` (or ``str(text)``) with each character that is not printable escaped as a ``repr`` writes it:
    control characters (``ESC`` as ``\\x1b``, a newline as ``\\n``) and invisible format characters (a
    right-to-left override as ``\\u202e``); printable text, accented letters included, is left as it is.

    The one escape of user input (a path, an id, a module name) that a message echoes: a terminal shows the
    message as written, on one line, and the input cannot rewrite the screen.

    Parameters
    ----------
    text : object
        The text, or a value whose ``str`` is echoed.

    Returns
    -------
    str
        ``text`` with its non-printable characters escaped.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one line: its type and the first meaningful line of its message, colour codes
    stripped (Numba colours its messages and repeats "Failed in ... pipeline" before the reason); a line
    ending in a colon is joined to the next (Numba's "found for signature:" and the signature)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    at = next((i for i, ln in enumerate(lines) if not ln.startswith("Failed in")), 0)
    head = " ".join(lines[at:at + 2]) if lines and lines[at].endswith(":") else (lines[at] if lines else "")
    return f"{type(exc).__name__}: {printable(head)[:limit]}"


def _bound(value) -> str:
    if isinstance(value, int) and value >= 2**20 and not value & (value - 1):
        return f"2**{value.bit_length() - 1}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def refusal(name: str, value, allowed: str, detail: str = "") -> str:
    """The one message of a refused argument: ``"{name} must be {allowed}, got {value!r}"``, and
    ``" ({detail})"`` where a detail helps (which entry of a list, which rule of a histogram)."""
    return f"{name} must be {allowed}, got {shown(value)}" + (f" ({detail})" if detail else "")


class Constraint:
    """What an argument may be, as data: ``str()`` says what is allowed, ``check(name, value)`` (or a call)
    returns the canonical value or raises the one ``ValueError`` of :func:`refusal`, ``invalid_examples()``
    lists refused values (the common test feeds them to every declarer)."""

    def __str__(self) -> str:
        raise NotImplementedError

    def check(self, name: str, value):
        raise NotImplementedError

    def invalid_examples(self) -> list:
        return []

    def __call__(self, name: str, value):
        return self.check(name, value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self}>"

    @property
    def allowed(self) -> str:
        return str(self)

    def error(self, name: str, value, detail: str = "") -> ValueError:
        return ValueError(refusal(name, value, str(self), detail))


_WRONG_TYPES = ("1", None, True, 1j, np.array([1.0, 2.0]))  # a string, nothing, a bool, a complex, an array


class Interval(Constraint):
    """A finite ``int`` or ``float`` (``kind``) between ``low`` and ``high`` (``None``: no bound), ``closed`` on
    "left", "right", "both" or "neither"; integers refuse bools and fractions, a 0-d array counts as its number."""

    def __init__(self, kind: type, low=None, high=None, *, closed: str = "left"):
        if kind not in (int, float) or closed not in ("left", "right", "both", "neither"):
            raise TypeError(f"Interval(kind, ...) takes int or float and closed left/right/both/neither, "
                            f"got {kind!r}, {closed!r}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def _closed(self, side: str) -> bool:
        return self.closed in (side, "both")

    def __str__(self) -> str:
        what = "an integer" if self.kind is int else "a finite real number"
        low, high = self.low, self.high
        if low is not None and high is not None:
            what = "an integer" if self.kind is int else "a real number"
            return (f"{what} in {'[' if self._closed('left') else '('}{_bound(low)}, {_bound(high)}"
                    f"{']' if self._closed('right') else ')'}")
        if low is not None:
            return f"{what} {'>=' if self._closed('left') else '>'} {_bound(low)}"
        if high is not None:
            return f"{what} {'<=' if self._closed('right') else '<'} {_bound(high)}"
        return what

    def check(self, name: str, value):
        given, value = value, scalar(value)
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise self.error(name, given)
            number = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise self.error(name, given)
            try:
                number = float(value)
            except OverflowError:
                raise self.error(name, given, "an integer beyond the float range") from None
            if not math.isfinite(number):
                raise self.error(name, given)
        low, high = self.low, self.high
        if low is not None and not (number >= low if self._closed("left") else number > low):
            raise self.error(name, given)
        if high is not None and not (number <= high if self._closed("right") else number < high):
            raise self.error(name, given)
        return number

    def invalid_examples(self) -> list:
        out = list(_WRONG_TYPES)
        if self.kind is int:
            out.append((self.low or 0) + 0.5)  # a fraction
        else:
            out += [math.nan, math.inf, -math.inf, 10**400]
        for bound, side, step in ((self.low, "left", -1), (self.high, "right", 1)):
            if bound is None:
                continue
            if not self._closed(side):
                out.append(bound)
            elif self.kind is int:
                out += [bound + step, bound + step * 2**64]  # just beyond, and far beyond 64 bits
            else:
                out.append(math.nextafter(float(bound), step * math.inf))
        return out


class Boolean(Constraint):
    """``True`` or ``False`` (numpy's too), nothing else: a string such as "no" would read as true."""

    def __str__(self) -> str:
        return "True or False"

    def check(self, name: str, value) -> bool:
        plain = scalar(value)
        if not isinstance(plain, bool | np.bool_):
            raise self.error(name, value)
        return bool(plain)

    def invalid_examples(self) -> list:
        return ["yes", "no", 1, 0, 1.0, None]


class OneOf(Constraint):
    """One of ``choices`` (a mapping's keys or a sequence; a callable returning them is read when
    first needed, for a registry that imports heavy modules)."""

    def __init__(self, choices):
        self._choices = choices if callable(choices) else tuple(choices)

    @property
    def choices(self) -> tuple:
        return tuple(self._choices()) if callable(self._choices) else self._choices

    def __str__(self) -> str:
        return "one of " + ", ".join(map(repr, self.choices))

    def check(self, name: str, value):
        try:
            known = any(value == choice and isinstance(value, bool) == isinstance(choice, bool)
                        for choice in self.choices)
        except (TypeError, ValueError):
            known = False
        if not known:
            raise self.error(name, value)
        return value

    def invalid_examples(self) -> list:
        return [v for v in ("no-such-choice", None, 3.5) if v not in self.choices]


class InstanceOf(Constraint):
    """An instance of ``kind`` (a type or a tuple of types); ``example`` says what one looks like."""

    def __init__(self, kind, example: str):
        self.kind, self.example = kind, example

    def __str__(self) -> str:
        return self.example

    def check(self, name: str, value):
        if not isinstance(value, self.kind):
            raise self.error(name, value)
        return value

    def invalid_examples(self) -> list:
        return [v for v in (object(), "a string", 1.5, None) if not isinstance(v, self.kind)]


class Optional(Constraint):
    """``None``, or what ``constraint`` allows."""

    def __init__(self, constraint: Constraint):
        self.constraint = constraint

    def __str__(self) -> str:
        inner = str(self.constraint)
        return inner if inner.startswith("None or ") else f"None or {inner}"

    def check(self, name: str, value):
        if value is None:
            return None
        try:
            return self.constraint.check(name, value)
        except ValueError as error:  # say that None was allowed too
            detail = str(error).partition(f", got {shown(value)}")[2]
            raise self.error(name, value, detail[2:-1] if detail.startswith(" (") else "") from None

    def invalid_examples(self) -> list:
        return [v for v in self.constraint.invalid_examples() if v is not None]


class Either(Constraint):
    """What one of ``constraints`` allows (the first that accepts gives the canonical value)."""

    def __init__(self, *constraints: Constraint):
        self.constraints = constraints

    def __str__(self) -> str:
        return " or ".join(map(str, self.constraints))

    def check(self, name: str, value):
        for constraint in self.constraints:
            try:
                return constraint.check(name, value)
            except ValueError:
                continue
        raise self.error(name, value)

    def invalid_examples(self) -> list:
        def refused(constraint, value) -> bool:
            try:
                constraint.check("x", value)
            except ValueError:
                return True
            return False

        found = []
        for constraint in self.constraints:
            for value in constraint.invalid_examples():
                if all(refused(c, value) for c in self.constraints) and not any(value is f for f in found):
                    found.append(value)
        return found


class FailedCheck(ValueError):
    """An object of a registry's kind (a scheme, a plan) whose own check refused it: the message names it
    and the reason."""


class Registered(Constraint):
    """A name or object that ``resolve`` accepts (a registry's lookup: a scheme, a plan); the
    canonical value is what ``resolve`` returns, and its refusal is quoted as the detail (an object
    that failed its own check is refused by that check's words: it is one of the kind)."""

    def __init__(self, resolve, allowed: str):
        self.resolve, self.text = resolve, allowed

    def __str__(self) -> str:
        return self.text

    def check(self, name: str, value):
        try:
            return self.resolve(value)
        except FailedCheck as error:
            raise ValueError(one_line(error, limit=1000).partition(": ")[2]) from None
        except (ValueError, TypeError, AttributeError) as error:
            raise self.error(name, value, str(error)) from None

    def invalid_examples(self) -> list:
        return ["no-such-name", None, 3.5]


class ListOf(Constraint):
    """A list or tuple (or 1-d array) of what ``item`` allows, at least ``min_len`` long, with no
    entry repeated if ``unique``; a string is refused (it would be read letter by letter).
    Returns a list of the entries' canonical values."""

    def __init__(self, item: Constraint, *, min_len: int = 0, unique: bool = False):
        self.item, self.min_len, self.unique = item, min_len, unique

    def __str__(self) -> str:
        return (f"a list or tuple of {f'{self.min_len} or more ' if self.min_len else ''}entries"
                + (", none repeated," if self.unique else "") + f" each {self.item}")

    def check(self, name: str, value) -> list:
        entries = value.tolist() if isinstance(value, np.ndarray) and value.ndim == 1 else value
        if not isinstance(entries, list | tuple):
            raise self.error(name, value)
        if len(entries) < self.min_len:
            raise self.error(name, value)
        out = []
        for i, entry in enumerate(entries):
            try:
                out.append(self.item.check(f"{name}[{i}]", entry))
            except ValueError as error:
                raise self.error(name, value, str(error)) from None
        if self.unique and any(entry in entries[:i] for i, entry in enumerate(entries)):
            raise self.error(name, value, "an entry is repeated")
        return out

    def invalid_examples(self) -> list:
        out = ["abc", 3]
        out += [[bad] for bad in self.item.invalid_examples()[:2]]
        if self.min_len:
            out.append([])
        if self.unique and isinstance(self.item, OneOf) and self.item.choices:
            out.append([self.item.choices[0]] * 2)
        return out


class DictOf(Constraint):
    """A dict of string keys whose every value ``value`` allows; returns a dict of the canonical values."""

    def __init__(self, value: Constraint):
        self.value = value

    def __str__(self) -> str:
        return f"a dict of string keys, each value {self.value}"

    def check(self, name: str, value) -> dict:
        if not isinstance(value, Mapping):
            raise self.error(name, value)
        out = {}
        for key, entry in value.items():
            if not isinstance(key, str):
                raise self.error(name, value, f"key {shown(key)} is not a string")
            try:
                out[key] = self.value.check(f"{name}[{key!r}]", entry)
            except ValueError as error:
                raise self.error(name, value, str(error)) from None
        return out

    def invalid_examples(self) -> list:
        return ["abc", [1], {1: None}, *({"x": bad} for bad in self.value.invalid_examples()[:2])]


class PowerOfTwo(Constraint):
    """An integer ``2**k`` in ``[1, largest]``."""

    def __init__(self, largest: int):
        self.largest = largest

    def __str__(self) -> str:
        return f"a power of two in [1, {_bound(self.largest)}]"

    def check(self, name: str, value) -> int:
        try:
            number = Interval(int, 1, self.largest, closed="both").check(name, value)
        except ValueError:
            raise self.error(name, value) from None
        if number & (number - 1):
            raise self.error(name, value)
        return number

    def invalid_examples(self) -> list:
        return [*_WRONG_TYPES, 0, 3, 2.0, 2 * self.largest]


class Histogram(Constraint):
    """``None`` or ``(lo, hi, n_bins)`` (tuple, list or 1-d array, not a mapping): finite ``lo < hi``, integral
    ``n_bins >= 1``, finite positive bin width and inverse width.  Returns ``(float, float, int)`` or ``None``."""

    def __str__(self) -> str:
        return "None or (lo, hi, n_bins) with finite lo < hi, an integer n_bins >= 1 and bins of a finite width"

    def check(self, name: str, value):
        if value is None:
            return None
        try:
            if not isinstance(value, tuple | list | np.ndarray) or len(value) != 3:
                raise ValueError
            parts = [scalar(part) for part in value]
            if any(isinstance(part, str | bool | np.bool_) for part in parts[:2]):
                raise ValueError
            lo, hi, n_bins = float(parts[0]), float(parts[1]), parts[2]
        except (TypeError, ValueError, IndexError, OverflowError):
            raise self.error(name, value) from None
        fraction = isinstance(n_bins, numbers.Real) and not isinstance(n_bins, numbers.Integral | bool)
        if fraction and math.isfinite(n_bins) and n_bins == int(n_bins):
            n_bins = int(n_bins)  # 10.0 bins counts
        if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
            raise self.error(name, value, "n_bins must be an integer >= 1")
        n_bins = int(n_bins)
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise self.error(name, value, "lo < hi must be finite")
        try:
            width, inv_width = (hi - lo) / n_bins, n_bins / (hi - lo)
        except OverflowError:  # n_bins beyond the float range
            width, inv_width = 0.0, math.inf
        if not (math.isfinite(hi - lo) and 0.0 < inv_width < math.inf):
            raise self.error(name, value, f"bins of width (hi - lo) / n_bins = {width:.3g}: hi - lo and "
                                          f"n_bins / (hi - lo) must be finite and positive")
        return lo, hi, n_bins

    def invalid_examples(self) -> list:
        return ["abc", 5, True, (0.0, 1.0), {0: 1, 1: 2, 2: 3}, {"lo": -1.0, "hi": 1.0, "n_bins": 4}, {-1.0, 1.0, 4},
                ("a", 1.0, 10), (True, 2.0, 4), (-1.0, np.array([1.0]), 4), (3.0, -3.0, 10), (0.0, math.nan, 10),
                (0.0, math.inf, 10), (0.0, 1.0, 0), (0.0, 1.0, 2.5), (0.0, 1.0, True),
                (-1e308, 1e308, 4), (0.0, 5e-324, 4), (0.0, 1e-300, 10**10), (0.0, 1.0, 10**400)]  # bins overflow


POSITIVE = Interval(float, 0, None, closed="neither")
BOOLEAN = Boolean()
SEED = Interval(int, 0, 2**64, closed="left")
HISTOGRAM = Histogram()


def steps(low: int) -> Interval:
    """A number of steps: an integer in ``[low, MAX_STEPS]``."""
    return Interval(int, low, MAX_STEPS, closed="both")


def at_least(low: int) -> Interval:
    """An integer (not a bool) ``>= low``."""
    return Interval(int, low, None)


def optional(constraint: Constraint) -> Optional:
    """``None``, or what ``constraint`` allows."""
    return Optional(constraint)


def instance_of(kind, example: str) -> InstanceOf:
    """An instance of ``kind`` (``example`` says what one looks like in the message)."""
    return InstanceOf(kind, example)


def one_of(choices) -> OneOf:
    """One of ``choices`` (a mapping's keys or a sequence)."""
    return OneOf(choices)


def check_parameters(values: Mapping, constraints: Mapping) -> dict:
    """``values`` with every name of ``constraints`` checked and replaced by its canonical value
    (in the order of ``constraints``: the first bad argument is the one named)."""
    out = dict(values)
    for name, constraint in constraints.items():
        out[name] = constraint.check(name, values[name])
    return out


def declares(constraints: Mapping, example: Mapping | None = None):
    """Mark a function as a declarer: ``func.CONSTRAINTS`` (checked by the function itself, with
    :func:`check_parameters`, at its boundary) and ``func.VALID_EXAMPLE`` (keywords it accepts,
    from which the common test makes each invalid call; left out where a valid call needs an object,
    such as a ``RunSpec``, that the test builds itself)."""
    def mark(func):
        func.CONSTRAINTS = constraints
        if example is not None:
            func.VALID_EXAMPLE = example
        return func
    return mark


def preset_settings(presets: Mapping, preset) -> dict:
    """The settings of ``preset`` in an experiment's ``presets`` table; a ``ValueError`` naming the
    known presets otherwise (every experiment reads its presets through this one check)."""
    if not isinstance(preset, str) or preset not in presets:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(map(str, presets))}")
    return presets[preset]


def integer_labels(labels, where: str = "", error=ValueError) -> np.ndarray:
    """``labels`` flattened, or ``error`` if they are not class indices (integer-valued floats
    and booleans (two classes) pass; fractions, NaN and strings do not); ``where`` prefixes the message."""
    labels = np.asarray(labels).reshape(-1)
    prefix = f"{where}: " if where else ""
    if labels.dtype.kind == "b":  # two classes as False / True
        return labels.astype(np.int64)
    if labels.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            fractional = ~np.isfinite(labels) | (labels != np.round(labels))
        if fractional.any():
            raise error(f"{prefix}labels must be integers (class indices), got {float(labels[fractional][0])!r}")
    elif labels.dtype.kind not in "iu":
        raise error(f"{prefix}labels must be integers (class indices), got an array of {labels.dtype}")
    return labels
