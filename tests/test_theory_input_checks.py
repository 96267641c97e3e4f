"""Bad input to the theory checks (theory_checks: orders, contraction, lemmas, declared, oracle,
probe, scaling, verify): a slope through fewer than two distinct points, an impossible batch, a
mistyped option or a non-covariance gave a number (or a verdict) instead of an error; each is a
ValueError naming the value, before any work.  Valid but unusual input (float32 covariances, lists
for arrays) stays accepted."""

import numpy as np
import pytest

from integrators import GaussianTarget
from theory_checks import declared
from theory_checks.contraction import contraction_check
from theory_checks.lemmas import variance_lemma_check
from theory_checks.oracle import affine_force, spectral_radius, stationary_covariance, stationary_moments
from theory_checks.orders import (
    anisotropic_gaussian,
    fit_slope,
    local_slopes,
    logistic_example,
    strong_order,
    weak_order,
)
from theory_checks.probe import probe_step_map
from theory_checks.scaling import dimension_scaling, gaussian_w2
from theory_checks.verify import verify

T1 = GaussianTarget.one_d_example()
LADDER_WORDS = "must hold at least 2 distinct values"


@pytest.mark.parametrize("hs", [[0.1], [0.1, 0.1, 0.1]])
def test_a_slope_needs_two_distinct_step_sizes(hs):
    with pytest.raises(ValueError, match=LADDER_WORDS):
        fit_slope(hs, np.array(hs) ** 2)
    with pytest.raises(ValueError, match=LADDER_WORDS):
        weak_order(T1, "ubu", "sms", hs, batch_size=1)
    with pytest.raises(ValueError, match=LADDER_WORDS):
        strong_order(T1, "ubu", "full", hs, n_chains=8, n_boot=5)


@pytest.mark.parametrize("call, words", [
    pytest.param(lambda: weak_order(T1, "ubu", "full", []), "hs must hold at least 2", id="weak_order-empty-ladder"),
    pytest.param(lambda: weak_order(T1, "ubu", "full", "0.1"), "hs must be a list of numbers",
                 id="weak_order-string-ladder"),
    pytest.param(lambda: weak_order(T1, "ubu", "full", [0.1, -0.05]), "hs must be positive and finite",
                 id="weak_order-negative-step"),
    pytest.param(lambda: weak_order(T1, "ubu", "full", [0.1, 0.05], fit_points=0), "fit_points must be >= 2",
                 id="weak_order-fit_points-zero"),
    pytest.param(lambda: weak_order(T1, "ubu", "full", [0.1, 0.05], statistic="nope"), "unknown statistic 'nope'",
                 id="weak_order-unknown-statistic"),
    pytest.param(lambda: strong_order(T1, "ubu", "full", [0.1, 0.05], n_boot=0), "n_boot must be >= 1",
                 id="strong_order-n_boot-zero"),
    pytest.param(lambda: strong_order(T1, "ubu", "full", [], n_chains=8), "hs must hold at least 2",
                 id="strong_order-empty-ladder"),
    pytest.param(lambda: local_slopes([0.1, 0.2, 0.3], [0.01, 0.02]), "same length", id="local_slopes-lengths"),
    pytest.param(lambda: contraction_check(T1, h=0.05, epochs=(2,)), "epochs must hold at least 2",
                 id="contraction-one-epoch"),
    pytest.param(lambda: contraction_check(T1, h=0.05, epochs=()), "epochs must hold at least 2",
                 id="contraction-no-epochs"),
    pytest.param(lambda: contraction_check(T1, h=0.05, epochs=(2, 4.5)), "epochs must be integers",
                 id="contraction-fractional-epoch"),
    pytest.param(lambda: contraction_check(T1, h=0.05, batch_size=0), "batch_size must be >= 1",
                 id="contraction-batch-zero"),
    pytest.param(lambda: contraction_check(logistic_example(), h=0.05), "needs a GaussianTarget",
                 id="contraction-logistic-target"),
    pytest.param(lambda: dimension_scaling("ubu", "sms", dims=(4,)), "dims must hold at least 2",
                 id="dimension_scaling-one-dimension"),
    pytest.param(lambda: dimension_scaling("ubu", "sms", dims=(4, 4)), "dims must hold at least 2",
                 id="dimension_scaling-repeated-dimension"),
    pytest.param(lambda: dimension_scaling("ubu", "sms", dims=(0, 4)), "dims must be positive",
                 id="dimension_scaling-zero-dimension"),
    pytest.param(lambda: anisotropic_gaussian(0), "d must be >= 1", id="anisotropic_gaussian-d-zero"),
    pytest.param(lambda: variance_lemma_check(0), "n_datasets must be >= 1", id="variance_lemma-no-datasets"),
    pytest.param(lambda: variance_lemma_check(2, 1), "n_mc must be >= 2", id="variance_lemma-one-sample"),
    pytest.param(lambda: declared.limiting_source("ubu", "iid", kind="strongg"), "kind must be one of",
                 id="declared-limiting-source-kind"),
    pytest.param(lambda: declared.source("ubu", "iid", kind="strongg"), "kind must be one of",
                 id="declared-source-kind"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "full", "0.1"), "h must be a real number", id="oracle-h-string"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "full", None), "h must be a real number", id="oracle-h-none"),
    pytest.param(lambda: stationary_covariance("ubu", np.eye(1), 0.0, 1.0), "h must be positive",
                 id="oracle-covariance-h-zero"),
    pytest.param(lambda: spectral_radius("ubu", np.ones((2, 3)), 0.1, 1.0), "hess must be a symmetric square matrix",
                 id="oracle-spectral-radius-not-square"),
    pytest.param(lambda: gaussian_w2([0.0], [[-1.0]], [0.0], [[1.0]]), "cov1 must be positive semi-definite",
                 id="gaussian_w2-negative-covariance"),
    pytest.param(lambda: gaussian_w2([0.0, 1.0], [[1.0]], [0.0], [[1.0]]), "cov1 must be a symmetric 2 x 2",
                 id="gaussian_w2-shape"),
    # -5e-7 is no rounding error at a scale of 1e-6: the tolerance is relative
    pytest.param(lambda: gaussian_w2([0.0], [[-5e-7]], [0.0], [[1e-6]]), "cov1 must be positive semi-definite",
                 id="gaussian_w2-negative-beyond-a-relative-tolerance"),
    pytest.param(lambda: verify("ubu", plans="sms"), "plans must be a list of plans, got the string 'sms'",
                 id="verify-a-lone-plan-name"),
    pytest.param(lambda: verify("ubu", plans=["full"], gamma=-1), "gamma must be positive and finite, got -1",
                 id="verify-gamma-negative"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "sms", 0.1, batch_size=1.5), "batch_size must be an integer",
                 id="oracle-batch-fraction"),
    pytest.param(lambda: stationary_moments(T1, "ubu", "sms", 0.1, batch_size=True), "batch_size must be an integer",
                 id="oracle-batch-bool"),
])
def test_theory_checks_refuse_bad_arguments_by_name(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize("batch", [[99], [-5], [], [0.5], "0"])
def test_step_maps_refuse_impossible_batches(batch):
    """An index beyond the data read no datum: the probed map had zero force, as a number."""
    with pytest.raises(ValueError, match="batch"):
        probe_step_map("ubu", T1, batch, 1.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="batch"):
        affine_force(T1, batch, 1.0)


def test_gaussian_w2_takes_float32_covariances():
    samples = np.random.default_rng(0).standard_normal((4, 50)).astype(np.float32)
    assert gaussian_w2(np.zeros(50), np.cov(samples.T), np.zeros(50), np.eye(50)) > 0


def test_affine_force_takes_a_batch_of_integral_floats_or_a_list():
    hess, _ = affine_force(T1, np.array([0.0, 1.0]), 1.0)
    np.testing.assert_allclose(hess, affine_force(T1, [0, 1], 1.0)[0])
