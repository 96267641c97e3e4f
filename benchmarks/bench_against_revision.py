"""The working tree against an earlier git revision, in one process: the same seeded outputs, and
the speed of ``sample``'s kernel.

The ``integrators`` and ``bias`` packages of ``REV`` (and ``experiments``, where ``REV`` has it) are
exported (``git archive``) to a temporary folder as ``integrators_before``, ``bias_before`` ...
(their imports renamed), so both versions run in the same process on the same machine.

Outputs (``--outputs``): seeded runs of ``sample`` (every scheme x plan, with a control variate, a
box, a refined path, a histogram, thinned samples and full moments), ``sample_together``, the
coupled h / h/2 chains (shared and independent paths), SMS-GHMC and three points of Figure 1's tiny
preset, each compared array by array: ``identical`` (bit for bit) or the largest relative
difference.

Speed: UBU x sms on the 1-D example, 20,000 chains x 400 steps on one thread, without and with
Figure 1's streaming histogram of the first coordinate, alternately, so the ratios compare like
with like even on a loaded machine.  Prints the best-of and median ratios (now / before; at most
about 1.03 means the change did not slow the kernel).

    PYTHONPATH=. python benchmarks/bench_against_revision.py REV [--outputs] [--repeats 15] [--chains 20000]
"""

from __future__ import annotations

import argparse
import inspect
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

# how `sms-langevin bench` runs this script: not at all, for the reason given (it needs a revision to compare with);
# "smallest": its smallest run, which the tests make (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": "needs a git revision to compare with: python benchmarks/bench_against_revision.py REV",
              "smallest": ["HEAD", "--repeats", "1", "--chains", "256", "--steps", "20"]}


PACKAGES = ("integrators", "bias", "experiments")  # experiments: Figure 1's module since it left bias


def export_before(rev: str, root: Path) -> None:
    """Raises ValueError (one line) when ``rev``'s ``integrators`` cannot be exported."""
    cwd = Path(__file__).resolve().parents[1]
    try:
        present = subprocess.run(["git", "ls-tree", "--name-only", rev], check=True, capture_output=True,
                                 cwd=cwd).stdout.decode().split()
        data = subprocess.run(["git", "archive", rev, *[p for p in PACKAGES if p in present]],
                              check=True, capture_output=True, cwd=cwd).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        why = exc.stderr.decode(errors="replace").strip() if isinstance(exc, subprocess.CalledProcessError) else exc
        raise ValueError(f"cannot export integrators/ at revision {rev!r} (git archive in "
                         f"the project's folder): {why}") from None
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(root, filter="data")
    for package in PACKAGES:
        if (root / package).exists():
            (root / package).rename(root / f"{package}_before")
    for package in PACKAGES:
        for path in (root / f"{package}_before").rglob("*.py"):
            text = path.read_text()
            for name in PACKAGES:
                text = re.sub(rf"\bfrom {name}([ .])", rf"from {name}_before\1", text)
                text = re.sub(rf"\bimport {name}\b", f"import {name}_before", text)
            path.write_text(text)


def workloads(module, n_chains: int, n_steps: int):
    target = module.GaussianTarget.one_d_example()
    kw = dict(scheme="ubu", plan="sms", h=0.1, gamma=1.0, n_chains=n_chains, n_steps=n_steps, batch_size=1,
              threads=1)
    with_hist = dict(kw, histogram=(-5.0, 5.0, 291_043), burn_in=10)
    for options in (kw, with_hist):  # compile
        module.sample(target, **{**options, "n_chains": 2, "n_steps": 20})
    return {"plain": lambda: module.sample(target, **kw), "histogram": lambda: module.sample(target, **with_hist)}


def figure1_module(bias):
    """Figure 1's points: ``bias.figure1`` in revisions before the experiments package, else
    ``experiments.figure1._compute`` (``experiments_before`` beside ``bias_before``)."""
    from importlib import import_module

    experiments = f"experiments{bias.__name__.removeprefix('bias')}"
    for name in (f"{bias.__name__}.figure1", f"{experiments}.figure1._compute", f"{experiments}.figure1.compute"):
        try:
            return import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"no Figure 1 module beside {bias.__name__}")


def seeded_outputs(integrators, bias) -> dict:
    """Arrays of seeded runs through the public entry points (see the module docstring)."""
    from importlib import import_module

    coupled = getattr(bias, "coupled_run", None) or import_module(f"{bias.__name__}.coupled").coupled_run
    figure1 = figure1_module(bias)
    t1 = integrators.GaussianTarget.one_d_example()
    rng = np.random.default_rng(7)
    q, _ = np.linalg.qr(rng.normal(size=(2, 2)))
    t2 = integrators.GaussianTarget(rng.normal(size=(3, 2)), np.array([np.eye(2), q @ np.diag([0.5, 2.0]) @ q.T,
                                                                       np.diag([1.5, 0.3])]))
    out = {}

    def put(key, result, names=("x", "v", "chain_mean", "chain_second_moment", "diverged_at")):
        for name in names:
            value = getattr(result, name)
            if value is not None:
                out[f"{key}.{name}"] = np.asarray(value)

    for scheme in integrators.SCHEMES:  # each version's own registries (the built-ins in both)
        for plan in integrators.PLANS:
            put(f"sample_{scheme}_{plan}", integrators.sample(
                t2, scheme, plan, h=0.15, n_chains=37, n_steps=300, burn_in=50, seed=11,
                batch_size=None if plan == "full" else 2, control_variate=plan != "full", keep=5, full_moments=True),
                ("x", "v", "chain_mean", "chain_second_moment", "chain_outer", "samples", "diverged_at"))
    put("sample_box_refined_histogram", integrators.sample(
        t1, "baoab", "sms", h=0.2, n_chains=20, n_steps=200, burn_in=20, batch_size=1, seed=3, box_center=[-0.8],
        box_half_width=[1.0], x0=[-0.8], path_refine=4, histogram=(-3.0, 2.0, 40)),
        ("x", "v", "chain_mean", "histogram", "histogram_tails", "diverged_at"))
    put("sample_divergence", integrators.sample(t1, "em", "sms", h=0.3, n_chains=20, n_steps=3000, batch_size=1,
                                               seed=0, divergence_bound=1e8))
    for i, res in enumerate(integrators.sample_together(t1, [("ubu", "sms"), ("em", "iid"), ("baoab", "full")],
                                                        h=0.1, n_chains=40, n_steps=200, batch_size=1, seed=5)):
        put(f"together_{i}", res)
    takes_spec = "spec" in inspect.signature(coupled).parameters  # loops take a RunSpec since issue 36
    for independent in (False, True):
        if takes_spec:
            res = coupled(integrators.RunSpec.from_options(t2, "ubu", "sms", h=0.1, gamma=1.0, n_chains=10, n_steps=100,
                                                           burn_in=10, seed=4, batch_size=2),
                          independent_paths=independent)
        else:
            res = coupled(t2, "ubu", "sms", 0.1, 1.0, n_chains=10, n_coarse_steps=100, burn_in=10, seed=4,
                          batch_size=2, independent_paths=independent)
        for name in ("fine", "coarse", "diverged_at"):
            if hasattr(res, name):
                out[f"coupled_{'independent' if independent else 'shared'}.{name}"] = np.asarray(getattr(res, name))
    put("ghmc", integrators.sms_ghmc(integrators.RunSpec.from_options(t2, plan="sms", h=0.1, batch_size=1, n_steps=200,
                                                                      n_chains=12, seed=2)) if takes_spec
        else integrators.sms_ghmc(t2, 0.1, 1, n_iter=200, n_chains=12, seed=2),
        ("x", "chain_mean", "chain_second_moment", "chain_acceptance", "diverged_at"))
    for scheme, plan, k in (("ubu", "sms", 3), ("baoab", "rr", 4), ("em", "iid", 5)):  # h = 1/8, 1/16, 1/32
        point = figure1.run_point(scheme, plan, k, "tiny", seed=0)
        out[f"figure1_{scheme}_{plan}_{k}"] = np.array([point.w1, point.mc_error, point.w1_plain,
                                                        point.first_divergence_step])
    return out


def compare_outputs(now: dict, before: dict) -> list[str]:
    lines = []
    for key in sorted(set(now) | set(before)):
        if key not in now or key not in before:
            lines.append(f"  {key:48s} only in {'now' if key in now else 'before'}")
            continue
        a, b = now[key], before[key]
        if a.shape == b.shape and np.array_equal(a, b, equal_nan=True):
            lines.append(f"  {key:48s} identical")
        elif a.shape != b.shape:
            lines.append(f"  {key:48s} MOVED: shape {a.shape} / {b.shape}")
        else:
            scale = max(float(np.nanmax(np.abs(b))), 1e-300)
            lines.append(f"  {key:48s} MOVED: max |now - before| / max |before| = "
                         f"{float(np.nanmax(np.abs(a - b))) / scale:.3g}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the git revision to compare with (e.g. main, a commit)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--chains", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=400, help="steps per run (> 10: the histogram run's burn-in)")
    parser.add_argument("--outputs", action="store_true", help="also compare the seeded outputs")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.chains < 1 or args.steps <= 10:
        parser.error(f"--repeats and --chains must be >= 1 and --steps > 10, got {args.repeats}, {args.chains}, "
                     f"{args.steps}")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            export_before(args.rev, Path(tmp))
        except ValueError as exc:
            parser.error(" ".join(str(exc).split()))
        sys.path.insert(0, tmp)
        import bias_before
        import integrators_before

        import bias
        import integrators

        if args.outputs:
            print(f"seeded outputs, now = working tree, before = {args.rev}:")
            print("\n".join(compare_outputs(seeded_outputs(integrators, bias),
                                           seeded_outputs(integrators_before, bias_before))))

        now = workloads(integrators, args.chains, args.steps)
        before = workloads(integrators_before, args.chains, args.steps)
        times = {(which, name): [] for which in ("now", "before") for name in now}
        for _ in range(args.repeats):
            for which, runs in (("now", now), ("before", before)):
                for name, run in runs.items():
                    t0 = time.perf_counter()
                    run()
                    times[which, name].append(time.perf_counter() - t0)
    print(f"UBU x sms, 1-D example, {args.chains} chains x {args.steps} steps, 1 thread; "
          f"now = working tree, before = {args.rev}; {args.repeats} alternating repeats")
    for name in now:
        a, b = times["now", name], times["before", name]
        print(f"  {name:9s} best {min(a):.4f} s / {min(b):.4f} s = {min(a) / min(b):.3f}   "
              f"median ratio {statistics.median(a) / statistics.median(b):.3f}")


if __name__ == "__main__":
    main()
