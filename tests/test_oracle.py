"""The full-gradient oracle: known closed forms and instability reporting."""

import numpy as np
import pytest

from integrators import GaussianTarget
from theory_checks.oracle import UnstableStepError, spectral_radius, stationary_covariance, stationary_full


def test_em_instability_at_quarter_step_on_the_1d_example():
    target = GaussianTarget.one_d_example()
    assert spectral_radius("em", target.precision, 0.25, 1.0) > 1
    with pytest.raises(UnstableStepError, match="em"):
        stationary_full("em", target, 0.25, 1.0)


def test_baoab_x_marginal_exact_and_ubu_close():
    hess = np.array([[3.0, 1.0], [1.0, 2.0]])
    cov = stationary_covariance("baoab", hess, 0.4, 2.0)
    np.testing.assert_allclose(cov[:2, :2], np.linalg.inv(hess), rtol=1e-10)
    ubu = stationary_covariance("ubu", hess, 0.05, 1.0)
    np.testing.assert_allclose(ubu[:2, :2], np.linalg.inv(hess), rtol=5e-3)
    np.testing.assert_allclose(ubu[2:, 2:], np.eye(2), atol=5e-3)


def test_bias_orders_on_the_1d_example():
    """Variance bias halves at rate 2^order: UBU 2, EM 1 (local slopes at small h)."""
    target = GaussianTarget.one_d_example()
    exact = target.covariance[0, 0]
    for scheme, order in (("ubu", 2), ("em", 1)):
        b1, b2 = (abs(stationary_full(scheme, target, h, 1.0)[1][0, 0] - exact) for h in (2**-8, 2**-9))
        assert np.log2(b1 / b2) == pytest.approx(order, abs=0.1)
