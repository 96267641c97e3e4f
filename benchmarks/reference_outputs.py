"""Reference outputs of the built-in samplers: seeded ``sample`` runs of every scheme x plan,
divergence, bounce, the coupled h / h/2 chains of every scheme x plan x coupling and Figure 1's
tiny preset, saved to an ``.npz``; with ``--compare OTHER.npz`` the two are checked bit for bit.

    PYTHONPATH=. python benchmarks/reference_outputs.py OUT.npz [--full] [--compare REF.npz]

``--full`` runs every point of Figure 1's tiny preset (a few minutes), else three.  Recorded
before the registries (commit 39a1440) and after: bit-identical (see the issue's report).
"""
import argparse
import dataclasses

import numpy as np

from bias import figure1
from bias.coupled import coupled_run
from integrators import GaussianTarget, sample

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("out")
parser.add_argument("--full", action="store_true", help="every point of Figure 1's tiny preset")
parser.add_argument("--compare", help="a reference .npz to compare with, bit for bit")
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
                         histogram=(-3.0, 3.0, 16), control_variate=(tname == "t2"))
            key = f"sample_{scheme}_{plan}_{tname}"
            for f in ("chain_mean", "chain_second_moment", "chain_outer", "samples", "x", "v", "diverged_at",
                      "histogram", "histogram_tails"):
                arrays[f"{key}_{f}"] = getattr(res, f)
# divergence, bounce, refine
res = sample(T1, scheme="em", plan="sms", h=0.25, n_chains=8, n_steps=3000, batch_size=1, seed=0)
arrays["div_em"] = res.diverged_at
res = sample(T2, scheme="ubu", plan="sms", h=0.2, n_chains=20, n_steps=200, batch_size=2, seed=3,
             box_center=np.zeros(2), box_half_width=1.0, path_refine=4, x0=np.zeros(2))
arrays["box_ubu_x"] = res.x
arrays["box_ubu_mean"] = res.chain_mean
for scheme in ("em", "baoab", "ubu", "obabo"):
    for plan in ("full", "iid", "rr", "sms"):
        for coupling in ("shared", "independent"):
            r = coupled_run(T1, scheme, plan, 0.1, 1.0, n_chains=20, n_coarse_steps=200, burn_in=20,
                            seed=4, batch_size=None if plan == "full" else 1, coupling=coupling)
            arrays[f"coupled_{scheme}_{plan}_{coupling}_fine"] = r.fine
            arrays[f"coupled_{scheme}_{plan}_{coupling}_coarse"] = r.coarse
            arrays[f"coupled_{scheme}_{plan}_{coupling}_div"] = r.diverged_at
r = coupled_run(T2, "ubu", "sms", 0.1, 1.0, n_chains=10, n_coarse_steps=100, burn_in=10, seed=4,
                batch_size=2, independent_paths=True, control_variate=True)
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
    missing = set(a.files) ^ set(b.files)
    bad = [k for k in a.files if k in b.files and not np.array_equal(a[k], b[k], equal_nan=True)]
    print(f"{len(a.files)} reference arrays: " + ("bit-identical" if not (bad or missing)
          else f"DIFFER: {bad[:10]}, missing: {sorted(missing)[:10]}"))
    raise SystemExit(1 if bad or missing else 0)
