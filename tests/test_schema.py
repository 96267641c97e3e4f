"""The declared structure of unit results: every piece accepts what it declares and names the first
place that differs.  That each experiment's RESULT accepts what its units return, diverged runs
included, is checked where those results are made (test_experiments: Figure 1 and logistic; test_bnn_pipeline;
test_ghmc_logistic) and through the command line's report for demo and figure1 (test_base_install)."""

import math
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reports.schema import (
    ANY,
    BOOL,
    INTEGER,
    NUMBER,
    NUMBER_OR_NONFINITE,
    TEXT,
    ListOf,
    MapOf,
    Nullable,
    OneOf,
    Record,
    SchemaError,
    check,
    from_dataclass,
)

POINT = Record(h=NUMBER, n=INTEGER, plan=TEXT, diverged=BOOL, hs=ListOf(NUMBER), extra=Nullable(MapOf(NUMBER)))
GOOD = {"h": 0.5, "n": 3, "plan": "sms", "diverged": False, "hs": [0.1, 0.2], "extra": None, "unlisted": [1]}


def test_a_good_record_passes_and_unlisted_keys_are_allowed():
    check(GOOD, POINT)
    check({**GOOD, "extra": {"a": 1.0, "b": -2}}, POINT)


@pytest.mark.parametrize("key,bad,where", [
    ("h", "0.5", "result['h']: expected a finite number"),
    ("h", True, "result['h']: expected a finite number"),
    ("n", 3.0, "result['n']: expected an integer"),
    ("plan", None, "result['plan']: expected a string"),
    ("diverged", 0, "result['diverged']: expected true or false"),
    ("hs", [0.1, "x"], "result['hs'][1]: expected a finite number"),
    ("hs", 0.1, "result['hs']: expected a list"),
    ("extra", {"a": "b"}, "result['extra']['a']: expected a finite number"),
])
def test_each_wrong_field_is_named_with_its_path(key, bad, where):
    with pytest.raises(SchemaError, match=__import__("re").escape(where)):
        check({**GOOD, key: bad}, POINT)


def test_a_lacking_key_and_a_non_object_are_named():
    with pytest.raises(SchemaError, match="lacks 'plan'"):
        check({k: v for k, v in GOOD.items() if k != "plan"}, POINT)
    with pytest.raises(SchemaError, match="expected an object with keys h, n"):
        check([GOOD], POINT)


def test_one_of_takes_the_first_alternative_that_fits_and_names_both_otherwise():
    either = OneOf(Record(a=NUMBER), Record(b=TEXT))
    check({"a": 1}, either)
    check({"b": "x"}, either)
    with pytest.raises(SchemaError, match="lacks 'a' / result: lacks 'b'"):
        check({"c": 1}, either)


@given(st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)))
def test_anything_is_any_and_the_checks_never_fail_otherwise_than_by_schema_error(value):
    check(value, ANY)
    for schema in (POINT, ListOf(NUMBER), MapOf(INTEGER), Nullable(TEXT)):
        try:
            check(value, schema)
        except SchemaError:
            pass


@dataclass
class _Row:
    sampler: str
    h: float
    steps: int
    diverged: bool
    note: str | None
    payload: list
    label: str = ""


def test_a_dataclass_declares_its_required_fields():
    schema = from_dataclass(_Row)
    good = {"sampler": "SMS-UBU", "h": 0.1, "steps": 3, "diverged": False, "note": None, "payload": [1]}
    check(good, schema)
    with pytest.raises(SchemaError, match="result\\['steps'\\]: expected an integer"):
        check({**good, "steps": "3"}, schema)
    with pytest.raises(SchemaError, match="lacks 'payload'"):
        check({k: v for k, v in good.items() if k != "payload"}, schema)
    assert "label" not in schema.fields


@given(bad=st.sampled_from([math.nan, math.inf, -math.inf]), where=st.sampled_from(["h", "hs"]))
def test_a_number_refuses_nan_and_infinities_unless_declared(bad, where):
    value = {**GOOD, where: bad if where == "h" else [0.1, bad]}
    with pytest.raises(SchemaError, match="expected a finite number"):
        check(value, POINT)
    check(value, Record(h=NUMBER_OR_NONFINITE, hs=ListOf(NUMBER_OR_NONFINITE)))

@pytest.mark.parametrize("schema", [NUMBER, NUMBER_OR_NONFINITE])
def test_an_integer_too_large_for_a_float_is_refused_naming_the_field(schema):
    """Saved as it is, it would overflow where draw reads it as a float."""
    for huge in (10**400, -(10**400), 10**5000):  # 10**5000: past repr's digit limit too
        with pytest.raises(SchemaError, match=r"result\['h'\]: expected .*, got an integer too large for a float"):
            check({"h": huge}, Record(h=schema))
    check({"h": 10**300}, Record(h=schema))  # within a float's range
    check({"h": 10**400}, Record(h=INTEGER))  # an integer field holds any integer


def test_a_dataclass_declares_the_float_fields_that_may_be_nan():
    good = {"sampler": "SMS-UBU", "h": math.nan, "steps": 3, "diverged": True, "note": None, "payload": [1]}
    with pytest.raises(SchemaError, match="result\\['h'\\]: expected a finite number, got float nan"):
        check(good, from_dataclass(_Row))
    check(good, from_dataclass(_Row, nonfinite=("h",)))
    with pytest.raises(ValueError, match="lacks: w1"):
        from_dataclass(_Row, nonfinite=("w1",))
