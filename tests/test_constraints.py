"""Every declarer of ``CONSTRAINTS`` refuses every invalid value its declaration generates, in the
one message format of :func:`integrators._validation.refusal` (scikit-learn's ``check_param_validation``
is the model): no hand tables of refusals.

A declarer is a class or function of the project's packages with a ``CONSTRAINTS`` mapping of
:class:`integrators._validation.Constraint` objects; it needs a valid example (its ``VALID_EXAMPLE``
or an entry of :data:`EXAMPLES` here), else the test fails."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Mapping

import numpy as np
import pytest
from conftest import declarer_needs_torch
from helpers import project_packages
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators import GaussianTarget
from integrators._validation import BOOLEAN, HISTOGRAM, POSITIVE, SEED, Constraint, Interval, at_least, steps

PACKAGES = project_packages()
OPTIONAL_LIBRARIES = {"torch", "jax", "jaxlib", "blackjax", "posteriors", "optree", "dask", "distributed"}

# valid examples of declarers whose example holds an object a class attribute could not
def _spec(plan="sms"):
    from integrators import RunSpec

    return RunSpec.from_options(GaussianTarget.one_d_example(), "ubu", plan, h=0.1, n_chains=2, n_steps=10,
                                batch_size=1)


EXAMPLES = {
    "integrators._spec.RunSpec": lambda: {"target": GaussianTarget.one_d_example(), "scheme": "ubu", "plan": "sms",
                                         "h": 0.1, "n_chains": 2, "n_steps": 10, "batch_size": 1},
    # the loops take a spec, then their own keywords
    "bias._coupled.coupled_run": lambda: {"spec": _spec(), "coupling": "shared", "test_every": 1, "n_chunks": 1,
                                          "independent_paths": False},
    "bias._telescoping.telescoping_bias": lambda: {"spec": _spec(), "levels": 1, "base_epochs": 1, "burn_fraction": 0.1,
                                                   "coupling": "shared", "test_every": 1, "n_chunks": 1,
                                                   "on_diverge": "raise"},
    "integrators._ghmc.sms_ghmc": lambda: {"spec": _spec(), "n_sweeps": 1, "alpha": 0.5},
    "theory_checks.orders.weak_order": lambda: {"target": GaussianTarget.one_d_example(), "scheme": "ubu",
                                                "plan": "full", "hs": [0.1, 0.05], "gamma": 1.0, "batch_size": None,
                                                "statistic": "variance", "fit_points": 2},
    "theory_checks.orders.strong_order": lambda: {"spec": _spec("full"), "hs": [0.1, 0.05], "sweeps": 1,
                                                  "ref_levels": 1, "n_boot": 2, "fit_points": None},
}


def _modules():
    for package in PACKAGES:
        yield importlib.import_module(package)
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            if info.name.rpartition(".")[2] == "__main__":
                continue  # (importing it runs the command line)
            try:
                yield importlib.import_module(info.name)
            except ModuleNotFoundError as error:  # a module of an optional library that is not installed
                if (error.name or "").partition(".")[0] not in OPTIONAL_LIBRARIES:
                    raise


def _declarers() -> dict:
    found = {}
    for module in _modules():
        for obj in vars(module).values():
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or obj.__module__ != module.__name__:
                continue
            own = vars(obj) if inspect.isclass(obj) else getattr(obj, "__dict__", {})
            if isinstance(own.get("CONSTRAINTS"), Mapping):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


DECLARERS = _declarers()


def _needs_torch(key: str) -> bool:
    """Whether checking ``key``'s arguments needs torch (conftest's rule: its module, or a function it
    uses, imports torch or a module that does)."""
    return declarer_needs_torch(DECLARERS[key])


def _param(*values, key: str, id: str):
    return pytest.param(*values, id=id, marks=[pytest.mark.torch] if _needs_torch(key) else [])


PARAMETERS = [_param(key, name, key=key, id=f"{key}-{name}") for key, obj in DECLARERS.items()
              for name in obj.CONSTRAINTS]


def _constraints() -> dict:
    """Every declared constraint (and the module-level ones), each once, keyed by where it is declared
    (no ``str`` at collection: some constraints' text is read from torch modules)."""
    out, seen = {}, set()
    module_level = {"POSITIVE": POSITIVE, "BOOLEAN": BOOLEAN, "SEED": SEED, "HISTOGRAM": HISTOGRAM,
                    "steps(0)": steps(0), "at_least(1)": at_least(1)}
    declared = {f"{key}.{name}": (key, c) for key, obj in DECLARERS.items() for name, c in obj.CONSTRAINTS.items()}
    for where, (key, constraint) in {**{k: (None, c) for k, c in module_level.items()}, **declared}.items():
        if isinstance(constraint, Constraint) and id(constraint) not in seen:
            seen.add(id(constraint))
            out[where] = (key, constraint)
    return out


CONSTRAINTS = _constraints()


def valid_example(key: str) -> dict:
    obj = DECLARERS[key]
    if key in EXAMPLES:
        return dict(EXAMPLES[key]())
    if "VALID_EXAMPLE" not in getattr(obj, "__dict__", {}):
        pytest.fail(f"{key} declares CONSTRAINTS but no valid example: give it VALID_EXAMPLE or add it to "
                    f"tests/test_constraints.py's EXAMPLES")
    return dict(obj.VALID_EXAMPLE)


def build(key: str, kwargs: dict):
    """Make the class from ``kwargs``, or call the function (skipped where an optional library it
    needs is not installed)."""
    try:
        return DECLARERS[key](**kwargs)
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] in OPTIONAL_LIBRARIES:
            pytest.skip(f"{key} needs {error.name}, not installed")
        raise


def one_format(name: str, constraint: Constraint) -> str:
    return f"^{re.escape(name)} must be {re.escape(str(constraint))}, got "


def test_the_walk_finds_the_declarers_of_every_package():
    assert {"integrators._spec.RunSpec", "integrators._options.Observers", "bnn._config.RunConfig",
            "theory_checks._verify.verify", "theory_checks.adapters._measure.measure_adapter",
            *(key for key in EXAMPLES if key != "integrators._spec.RunSpec")} <= set(DECLARERS)


@pytest.mark.parametrize("key", [_param(key, key=key, id=key) for key in sorted(DECLARERS)])
def test_every_declarer_declares_constraints_of_its_parameters_and_accepts_its_valid_example(key):
    obj = DECLARERS[key]
    assert obj.CONSTRAINTS and all(isinstance(c, Constraint) for c in obj.CONSTRAINTS.values())
    parameters = inspect.signature(obj).parameters
    assert set(obj.CONSTRAINTS) <= set(parameters), f"{key} declares constraints of no parameter"
    example = valid_example(key)
    if inspect.isclass(obj):
        build(key, example)
    else:  # a function's valid call would run it: its example passes the checks at its boundary
        bound = inspect.signature(obj).bind(**example)
        bound.apply_defaults()
        for name, constraint in obj.CONSTRAINTS.items():
            constraint.check(name, bound.arguments[name])


@pytest.mark.parametrize("key, name", PARAMETERS)
def test_every_declarer_refuses_every_generated_invalid_value_by_name_in_one_format(key, name):
    constraint = DECLARERS[key].CONSTRAINTS[name]
    example = valid_example(key)
    bad_values = constraint.invalid_examples()
    assert bad_values, f"{constraint!r} generates no invalid value"
    for bad in bad_values:
        with pytest.raises(ValueError, match=one_format(name, constraint)):
            build(key, {**example, name: bad})


@pytest.mark.parametrize("where", [
    pytest.param(where, id=where, marks=[pytest.mark.torch] if key is not None and _needs_torch(key) else [])
    for where, (key, _) in sorted(CONSTRAINTS.items())])
def test_every_constraint_says_what_it_allows_and_refuses_its_invalid_examples(where):
    constraint = CONSTRAINTS[where][1]
    assert str(constraint).strip() and str(constraint) != repr(object())
    for bad in constraint.invalid_examples():
        with pytest.raises(ValueError, match=one_format("arg", constraint)):
            constraint.check("arg", bad)


INTERVALS = [c for _, c in CONSTRAINTS.values() if isinstance(c, Interval)] + [
    Interval(float, 0, 1, closed="neither"), Interval(float, -2.5, 3.0, closed="both"), Interval(int, -3, 7),
    Interval(int, None, 4, closed="right"), Interval(float, None, None)]


@st.composite
def inside(draw, constraint: Interval):
    low, high = constraint.low, constraint.high
    if constraint.kind is int:
        lo = None if low is None else (low if constraint._closed("left") else low + 1)
        hi = None if high is None else (high if constraint._closed("right") else high - 1)
        return draw(st.integers(min_value=lo, max_value=hi))
    return draw(st.floats(min_value=low, max_value=high, exclude_min=low is not None and not constraint._closed("left"),
                          exclude_max=high is not None and not constraint._closed("right"),
                          allow_nan=False, allow_infinity=False))


@pytest.mark.parametrize("constraint", INTERVALS, ids=[str(c) for c in INTERVALS])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_value_inside_an_interval_passes_as_itself_in_its_canonical_type(constraint, data):
    value = data.draw(inside(constraint))
    out = constraint.check("arg", value)
    assert out == value and type(out) is constraint.kind
    assert constraint.check("arg", np.array(value)) == out  # a 0-d array counts as its number
    if constraint.kind is int and abs(value) < 2**63:
        assert constraint.check("arg", np.int64(value)) == out  # and a numpy integer as its number
