"""``verify`` on torch-written schemes: the tensor step is probed like the Numba one and goes to
the same exact oracle.  The built-in tensor steps give the maps of their Numba twins to 1e-13
(hypothesis over step sizes, frictions, batches and force scales) and pass ``verify``; a scheme
written only in torch with a planted bug (BAOAB's O-step noise with variance ``1 - eta`` instead of
``1 - eta^2``) fails the named checks; such a scheme runs on the torch backend and is refused by
the Numba backend by name."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from integrators import SCHEMES, GaussianTarget, Scheme, Torch, sample  # noqa: E402
from theory_checks._probe import probe_step_map  # noqa: E402
from theory_checks._verify import default_target, verify  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("one_torch_thread")]
MAP_TOL = 1e-13  # relative to the map's largest entry: the two steps round alike, up to libm's exp


def o_noise_bug_coefficients(h, gamma):
    """BAOAB's coefficients with the O step's noise scaled to variance 1 - eta (not 1 - eta^2)."""
    coef = SCHEMES["baoab"].coefficients(h, gamma)
    coef[2] /= math.sqrt(1.0 + coef[1])
    return coef


O_NOISE_BUG = Scheme("baoab_o_noise_bug", None, o_noise_bug_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0,
                     FSAL=True, UPDATE=SCHEMES["baoab"].UPDATE)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@settings(max_examples=6, deadline=None)
@given(h=st.floats(0.01, 0.4), gamma=st.floats(0.1, 10.0), batch=st.sampled_from([[0, 1, 2], [2], [0, 0, 1]]),
       scale=st.floats(0.5, 4.0))
def test_the_tensor_steps_have_the_maps_of_their_numba_twins(scheme, h, gamma, batch, scale):
    target = default_target()
    numba_map = probe_step_map(scheme, target, batch, scale, h, gamma)
    torch_map = probe_step_map(scheme, target, batch, scale, h, gamma, backend="torch")
    for a, b in ((numba_map.A, torch_map.A), (numba_map.a, torch_map.a), (numba_map.C, torch_map.C)):
        assert np.max(np.abs(a - b)) <= MAP_TOL * max(1.0, float(np.max(np.abs(a))))


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_the_built_in_tensor_steps_pass_verify(scheme):
    report = verify(scheme, backend="torch", strong=False, monte_carlo=False)
    assert report.ok, report.table()
    assert report.scheme.endswith("(torch step)")
    assert report.check("strong_order[full]").skipped.startswith("the torch step")


@pytest.mark.slow
def test_the_torch_path_runs_its_monte_carlo_check_on_the_torch_backend():
    report = verify("ubu", backend="torch", plans=["sms"], strong=False, n_chains=64)
    check = report.check("monte_carlo[sms]")
    # run (its s.e. measured); 64 chains cannot reach the stated resolution, which it says
    assert check.passed is not False and "s.e." in check.measured, report.table()
    assert check.passed or "cannot detect" in check.skipped, report.table()


def test_a_planted_o_step_noise_bug_fails_named_checks():
    report = verify(O_NOISE_BUG, strong=False, monte_carlo=False)  # no Numba step: the torch path by default
    assert not report.ok
    assert {"stationarity", "weak_order[full]", "weak_order[sms]"} <= set(report.failed), report.table()
    assert report.check("probe_affine").passed  # affine, just the wrong law


def test_a_scheme_written_only_in_torch_runs_there_and_is_refused_by_numba_by_name():
    target = GaussianTarget.one_d_example()
    kw = dict(h=0.1, n_chains=8, n_steps=20, batch_size=1)
    res = sample(target, O_NOISE_BUG, "sms", backend=Torch(), **kw)
    assert res.scheme == "baoab_o_noise_bug" and np.all(np.isfinite(res.x))
    with pytest.raises(ValueError, match="'baoab_o_noise_bug' is written only in torch"):
        sample(target, O_NOISE_BUG, "sms", **kw)
    with pytest.raises(ValueError, match="step is None, so it needs a TORCH_STEP"):
        SCHEMES.validate(Scheme("nothing", None, o_noise_bug_coefficients, WEAK_ORDER=1.0, STRONG_ORDER=1.0))
