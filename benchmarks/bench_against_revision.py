"""Speed of ``sample``'s kernel against the kernel of an earlier git revision, in one process.

The ``integrators`` package of ``REV`` is exported (``git archive``) to a temporary folder under
the name ``integrators_before`` (its imports renamed), so both versions run in the same process
on the same workload, alternately, and the ratios compare like with like even on a loaded machine.
Workloads: UBU x sms on the 1-D example, 20,000 chains x 400 steps on one thread, without and
with Figure 1's streaming histogram of the first coordinate.  Prints the best-of and median
ratios (now / before; at most about 1.05 means the change did not slow the kernel).

    PYTHONPATH=. python benchmarks/bench_against_revision.py REV [--repeats 15] [--chains 20000]
"""

from __future__ import annotations

import argparse
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

# how `sms-langevin bench` runs this script: not at all, for the reason given (it needs a revision to compare with);
# "smallest": its smallest run, which the tests make (see reports.cli.cmd_bench)
BENCH_ARGS = {"cpu": "needs a git revision to compare with: python benchmarks/bench_against_revision.py REV",
              "smallest": ["HEAD", "--repeats", "1", "--chains", "256", "--steps", "20"]}


def export_before(rev: str, root: Path) -> None:
    """Raises ValueError (one line) when ``rev``'s ``integrators`` cannot be exported."""
    try:
        data = subprocess.run(["git", "archive", rev, "integrators"], check=True, capture_output=True,
                              cwd=Path(__file__).resolve().parents[1]).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        why = exc.stderr.decode(errors="replace").strip() if isinstance(exc, subprocess.CalledProcessError) else exc
        raise ValueError(f"cannot export integrators/ at revision {rev!r} (git archive in "
                         f"the project's folder): {why}") from None
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(root, filter="data")
    (root / "integrators").rename(root / "integrators_before")
    for path in (root / "integrators_before").rglob("*.py"):
        text = path.read_text()
        text = re.sub(r"\bfrom integrators([ .])", r"from integrators_before\1", text)
        path.write_text(re.sub(r"\bimport integrators\b", "import integrators_before", text))


def workloads(module, n_chains: int, n_steps: int):
    target = module.GaussianTarget.one_d_example()
    kw = dict(scheme="ubu", plan="sms", h=0.1, gamma=1.0, n_chains=n_chains, n_steps=n_steps, batch_size=1,
              threads=1)
    with_hist = dict(kw, histogram=(-5.0, 5.0, 291_043), burn_in=10)
    for options in (kw, with_hist):  # compile
        module.sample(target, **{**options, "n_chains": 2, "n_steps": 20})
    return {"plain": lambda: module.sample(target, **kw), "histogram": lambda: module.sample(target, **with_hist)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the git revision to compare with (e.g. main, a commit)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--chains", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=400, help="steps per run (> 10: the histogram run's burn-in)")
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
        import integrators_before

        import integrators

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
