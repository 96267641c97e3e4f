"""User Numba code called from the toolkit's kernels, compiled with bounds checking.

The kernels call functions written by users: test functions (``f(x, out, test_data)``), the
``step`` of a :class:`integrators.Scheme`, the gradients of a user target class, a plan's
``BATCH_RULE`` or ``batch_index``.  Compiled code does not check indices, so such a function
writing past an array it was given corrupts memory (the process aborts later, with no traceback)
and one reading past it returns whatever memory follows.  :func:`guarded` recompiles a user
function's Python source with ``boundscheck=True`` and wraps it so that any exception it raises
inside a kernel (an index out of bounds, a division by zero, ...) ends in a :class:`UserCodeError`
naming the function, raised in Python where the run was started, threads included.

Cost and switches: only user code is checked (the toolkit's own functions keep full speed); a
checked function runs slower in proportion to the indexing it does
(``benchmarks/bench_user_boundscheck.py`` measures it; ``benchmarks/RESULTS.md`` states the
measured ratio).  A function compiled with an explicit ``@numba.njit(boundscheck=False)`` keeps
no checks; ``NUMBA_BOUNDSCHECK=0`` in the environment (Numba's own switch, read when the process
starts) turns them off everywhere.  Either way the wrapper still names the function of any other
exception it raises.  Only the function given is recompiled: other Numba functions that it calls
keep the options they were compiled with, so an index out of bounds inside such a helper is not
caught unless it too was compiled with ``boundscheck=True``, or ``NUMBA_BOUNDSCHECK=1`` is set.
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
    """The user Numba function ``fn``, bounds-checked and named in any error it raises.

    Parameters
    ----------
    fn : numba function
        A function compiled with ``@numba.njit``.  The toolkit's own functions, and anything
        that is not a Numba function, are returned unchanged.
    role : str
        What the function is to the run, for the message (e.g. ``"test_functions"``).

    Returns
    -------
    numba function
        A Numba function with the same arguments and result that calls ``fn``'s source
        compiled with its own options and ``boundscheck=True`` (unless ``fn`` asked for
        ``boundscheck=False``), and raises :class:`UserCodeError` naming ``role`` and ``fn``
        when that call raises.  Built once per ``(fn, role)``.
    """
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
