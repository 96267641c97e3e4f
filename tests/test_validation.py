"""Input checks that compile nothing, as tables.

* the checkers of :mod:`integrators._validation` that are not one argument's constraint, and what
  valid values become (every declared constraint's refusals are generated from the declarations
  by tests/test_constraints.py);
* the run spec (:class:`integrators._spec.RunSpec`, its option objects and
  :meth:`RunSpec.from_options`, i.e. ``sample``'s keywords) on the Numba and the torch backend:
  ``(keywords, message)``, memory requests beyond the machine, and hypothesis properties;
* the checks of the other entry points that size or run chains (``coupled_run``, ``sms_ghmc``,
  ``telescoping_bias``);
* the input checks of modules whose test files live elsewhere (bias._coupled, bias._wasserstein,
  bias._streaming_w1, bias._metrics, integrators.targets, integrators._memory, reports._metadata,
  the torch module sampler, bnn, experiments.bnn), each in a section named after its module.

Nothing here compiles a Numba kernel: :func:`test_the_refusal_tables_compile_no_kernel` and its torch twin
run every table (and the end-to-end refusals of tests/test_api.py) in a fresh interpreter and
find the kernel caches empty.  The few refusals that go through ``sample``, ``sample_together``
and the torch chains' ``sample`` end to end are in tests/test_api.py; the theory checks'
in tests/test_theory_checks.py.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import subprocess
import sys

import numba as nb
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bias._coupled import CoupledResult, coupled_run
from integrators import GaussianTarget, LogisticTarget, sms_ghmc
from integrators import _memory as memory
from integrators._backends import Numba, Torch
from integrators._options import Box, ControlVariate, CyclicalSchedule, Observers
from integrators._spec import MAX_PATH_REFINE, RunSpec
from integrators._validation import (
    BOOLEAN,
    HISTOGRAM,
    MAX_STEPS,
    MIN_STEP_OVER_FRICTION,
    POSITIVE,
    SEED,
    at_least,
    batch_size_for,
    check_parameters,
    divergence_bound_for,
    finite_array,
    initial_state,
    instance_of,
    optional,
    real_number,
    step_over_friction,
    whole_number,
)
from integrators._validation import test_functions_and_data as functions_and_data  # (not a test)
from integrators.plans import Plan, next_batches
from integrators.plans.sms import PLAN as sms_plan

ONE_D = GaussianTarget.one_d_example()  # d = 1, two data
RUN = dict(h=0.1, n_chains=4, n_steps=50, burn_in=5, batch_size=1)
HUGE = 10**12
MEMORY = "GiB of arrays, more than this machine's"
BACKENDS = ("numba", "torch")


@nb.njit
def three_arguments(x, out, test_data):  # never called here: a Numba function is compiled on its first call
    out[0] = x[0]


@nb.njit
def two_arguments(x, out):
    out[0] = x[0]


def plain_python(x, out, test_data):
    out[0] = x[0]


NO_RULE = Plan("no_rule", sms_plan.outcomes, sms_plan.force_scale, sms_plan.period)  # oracle only
OWN_RULE = Plan("own_rule", sms_plan.outcomes, sms_plan.force_scale, sms_plan.period, BATCH_RULE=next_batches)


# ================================================================== integrators._validation
# the checkers that are not constraints of one argument: (call, what the message says)
CHECKER_REFUSALS = [
    pytest.param(lambda: finite_array("x0", "a"), "x0 must be an array of numbers, got str", id="finite-array-word"),
    pytest.param(lambda: finite_array("x0", [1j]), "x0 must be real, got complex values", id="finite-array-complex"),
    pytest.param(lambda: finite_array("x0", [np.nan]), "x0 contains non-finite values", id="finite-array-nan"),
    pytest.param(lambda: finite_array("x0", [1.0], ndim=2), r"x0 must have 2 dimensions, got shape \(1,\)",
                 id="finite-array-dimensions"),
    pytest.param(lambda: whole_number("n_bins", 2.5, 1), "n_bins must be an integer, got 2.5", id="whole-fraction"),
    pytest.param(lambda: whole_number("n_bins", math.inf, 1), "n_bins must be an integer", id="whole-inf"),
    pytest.param(lambda: whole_number("n_bins", 0.0, 1), "n_bins must be >= 1, got 0", id="whole-zero"),
    pytest.param(lambda: real_number("hi", math.inf), "hi must be a finite real number, got inf", id="real-inf"),
    pytest.param(lambda: real_number("hi", "1"), "hi must be a finite real number", id="real-string"),
    pytest.param(lambda: real_number("hi", True), "hi must be a finite real number, got True", id="real-bool"),
    pytest.param(lambda: batch_size_for(ONE_D, 3), r"batch_size=3 is larger than the data \(2 terms\)",
                 id="batch-size-beyond-data"),
    pytest.param(lambda: batch_size_for(ONE_D, 0), "batch_size must be >= 1, got 0", id="batch-size-zero"),
    pytest.param(lambda: batch_size_for(ONE_D, 1.5), "batch_size must be an integer", id="batch-size-fraction"),
    pytest.param(lambda: step_over_friction(1e-14, 1.0), "gamma=1.0 is too large for h=1e-14", id="frozen-chains"),
    pytest.param(lambda: divergence_bound_for(ONE_D, 0.0), "divergence_bound must be positive and finite",
                 id="divergence-bound-zero"),
    pytest.param(lambda: initial_state("x0", [1.0, 2.0], 4, 1, None), r"x0 must have shape \(1,\) or \(4, 1\)",
                 id="initial-state-shape"),
    pytest.param(lambda: initial_state("v0", np.full((4, 1), np.inf), 4, 1, None), "v0 contains non-finite",
                 id="initial-state-inf"),
    pytest.param(lambda: functions_and_data(None, 2, ()), "n_test_functions > 0 needs test_functions",
                 id="test-functions-missing"),
    pytest.param(lambda: functions_and_data(three_arguments, 0, ()), "test_functions needs n_test_functions >= 1",
                 id="test-functions-uncounted"),
    pytest.param(lambda: functions_and_data(plain_python, 1, ()), "test_functions must be a Numba function",
                 id="test-functions-plain-python"),
    pytest.param(lambda: functions_and_data(two_arguments, 1, ()), "must take three positional arguments",
                 id="test-functions-two-arguments"),
    pytest.param(lambda: functions_and_data(three_arguments, 1, [np.zeros(2)]),
                 "test_data must be a tuple of numpy arrays, got list", id="test-data-list"),
    pytest.param(lambda: functions_and_data(three_arguments, 1, (np.array(["a"]),)),
                 r"test_data\[0\] must be a numpy array of numbers, got ndarray of dtype <U1", id="test-data-strings"),
    pytest.param(lambda: functions_and_data(three_arguments, 1, ([1.0],)),
                 r"test_data\[0\] must be a numpy array of numbers, got list", id="test-data-not-array"),
    pytest.param(lambda: check_parameters({"h": 0.1, "gamma": 0.0}, {"h": POSITIVE, "gamma": POSITIVE}),
                 "^gamma must be", id="check-parameters-names-the-bad-one"),
]


def call(function):
    function()


@pytest.mark.parametrize("function, words", CHECKER_REFUSALS)
def test_checkers_refuse_by_name(function, words):
    with pytest.raises(ValueError, match=words):
        call(function)


@pytest.mark.parametrize("constraint, value, canonical", [
    pytest.param(POSITIVE, 3, 3.0, id="positive-int-to-float"),
    pytest.param(POSITIVE, np.float32(0.5), 0.5, id="positive-numpy-float32"),
    pytest.param(BOOLEAN, np.bool_(True), True, id="boolean-numpy"),
    pytest.param(SEED, np.int64(7), 7, id="seed-numpy-int"),
    pytest.param(SEED, np.uint64(2**64 - 1), 2**64 - 1, id="seed-largest"),
    pytest.param(at_least(1), np.int64(3), 3, id="at-least-numpy-int"),
    pytest.param(HISTOGRAM, (-3, 3, 10.0), (-3.0, 3.0, 10), id="histogram-integral-float-bins"),
    pytest.param(HISTOGRAM, np.array([-3.0, 3.0, 10.0]), (-3.0, 3.0, 10), id="histogram-array"),
    pytest.param(HISTOGRAM, None, None, id="histogram-none"),
    pytest.param(optional(POSITIVE), None, None, id="optional-none"),
    pytest.param(RunSpec.CONSTRAINTS["path_refine"], MAX_PATH_REFINE, MAX_PATH_REFINE, id="path-refine-largest"),
])
def test_constraints_return_canonical_values(constraint, value, canonical):
    out = constraint("arg", value)
    assert out == canonical and type(out) is type(canonical)
    if isinstance(out, tuple):
        assert [type(v) for v in out] == [float, float, int]


def test_printable_escapes_control_and_format_characters_and_leaves_other_text():
    from integrators._validation import printable
    assert printable("out/ré sumé, 'x'") == "out/ré sumé, 'x'"
    assert printable("a\x1b[2Jb\nc\td\u202ee\udc80") == "a\\x1b[2Jb\\nc\\td\\u202ee\\udc80"
    assert printable(printable("a\x1bb")) == "a\\x1bb"  # escaping twice changes nothing more
    assert printable(3) == "3"


def test_whole_numbers_may_arrive_as_integral_floats():
    assert whole_number("n_bins", 1000.0, 1) == 1000 and type(whole_number("n_bins", 1000.0, 1)) is int


def test_check_parameters_names_the_first_bad_argument_in_declared_order():
    constraints = {"h": POSITIVE, "n_chains": at_least(1)}
    with pytest.raises(ValueError, match="^h must"):
        check_parameters({"n_chains": 0, "h": -1.0}, constraints)
    assert check_parameters({"h": 1, "n_chains": np.int64(2), "extra": "kept"}, constraints) == {
        "h": 1.0, "n_chains": 2, "extra": "kept"}
    assert instance_of(int, "an int")("k", 3) == 3


# ================================================================== integrators._spec
def backend_named(name):
    return Torch() if name == "torch" else None


def spec_from(kwargs, backend):
    """``RunSpec.from_options`` (what ``sample`` and the torch chains' ``sample`` call) on the
    1-D example with :data:`RUN` and ``kwargs``; ``backend``: "numba" or "torch"."""
    options = {**RUN, **kwargs}
    target, scheme, plan = options.pop("target", ONE_D), options.pop("scheme", "ubu"), options.pop("plan", "sms")
    if backend == "torch":
        options["backend"] = Torch()
    return RunSpec.from_options(target, scheme, plan, **options)


def on(backends, cases):
    return [pytest.param(kwargs, backend, words, id=f"{name}-{backend}")
            for name, kwargs, words in cases for backend in backends]


# (id, sample()'s keywords, what the message says), on both backends unless listed apart
SPEC_REFUSALS = on(BACKENDS, [
    # yes/no options
    ("control_variate-string", {"control_variate": "yes"}, "control_variate must be True or False"),
    ("control_variate-one", {"control_variate": 1}, "control_variate must be True or False"),
    # numbers and counts
    ("gamma-freezes-the-chains", {"gamma": 1e20}, r"gamma=1e\+20 is too large for h=0.1"),
    ("burn_in-every-step", {"burn_in": 50}, "burn_in must be smaller than n_steps=50, got 50"),
    ("batch_size-missing", {"batch_size": None}, "batch_size is required for plan 'sms'"),
    ("batch_size-beyond-data", {"batch_size": 3}, r"batch_size=3 is larger than the data \(2 terms\)"),
    ("batch_size-beyond-data-full", {"plan": "full", "batch_size": 3}, "batch_size=3 is larger than the data"),
    ("batch_size-zero", {"batch_size": 0}, "batch_size must be .*>= 1"),
    ("x0-beyond-the-divergence-bound", {"x0": [5.0], "divergence_bound": 2.0}, "x0 or v0 lies beyond divergence"),
    ("v0-beyond-the-divergence-bound", {"v0": [5.0], "divergence_bound": 2.0}, "x0 or v0 lies beyond divergence"),
    ("batch_size-fraction", {"batch_size": 1.5}, "batch_size must be (None or )?an integer"),
    ("divergence_bound-zero", {"divergence_bound": 0.0}, "divergence_bound must be positive and finite"),
    ("divergence_bound-string", {"divergence_bound": "far"}, "divergence_bound must be a real number"),
    # what runs
    ("plan-without-batch-rule", {"plan": NO_RULE}, "plan 'no_rule' declares no kernel batch rule"),
    # options that would be ignored or misread
    ("x_ref-without-control-variate", {"x_ref": [0.0]}, "x_ref is given but control_variate is false"),
    ("box_center-without-half-width", {"box_center": 0.0}, "box_center needs box_half_width"),
    ("x0-word", {"x0": "a"}, "x0 must be an array of numbers"),
    ("x0-complex", {"x0": [1j]}, "x0 must be real"),
    ("box_half_width-word", {"box_center": 0.0, "box_half_width": "wide"},
     "box_half_width must be an array of numbers"),
    ("box_half_width-zero", {"box_half_width": 0.0}, "box_half_width must be positive and finite"),
    ("x0-outside-the-box", {"box_half_width": 1.0, "x0": [2.0]}, "x0 lies outside the box"),
    ("default-start-outside-the-box", {"box_half_width": 1.0, "box_center": [-1.0]},  # no x0 given: not "x0"
     r"^the default start target.initial_point\(\) = \[0.0\] lies outside the box .*; give x0 inside it$"),
    # initial states and the control variate's reference point
    ("x0-shape", {"x0": [1.0, 2.0]}, r"x0 must have shape \(1,\) or \(4, 1\), got \(2,\)"),
    ("x0-rows", {"x0": np.zeros((3, 1))}, r"x0 must have shape \(1,\) or \(4, 1\), got \(3, 1\)"),
    ("x0-nan", {"x0": [np.nan]}, "x0 contains non-finite values"),
    ("x0-none", {"x0": np.array([[None]] * 4)}, "x0 must be an array of numbers, but it holds values that are not "
                                                "numbers, such as None"),  # not "non-finite": None read as NaN
    ("v0-inf", {"v0": np.full((4, 1), np.inf)}, "v0 contains non-finite values"),
    ("v0-complex", {"v0": [1j]}, "v0 must be real"),
    ("x_ref-shape", {"control_variate": True, "x_ref": [0.0, 1.0]}, r"x_ref must have shape \(1,\)"),
    ("x_ref-word", {"control_variate": True, "x_ref": "a"}, "x_ref must be an array of numbers"),
    # observers
    ("n_test_functions-without-functions", {"n_test_functions": 2}, "n_test_functions > 0 needs test_functions"),
    ("test_functions-uncounted", {"test_functions": three_arguments}, "test_functions needs n_test_functions >= 1"),
    ("test_functions-plain-python", {"test_functions": plain_python, "n_test_functions": 1},
     "test_functions must be a Numba function"),
    ("test_functions-two-arguments", {"test_functions": two_arguments, "n_test_functions": 1},
     "test_functions must take three positional arguments"),
    ("test_data-list", {"test_functions": three_arguments, "n_test_functions": 1, "test_data": [np.zeros(2)]},
     "test_data must be a tuple of numpy arrays"),
    ("test_data-strings", {"test_functions": three_arguments, "n_test_functions": 1, "test_data": (np.array(["a"]),)},
     r"test_data\[0\] must be a numpy array of numbers"),
    # sizes beyond the machine: a ValueError naming the request before anything is allocated (it
    # was a MemoryError naming nothing, after seconds of allocation)
    ("n_chains-beyond-memory", {"n_chains": HUGE}, f"n_chains={HUGE} with d=1.*{MEMORY}"),
    ("histogram-beyond-memory", {"histogram": (-3.0, 3.0, HUGE)}, f"{HUGE} histogram bins.*{MEMORY}"),
    ("keep-beyond-memory", {"keep": HUGE}, f"keep={HUGE}.*{MEMORY}"),
]) + on(("numba",), [
    ("threads-zero", {"threads": 0}, "threads must be None or an integer >= 1, got 0"),
    ("threads-bool", {"threads": True}, "threads must be None or an integer >= 1, got True"),
]) + on(("torch",), [  # what the tensor backend does not run is refused by name, never ignored
    ("path_refine-on-torch", {"path_refine": 2}, "path_refine=2 is offered by the Numba backend only"),
    ("test_functions-on-torch", {"test_functions": three_arguments, "n_test_functions": 1},
     "test_functions is a Numba function: the torch backend cannot run it"),
    ("threads-on-torch", {"threads": 2}, "threads=2 belongs to the Numba backend"),
    ("plan-with-its-own-numba-rule", {"plan": OWN_RULE}, "plan 'own_rule' has no batch rule this backend can run"),
])


@pytest.mark.parametrize("kwargs, backend, words", SPEC_REFUSALS)
def test_sample_keywords_are_refused_by_name(kwargs, backend, words):
    with pytest.raises(ValueError, match=words):
        spec_from(kwargs, backend)


def spec_direct(kwargs):
    return RunSpec(**{"target": ONE_D, **RUN, **kwargs})


# RunSpec built directly, with its option objects: (keywords, what the message says)
RUNSPEC_REFUSALS = [
    pytest.param({"box": Box("wide")}, "box_half_width must be an array of numbers", id="box-word"),
    pytest.param({"box": Box(1.0, center=[0.0, 0.0])}, r"box_center must have shape \(1,\)", id="box-center-shape"),
    pytest.param({"control_variate": ControlVariate([np.nan])}, "x_ref contains non-finite values", id="x_ref-nan"),
    pytest.param({"plan": "rr", "batch_size": None}, "batch_size is required for plan 'rr'", id="rr-without-batch"),
]


@pytest.mark.parametrize("kwargs, words", RUNSPEC_REFUSALS)
def test_a_spec_refuses_its_fields_by_name(kwargs, words):
    with pytest.raises(ValueError, match=words):
        spec_direct(kwargs)


def make_option(factory, kwargs):
    return factory(**kwargs)


# the option objects check themselves when made: (class, keywords, what the message says)
OPTION_REFUSALS = [
    pytest.param(Numba, {"threads": 0}, "threads must be None or an integer >= 1", id="numba-threads-zero"),
    pytest.param(Numba, {"threads": 1.5}, "threads must be None or an integer >= 1", id="numba-threads-fraction"),
    pytest.param(Torch, {"dtype": "float16"}, r"dtype must be one of \['float32', 'float64'\]", id="torch-float16"),
    pytest.param(Torch, {"dtype": None}, "dtype must be torch.float64 or torch.float32", id="torch-dtype-none"),
    pytest.param(Torch, {"compile": "maybe"}, "compile='maybe' is not a torch.compile backend",
                 id="torch-compile-word"),
    pytest.param(Torch, {"compile": 1}, "compile must be True, False or a torch.compile backend's name",
                 id="torch-compile-number"),
    pytest.param(Torch, {"device": "nonsense"}, "device must name a torch device", id="torch-device-word"),
    pytest.param(Torch, {"device": "meta"}, "device must be cpu or an available cuda", id="torch-device-meta"),
    pytest.param(Torch, {"device": "cuda:7"}, "device 'cuda:7' asked for, but", id="torch-device-absent-cuda"),
]


@pytest.mark.slow
@pytest.mark.parametrize("factory, kwargs, words", OPTION_REFUSALS)
def test_option_objects_refuse_by_name(factory, kwargs, words):
    with pytest.raises(ValueError, match=words):
        make_option(factory, kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unusual_but_valid_keywords_give_canonical_fields(backend):
    """Integral float histogram bins in both backends, a scalar x0 and x_ref for a one-dimensional
    target, numpy scalars for numbers, and plan full without a batch size (the run of each:
    tests/test_api.py)."""
    spec = spec_from({"histogram": (-3, 3, 10.0), "x0": 0.5, "control_variate": True, "x_ref": -0.9,
                      "n_chains": np.int64(4), "seed": np.uint64(3), "h": np.float32(0.25),
                      "full_moments": np.bool_(True)}, backend)
    assert spec.observers.histogram == (-3.0, 3.0, 10) and type(spec.observers.n_bins) is int
    assert spec.x0.shape == (4, 1) and np.all(spec.x0 == 0.5) and spec.control_variate.x_ref == -0.9
    assert (spec.n_chains, spec.seed, spec.h, spec.observers.full_moments) == (4, 3, 0.25, True)
    assert [type(v) for v in (spec.n_chains, spec.seed, spec.h, spec.observers.full_moments)] == [int, int, float, bool]
    assert spec_from({"plan": "full", "batch_size": None}, backend).batch_size == ONE_D.n_data
    assert spec_from({"plan": "full", "batch_size": 1}, backend).batch_size == ONE_D.n_data  # what runs
    assert spec.divergence_bound == ONE_D.divergence_bound()


def test_the_numba_backend_takes_the_largest_refinement_and_a_plan_with_its_own_rule():
    assert spec_from({"path_refine": MAX_PATH_REFINE}, "numba").path_refine == MAX_PATH_REFINE
    assert spec_from({"plan": OWN_RULE}, "numba").plan is OWN_RULE


def test_a_replaced_spec_is_checked_anew():
    spec = spec_from({}, "numba")
    assert spec.replace(h=0.2).h == 0.2 and spec.replace(h=0.2).x0.shape == (4, 1)
    assert spec.replace(n_chains=8).x0.shape == (8, 1)  # a default initial state is made anew
    with pytest.raises(ValueError, match="^n_chains must be an integer >= 1, got 0"):
        spec.replace(n_chains=0)
    given = spec_from({"x0": np.zeros((4, 1))}, "numba")
    with pytest.raises(ValueError, match=r"x0 must have shape \(1,\) or \(8, 1\)"):
        given.replace(n_chains=8)  # a given one is kept, and checked against the new size


@pytest.mark.slow
@pytest.mark.torch
def test_torch_iid_memory_estimate_has_no_per_datum_permutation(monkeypatch):
    """1,000 chains x 200,000 data: a permutation each would need 4.8 GB (rr), none under iid.
    With a 1 GiB limit the rr run is refused by name, iid fits."""
    monkeypatch.setattr(Torch, "memory_limit", lambda self: 2.0**30)
    big = LogisticTarget(np.ones((200_000, 1)), np.zeros(200_000))
    request = {"target": big, "n_chains": 1000, "n_steps": 1, "burn_in": 0}
    with pytest.raises(ValueError, match=f"n_chains=1000 with d=1.*on the torch backend.*{MEMORY}"):
        spec_from({**request, "plan": "rr"}, "torch")
    assert spec_from({**request, "plan": "iid"}, "torch").memory_bytes() < 2.0**20


# ------------------------------------------------------------------ properties of the spec
NOT_POSITIVE_OR_NOT_FINITE = st.one_of(st.floats(max_value=0.0, allow_nan=False),
                                       st.sampled_from([math.nan, math.inf, -math.inf]))


@given(h=NOT_POSITIVE_OR_NOT_FINITE)
def test_any_non_positive_or_non_finite_step_is_refused_naming_h(h):
    with pytest.raises(ValueError, match="^h must be a finite real number > 0"):
        RunSpec(ONE_D, **{**RUN, "h": h})


@given(gamma=NOT_POSITIVE_OR_NOT_FINITE)
def test_any_non_positive_or_non_finite_friction_is_refused_naming_gamma(gamma):
    with pytest.raises(ValueError, match="^gamma must be a finite real number > 0"):
        RunSpec(ONE_D, **{**RUN, "gamma": gamma})


@given(h=st.floats(1e-6, 1.0), ratio=st.floats(1e-300, MIN_STEP_OVER_FRICTION, exclude_max=True))
def test_any_friction_that_freezes_the_chains_is_refused_naming_gamma(h, ratio):
    gamma = h / ratio
    assume(h / gamma < MIN_STEP_OVER_FRICTION)  # (h / (h / ratio) may round up to the bound)
    with pytest.raises(ValueError, match="^gamma=.* is too large for h="):
        RunSpec(ONE_D, **{**RUN, "h": h, "gamma": gamma})


@given(n_chains=st.integers(1, 10**5))
def test_any_integer_number_of_chains_is_accepted(n_chains):
    spec = RunSpec(ONE_D, **{**RUN, "n_chains": n_chains})
    assert spec.n_chains == n_chains and spec.x0.shape == (n_chains, 1)


@pytest.mark.torch  # (BACKENDS holds the torch backend)
@given(n_chains=st.integers(10**11, 10**300), backend=st.sampled_from(BACKENDS))
def test_any_number_of_chains_beyond_the_memory_is_refused_naming_it(n_chains, backend):
    with pytest.raises(ValueError, match=f"^n_chains={n_chains} with d=1.*{MEMORY}"):
        spec_from({"n_chains": n_chains}, backend)


@given(seed=st.integers(0, 2**64 - 1))
def test_any_64_bit_seed_is_accepted(seed):
    assert RunSpec(ONE_D, **{**RUN, "seed": seed}).seed == seed


@given(seed=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**64)))
def test_any_seed_outside_64_bits_is_refused_naming_seed(seed):
    with pytest.raises(ValueError, match="^seed must be"):
        RunSpec(ONE_D, **{**RUN, "seed": seed})


@given(n_steps=st.integers(1, 10**6), extra=st.integers(0, 10**6))
def test_any_burn_in_of_every_step_is_refused_naming_burn_in(n_steps, extra):
    with pytest.raises(ValueError, match=f"^burn_in must be smaller than n_steps={n_steps}"):
        RunSpec(ONE_D, **{**RUN, "n_steps": n_steps, "burn_in": n_steps + extra})


@given(k=st.integers(0, 20))
def test_any_power_of_two_refinement_up_to_2_to_the_20_is_accepted(k):
    assert RunSpec(ONE_D, **{**RUN, "path_refine": 2**k}).path_refine == 2**k


@given(value=st.integers(1, 2**70).filter(lambda v: v & (v - 1) or v > MAX_PATH_REFINE))
def test_any_other_refinement_is_refused_naming_path_refine(value):
    with pytest.raises(ValueError, match="^path_refine must be a power of two"):
        RunSpec(ONE_D, **{**RUN, "path_refine": value})


@given(value=st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.none()))
def test_any_non_boolean_yes_no_option_is_refused_naming_it(value):
    with pytest.raises(ValueError, match="^full_moments must be True or False"):
        Observers(full_moments=value)
    with pytest.raises(ValueError, match="^control_variate must be True or False"):
        spec_from({"control_variate": value}, "numba")


# ------------------------------------------------------------------ integers beyond the float range
@pytest.mark.parametrize("kwargs", [
    pytest.param({"h": 10**400}, id="h"), pytest.param({"n_chains": 10**400}, id="n_chains"),
    pytest.param({"keep": 10**400}, id="keep"), pytest.param({"histogram": (0.0, 1.0, 10**400)}, id="histogram-bins"),
])
def test_integers_beyond_float_range_are_refused_by_name(kwargs):
    with pytest.raises(ValueError, match=list(kwargs)[0]):
        spec_from(kwargs, "numba")


# ================================================================== other entry points
COUPLED = dict(target=ONE_D, scheme="ubu", plan="sms", h=0.1, n_chains=4, n_steps=50, burn_in=5, batch_size=1)
GHMC = dict(target=ONE_D, plan="sms", h=0.1, batch_size=1, n_steps=20, n_chains=4)


def call_entry(entry, kwargs):
    """The loop's own keywords (keyword-only after the spec) to the loop, the rest to its spec."""
    own = set(inspect.signature(entry).parameters) - {"spec"}
    if kwargs.get("backend") == "torch":  # built here: collecting the table needs no torch
        kwargs = {**kwargs, "backend": Torch()}
    entry(RunSpec.from_options(**{k: v for k, v in kwargs.items() if k not in own}),
          **{k: v for k, v in kwargs.items() if k in own})


# (entry point, its keywords, what the message says): each refuses before compiling
# (their own keywords are declared, COUPLED_CONSTRAINTS and the like: tests/test_constraints.py generates those)
ENTRY_POINT_REFUSALS = [
    pytest.param(coupled_run, {**COUPLED, "control_variate": "yes"}, "control_variate must be True or False",
                 id="coupled-control_variate-string"),
    pytest.param(coupled_run, {**COUPLED, "control_variate": 1}, "control_variate must be True or False",
                 id="coupled-control_variate-one"),
    pytest.param(coupled_run, {**COUPLED, "seed": 2**64 + 5},
                 r"seed must be an integer in \[0, 2\*\*64\), got 18446744073709551621", id="coupled-seed"),
    pytest.param(coupled_run, {**COUPLED, "x0": [np.nan]}, "x0 contains non-finite", id="coupled-x0-nan"),
    pytest.param(coupled_run, {**COUPLED, "x0": [1.0, 2.0]}, "x0 must have shape", id="coupled-x0-shape"),
    pytest.param(coupled_run, {**COUPLED, "test_every": 1000}, "test_every must be at most",
                 id="coupled-test_every-beyond-the-run"),
    pytest.param(coupled_run, {**COUPLED, "test_functions": three_arguments, "n_test_functions": 0},
                 "test_functions needs n_test_functions >= 1", id="coupled-n_test_functions-zero"),
    pytest.param(coupled_run, {**COUPLED, "n_chains": HUGE}, f"n_chains={HUGE}.*GiB", id="coupled-n_chains-memory"),
    pytest.param(coupled_run, {**COUPLED, "n_steps": 2 * HUGE, "n_chunks": HUGE}, f"n_chunks={HUGE}.*GiB",
                 id="coupled-n_chunks-memory"),  # (as many steps observed as chunks: memory, not steps, refuses it)
    pytest.param(coupled_run, {**COUPLED, "n_chunks": HUGE}, rf"n_chunks must be at most .* = 45, got {HUGE}",
                 id="coupled-n_chunks-beyond-steps"),
    pytest.param(coupled_run, {**COUPLED, "keep": 3}, "coupled_run runs on the Numba backend .*cannot run keep",
                 id="coupled-keep"),
    pytest.param(coupled_run, {**COUPLED, "v0": [0.0], "path_refine": 2}, "cannot run v0, path_refine .leave them",
                 id="coupled-v0-path_refine"),
    pytest.param(coupled_run, {**COUPLED, "backend": "torch"}, "cannot run backend", id="coupled-torch",
                 marks=pytest.mark.torch),
    pytest.param(sms_ghmc, {**GHMC, "plan": "rr"}, "the spec's plan must be 'sms', got 'rr'", id="ghmc-plan"),
    pytest.param(sms_ghmc, {**GHMC, "box_half_width": 5.0}, "sms_ghmc runs .*cannot run box", id="ghmc-box"),
    pytest.param(sms_ghmc, {**GHMC, "test_functions": three_arguments, "n_test_functions": 1},
                 "cannot run test_functions", id="ghmc-test_functions"),
    pytest.param(sms_ghmc, {**GHMC, "n_chains": HUGE}, f"n_chains={HUGE}.*GiB", id="ghmc-n_chains-memory"),
    pytest.param(sms_ghmc, {**GHMC, "n_chains": 1}, "n_chains must be >= 2", id="ghmc-one-chain"),
    pytest.param(sms_ghmc, {**GHMC, "h": -0.1}, r"h must be a finite real number > 0", id="ghmc-h-negative"),
    pytest.param(sms_ghmc, {**GHMC, "batch_size": 3}, "batch_size=3 is larger than the data", id="ghmc-batch"),
    pytest.param(sms_ghmc, {**GHMC, "burn_in": 20}, "burn_in must be smaller than n_steps=20", id="ghmc-burn-in"),
    pytest.param(sms_ghmc, {**GHMC, "n_steps": 2**63}, r"n_steps must be an integer in \[1, 2\*\*48\]",
                 id="ghmc-n_steps-bound"),
    pytest.param(sms_ghmc, {**GHMC, "n_steps": 10**30, "burn_in": 2**60},
                 r"n_steps must be an integer in \[1, 2\*\*48\]", id="ghmc-n_steps-huge"),
    pytest.param(sms_ghmc, {**GHMC, "target": "gauss"}, "target must be a Target .e.g. GaussianTarget., got 'gauss'",
                 id="ghmc-target"),
]


@pytest.mark.parametrize("entry, kwargs, words", ENTRY_POINT_REFUSALS)
def test_coupled_ghmc_and_telescoping_entry_points_refuse_by_name(entry, kwargs, words):
    with pytest.raises(ValueError, match=words):
        call_entry(entry, kwargs)


# ------------------------------------------------------------------ no kernel compiles
REFUSAL_TABLES = {  # every table of refusals: its runner and its cases (each case's last value: the words)
    "checkers": (call, CHECKER_REFUSALS),
    "sample keywords": (spec_from, SPEC_REFUSALS),
    "spec fields": (spec_direct, RUNSPEC_REFUSALS),
    "option objects": (make_option, OPTION_REFUSALS),
    "other entry points": (call_entry, ENTRY_POINT_REFUSALS),
}


def unrefused(runner, cases) -> list[str]:
    """The ids of ``cases`` that ``runner`` does not refuse with a ValueError matching their words."""
    wrong = []
    for case in cases:
        *values, words = case.values
        try:
            runner(*values)
        except ValueError as exc:
            if not re.search(words, str(exc)):
                wrong.append(f"{case.id}: {exc}")
        else:
            wrong.append(f"{case.id}: accepted")
    return wrong


# the refusal tables of this file, the cases of one backend: those that need torch, or the others
NO_KERNEL_TABLES = """
import sys
sys.path.insert(0, {tests!r})
import test_validation
from conftest import value_needs_torch
tables = {{name: (runner, [c for c in cases if any(v == "torch" or value_needs_torch(v) for v in c.values)
                          == {torch}]) for name, (runner, cases) in test_validation.REFUSAL_TABLES.items()}}
"""
# and the end-to-end refusals of tests/test_api.py (which imports the torch backend)
NO_KERNEL_END_TO_END = """
import test_api
tables["end to end"] = (test_api.refuse_end_to_end, test_api.END_TO_END_REFUSALS)
"""
NO_KERNEL_SCRIPT = """
import json
import bias._coupled
import integrators._kernel as kernel
import test_validation
from integrators import GaussianTarget
from integrators.plans import resolve_plan
from integrators.schemes import resolve_scheme
from integrators.targets._force import lane_force_for

wrong = [w for runner, cases in tables.values() for w in test_validation.unrefused(runner, cases)]
found = {{"cases": sum(len(cases) for _, cases in tables.values()), "wrong": wrong,
         "kernels": len(kernel._KERNELS), "kernel groups": len(kernel._GROUP_KERNELS),
         "compiled coupled kernels": sum(len(k.overloads) for k in bias._coupled._KERNELS.values())}}
# the caches watched are those a run fills: looking a kernel up (which compiles nothing yet) adds to them
kernel.kernel_for(resolve_scheme("ubu"), lane_force_for(GaussianTarget.one_d_example()), resolve_plan("sms"))
found["kernels after a lookup"] = len(kernel._KERNELS)
print(json.dumps(found))
"""


def no_kernel_run(script: str, torch: bool) -> tuple[dict, int]:
    """``script`` run in a fresh interpreter (a test process may hold kernels of other tests): what it
    found, and how many cases of this file's tables are of the backend asked for."""
    import json

    from conftest import value_needs_torch

    tests = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", script.format(tests=tests, torch=torch)], capture_output=True,
                          text=True, cwd=os.path.dirname(tests), check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert (found["kernels"], found["kernel groups"], found["compiled coupled kernels"]) == (0, 0, 0)
    assert found["kernels after a lookup"] == 1
    return found, sum(len([c for c in cases if any(v == "torch" or value_needs_torch(v) for v in c.values)
                           == torch]) for _, cases in REFUSAL_TABLES.values())


@pytest.mark.slow
def test_the_refusal_tables_compile_no_kernel():
    """Every case of this file's refusal tables that needs no torch leaves the Numba kernel caches
    empty: no kernel was compiled, nor even looked up."""
    found, expected = no_kernel_run(NO_KERNEL_TABLES + NO_KERNEL_SCRIPT, torch=False)
    assert found["wrong"] == [] and found["cases"] == expected > 0


@pytest.mark.slow
@pytest.mark.torch  # its cases build the torch backend in the subprocess
def test_the_torch_and_end_to_end_refusals_compile_no_kernel():
    """The torch cases of this file's refusal tables and the end-to-end refusals of tests/test_api.py
    leave the Numba kernel caches empty."""
    found, expected = no_kernel_run(NO_KERNEL_TABLES + NO_KERNEL_END_TO_END + NO_KERNEL_SCRIPT, torch=True)
    assert found["wrong"] == [] and found["cases"] > expected > 0


# ================================================================== bias._coupled
def test_a_coupled_result_whose_pairs_all_diverged_has_no_estimate():
    values = np.full((2, 4, 2), np.nan)
    res = CoupledResult(0.5, values, values, np.array([3, 7]))
    for what in (lambda r: r.difference, lambda r: r.difference_se, lambda r: r.mean()):
        with pytest.raises(RuntimeError, match="every coupled pair diverged at h=0.5 .first at coarse step 3"):
            what(res)


# ================================================================== bias._wasserstein, bias._streaming_w1
@pytest.mark.parametrize("mean, std", [(0.0, 0.0), (0.0, -1.0), (np.nan, 1.0), ("a", 1.0), (0.0, True)])
def test_normal_laws_check_their_parameters(mean, std):
    from bias._wasserstein import Normal

    with pytest.raises(ValueError, match="Normal's (mean|std) must be"):
        Normal(mean, std)


@pytest.mark.parametrize("lo, hi, n_bins, words", [
    (0.0, 1.0, True, "n_bins must be an integer"),
    (0.0, 1.0, 2.5, "n_bins must be an integer"),
    (0.0, np.inf, 10, "hi must be a finite real number"),
    (-1.0, 1.0, HUGE, f"n_bins={HUGE}.*GiB"),
])
def test_streaming_histograms_check_their_range_and_bins(lo, hi, n_bins, words):
    from bias._streaming_w1 import StreamingW1
    from bias._wasserstein import Normal

    with pytest.raises(ValueError, match=words):
        StreamingW1(Normal(0.0, 1.0), lo, hi, n_bins)


def test_a_streaming_histogram_needs_a_law():
    from bias._streaming_w1 import StreamingW1

    with pytest.raises(ValueError, match="dist must be a law"):
        StreamingW1("normal", 0.0, 1.0, 10)


def test_laws_and_histograms_take_0d_arrays_tensors_and_integral_floats():
    import torch

    from bias._streaming_w1 import StreamingW1
    from bias._wasserstein import Normal

    assert Normal(np.array(0.5), torch.tensor(2.0)) == Normal(0.5, 2.0)
    assert StreamingW1(Normal(0.0, 1.0), -5, 5, 1000.0).n_bins == 1000
    assert StreamingW1(Normal(0.0, 1.0), np.array(-1.0), torch.tensor(1.0), 10).hi == 1.0


# ================================================================== bias._metrics
PROBS = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])


def test_ace_takes_more_bins_than_points():
    from bias._metrics import ace_classwise

    assert ace_classwise(PROBS, [0, 1, 1], n_bins=3) == ace_classwise(PROBS, [0, 1, 1], n_bins=10**12)


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_nll_takes_half_precision_probabilities(half):
    import torch

    from bias._metrics import nll

    logits = torch.tensor([[2.0, -1.0, 0.3], [0.1, 0.2, 3.0]])
    probs = torch.softmax(logits.to(getattr(torch, half)), 1).float().numpy()
    assert np.isfinite(nll(probs, [0, 2]))


def test_accuracy_takes_boolean_labels():
    from bias._metrics import accuracy

    assert accuracy([[0.3, 0.7], [0.8, 0.2]], np.array([True, False])) == 1.0


# ================================================================== integrators.targets
@pytest.mark.parametrize("kwargs, words", [
    ({"means": [[1j]], "precisions": [1.0]}, "means must be real"),
    ({"means": [[1.0]], "precisions": [1.0], "prior_mean": [2.0]}, "prior_mean needs prior_precision"),
    ({"means": [1.0, 2.0, 3.0], "precisions": np.eye(3)}, r"for one term in d=3 pass means of shape \(1, 3\)"),
])
def test_gaussian_targets_refuse_complex_data_and_a_prior_mean_without_precision(kwargs, words):
    with pytest.raises(ValueError, match=words):
        GaussianTarget(**kwargs)


def test_a_gaussian_refuses_a_prior_precision_that_is_not_symmetric():
    with pytest.raises(ValueError,
                       match=r"prior_precision must be a symmetric matrix, got \[\[1.0, 3.0\], \[0.0, 1.0\]\]"):
        GaussianTarget(np.zeros((2, 2)), np.stack([np.eye(2)] * 2), prior_precision=[[1, 3], [0, 1]])
    # symmetric to the data precisions' tolerance (np.allclose): accepted
    assert GaussianTarget(np.zeros((2, 2)), np.stack([np.eye(2)] * 2), prior_precision=[[1, 1e-12], [0, 1]]).dim == 2


def test_a_one_term_one_dimensional_gaussian_takes_scalars():
    assert GaussianTarget(0.0, 1.0).dim == 1 and GaussianTarget([0.0], 1.0).n_data == 1


# ================================================================== integrators._memory
def test_check_fits_compares_with_the_limit_it_is_given():
    from integrators._memory import check_fits, physical_memory_bytes

    check_fits("n=1", 1.0, limit=1.0)
    with pytest.raises(ValueError, match="n=2 needs about"):
        check_fits("n=2", 2.0, limit=1.0)
    assert physical_memory_bytes() is None or physical_memory_bytes() > 2**28


# ================================================================== reports._metadata
def test_every_output_records_the_versions_of_the_libraries_it_ran_on():
    import sklearn
    import torch

    from reports._metadata import LIBRARIES, metadata
    meta = metadata(0, "tiny")
    assert all(meta[name] != "absent" for name in LIBRARIES)  # the test environment has them all
    assert meta["torch"] == torch.__version__ and meta["scikit-learn"] == sklearn.__version__


# ================================================================== integrators.torch._module / ensemble
def _tiny_linear_sampler(**config):
    import torch

    from integrators.torch._module import ModuleSampler, SamplerConfig

    data = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
    net = torch.nn.Linear(1, 1).double()
    cfg = SamplerConfig(**{"h": 0.01, "gamma": 1.0, "n_data": 6, "batch_size": 2, "seed": 3, **config})
    return net, data, cfg, ModuleSampler


def test_module_sampler_says_when_n_data_exceeds_the_data():
    import torch

    from integrators.torch._module import ModuleSampler, SamplerConfig

    data = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
    net = torch.nn.Linear(1, 1).double()

    def loss_fn(model, idx):
        return ((model(data[idx][:, None]) - 1.0) ** 2).sum()

    sampler = ModuleSampler(net, SamplerConfig(h=0.01, gamma=1.0, n_data=60, batch_size=20, seed=3))
    with pytest.raises(ValueError, match="is SamplerConfig.n_data=60 larger than the data"):
        for _ in range(3):
            sampler.step(loss_fn)


@pytest.mark.parametrize("loss, words", [
    pytest.param(lambda model, data, idx: model(data[idx][:, None]) ** 2, r"one-element tensor .* shape \(2, 1\)",
                 id="a-tensor-of-losses"),
    pytest.param(lambda model, data, idx: 1.0, "got float", id="a-float"),
    pytest.param(lambda model, data, idx: (model(data[idx][:, None]) ** 2).sum().detach(),
                 "does not depend on the parameters", id="detached"),
])
def test_module_sampler_names_a_loss_that_is_not_a_scalar_of_the_parameters(loss, words):
    net, data, cfg, ModuleSampler = _tiny_linear_sampler()
    sampler = ModuleSampler(net, cfg)
    with pytest.raises(ValueError, match=words):
        sampler.step(lambda model, idx: loss(model, data, idx))


def test_module_sampler_checks_mapped_reference_points_and_explicit_noise():
    import torch

    from integrators.torch._module import Localization

    net, data, cfg, ModuleSampler = _tiny_linear_sampler()
    good = {"weight": torch.zeros(1, 1, dtype=torch.float64), "bias": torch.zeros(1, dtype=torch.float64)}
    for bad, words in (({**good, "typo": torch.zeros(1)}, r"names no parameter of the model: \['typo'\]"),
                       ({**good, "weight": torch.zeros(1, 1, 1, dtype=torch.float64)}, "'weight' has shape")):
        loc_cfg = _tiny_linear_sampler(localization=Localization(rho=1.0, x_star=bad))[2]
        with pytest.raises(ValueError, match=words):
            ModuleSampler(net, loc_cfg)
    sampler = ModuleSampler(net, cfg, noise=[(torch.zeros(3), torch.zeros(3))])
    with pytest.raises(ValueError, match=r"dW and J must each have shape \(2, 2\)"):
        sampler.step(lambda model, idx: (model(data[idx][:, None]) ** 2).sum())


def test_a_state_dict_is_a_reference_point():
    import torch

    from integrators.torch._module import Localization, ModuleSampler, SamplerConfig

    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2)).double()
    net[2].bias.requires_grad_(False)  # a frozen parameter: in the state_dict, not sampled
    cfg = SamplerConfig(0.01, 1.0, 20, batch_size=5, localization=Localization(rho=0.5, x_star=net.state_dict()))
    sampler = ModuleSampler(net, cfg)
    assert torch.equal(sampler.x_star, sampler.x)
    flat = {n: p.detach().reshape(-1) for n, p in net.named_parameters()}
    ModuleSampler(net, SamplerConfig(0.01, 1.0, 20, batch_size=5, localization=Localization(rho=0.5, x_star=flat)))


def test_ensembles_take_numpy_integers_like_every_other_count():
    from integrators.torch._ensemble import EnsembleSampler

    net, _, cfg, _ = _tiny_linear_sampler()
    assert EnsembleSampler(net, cfg, np.int64(2)).n_chains == 2


# ================================================================== bnn
@pytest.mark.slow
def test_hessian_norm_takes_integer_labels_of_any_width():
    import torch

    from bnn import _diagnostics as diagnostics
    from bnn import models

    cnn = models.build("chest_xray", width=1 / 128, in_shape=(1, 6, 6), n_classes=3)
    x, y = torch.rand(6, 1, 6, 6), torch.randint(0, 3, (6,))
    for labels in (y.int(), y.to(torch.uint8)):
        assert diagnostics.hessian_norm(cnn, x, labels, n_iter=2).value > 0


def test_run_configs_take_arrays_for_tuples_and_paths_for_strings():
    import pathlib

    from experiments.bnn._pipeline import RunConfig

    cfg = RunConfig("digits", "fashion_mnist", h_panel=np.array([3e-4, 3e-3]), data_path=pathlib.Path("/tmp"))
    assert cfg.h_panel == (3e-4, 3e-3) and cfg.data_path == "/tmp" and cfg.to_dict()["h_panel"] == (3e-4, 3e-3)


def test_synthetic_data_takes_a_numpy_shape():
    from data_sets import synthetic

    assert synthetic(np.array([1, 4, 4]), 3, n_train=4, n_test=2).x_train.shape == (4, 1, 4, 4)


# ================================================================== experiments.bnn
def test_bnn_summary_quotes_both_r_hats_and_says_when_chains_have_not_mixed():
    from experiments.bnn import rhat_summary

    unmixed = rhat_summary([{"rhat": 0.872, "rank_split_rhat": 1.64, "draws": 4}])
    assert "0.872" in unmixed and "rank-normalised split 1.640" in unmixed and "not mixed" in unmixed
    assert "4 draws per chain" in unmixed and "1 SWA point:" in unmixed
    mixed = rhat_summary([{"rhat": 1.001, "rank_split_rhat": 1.004, "draws": 40},
                           {"rhat": 1.002, "rank_split_rhat": 1.005, "draws": 40}])
    assert "1.001..1.002" in mixed and "1.004..1.005" in mixed and "not mixed" not in mixed


# ================================================================== issue 34: the validation layer's gaps
# Test_data without test functions, a batch size under plan="full", boolean positions, 0-d arrays
# as numbers, and memory checks against the memory available now (and a CUDA device's free
# memory): each a ValueError naming the argument, before anything compiles or allocates.  (Bins
# that overflow, step counts beyond 2**48 and histograms that are not three numbers are invalid
# examples of their declared constraints: tests/test_constraints.py.)
ON_BOTH = [pytest.param("numba", id="numba"), pytest.param("torch", id="torch", marks=pytest.mark.torch)]
WIDE = st.floats(min_value=1e308, max_value=1.7e308)  # lo = -WIDE, hi = WIDE: hi - lo overflows to inf


@given(lo=WIDE, hi=WIDE, n_bins=st.integers(1, 10**6))
def test_any_histogram_whose_width_overflows_is_refused_naming_histogram(lo, hi, n_bins):
    with pytest.raises(ValueError, match=r"^histogram must be None or \(lo, hi, n_bins\) .*, got .* \(bins of width"):
        Observers(histogram=(-lo, hi, n_bins))


@given(n_steps=st.integers(MAX_STEPS + 1, 2**200))
def test_any_n_steps_above_the_bound_is_refused_naming_n_steps(n_steps):
    with pytest.raises(ValueError, match=r"^n_steps must be an integer in \[1, 2\*\*48\], got"):
        RunSpec(ONE_D, **{**RUN, "n_steps": n_steps})
    with pytest.raises(ValueError, match=r"^n_steps must be an integer in \[1, 2\*\*48\], got"):
        CyclicalSchedule(n_steps, 1)


@given(burn_in=st.integers(MAX_STEPS + 1, 2**200))
def test_any_burn_in_above_the_bound_is_refused_naming_burn_in(burn_in):
    with pytest.raises(ValueError, match=r"^burn_in must be an integer in \[0, 2\*\*48\], got"):
        RunSpec(ONE_D, **{**RUN, "n_steps": 1, "burn_in": burn_in})


def test_the_step_bound_itself_is_accepted():
    assert RunSpec(ONE_D, **{**RUN, "n_steps": MAX_STEPS}).n_steps == MAX_STEPS
    assert CyclicalSchedule(MAX_STEPS, 3).n_steps == MAX_STEPS


@pytest.mark.parametrize("backend", ON_BOTH)
@pytest.mark.parametrize("test_data", ["abc", (np.zeros(2),), [np.zeros(2)], np.zeros(2), None],
                         ids=["string", "tuple", "list", "array", "none"])
def test_test_data_without_test_functions_is_refused_naming_test_data(test_data, backend):
    with pytest.raises(ValueError, match="^test_data is given but test_functions is not"):
        spec_from({"test_data": test_data}, backend)


@pytest.mark.parametrize("backend", ON_BOTH)
@pytest.mark.parametrize(("batch_size", "words"), [(0, "batch_size must be None or an integer >= 1, got 0"),
                                                   (False, "batch_size must be None or an integer >= 1, got False"),
                                                   (-1, "batch_size must be None or an integer >= 1, got -1"),
                                                   (3, r"batch_size=3 is larger than the data")])
def test_a_batch_size_given_to_plan_full_is_checked(batch_size, words, backend):
    with pytest.raises(ValueError, match=words):
        spec_from({"plan": "full", "batch_size": batch_size}, backend)


@pytest.mark.parametrize("batch_size", [None, 1, 2, np.array(2)])
def test_plan_full_records_all_the_data_as_its_batch_size(batch_size):
    assert spec_from({"plan": "full", "batch_size": batch_size}, "numba").batch_size == ONE_D.n_data


@pytest.mark.parametrize("backend", ON_BOTH)
@pytest.mark.parametrize(("kwargs", "name"), [({"x0": np.array([True])}, "x0"), ({"x0": [False]}, "x0"),
                                              ({"v0": np.array([[True]] * 4)}, "v0"),
                                              ({"control_variate": True, "x_ref": np.array([False])}, "x_ref"),
                                              ({"box_half_width": True}, "box_half_width"),
                                              ({"box_half_width": 5.0, "box_center": np.array([False])}, "box_center")],
                         ids=["x0-array", "x0-list", "v0", "x_ref", "box_half_width", "box_center"])
def test_boolean_positions_are_refused_by_name(kwargs, name, backend):
    with pytest.raises(ValueError, match=f"^{name} must be an array of numbers, got booleans"):
        spec_from(kwargs, backend)


# each scalar keyword of sample() with a valid value: a 0-d array of it makes the same spec
SCALARS = {"h": 0.05, "gamma": 2.0, "n_chains": 3, "n_steps": 20, "burn_in": 4, "seed": 7, "batch_size": 2,
           "keep": 2, "full_moments": True, "divergence_bound": 500.0, "x0": 0.5, "box_half_width": 5.0}
SPEC_FIELDS = ("h", "gamma", "n_chains", "n_steps", "burn_in", "seed", "batch_size", "divergence_bound")


def same_spec(a, b):
    assert all(getattr(a, name) == getattr(b, name) and type(getattr(a, name)) is type(getattr(b, name))
               for name in SPEC_FIELDS)
    assert (a.observers.keep, a.observers.full_moments) == (b.observers.keep, b.observers.full_moments)
    assert np.array_equal(a.x0, b.x0) and np.array_equal(a.box_arrays()[1], b.box_arrays()[1])


@pytest.mark.parametrize("backend", ON_BOTH)
@pytest.mark.parametrize("name", list(SCALARS))
def test_a_zero_dimensional_array_counts_as_its_number_for_every_argument(name, backend):
    same_spec(spec_from({name: np.array(SCALARS[name])}, backend), spec_from({name: SCALARS[name]}, backend))


def test_a_zero_dimensional_array_counts_as_its_number_in_the_histogram_and_path_refine():
    zero_d = spec_from({"histogram": (np.array(-1.0), np.array(1.0), np.array(8)), "path_refine": np.array(4)},
                       "numba")
    assert zero_d.observers.histogram == (-1.0, 1.0, 8) and zero_d.path_refine == 4


@pytest.mark.parametrize(("name", "value", "words"), [
    ("h", np.array(-0.1), r"h must be a finite real number > 0, got array\(-0.1\)"),
    ("h", np.array(True), r"h must be a finite real number > 0, got array\(True\)"),
    ("n_chains", np.array(2.5), r"n_chains must be an integer >= 1, got array\(2.5\)"),
    ("seed", np.array(-1), r"seed must be an integer in \[0, 2\*\*64\), got array\(-1\)"),
    ("full_moments", np.array(1), "full_moments must be True or False"),
    ("h", np.array([0.1]), r"h must be a finite real number > 0, got array\(\[0.1\]\)"),
])
def test_a_zero_dimensional_array_is_checked_as_its_number(name, value, words):
    with pytest.raises(ValueError, match=f"^{words}"):
        spec_from({name: value}, "numba")


@pytest.mark.torch
def test_zero_dimensional_tensors_count_as_their_numbers():
    import torch

    from integrators._options import Localization
    from integrators.torch._config import SamplerConfig

    same_spec(spec_from({"h": torch.tensor(0.05, dtype=torch.float64), "n_chains": torch.tensor(3)}, "torch"),
              spec_from({"h": 0.05, "n_chains": 3}, "torch"))
    config = SamplerConfig(np.array(0.01), torch.tensor(1.0), np.array(10), batch_size=torch.tensor(2),
                           seed=np.array(5), schedule=CyclicalSchedule(np.array(100), torch.tensor(4)),
                           localization=Localization(np.array(0.5), torch.tensor(2.0)))
    numbers = (config.h, config.gamma, config.n_data, config.batch_size, config.seed, config.schedule.n_steps,
               config.schedule.n_cycles, config.localization.rho, config.localization.rho_max)
    assert numbers == (0.01, 1.0, 10, 2, 5, 100, 4, 0.5, 2.0)
    assert [type(number) for number in numbers] == [float, float, int, int, int, int, int, float, float]


# ------------------------------------------------------------------ memory available now
GIB = 2**30
STATIC_MEMINFO = "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8388608 kB\n"


@pytest.fixture
def eight_gib_available(monkeypatch, tmp_path):
    """A machine with 8 GiB available, as /proc/meminfo says it, whatever its physical memory
    (psutil, if installed, is made absent)."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(STATIC_MEMINFO)
    monkeypatch.setattr(memory, "MEMINFO", str(meminfo))
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    monkeypatch.setattr(memory, "physical_memory_bytes", lambda: 64 * GIB)


def test_available_memory_is_read_from_meminfo_without_psutil(eight_gib_available):
    assert memory.psutil_available_bytes() is None
    assert memory.available_memory_bytes() == 8 * GIB


def test_available_memory_prefers_psutil_when_installed(eight_gib_available, monkeypatch):
    import types

    fake = types.SimpleNamespace(virtual_memory=lambda: types.SimpleNamespace(available=3 * GIB))
    monkeypatch.setitem(sys.modules, "psutil", fake)
    assert memory.available_memory_bytes() == 3 * GIB


def test_available_memory_falls_back_to_physical_memory(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "psutil", None)
    monkeypatch.setattr(memory, "MEMINFO", str(tmp_path / "absent"))
    assert memory.meminfo_available_bytes() is None
    (tmp_path / "no_key").write_text("MemTotal: 100 kB\n")
    assert memory.meminfo_available_bytes(str(tmp_path / "no_key")) is None
    monkeypatch.setattr(memory, "physical_memory_bytes", lambda: 5 * GIB)
    assert memory.available_memory_bytes() == 5 * GIB


def test_check_fits_compares_with_the_memory_available_by_default(eight_gib_available):
    memory.check_fits("n=7", 7.0 * GIB)
    with pytest.raises(ValueError, match="^n=9 needs about 9 GiB of arrays, more than this machine's 8 GiB"):
        memory.check_fits("n=9", 9.0 * GIB)


@pytest.mark.parametrize("backend", ON_BOTH)
def test_a_run_beyond_the_available_memory_is_refused_naming_keep(eight_gib_available, backend):
    """keep=10**9 samples of two chains: 16 GB, below the (patched) 64 GiB of physical memory but
    above the 8 GiB available."""
    with pytest.raises(ValueError, match=f"n_chains=2 with d=1, keep=1000000000.*{MEMORY}"):
        spec_from({"n_chains": 2, "keep": 10**9}, backend)
    assert spec_from({"n_chains": 2, "keep": 10**6}, backend).observers.keep == 10**6


@pytest.mark.torch
def test_torch_on_a_cuda_device_is_checked_against_its_free_memory(monkeypatch):
    """On a (simulated) CUDA device with 80 GiB of which 8 GiB are free, 16 GB of samples are
    refused by name; the host's memory is not asked."""
    import torch

    import integrators.torch._chains as torch_chains

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (8 * GIB, 80 * GIB))
    monkeypatch.setattr(torch_chains, "resolve_device", lambda device: torch.device(device))
    monkeypatch.setattr(memory, "available_memory_bytes", lambda: 1000 * GIB)
    assert memory.device_memory_bytes("cuda:0") == memory.device_memory_bytes(torch.device("cuda", 0)) == 8 * GIB
    cuda = Torch("cuda:0")
    assert cuda.memory_limit() == 8 * GIB
    request = {**RUN, "n_chains": 2, "keep": 10**9}
    with pytest.raises(ValueError, match=f"keep=1000000000.*on the torch backend.*{MEMORY} 8 GiB"):
        RunSpec.from_options(ONE_D, backend=cuda, **request)
    assert RunSpec.from_options(ONE_D, backend=Torch("cpu"), **request).observers.keep == 10**9  # the host's


@pytest.mark.torch
def test_module_mode_checks_the_device_free_memory(monkeypatch):
    import torch

    from integrators.torch._config import SamplerConfig, check_sampler_fits

    class Params:  # the three things check_sampler_fits reads of a FlatParameters
        dtype, device = torch.float64, torch.device("cpu")

        def __len__(self):
            return 10**8

    config = SamplerConfig(0.01, 1.0, 100, batch_size=10)
    monkeypatch.setattr(memory, "available_memory_bytes", lambda: 1 * GIB)
    with pytest.raises(ValueError, match="100000000 parameters of float64 on cpu.*more than this machine's 1 GiB"):
        check_sampler_fits("n_chains=1", Params(), config)
    monkeypatch.setattr(memory, "available_memory_bytes", lambda: 100 * GIB)
    check_sampler_fits("n_chains=1", Params(), config)


def test_sample_and_from_options_declare_the_same_parameters_with_the_same_defaults():
    """``sample`` forwards to ``RunSpec.from_options``: the two signatures are one description of a run
    (names, order, kinds, defaults), so neither can drift from the other."""
    from integrators import sample

    def described(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert described(sample) == described(RunSpec.from_options)
