"""A scheme registered from user code (the README's ``register_scheme(ABOBA)``) breaks nothing
else: ``import integrators.torch`` still works and the torch backend refuses the scheme by name
(it has no tensor step), and the claims table's weak-order rows give the verdicts ``verify``
gives (one rule: :func:`theory_checks._verify.weak_order_verdict`), for a scheme with an exact law
(ABOBA with full gradients: exact x-marginal on Gaussians) and for ones with a first-order bias.
Registrations go through the ``registered`` fixture, which removes them after each test."""

import os
import subprocess
import sys

import numpy as np
import pytest
from user_schemes import ABOBA, ABOBA_BROKEN, aboba_coefficients, aboba_step  # noqa: F401

from integrators import GaussianTarget, Scheme
from integrators.schemes import SCHEMES
from theory_checks._claims import FAILS, HOLDS, NOT_ASSERTED, weak_order_rows
from theory_checks._verify import verify, weak_order_verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# integrators.torch is imported inside the tests, never by importing this module: the subprocess
# below imports this module, registers its schemes, and only then imports the torch backend


# Euler-Maruyama's step declaring second order: a first-order bias under every plan
EM_AS_SECOND_ORDER = Scheme("em_as_second_order", SCHEMES["em"].step, SCHEMES["em"].coefficients,
                            WEAK_ORDER=2.0, STRONG_ORDER=1.0)
# UBU's step declaring an exact x-marginal with full gradients, as BAOAB does (a Scheme's
# EXACT_GAUSSIAN_X): its bias is second order, not zero
UBU_DECLARED_EXACT = Scheme("ubu_declared_exact", SCHEMES["ubu"].step, SCHEMES["ubu"].coefficients,
                            WEAK_ORDER=2.0, STRONG_ORDER=2.0, EXACT_GAUSSIAN_X=True)

VERDICT = {HOLDS: True, FAILS: False, NOT_ASSERTED: None}


def weak_verdicts_of_both(scheme):
    """``{plan: (claims verdict, verify verdict, claims measured, verify measured)}`` for every
    registered plan, the verdicts as True / False / None (holds / fails / no claim)."""
    rows = weak_order_rows("quick", schemes=[scheme.NAME])
    report = verify(scheme.NAME, strong=False, monte_carlo=False)
    out = {}
    for row in rows:
        plan = row["claim"].split(" x ", 1)[1].split(" ", 1)[0].split(":")[0]
        check = report.check(f"weak_order[{plan}]")
        out[plan] = (VERDICT[row["verdict"]], check.passed, row["measured"], check.measured)
    return out


@pytest.mark.slow
def test_importing_the_torch_backend_after_registering_a_scheme_works():
    """In a fresh interpreter: register the README's ABOBA (and a second user scheme), then
    import ``integrators.torch``; the torch backend lists only its own steps and refuses ABOBA."""
    code = ("import sys; sys.path.insert(0, 'tests')\n"
            "import integrators\n"
            "from test_registered_schemes import ABOBA, EM_AS_SECOND_ORDER\n"
            "assert 'integrators.torch' not in sys.modules\n"
            "integrators.register_scheme(ABOBA); integrators.register_scheme(EM_AS_SECOND_ORDER)\n"
            "import integrators.torch\n"
            "from integrators.torch.schemes import TORCH_STEPS, torch_step\n"
            "import pkgutil, integrators.schemes as numba_schemes\n"
            "built_in = sorted(name for _, name, _ in pkgutil.iter_modules(numba_schemes.__path__))\n"
            "assert sorted(TORCH_STEPS) == built_in, (sorted(TORCH_STEPS), built_in)\n"
            "assert torch_step('ubu').NAME == 'ubu'\n"
            "try:\n"
            "    torch_step('aboba')\n"
            "except ValueError as exc:\n"
            "    assert 'aboba' in str(exc) and 'no torch step' in str(exc), exc\n"
            "else:\n"
            "    raise AssertionError('aboba was not refused')\n"
            "print('imported')\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "imported" in proc.stdout, proc.stderr[-3000:]


def test_the_torch_backend_refuses_a_scheme_registered_for_numba_only_by_name(registered, one_torch_thread):
    import integrators.torch
    from integrators import Torch, sample

    registered(ABOBA)
    target = GaussianTarget.one_d_example()
    for scheme in ("aboba", ABOBA):  # by name, and the scheme object itself
        with pytest.raises(ValueError, match=r"'aboba' has no torch step"):
            sample(target, scheme=scheme, plan="sms", h=0.1, n_chains=4, n_steps=3, batch_size=1, backend=Torch())
    with pytest.raises(ValueError, match=r"'aboba' has no torch step"):
        integrators.torch.SamplerConfig(h=0.01, gamma=1.0, n_data=10, scheme="aboba", plan="full")
    with pytest.raises(ValueError, match=r"unknown scheme 'rk4'"):
        integrators.torch.SamplerConfig(h=0.01, gamma=1.0, n_data=10, scheme="rk4", plan="full")
    # the built-in schemes still run (by name or as the Scheme object)
    for scheme in ("ubu", SCHEMES["ubu"]):
        res = sample(target, scheme=scheme, plan="sms", h=0.1, n_chains=4, n_steps=3, batch_size=1, backend=Torch())
        assert res.scheme == "ubu" and np.all(np.isfinite(res.x))


def test_a_built_in_name_registered_with_another_step_is_refused_by_the_torch_backend():
    import integrators.torch

    ubu = SCHEMES["ubu"]
    other = Scheme("ubu", ABOBA.step, ABOBA.coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)
    integrators.register_scheme(other, replace=True)
    try:
        with pytest.raises(ValueError, match=r"'ubu' here is a step of its own, which has no torch step"):
            integrators.torch.SamplerConfig(h=0.01, gamma=1.0, n_data=10, scheme="ubu", plan="full")
    finally:
        integrators.register_scheme(ubu, replace=True)
    assert integrators.torch.SamplerConfig(h=0.01, gamma=1.0, n_data=10, scheme="ubu", plan="full").scheme == "ubu"


@pytest.mark.slow
def test_an_exact_law_holds_in_the_claims_table_as_in_verify(registered):
    """ABOBA x full: the x-marginal is exact on Gaussians, so the bias is at rounding level and
    has no slope; both report it exact and pass it (the table used to fit a slope of -0.5 and fail)."""
    registered(ABOBA)
    both = weak_verdicts_of_both(ABOBA)
    assert set(both) >= {"full", "iid", "rr", "sms"}
    claims, verified, measured, verify_measured = both["full"]
    assert measured == verify_measured == "exact (error at rounding level)"
    assert claims is True and verified is True
    for plan, (claims, verified, measured, verify_measured) in both.items():
        assert claims == verified, (plan, measured, verify_measured)
    assert both["sms"][:2] == (True, True) and both["rr"][:2] == (None, None)  # rr: observed, no claim


@pytest.mark.slow
@pytest.mark.parametrize("scheme", [EM_AS_SECOND_ORDER, ABOBA_BROKEN, UBU_DECLARED_EXACT], ids=lambda s: s.NAME)
def test_a_biased_scheme_fails_in_the_claims_table_as_in_verify(registered, scheme):
    """EM's step declaring second order (a first-order bias), the README's broken ABOBA (its O
    step forgets half the noise: a bias that does not vanish as h -> 0) and UBU declaring an exact
    law (a second-order bias; verify used to pass it on its slope) fail the same checks in both."""
    registered(scheme)
    both = weak_verdicts_of_both(scheme)
    for plan, (claims, verified, measured, verify_measured) in both.items():
        assert claims == verified, (plan, measured, verify_measured)
    assert both["full"][:2] == (False, False)
    if scheme is UBU_DECLARED_EXACT:  # the other plans: UBU's own orders
        assert both["sms"][:2] == both["iid"][:2] == (True, True)
        return
    assert both["sms"][:2] == (False, False) and both["rr"][:2] == (None, None)
    if scheme is EM_AS_SECOND_ORDER:
        assert both["iid"][:2] == (True, True)  # iid caps the expected order at 1: EM's is 1


def test_weak_order_verdict_is_one_rule():
    hs = 2.0 ** -np.arange(2, 10)
    rounding = np.abs(np.random.default_rng(0).normal(size=hs.size)) * 1e-15
    assert weak_order_verdict(hs, rounding, 2.0, 1.0) == (True, "exact (error at rounding level)")
    assert weak_order_verdict(hs, rounding, None, 1.0) == (None, "exact (error at rounding level)")
    passed, measured = weak_order_verdict(hs, 0.3 * hs, 2.0, 1.0)
    assert passed is False and measured.startswith("slope 1.000")
    assert weak_order_verdict(hs, 0.3 * hs, 1.0, 1.0)[0] is True
    assert weak_order_verdict(hs, 0.3 * hs, None, 1.0)[0] is None
    # exact relative to the target's scale; an unstable finest h is no exact law
    assert weak_order_verdict(hs, rounding * 1e3, 2.0, 1.0)[1].startswith("exact")
    assert not weak_order_verdict(hs, rounding * 1e3, 2.0, 1e-3)[1].startswith("exact")
    unstable = rounding.copy()
    unstable[-1] = np.nan
    assert weak_order_verdict(hs, unstable, 2.0, 1.0)[0] is False
    # a law declared exact that is not fails whatever its slope
    passed, measured = weak_order_verdict(hs, 0.3 * hs**2, 2.0, 1.0, exact_declared=True)
    assert passed is False and "declared exact" in measured
