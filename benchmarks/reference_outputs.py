"""Reference outputs of the built-in samplers: seeded ``sample`` runs of every scheme x plan,
divergence, bounce, the coupled h / h/2 chains of every scheme x plan x coupling and Figure 1's
tiny preset, saved to an ``.npz``; with ``--compare OTHER.npz`` the two are checked within the
rounding tolerances below (what holds across machines; bit for bit only on one machine).

    PYTHONPATH=. python benchmarks/reference_outputs.py OUT.npz [--full] [--compare REF.npz]

``--full`` runs every point of Figure 1's tiny preset (a few minutes), else three.
``tests/test_reference_outputs.py`` imports the tolerances from here; its reference
(``tests/data/reference_outputs.npz``) holds a subset of these arrays.  Which arrays moved on
purpose, and why, is recorded in ``benchmarks/RESULTS.md`` and the commit log.
"""
import argparse
import dataclasses
import math

import numpy as np
import scipy.special

from bias._coupled import coupled_run
from experiments.figure1 import _compute as figure1
from integrators import GaussianTarget, RunSpec, sample

# ------------------------------------------------------------------------------ tolerances
# On one machine a seeded run repeats bit for bit (the exactness tests: threads, tiling, resume,
# Dask, sample_together).  Across machines (another CPU, or this one with numpy, torch and Numba
# held to a lower instruction set, tests/test_cross_cpu.py) only the following holds.
U = 2.0**-53  # float64 unit roundoff (half of machine epsilon 2**-52)

# Chains (sample, coupled, divergence, bounce).  A step is a fixed sequence of IEEE operations that
# rounds alike on every x86-64 CPU: Numba compiles without fastmath, so LLVM neither reassociates
# nor fuses multiply-adds, whatever NUMBA_CPU_NAME says.  Only its inputs can differ: values from
# libm (exp and expm1 in the schemes' coefficients and the Brownian pair's factors, exp and log1p
# in the ziggurat's slow path: each within an ulp of the exact value, so two libm builds or their
# AVX2/FMA variants differ by up to 2 ulps) and the target's matrices (built with numpy's BLAS,
# whose kernels are chosen per CPU: with and without fused multiply-adds they differ by an ulp).
# A coefficient off by 2 ulps (4 U relative) moves a step by 4 U of the state; at most 4 such
# coefficients per step, and a factor 2 of transient growth of the (stable, non-normal) step map,
# give 32 U per step, and the errors of the steps add up:
#     |difference| <= C_CHAIN * U * n_steps * max|reference|,  C_CHAIN = 32
# (1.1e-12 of the scale at 300 steps).  Averages over steps (chain means and moments, the coupled
# chains' chunk averages) stay within it (an average of values within it, plus its own
# n_steps * U of summation error, inside the factor 2 of margin).
# Integers (divergence steps, histogram counts) are compared exactly: a count moves only if a
# sample lies within that bound of a bin edge (chance about n_samples * bound / bin width < 1e-7
# here), a divergence step only if a chain's excursion meets the divergence bound within it.
# Measured with numpy, OpenBLAS, torch and Numba at their baseline, against the references: at most
# 0.03 U per step (most arrays bit for bit).  A relative change of 1e-11 in gamma fails it.
C_CHAIN = 32


def chain_steps(key: str) -> int:
    """The number of (finest) steps behind a chain array of the reference."""
    if key.startswith("sample_"):
        return 300
    if key.startswith("box_"):
        return 200 * 4  # path_refine=4: four sub-steps per step
    if key.startswith("coupled_t2_indep"):
        return 2 * 100  # the fine chain takes two steps per coarse step
    if key.startswith("coupled_"):
        return 2 * 200
    return 3000  # div_em


# Figure 1's numbers (w1, w1_plain, control_noise; mc_error: half the difference of two repeats'
# W1) come from integer histograms of the chains above.  Across machines they differ only through
# W1 = G(t_0) + tail + sum over the grid's cells [a, b] of |c (b - a) - (G(b) - G(a))|, with G the
# target's integrated cdf, G = std (z Phi(z) + phi(z)), at the grid points t_j (lo, the bin
# centres, hi: n_bins + 2 = 291045 at every preset).  phi takes exp: numpy's AVX-512 exp and
# libm's are each within an ulp of the exact value (numpy's own accuracy tests), so they differ by
# up to 2 ulps, and 3 more roundings follow; so G(t_j) may move by 5 ulps (10 U) of
# S_j = std (|z| Phi(z) + phi(z)) (the magnitudes G adds), and the cancellation in G(b) - G(a)
# passes that absolute error on whole.  Each G(t_j) enters two cells (20 U), and the cell's own
# two subtractions may round differently then:
#     |difference| <= C_W1 * U * sum_j S_j,  C_W1 = 24,
# and sum_j S_j = 4.3e5, so 1.1e-9 (2.4e-8 of the smallest W1 of the three pinned points, 1.8e-6
# of their smallest mc_error).  The summation order (np.sum's SIMD blocks) adds at most
# 2 log2(n) U W1, far less.  Measured, every point of the tiny preset with numpy at AVX-512, AVX2
# and baseline (X86_V2) against tests/data/figure1_tiny_seed0.csv: at most 2.3e-14 (w1), 1e-13
# (mc_error).  One sample moved by one bin moves W1 by up to bin width / N = 2.5e-10, within the
# bound: this checks the arithmetic of the W1 numbers, the chains' integers are checked exactly above.
# (The noise floor, a sum of the same kind of cell integrals on the same grid without samples, is
# given the same tolerance.)
C_W1 = 24


def w1_tolerance() -> float:
    """The absolute tolerance of a Figure 1 number (see above)."""
    law = figure1.target_law(GaussianTarget.one_d_example())
    lo, hi, n_bins = figure1.histogram_layout(law)
    width = (hi - lo) / n_bins
    z = (np.concatenate([[lo], lo + (np.arange(n_bins) + 0.5) * width, [hi]]) - law.mean) / law.std
    terms = np.abs(z) * scipy.special.ndtr(z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return C_W1 * U * law.std * float(np.sum(terms))


# The control variate's reference point for the 2-D target: its L-BFGS minimizer (target.mode()),
# pinned to the bits it had when the references were written (with them the runs here repeat the
# references bit for bit).  The minimizer stops within its own tolerances (gtol 1e-10, ftol 1e-15)
# at a point that depends on rounding: scipy's L-BFGS-B through OpenBLAS's Haswell/SkylakeX kernels
# (fused multiply-adds) stops 2.1e-10 from the exact mode, through its Nehalem kernels 1.2e-13; that
# 2e-10 moves the control-variate chains by up to 6e-10 (8000 ulps per step): the optimizer's
# tolerance, not rounding.  So the pinned runs take the point as data.
T2_X_REF = np.array([float.fromhex("0x1.79af146e2aa40p-1"), float.fromhex("-0x1.454326cd04b9ap-4")])

def tolerance(key: str, want: np.ndarray) -> float:
    """Absolute tolerance of the reference array ``key`` across machines (0: exact)."""
    want = np.asarray(want)
    if not np.issubdtype(want.dtype, np.floating) or key.endswith("_histogram"):
        return 0.0  # integers: divergence steps, histogram counts
    if key.startswith("fig1_"):
        return w1_tolerance()
    finite = want[np.isfinite(want)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    return C_CHAIN * U * chain_steps(key) * scale


def assert_matches(key: str, got, want) -> None:
    """``got`` is ``want`` within ``tolerance(key, want)``: the same shape and kind of number,
    NaN where it is NaN (a diverged chain), exactly equal integers."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (
        f"{key}: {got.dtype}{got.shape} against {want.dtype}{want.shape}")
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance(key, want), equal_nan=True, err_msg=key)


# ------------------------------------------------------------------------------ the run
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--full", action="store_true", help="every point of Figure 1's tiny preset")
    parser.add_argument("--compare", help="a reference .npz to compare with, within the rounding tolerances")
    args = parser.parse_args()
    out, full_fig1 = args.out, args.full
    arrays = {}
    T1 = GaussianTarget.one_d_example()
    rng = np.random.default_rng(5)
    means = rng.normal(size=(5, 2))
    roots = rng.normal(size=(5, 2, 2))
    T2 = GaussianTarget(means, roots @ np.swapaxes(roots, 1, 2) + 0.3 * np.eye(2), prior_precision=0.5 * np.eye(2))
    for scheme in ("em", "baoab", "ubu", "obabo"):
        for plan in ("full", "iid", "rr", "sms"):
            for tname, t, bs in (("t1", T1, 1), ("t2", T2, 2)):
                res = sample(t, scheme=scheme, plan=plan, h=0.1 if scheme != "em" else 0.05, gamma=1.3,
                             n_chains=37, n_steps=300, burn_in=50, seed=11,
                             batch_size=None if plan == "full" else bs, keep=5, full_moments=True,
                             histogram=(-3.0, 3.0, 16), control_variate=(tname == "t2"),
                             x_ref=T2_X_REF if tname == "t2" else None)
                key = f"sample_{scheme}_{plan}_{tname}"
                for f in ("chain_mean", "chain_second_moment", "chain_outer", "samples", "x", "v", "diverged_at",
                          "histogram", "histogram_tails"):
                    arrays[f"{key}_{f}"] = getattr(res, f)
    # divergence (at the bound the reference was recorded with; the default is now the target's scale),
    # bounce, refine
    res = sample(T1, scheme="em", plan="sms", h=0.25, n_chains=8, n_steps=3000, batch_size=1, seed=0,
                 divergence_bound=1e8)
    arrays["div_em"] = res.diverged_at
    res = sample(T2, scheme="ubu", plan="sms", h=0.2, n_chains=20, n_steps=200, batch_size=2, seed=3,
                 box_center=np.zeros(2), box_half_width=1.0, path_refine=4, x0=np.zeros(2))
    arrays["box_ubu_x"] = res.x
    arrays["box_ubu_mean"] = res.chain_mean
    for scheme in ("em", "baoab", "ubu", "obabo"):
        for plan in ("full", "iid", "rr", "sms"):
            for coupling in ("shared", "independent"):
                r = coupled_run(RunSpec.from_options(T1, scheme, plan, h=0.1, gamma=1.0, n_chains=20, n_steps=200,
                                                     burn_in=20, seed=4, batch_size=None if plan == "full" else 1),
                                coupling=coupling)
                arrays[f"coupled_{scheme}_{plan}_{coupling}_fine"] = r.fine
                arrays[f"coupled_{scheme}_{plan}_{coupling}_coarse"] = r.coarse
                arrays[f"coupled_{scheme}_{plan}_{coupling}_div"] = r.diverged_at
    r = coupled_run(RunSpec.from_options(T2, "ubu", "sms", h=0.1, gamma=1.0, n_chains=10, n_steps=100, burn_in=10,
                                         seed=4, batch_size=2, control_variate=True, x_ref=T2_X_REF),
                    independent_paths=True)
    arrays["coupled_t2_indep_fine"] = r.fine
    arrays["coupled_t2_indep_coarse"] = r.coarse
    # Figure 1 tiny: a few points (all of them with the flag)
    units = figure1.units("tiny") if full_fig1 else [("ubu", "sms", 2), ("baoab", "iid", 3), ("em", "rr", 2)]
    for s, p, k in units:
        pt = figure1.run_point(s, p, k, "tiny", seed=0)
        d = dataclasses.asdict(pt)
        fields = ("w1", "mc_error", "noise_floor", "w1_plain", "mc_plain", "control_noise")
        arrays[f"fig1_{s}_{p}_{k}"] = np.array([d[f] for f in fields if f in d], dtype=float)
    np.savez_compressed(out, **{k: np.asarray(v) for k, v in arrays.items() if v is not None})
    print(len(arrays), "arrays written to", out)
    if args.compare:
        a, b = np.load(args.compare), np.load(out)
        missing = set(a.files) - set(b.files)  # reference arrays this run did not write
        bad = []
        for k in a.files:
            if k in b.files:
                try:
                    assert_matches(k, b[k], a[k])
                except AssertionError:
                    bad.append(k)
        print(f"{len(a.files)} reference arrays: " + ("within the rounding tolerances" if not (bad or missing)
              else f"DIFFER: {bad[:10]}, missing: {sorted(missing)[:10]}"))
        raise SystemExit(1 if bad or missing else 0)


if __name__ == "__main__":
    main()
