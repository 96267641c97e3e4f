"""Calibrated uncertainty: over many seeds, ``(estimate - exact) / se`` of each result type
(``SampleResult``, ``GHMCResult``, ``CoupledResult``, the adapters' ``PlanMeasurement``) is
standard normal, against the exact oracle (:mod:`theory_checks.oracle`), the target's own law or
a closed form.

A test that takes a result's own standard error as its tolerance cannot see that standard error
being wrong; these tests can: mean, variance and Kolmogorov-Smirnov test of the standardized
errors, each p-value Holm-corrected over every test of its result type at family-wise level
:data:`ALPHA`.  With :data:`N_SEEDS` seeds the variance test detects a standard error off by about
25% (:func:`detectable_scale`), so zeroing the delta-method term of ``GHMCResult.variance_se``
(a factor 3 here: the target's mean is 2 standard deviations from 0) fails, and does in a test.

Small 1-D targets, few steps and many chains, so that every seed is a fresh, independent run of
a few milliseconds once compiled.
"""

import math

import numpy as np
import pytest
from scipy import stats

from integrators import GaussianTarget, RunSpec, sample
from integrators._ghmc import GHMCResult, sms_ghmc
from theory_checks.oracle import stationary_moments

ALPHA = 1e-3    # family-wise false-alarm rate of one result type's calibration
N_SEEDS = 200   # independent runs per result type
TARGET = GaussianTarget(means=[[1.0], [3.0], [2.5], [1.5]], precisions=[0.2, 0.3, 0.25, 0.25])  # mean 2.1, var 1


def holm(pvalues: dict, alpha: float = ALPHA) -> list[str]:
    """The names of the hypotheses Holm's step-down procedure rejects at family-wise ``alpha``."""
    rejected = []
    for k, (name, p) in enumerate(sorted(pvalues.items(), key=lambda item: item[1])):
        if p > alpha / (len(pvalues) - k):
            break
        rejected.append(name)
    return rejected


def standard_normal_pvalues(name: str, z) -> dict:
    """p-values of three tests that the sample ``z`` is standard normal: its mean (``z.mean() *
    sqrt(n)`` is N(0, 1)), its variance (``(n - 1) s^2`` is chi-squared with ``n - 1`` degrees of
    freedom, two-sided) and its distribution (Kolmogorov-Smirnov)."""
    z = np.asarray(z, dtype=float)
    n = z.size
    assert n >= 20 and np.all(np.isfinite(z)), z
    chi = (n - 1) * z.var(ddof=1)
    var_p = 2 * min(stats.chi2.cdf(chi, n - 1), stats.chi2.sf(chi, n - 1))
    return {f"{name}: mean": float(2 * stats.norm.sf(abs(z.mean()) * math.sqrt(n))),
            f"{name}: variance": float(var_p),
            f"{name}: KS": float(stats.kstest(z, "norm").pvalue)}


def detectable_scale(n: int = N_SEEDS, alpha: float = ALPHA, tests: int = 6) -> float:
    """The factor by which a standard error must be wrong for the variance test alone to reject it
    at its Holm/Bonferroni level (upper side): ``sqrt(chi2 quantile / (n - 1))``."""
    return math.sqrt(stats.chi2.isf(alpha / tests / 2, n - 1) / (n - 1))


def assert_calibrated(samples: dict) -> None:
    pvalues = {}
    for name, z in samples.items():
        pvalues |= standard_normal_pvalues(name, z)
    rejected = holm(pvalues)
    summary = {name: (float(np.mean(z)), float(np.var(z, ddof=1))) for name, z in samples.items()}
    assert not rejected, f"not standard normal: {rejected}; (mean, variance) of z: {summary}; p-values {pvalues}"


# ------------------------------------------------------------------ the statistics themselves


def test_holm_rejects_in_step_down_order_and_stops_at_the_first_kept():
    assert holm({"a": 1e-5, "b": 6e-4, "c": 0.2}, alpha=1e-3) == ["a"]  # b needs 1e-3 / 2
    assert holm({"a": 1e-5, "b": 4e-4}, alpha=1e-3) == ["a", "b"]
    assert holm({"a": 0.5}, alpha=1e-3) == []


def test_the_three_tests_keep_normal_samples_and_reject_a_wrong_scale():
    rng = np.random.default_rng(0)
    assert not holm(standard_normal_pvalues("ok", rng.standard_normal(N_SEEDS)))
    scale = detectable_scale()
    assert 1.1 < scale < 1.3  # N_SEEDS buys this sensitivity
    assert "s: variance" in holm(standard_normal_pvalues("s", 1.5 * rng.standard_normal(N_SEEDS)))
    assert "s: variance" in holm(standard_normal_pvalues("s", rng.standard_normal(N_SEEDS) / 1.5))


# ------------------------------------------------------------------ one test per result type


@pytest.mark.slow
def test_sample_result_mean_and_variance_standard_errors_are_calibrated():
    """SMS-UBU at h = 0.3, batch size 2: its time-averaged law is the oracle's (not the target's)."""
    h, gamma, bs = 0.3, 1.5, 2
    exact = stationary_moments(TARGET, "ubu", "sms", h, gamma, bs)
    per = 4  # the period of sms with 2 batches
    zm, zv = [], []
    for seed in range(N_SEEDS):
        res = sample(TARGET, "ubu", "sms", h=h, gamma=gamma, n_chains=128, n_steps=per * 50, burn_in=per * 20,
                     batch_size=bs, seed=seed, x0=TARGET.mean)
        zm.append((res.mean[0] - exact.mean[0]) / res.mean_se[0])
        zv.append((res.variance[0] - exact.covariance[0, 0]) / res.variance_se[0])
    assert_calibrated({"SampleResult.mean": zm, "SampleResult.variance": zv})


def ghmc_z(result_type=GHMCResult):
    """Standardized errors of SMS-GHMC's mean and variance against the target's law (exact for a
    Metropolized scheme), one per seed."""
    zm, zv = [], []
    for seed in range(N_SEEDS):
        res = sms_ghmc(RunSpec.from_options(TARGET, plan="sms", h=0.4, batch_size=2, n_steps=60, burn_in=20,
                                            n_chains=128, seed=seed, x0=TARGET.mean), n_sweeps=1, alpha=0.5)
        res = result_type(**{k: getattr(res, k) for k in GHMCResult.__dataclass_fields__})
        zm.append((res.mean[0] - TARGET.mean[0]) / res.mean_se[0])
        zv.append((res.variance[0] - TARGET.covariance[0, 0]) / res.variance_se[0])
    return {"GHMCResult.mean": zm, "GHMCResult.variance": zv}


@pytest.mark.slow
def test_ghmc_result_mean_and_variance_standard_errors_are_calibrated():
    assert_calibrated(ghmc_z())


class ZeroedDeltaMethod(GHMCResult):
    """``variance_se`` without the delta-method term ``- 2 mean x chain_mean``."""

    @property
    def variance_se(self):
        lin = self.chain_second_moment[self.ok]
        return lin.std(axis=0, ddof=1) / math.sqrt(lin.shape[0])


@pytest.mark.slow
def test_a_zeroed_delta_method_term_fails_the_ghmc_calibration():
    with pytest.raises(AssertionError, match=r"GHMCResult.variance: variance"):
        assert_calibrated(ghmc_z(ZeroedDeltaMethod))


@pytest.mark.slow
def test_coupled_result_difference_and_mean_standard_errors_are_calibrated():
    """Coupled EM chains at h and h/2 (full gradient, observed at every coarse step): the level
    difference of x and x^2, and the fine chains' mean of x^2, against the oracle at both steps."""
    from bias._coupled import coupled_run

    h, gamma = 0.4, 1.5
    fine, coarse = (stationary_moments(TARGET, "em", "full", step, gamma) for step in (h / 2, h))
    exact_fine = np.array([fine.mean[0], fine.second_moment[0, 0]])
    exact_diff = exact_fine - np.array([coarse.mean[0], coarse.second_moment[0, 0]])
    zd, zf = [], []
    for seed in range(N_SEEDS):
        res = coupled_run(RunSpec.from_options(TARGET, "em", "full", h=h, gamma=gamma, n_chains=128, n_steps=140,
                                               burn_in=60, seed=seed, x0=TARGET.mean), n_chunks=1)
        zd.append((res.difference - exact_diff) / res.difference_se)
        zf.append((res.mean("fine") - exact_fine) / res.se("fine"))
    zd, zf = np.array(zd), np.array(zf)
    assert_calibrated({"CoupledResult.difference[x]": zd[:, 0], "CoupledResult.difference[x^2]": zd[:, 1],
                       "CoupledResult.mean[x^2]": zf[:, 1]})


@pytest.mark.slow
def test_the_adapters_measured_bias_standard_errors_are_calibrated():
    """The adapters' measurement (:func:`theory_checks.adapters._runs.measure_plan`, fixed chains)
    on a numpy ULA adapter, whose law on a 1-D Gaussian is known in closed form: variance
    ``2 / (P (2 - h P))``, mean exact; its whitened bias vector against that, in its own s.e."""
    from helpers import ToyULA

    from theory_checks.adapters._runs import LEVELS, Whitening, measure_plan

    target, h = GaussianTarget.one_d_example(), 0.1
    p, mu = float(target.precision[0, 0]), target.mean
    whiten = Whitening.of(target)
    law = whiten.of_moments(mu, np.array([[2 / (p * (2 - h * p))]]) + np.outer(mu, mu))
    exact_bias = law - whiten.of_moments(mu, target.covariance + np.outer(mu, mu))
    z = []
    for seed in range(N_SEEDS):
        m = measure_plan(ToyULA(), target, "full", gamma=1.0, batch_size=1, hs=[h], level=LEVELS["tiny"],
                         budget=1.0, n_chains=256, seed=seed)
        z.append((m.bias[0] - exact_bias) / m.se[0])
    z = np.array(z)
    assert_calibrated({"PlanMeasurement.bias[mean]": z[:, 0], "PlanMeasurement.bias[variance]": z[:, 1]})
