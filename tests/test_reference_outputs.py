"""The built-in samplers give pinned numbers: seeded ``sample`` runs of every scheme x plan
(control variate, thinning, full moments, histograms), divergence, bounce with a refined path, the
coupled h / h/2 chains and points of Figure 1's tiny preset, against arrays written with the same
calls on another machine (``tests/data/reference_outputs.npz``); the whole set (every scheme,
coupling and Figure 1 point) is compared by ``benchmarks/reference_outputs.py``.

Pinned numbers from another CPU: compared within tolerances derived from the arithmetic
(integers exactly, chain states within 32 unit roundoffs per step times the steps, Figure 1's W1
numbers within the rounding of their integrals; the derivations are in
``benchmarks/reference_outputs.py``), here and with the libraries held to their baseline
instruction sets (``tests/test_cross_cpu.py``).  Two runs on one machine stay bit for bit equal
(test_api, test_coupled, test_shared_path, test_experiments' thread-count test, ...)."""

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from bias._coupled import coupled_run
from experiments.figure1 import _compute as figure1
from integrators import GaussianTarget, RunSpec, sample

REFERENCE = np.load(Path(__file__).parent / "data" / "reference_outputs.npz")
SAMPLE_FIELDS = ("chain_mean", "chain_second_moment", "chain_outer", "samples", "x", "v", "diverged_at",
                 "histogram", "histogram_tails")
_spec = importlib.util.spec_from_file_location(
    "reference_outputs", Path(__file__).parents[1] / "benchmarks" / "reference_outputs.py")
reference_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_outputs)


def two_d_target():
    rng = np.random.default_rng(5)
    means = rng.normal(size=(5, 2))
    roots = rng.normal(size=(5, 2, 2))
    return GaussianTarget(means, roots @ np.swapaxes(roots, 1, 2) + 0.3 * np.eye(2), prior_precision=0.5 * np.eye(2))


def same(key, value):
    reference_outputs.assert_matches(key, value, REFERENCE[key])


def test_pinned_reference_point_is_the_targets_mode():
    # the control variate's reference point the pinned runs take (the references' own, to the bit;
    # see benchmarks/reference_outputs.py) is L-BFGS's minimizer up to the optimizer's tolerance
    np.testing.assert_allclose(two_d_target().mode(), reference_outputs.T2_X_REF, rtol=0, atol=1e-8)
    np.testing.assert_allclose(two_d_target().mean, reference_outputs.T2_X_REF, rtol=0, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["baoab", "ubu"])  # all four: benchmarks/reference_outputs.py
def test_sample_matches_the_reference(scheme):
    target = two_d_target()
    for plan in ("full", "iid", "rr", "sms"):
        res = sample(target, scheme=scheme, plan=plan, h=0.1 if scheme != "em" else 0.05, gamma=1.3,
                     n_chains=37, n_steps=300, burn_in=50, seed=11, batch_size=None if plan == "full" else 2,
                     keep=5, full_moments=True, histogram=(-3.0, 3.0, 16), control_variate=True,
                     x_ref=reference_outputs.T2_X_REF)
        for f in SAMPLE_FIELDS:
            same(f"sample_{scheme}_{plan}_t2_{f}", getattr(res, f))


@pytest.mark.slow
def test_divergence_and_bounce_match_the_reference():
    res = sample(GaussianTarget.one_d_example(), scheme="em", plan="sms", h=0.25, n_chains=8, n_steps=3000,
                 batch_size=1, seed=0, divergence_bound=1e8)  # the bound the reference was recorded with
    same("div_em", res.diverged_at)
    res = sample(two_d_target(), scheme="ubu", plan="sms", h=0.2, n_chains=20, n_steps=200, batch_size=2, seed=3,
                 box_center=np.zeros(2), box_half_width=1.0, path_refine=4, x0=np.zeros(2))
    same("box_ubu_x", res.x)
    same("box_ubu_mean", res.chain_mean)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["ubu"])
def test_coupled_chains_match_the_reference(scheme):
    for plan in ("full", "iid", "rr", "sms"):
        r = coupled_run(RunSpec.from_options(GaussianTarget.one_d_example(), scheme, plan, h=0.1, gamma=1.0,
                                             n_chains=20, n_steps=200, burn_in=20, seed=4,
                                             batch_size=None if plan == "full" else 1), coupling="shared")
        same(f"coupled_{scheme}_{plan}_shared_fine", r.fine)
        same(f"coupled_{scheme}_{plan}_shared_coarse", r.coarse)
        same(f"coupled_{scheme}_{plan}_shared_div", r.diverged_at)
    if scheme == "ubu":
        r = coupled_run(RunSpec.from_options(two_d_target(), "ubu", "sms", h=0.1, gamma=1.0, n_chains=10, n_steps=100,
                                             burn_in=10, seed=4, batch_size=2, control_variate=True,
                                             x_ref=reference_outputs.T2_X_REF), independent_paths=True)
        same("coupled_t2_indep_fine", r.fine)
        same("coupled_t2_indep_coarse", r.coarse)


@pytest.mark.slow
def test_figure1_tiny_points_match_the_reference():
    for s, p, k in [("ubu", "sms", 2), ("baoab", "iid", 3), ("em", "rr", 2)]:
        d = dataclasses.asdict(figure1.run_point(s, p, k, "tiny", seed=0))
        fields = [f for f in ("w1", "mc_error", "noise_floor", "w1_plain", "mc_plain", "control_noise") if f in d]
        got = np.array([d[f] for f in fields], dtype=float)
        key = f"fig1_{s}_{p}_{k}"
        reference_outputs.assert_matches(key, got, REFERENCE[key])
