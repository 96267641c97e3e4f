"""The contract a scheme's coefficients keep, checked where a scheme is built, registered or first
used: ``coefficients(h, gamma)`` is a non-empty 1-D float64 array of finite numbers, of one length,
and the step reads none past its end (a NaN placed after them must not reach the state).  A bad
one is a ``ValueError`` naming the scheme and its coefficients, not a ``LinAlgError`` in the
oracle, a Numba ``TypingError`` or a wrong answer.  The built-in schemes keep it unchanged.

Also the arguments of the telescoping estimator: seeds derived per level stay in range,
``burn_fraction`` is a number, and a scheme or plan that is neither a name nor an object is refused
by name."""

import math
from types import SimpleNamespace

import numba as nb
import numpy as np
import pytest

from integrators import SCHEMES, GaussianTarget, RunSpec, Scheme, register_scheme, sample
from integrators.schemes import REPRESENTATIVE_STEPS, check_coefficients, check_step_reads, resolve_scheme
from theory_checks._verify import verify

UBU = SCHEMES["ubu"]
ONE_D = GaussianTarget.one_d_example()


def ubu_like(name, coefficients):
    return Scheme(name, UBU.step, coefficients, WEAK_ORDER=2.0, STRONG_ORDER=2.0)


def one_short(h, gamma):
    return UBU.coefficients(h, gamma)[:-1]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_built_in_schemes_keep_the_contract(name):
    module = SCHEMES[name]
    coef = check_coefficients(module)
    assert coef.dtype == np.float64 and coef.ndim == 1 and np.all(np.isfinite(coef))
    check_step_reads(module, coef)  # reads exactly its own coefficients
    copy = Scheme(f"{name}_copy", module.step, module.coefficients, WEAK_ORDER=module.WEAK_ORDER,
                  STRONG_ORDER=module.STRONG_ORDER, FSAL=module.FSAL)
    assert resolve_scheme(copy) is copy and resolve_scheme(module) is module


@pytest.mark.parametrize("coefficients, words", [
    (lambda h, gamma: np.array([h, math.nan, 1.0, 1.0, 1.0]), "non-finite"),
    (lambda h, gamma: None, "NoneType None"),
    (lambda h, gamma: np.array(["0.1", "0.9", "0.1", "1.4", "1.4"]), "dtype <U3"),
    (lambda h, gamma: [h, 0.9, 0.1, 1.4, 1.4], "list"),
    (lambda h, gamma: np.array([[h, 0.9, 0.1, 1.4, 1.4]]), r"shape \(1, 5\)"),
    (lambda h, gamma: np.array([], dtype=float), r"shape \(0,\)"),
    (lambda h, gamma: np.arange(5), "dtype int64"),
    (lambda h, gamma: UBU.coefficients(h, gamma)[: 5 if gamma < 5 else 4], "returned 4 coefficients, but 5"),
    (lambda h, gamma: 1 / 0, "ZeroDivisionError"),
    ("abc", "must be a function"),
])
def test_bad_coefficients_are_refused_where_the_scheme_is_built(coefficients, words):
    with pytest.raises(ValueError, match=rf"scheme 'bad'.*coefficients.*{words}|scheme 'bad'.*{words}.*coefficients"):
        ubu_like("bad", coefficients)


def test_bad_coefficients_in_a_scheme_module_are_refused_where_it_is_used():
    """A module-like object is not built through Scheme: sample, verify and register_scheme check it."""
    bad = SimpleNamespace(NAME="bad_module", step=UBU.step, coefficients=lambda h, gamma: None,
                          WEAK_ORDER=2.0, STRONG_ORDER=2.0, FSAL=False)
    with pytest.raises(ValueError, match=r"scheme 'bad_module': coefficients.*NoneType"):
        sample(ONE_D, bad, "full", h=0.1, n_chains=2, n_steps=3)
    with pytest.raises(ValueError, match=r"scheme 'bad_module': coefficients"):
        verify(bad, plans=["full"], strong=False, monte_carlo=False)
    with pytest.raises(ValueError, match=r"scheme 'bad_module': coefficients"):
        register_scheme(bad)
    assert "bad_module" not in SCHEMES


@pytest.mark.slow
def test_a_step_that_reads_past_its_coefficients_is_refused_where_it_is_used():
    """UBU's step reads five coefficients; given four, it read the memory after the array and
    sample returned a wrong variance with no warning."""
    short = ubu_like("ubu_one_short", one_short)  # building it compiles nothing
    for use in (lambda: sample(ONE_D, short, "sms", h=0.1, n_chains=8, n_steps=200, batch_size=1),
                lambda: verify(short, plans=["full"], strong=False, monte_carlo=False),
                lambda: register_scheme(short)):
        with pytest.raises(ValueError, match=r"scheme 'ubu_one_short': its step reads past the end of the 4 "
                                             r"coefficients"):
            use()
    assert "ubu_one_short" not in SCHEMES
    module = SimpleNamespace(NAME="ubu_module_short", step=UBU.step, coefficients=one_short, WEAK_ORDER=2.0,
                             STRONG_ORDER=2.0, FSAL=False)
    with pytest.raises(ValueError, match="reads past the end"):
        sample(ONE_D, module, "full", h=0.1, n_chains=2, n_steps=3)


@nb.njit
def _mistyped_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    x[0, 0] = "a" + 1


@nb.njit
def _out_of_bounds_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    x[100, 100] = 1.0


@pytest.mark.parametrize("step, reason", [
    (lambda *args: None, r"it must be a Numba function \(decorate it with @numba.njit\), got function"),
    (_mistyped_step, r"TypingError: No implementation of function .* found for signature: >>> add"),
    (_out_of_bounds_step, r"UserCodeError: .*_out_of_bounds_step' failed inside the compiled kernel: an array index "
                          r"out of bounds"),
])
def test_a_step_that_fails_its_check_is_named_in_one_line(step, reason):
    """The scheme object is a scheme: the message says its step failed, in one line without colour codes."""
    scheme = Scheme("odd_step", step, UBU.coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)
    with pytest.raises(ValueError, match=rf"^scheme 'odd_step': its step failed its check.*{reason}") as caught:
        sample(ONE_D, scheme, "sms", h=0.1, batch_size=1, n_chains=4, n_steps=10)
    message = str(caught.value)
    assert "\n" not in message and "\x1b" not in message and "registered scheme's name" not in message


@pytest.mark.slow
def test_a_scheme_object_is_checked_once():
    calls = []

    def counted(h, gamma):
        calls.append((h, gamma))
        return UBU.coefficients(h, gamma)

    scheme = ubu_like("ubu_counted", counted)
    probe = REPRESENTATIVE_STEPS[-1]  # a point only the check asks for
    assert calls.count(probe) == 1  # built: checked
    for _ in range(3):
        assert resolve_scheme(scheme) is scheme
    assert calls.count(probe) == 1  # resolved again and again: not again
    res = sample(ONE_D, scheme, "full", h=0.1, n_chains=4, n_steps=50)
    assert np.all(np.isfinite(res.x)) and calls.count(probe) == 1


# ------------------------------------------------------------------ the telescoping estimator's arguments
def small_telescoping(**kwargs):
    from bias._telescoping import telescoping_bias

    options = dict(levels=1, base_epochs=4, n_chains=4, batch_size=1)
    options.update(kwargs)
    loop = {k: options.pop(k) for k in list(options) if k in ("levels", "base_epochs", "burn_fraction")}
    return telescoping_bias(RunSpec.from_options(ONE_D, options.pop("scheme", "ubu"), options.pop("plan", "sms"), h=0.1,
                                                 **options), **loop)


@pytest.mark.slow
def test_level_seeds_stay_in_range_and_come_from_derive():
    from bias._telescoping import level_seed
    from integrators.seeds import derive

    levels = [level_seed(7, level) for level in range(4)]
    assert levels == [derive(7, "telescoping", level) for level in range(4)] and len(set(levels)) == 4
    assert all(0 <= level_seed(s, level) < 2**64 for s in (2**64 - 50, 2**64 - 1) for level in (0, 1))
    top = small_telescoping(seed=2**64 - 50)  # level 1 used to fail with a seed the user never passed
    assert np.all(np.isfinite(top.differences))
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*64\), got 18446744073709551616"):
        small_telescoping(seed=2**64)


@pytest.mark.parametrize("value", ["0.1", None, True, 1.0, -0.1, math.nan])
def test_burn_fraction_must_be_a_number_in_range(value):
    with pytest.raises(ValueError, match=rf"burn_fraction must .*got {value!r}".replace("(", r"\(")):
        small_telescoping(burn_fraction=value)


@pytest.mark.parametrize("kwargs, words", [
    (dict(scheme=["ubu"]), r"scheme.*\['ubu'\]"),
    (dict(scheme={"ubu": 1}), r"scheme.*\{'ubu': 1\}"),
    (dict(plan={}), r"plan.*\{\}"),
    (dict(plan=["sms"]), r"plan.*\['sms'\]"),
])
def test_a_scheme_or_plan_that_is_neither_a_name_nor_an_object_is_refused_by_name(kwargs, words):
    with pytest.raises(ValueError, match=words):
        small_telescoping(**kwargs)


@pytest.mark.parametrize(("update", "message"), [
    ([UBU.UPDATE[0]], "must be a tuple of moves"),
    ((UBU.UPDATE[0], "kick"), "must be a tuple of moves"),
    ((UBU.UPDATE[0],), "FORCE exactly once"),
    ((UBU.UPDATE[0], "force", "force"), "FORCE exactly once"),
])
def test_an_update_that_breaks_its_contract_is_refused_by_name(update, message):
    with pytest.raises(ValueError, match=f"scheme 'bad_update': .*{message}"):
        Scheme("bad_update", UBU.step, UBU.coefficients, WEAK_ORDER=2.0, STRONG_ORDER=2.0, UPDATE=update)


def test_an_update_reads_at_most_the_move_slots():
    def six(h, gamma):
        return np.concatenate([UBU.coefficients(h, gamma), [1.0]])

    with pytest.raises(ValueError, match="scheme 'six': a move reads at most 5 coefficients"):
        Scheme("six", UBU.step, six, WEAK_ORDER=2.0, STRONG_ORDER=2.0, UPDATE=UBU.UPDATE)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_every_built_in_scheme_declares_its_update_and_its_reference_comes_from_it(name):
    scheme = SCHEMES[name]
    assert scheme.UPDATE is not None and scheme.reference_step is not None
    rng = np.random.default_rng(1)
    x, v, g = rng.normal(size=(3, 2))
    dW, J = rng.normal(size=(2, 2, 2))
    h, gamma = 0.1, 1.3
    c = scheme.coefficients(h, gamma)
    # the reference runs the moves in order, the force where FORCE stands
    want_x, want_v, want_g = x.copy(), v.copy(), g  # the built-in moves update in place
    for move in scheme.UPDATE:
        if move == "force":
            want_g = -want_x
        elif callable(move):
            want_x, want_v = move(want_x, want_v, want_g, *c, *[0.0] * (5 - len(c)), dW[0], J[0], dW[1], J[1])
    given = x.copy(), v.copy()
    got = scheme.reference_step(x, v, g, h, gamma, dW, J, lambda y: -y)
    np.testing.assert_array_equal(np.stack(given), np.stack([x, v]))  # the caller's arrays are left as they were
    for a, b in zip(got, (want_x, want_v, want_g), strict=True):
        np.testing.assert_array_equal(a, b)


def _wrong_only_at(h_bad, wrong):
    """Coefficients of UBU, but ``wrong(coef)`` at step size ``h_bad`` only (none of REPRESENTATIVE_STEPS)."""
    def coefficients(h, gamma):
        coef = UBU.coefficients(h, gamma)
        return wrong(coef) if h == h_bad else coef
    return coefficients


@pytest.mark.parametrize(("wrong", "words"), [
    (lambda coef: coef[:-1], r"must return a 1-D float64 array of \d+ coefficients"),
    (lambda coef: coef * np.nan, "returned non-finite coefficients"),
])
def test_coefficients_wrong_only_at_the_runs_step_are_refused_naming_scheme_h_and_gamma(wrong, words):
    """Registration checks coefficients at REPRESENTATIVE_STEPS; a shorter array or NaN at the run's h alone
    ran as "the chains did not move" or DIVERGED.  They are checked where a run computes them."""
    from integrators.torch.schemes import torch_step

    scheme = ubu_like("wrong_at_h", _wrong_only_at(0.05, wrong))
    assert all(h != 0.05 for h, _ in REPRESENTATIVE_STEPS)
    with pytest.raises(ValueError, match=rf"scheme 'wrong_at_h': coefficients\(h=0.05, gamma=2\) {words}"):
        sample(ONE_D, scheme, "full", h=0.05, gamma=2.0, n_chains=2, n_steps=3)
    with pytest.raises(ValueError, match=rf"scheme 'wrong_at_h': coefficients\(h=0.05, gamma=2\) {words}"):
        # what the torch backends (chains, module, ensemble) read
        torch_step(Scheme("wrong_at_h", UBU.step, scheme.coefficients, WEAK_ORDER=2.0, STRONG_ORDER=2.0,
                          UPDATE=UBU.UPDATE)).coefficients(0.05, 2.0)


@pytest.mark.parametrize("attr", ["WEAK_ORDER", "STRONG_ORDER"])
def test_an_infinite_order_is_refused(attr):
    orders = {"WEAK_ORDER": 2.0, "STRONG_ORDER": 2.0, attr: math.inf}
    with pytest.raises(ValueError, match=rf"scheme 'infinite': {attr} must be a finite positive number, got inf"):
        register_scheme(Scheme("infinite", UBU.step, UBU.coefficients, **orders))
    assert "infinite" not in SCHEMES
