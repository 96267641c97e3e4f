"""The fused chain kernel compiled for real GPU targets without a GPU: registers, shared memory, spills.

Every built-in scheme x sm_80 and sm_90 x each dimension asked for (default 1 .. MAX_DIM), each at its
smallest launch (no observer, the full gradient of two data) and its largest (every observer, the prior,
the control variate, a partition of SMALL_SHUFFLE data in one batch), at the block size and warps the torch
backend launches for that dimension (integrators.torch._fused.launch_config); ``--flags`` adds each
specialization flag alone. Compiled with Triton's compiler and its bundled ptxas, read with its bundled
cuobjdump (integrators.torch._fused._compile), in a fresh Triton cache so that the times are cold ones.
Exits 1 when a kernel fails to compile or spills.

    PYTHONPATH=. python3 benchmarks/bench_fused_compile.py                  # the whole matrix (hours on 2 cores)
    PYTHONPATH=. python3 benchmarks/bench_fused_compile.py --dims 1,16      # d = 1 and MAX_DIM
    PYTHONPATH=. python3 benchmarks/bench_fused_compile.py --schemes ubu --dims 1 --archs 90 --largest-only
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from integrators.torch._fused._compile import ARCHS, FLAGS, Config, largest, run_isolated, unavailable

# how `sms-langevin bench --preset P` runs this script (compilation needs no GPU: "cpu" serves everywhere)
BENCH_ARGS = {"requires": ["torch", "triton"],
              "cpu": {"tiny": ["--schemes", "ubu", "--dims", "1", "--archs", "90", "--largest-only"],
                      "quick": ["--dims", "1,16"], "full": []}}
REGISTER_LIMIT = 255


def matrix(schemes, dims, archs, *, flags: bool, largest_only: bool) -> list[Config]:
    configs = []
    for scheme in schemes:
        for arch in archs:
            for d in dims:
                if not largest_only:
                    configs.append(Config(scheme, d, n_data=2, plan="full", arch=arch))
                    if flags:
                        configs += [Config(scheme, d, n_data=3, plan="sms", batch=2, arch=arch, **{flag: True})
                                    for flag in FLAGS]
                configs.append(largest(scheme, d, arch))
    return configs


def main(argv=None) -> int:
    from integrators.torch._fused import FUSED_STEPS, MAX_DIM

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemes", default=",".join(sorted(FUSED_STEPS)), help="comma-separated built-in schemes")
    parser.add_argument("--dims", default=f"1-{MAX_DIM}", help="comma-separated dimensions or a range a-b")
    parser.add_argument("--archs", default=",".join(map(str, ARCHS)), help="comma-separated sm_XX numbers")
    parser.add_argument("--flags", action="store_true", help="also each specialization flag alone")
    parser.add_argument("--largest-only", action="store_true", help="only the largest launch of each")
    parser.add_argument("--warm", action="store_true", help="use Triton's own cache (times are then not cold)")
    args = parser.parse_args(argv)
    why = unavailable()
    if why is not None:
        parser.error(f"cannot compile for GPU targets here: {why}")
    schemes = args.schemes.split(",")
    unknown = sorted(set(schemes) - set(FUSED_STEPS))
    if unknown:
        parser.error(f"--schemes: {unknown} have no fused kernel step (built-in: {sorted(FUSED_STEPS)})")
    dims = []
    for part in args.dims.split(","):
        lo, _, hi = part.partition("-")
        dims += list(range(int(lo), int(hi or lo) + 1))
    if not dims or min(dims) < 1 or max(dims) > MAX_DIM:
        parser.error(f"--dims must lie in 1..{MAX_DIM}, got {args.dims!r}")
    archs = [int(a) for a in args.archs.split(",")]
    configs = matrix(schemes, dims, archs, flags=args.flags, largest_only=args.largest_only)
    print(f"{len(configs)} kernels, triton {__import__('triton').__version__}, {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ) if args.warm else dict(os.environ, TRITON_CACHE_DIR=cache)
        rows = run_isolated(configs, env=env, timeout=24 * 3600, on_row=lambda row: print(line(row), flush=True))
    good = [row for row in rows if "error" not in row]
    bad = [row for row in rows if "error" in row or row["spills"]]
    by_arch = {a: sum(r["seconds"] for r in good if r["config"]["arch"] == a) for a in archs}
    print(f"{len(rows)} kernels: {sum('error' in r for r in rows)} compile errors, "
          f"{sum(r['spills'] for r in good)} spilling; compile time {sum(by_arch.values()):.0f} s "
          f"({', '.join(f'sm_{a} {s:.0f} s' for a, s in by_arch.items())})")
    if good:
        most = max(good, key=lambda r: r["registers"])
        print(f"ratio of the most registers a thread uses to the limit of {REGISTER_LIMIT}: "
              f"{most['registers'] / REGISTER_LIMIT:.2f} ({Config(**most['config']).label()})")
        slowest = max(good, key=lambda r: r["seconds"])
        mean = sum(r["seconds"] for r in good) / len(good)
        print(f"ratio of the slowest compile to the mean: {slowest['seconds'] / mean:.2f} "
              f"({slowest['seconds']:.1f} s, {Config(**slowest['config']).label()})")
    return 1 if bad else 0


def line(row) -> str:
    label = Config(**row["config"]).label()
    if "error" in row:
        return f"{label:72s} ERROR {row['error'].splitlines()[0][:100]}"
    return (f"{label:72s} BLOCK {row['block']:3d} warps {row['num_warps']} regs {row['registers']:3d} "
            f"shared {row['shared']:5d} stack {row['stack']:5d} STL/LDL {row['local_ops']:4d} "
            f"spilled {row['spill_bytes']:5d} B  {row['seconds']:6.1f} s" + ("  SPILLS" if row["spills"] else ""))


if __name__ == "__main__":
    sys.exit(main())
