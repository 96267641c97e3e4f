"""Bad input to the theory checks, found by a probe: a slope through fewer than two distinct
points, an impossible batch, a mistyped option or a non-covariance gave a number (or a verdict)
instead of an error; each is now a ValueError naming the value, before any work."""

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
    (lambda: weak_order(T1, "ubu", "full", []), "hs must hold at least 2"),
    (lambda: weak_order(T1, "ubu", "full", "0.1"), "hs must be a list of numbers"),
    (lambda: weak_order(T1, "ubu", "full", [0.1, -0.05]), "hs must be positive and finite"),
    (lambda: weak_order(T1, "ubu", "full", [0.1, 0.05], fit_points=0), "fit_points must be >= 2"),
    (lambda: weak_order(T1, "ubu", "full", [0.1, 0.05], statistic="nope"), "unknown statistic 'nope'"),
    (lambda: strong_order(T1, "ubu", "full", [0.1, 0.05], n_boot=0), "n_boot must be >= 1"),
    (lambda: strong_order(T1, "ubu", "full", [], n_chains=8), "hs must hold at least 2"),
    (lambda: local_slopes([0.1, 0.2, 0.3], [0.01, 0.02]), "same length"),
    (lambda: contraction_check(T1, h=0.05, epochs=(2,)), "epochs must hold at least 2"),
    (lambda: contraction_check(T1, h=0.05, epochs=()), "epochs must hold at least 2"),
    (lambda: contraction_check(T1, h=0.05, epochs=(2, 4.5)), "epochs must be integers"),
    (lambda: contraction_check(T1, h=0.05, batch_size=0), "batch_size must be >= 1"),
    (lambda: contraction_check(logistic_example(), h=0.05), "needs a GaussianTarget"),
    (lambda: dimension_scaling("ubu", "sms", dims=(4,)), "dims must hold at least 2"),
    (lambda: dimension_scaling("ubu", "sms", dims=(4, 4)), "dims must hold at least 2"),
    (lambda: dimension_scaling("ubu", "sms", dims=(0, 4)), "dims must be positive"),
    (lambda: anisotropic_gaussian(0), "d must be >= 1"),
    (lambda: variance_lemma_check(0), "n_datasets must be >= 1"),
    (lambda: variance_lemma_check(2, 1), "n_mc must be >= 2"),
    (lambda: declared.limiting_source("ubu", "iid", kind="strongg"), "kind must be one of"),
    (lambda: declared.source("ubu", "iid", kind="strongg"), "kind must be one of"),
    (lambda: stationary_moments(T1, "ubu", "full", "0.1"), "h must be a real number"),
    (lambda: stationary_moments(T1, "ubu", "full", None), "h must be a real number"),
    (lambda: stationary_covariance("ubu", np.eye(1), 0.0, 1.0), "h must be positive"),
    (lambda: spectral_radius("ubu", np.ones((2, 3)), 0.1, 1.0), "hess must be a symmetric square matrix"),
    (lambda: gaussian_w2([0.0], [[-1.0]], [0.0], [[1.0]]), "cov1 must be positive semi-definite"),
    (lambda: gaussian_w2([0.0, 1.0], [[1.0]], [0.0], [[1.0]]), "cov1 must be a symmetric 2 x 2"),
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
