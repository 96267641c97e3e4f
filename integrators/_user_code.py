"""User Numba code called from the toolkit's kernels, compiled with bounds checking.

The kernels call functions written by users (test functions, a scheme's ``step``, a user target's
gradients, a plan's ``BATCH_RULE`` or ``batch_index``).  Compiled code does not check indices, so
such a function writing past an array corrupts memory (the process aborts later, with no traceback).
:func:`guarded` recompiles a user function's source with ``boundscheck=True`` and wraps it so that
any exception it raises inside a kernel ends in a :class:`UserCodeError` naming the function, raised
in Python where the run was started, threads included.

Only user code is checked (``benchmarks/bench_user_boundscheck.py`` measures the cost); an explicit
``boundscheck=False`` or ``NUMBA_BOUNDSCHECK=0`` turns the checks off.  Numba functions that the user
function calls keep their own options, so they are not checked unless compiled with
``boundscheck=True`` (or ``NUMBA_BOUNDSCHECK=1`` is set), a limit stated where ``test_functions`` is
documented (checking them here would mean rebuilding every Numba function reachable from the user's,
through globals, closures and module attributes, with new globals: not attempted).
"""

from __future__ import annotations

import inspect

import numba as nb

TOOLKIT_PACKAGES = ("integrators", "bias", "bnn", "theory_checks", "reports", "tour", "experiments")


class UserCodeError(RuntimeError):
    """An exception raised inside user Numba code that a kernel called (see the module)."""


def is_user_code(fn) -> bool:
    """Whether ``fn`` is a Numba function written outside the toolkit's packages."""
    py_func = getattr(fn, "py_func", None)
    if py_func is None:
        return False
    module = getattr(py_func, "__module__", None) or ""
    return module.split(".")[0] not in TOOLKIT_PACKAGES


def describe(fn) -> str:
    """``module.qualname`` of a Numba function's Python source, or its repr."""
    py_func = getattr(fn, "py_func", fn)
    name = getattr(py_func, "__qualname__", None) or getattr(py_func, "__name__", None)
    return f"{getattr(py_func, '__module__', '?')}.{name}" if name else repr(fn)


_GUARDED: dict = {}  # (function, role) -> its guarded version; a few entries per user function


def guarded(fn, role: str):
    """The user Numba function ``fn`` recompiled bounds-checked, raising :class:`UserCodeError` naming
    ``role`` and ``fn`` when it raises; cached per ``(fn, role)``; the toolkit's own functions and non-Numba
    objects are returned unchanged."""
    if not is_user_code(fn):
        return fn
    key = (fn, role)
    if key not in _GUARDED:
        _GUARDED[key] = _build(fn, role)
    return _GUARDED[key]


def _build(fn, role: str):
    options = {k: v for k, v in fn.targetoptions.items() if k not in ("cache", "nopython")}
    if options.get("boundscheck") is None:  # (unset reads as None)
        options["boundscheck"] = True
    checked = nb.njit(**options)(fn.py_func)
    params = ", ".join(("*" if p.kind is p.VAR_POSITIONAL else "") + name
                       for name, p in inspect.signature(fn.py_func).parameters.items())
    message = (f"{role} {describe(fn)!r} failed inside the compiled kernel: an array index out of bounds (user "
               f"Numba code is compiled with bounds checking) or another exception it raised (or a function it "
               f"calls raised), such as a division by zero")
    # (Numba matches only `except Exception`, and a raise inside `except` does not compile: hence the flag)
    # (the names of the wrapper's own variables cannot collide with the function's parameters)
    source = (f"def guarded_user_code({params}):\n"
              f"    _ok_ = False\n"
              f"    try:\n"
              f"        _result_ = _checked_({params})\n"
              f"        _ok_ = True\n"
              f"    except Exception:\n"
              f"        pass\n"
              f"    if not _ok_:\n"
              f"        raise _UserCodeError_(_message_)\n"
              f"    return _result_\n")
    if {"_ok_", "_result_", "_checked_", "_UserCodeError_", "_message_"} & set(params.replace("*", "").split(", ")):
        raise ValueError(f"{role} {describe(fn)!r}: rename its parameters _ok_, _result_, _checked_, "
                         f"_UserCodeError_ and _message_ (names the bounds-checking wrapper uses)")
    namespace = {"_checked_": checked, "_message_": message, "_UserCodeError_": UserCodeError}
    exec(source, namespace)  # noqa: S102 (the text above, with the function's own parameter names)
    namespace["guarded_user_code"].__defaults__ = fn.py_func.__defaults__  # optional arguments stay optional
    wrapper = nb.njit(nogil=True)(namespace["guarded_user_code"])
    for attr in ("allocates",):  # what the kernels read off a function besides calling it
        if hasattr(fn, attr):
            setattr(wrapper, attr, getattr(fn, attr))
    return wrapper
