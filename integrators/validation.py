"""The validation layer: one checker per kind of argument, each returning the value in its
canonical type or raising a ``ValueError`` that names the argument, the value and what is allowed.
The entry points of every package check their input through these instead of private helpers of
``integrators.api``.  Each returns what the algorithms behind it may trust.

Declared constraints (in the spirit of scikit-learn's parameter constraints) name what an argument
may be, once, beside the thing that takes it::

    CONSTRAINTS = {"h": POSITIVE, "n_chains": at_least(1), "seed": SEED, "divergence_bound": optional(POSITIVE)}
    values = check_parameters(values, CONSTRAINTS)

:class:`integrators.spec.RunSpec` and its option objects declare theirs so; :func:`check_parameters`
applies them in order and returns the canonical values.

A 0-d array (numpy or torch) counts as its one number wherever a number is asked for, as a
Python or numpy scalar does; arrays of positions (``x0``, ``v0``, ``x_ref``, the box) must hold
numbers, not booleans.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass

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
    try:
        complex_values = np.iscomplexobj(value)
        if not booleans and np.asarray(value).dtype.kind == "b":
            raise ValueError(f"{name} must be an array of numbers, got booleans: {value!r}")
        arr = np.asarray(value, dtype=dtype if not complex_values else complex)
    except (TypeError, ValueError, OverflowError) as error:
        if str(error).startswith(f"{name} must be"):
            raise
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}") from None
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


def batch_size_for(target, value) -> int:
    """A batch size: an integer in ``[1, target.n_data]``."""
    value = int_at_least("batch_size", value, 1)
    if value > target.n_data:
        raise ValueError(f"batch_size={value} is larger than the data ({target.n_data} terms)")
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


def histogram_bins(value, name: str = "histogram") -> tuple[float, float, int] | None:
    """``histogram=(lo, hi, n_bins)`` checked and converted (``None``: no histogram): a tuple, list
    or 1-d array of three numbers (not a mapping, whose keys would be read), with finite
    ``lo < hi`` and bins of a positive width whose inverse is finite (the kernels bin by
    ``(x - lo) * n_bins / (hi - lo)``)."""
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
        raise ValueError(f"{name} must be (lo, hi, n_bins), got {value!r}") from None
    n_bins = whole_number(f"{name}'s n_bins", n_bins, 1)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"{name} must be (lo, hi, n_bins) with finite lo < hi and n_bins >= 1, got {value!r}")
    try:
        width, inv_width = (hi - lo) / n_bins, n_bins / (hi - lo)
    except OverflowError:  # n_bins beyond the float range
        width, inv_width = 0.0, math.inf
    if not (math.isfinite(hi - lo) and 0.0 < inv_width < math.inf):
        raise ValueError(f"{name}={value!r} has bins of width (hi - lo) / n_bins = {width:.3g}: "
                         f"hi - lo and n_bins / (hi - lo) must be finite and positive (the kernels bin by them)")
    return lo, hi, n_bins


def power_of_two(name, value, largest: int) -> int:
    """An integer ``2**k`` in ``[1, largest]``."""
    value = int_at_least(name, value, 1)
    if value & (value - 1) or value > largest:
        raise ValueError(f"{name} must be a power of two <= 2**{largest.bit_length() - 1}, got {value}")
    return value


# ------------------------------------------------------------------ declared constraints
@dataclass(frozen=True)
class Constraint:
    """What an argument may be (``allowed``, for messages and documentation) and the checker that
    returns its canonical value or raises a ``ValueError`` naming it: ``check(name, value)``."""

    allowed: str
    check: Callable

    def __call__(self, name, value):
        return self.check(name, value)


POSITIVE = Constraint("a positive finite real number", positive_float)
BOOLEAN = Constraint("True or False", boolean)
SEED = Constraint("an integer in [0, 2**64)", lambda name, value: seed_value(value, name))
HISTOGRAM = Constraint("None or (lo, hi, n_bins) with lo < hi", lambda name, value: histogram_bins(value, name))


def steps(low: int) -> Constraint:
    """A number of steps: an integer in ``[low, MAX_STEPS]``."""
    return Constraint(f"an integer in [{low}, 2**48]", lambda name, value: step_count(name, value, low))


def at_least(low: int) -> Constraint:
    """An integer (not a bool) ``>= low``."""
    return Constraint(f"an integer >= {low}", lambda name, value: int_at_least(name, value, low))


def optional(constraint: Constraint) -> Constraint:
    """``None``, or what ``constraint`` allows."""
    return Constraint(f"None or {constraint.allowed}",
                      lambda name, value: None if value is None else constraint(name, value))


def instance_of(kind: type, example: str) -> Constraint:
    """An instance of ``kind`` (``example`` shows one in the message)."""
    def check(name, value):
        if not isinstance(value, kind):
            raise ValueError(f"{name} must be {example}, got {type(value).__name__}: {value!r}")
        return value
    return Constraint(example, check)


def check_parameters(values: Mapping, constraints: Mapping) -> dict:
    """``values`` with every name of ``constraints`` checked and replaced by its canonical value
    (in the order of ``constraints``: the first bad argument is the one named)."""
    out = dict(values)
    for name, constraint in constraints.items():
        out[name] = constraint(name, values[name])
    return out


def one_of(choices) -> Constraint:
    """One of ``choices`` (a mapping's keys or a sequence), named in the message."""
    names = tuple(choices)

    def check(name, value):
        if value not in names:
            raise ValueError(f"unknown {name} {value!r}; choose from {', '.join(map(str, names))}")
        return value
    return Constraint(f"one of {', '.join(map(str, names))}", check)


def preset_settings(presets: Mapping, preset) -> dict:
    """The settings of ``preset`` in an experiment's ``presets`` table; a ``ValueError`` naming the
    known presets otherwise (every experiment reads its presets through this one check)."""
    return presets[one_of(presets)("preset", preset)]


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
