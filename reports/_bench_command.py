"""``sms-langevin bench``: every ``bench_*.py`` of ``benchmarks/`` run as its ``BENCH_ARGS`` says::

    BENCH_ARGS = {"cpu": {"tiny": [...], "quick": [...], "full": [...]},  # where torch sees no CUDA device
                  "cuda": {...},          # optional: where it sees one (without it "cpu" serves everywhere)
                  "requires": ["torch"],  # optional: modules it imports; skipped where one is absent
                  "smallest": [...]}      # optional: its smallest run, made by the tests (default cpu, tiny)

An entry is the script's arguments at a preset, ``{out}`` standing for a folder for its files, or a
string: why the script is skipped there (in place of a device's presets: at every preset).  A script
without ``BENCH_ARGS`` gets ``--preset PRESET --out FOLDER``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from reports._cli_common import CliError, check_out, check_preset, out_path


def read_bench_args(script: Path):
    """A benchmark script's ``BENCH_ARGS``, read from its source as a literal (the script is not
    imported); None where it declares none; ``ValueError`` where it is unreadable or not a literal."""
    import ast
    try:
        tree = ast.parse(script.read_text(errors="replace"), str(script))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"unreadable: {exc}") from None
    found = [node.value for node in tree.body if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "BENCH_ARGS" for t in node.targets)]
    if not found:
        return None
    try:
        return ast.literal_eval(found[-1])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("BENCH_ARGS must be a literal (no names or calls)") from None


def cmd_bench(args, figures) -> int:
    """Run every benchmark script as its ``BENCH_ARGS`` says (read as a literal, not imported) at
    ``args.preset``; exit code 2 when any benchmark fails or its ``BENCH_ARGS`` is malformed."""
    import importlib.util
    import shlex
    import tempfile
    check_preset(args.preset)
    root = Path(args.dir) if args.dir is not None else Path(__file__).resolve().parents[1] / "benchmarks"
    if args.dir is None and not root.is_dir():  # an installed package: the benchmarks stay in the checkout
        raise CliError("the benchmarks are not installed with the package: run `sms-langevin bench` in a clone of "
                       "the repository (make bench), or give --dir FOLDER of bench_*.py scripts")
    if not root.is_dir():
        raise CliError(f"--dir {root}: not a folder")
    scripts = sorted(root.glob("bench_*.py"))
    if not scripts:
        raise CliError(f"no benchmarks (bench_*.py) found in {root}")
    if args.out is not None:
        out = out_path(args.out)
        check_out(out)
    cuda = []  # [whether torch sees a CUDA device], asked once, only if a script has "cuda" arguments

    def how(script: Path, folder: str):
        """(where, the arguments or a reason to skip); ValueError if ``BENCH_ARGS`` is malformed."""
        spec = read_bench_args(script)
        if spec is None:
            return "no BENCH_ARGS", ["--preset", args.preset, "--out", folder]
        if not isinstance(spec, dict) or "cpu" not in spec or any(
                not isinstance(spec[k], dict | str) for k in ("cpu", "cuda") if k in spec):
            raise ValueError('BENCH_ARGS must be a dict with a "cpu" entry, "cpu" and "cuda" dicts of presets or '
                             'reasons to skip')
        requires = spec.get("requires", [])
        if not isinstance(requires, list) or not all(isinstance(m, str) for m in requires):
            raise ValueError(f'BENCH_ARGS["requires"] must be a list of module names, got {requires!r}')

        def absent(module):
            try:
                return importlib.util.find_spec(module) is None
            except (ImportError, ValueError):
                return True

        missing = [m for m in requires if absent(m)]
        if missing:
            return "any", f"needs {', '.join(missing)}, not installed here"
        if "cuda" in spec and not cuda:
            try:
                import torch
                cuda.append(bool(torch.cuda.is_available()))
            except ImportError:
                cuda.append(False)
        where = "cuda" if "cuda" in spec and cuda[0] else "cpu"
        entry = spec[where] if isinstance(spec[where], str) else spec[where].get(args.preset)
        if isinstance(entry, str):
            return where if isinstance(spec[where], str) else f"{where}, {args.preset}", entry
        if not isinstance(entry, list) or not all(isinstance(a, str) for a in entry):
            raise ValueError(f"BENCH_ARGS[{where!r}][{args.preset!r}] must be a list of arguments or a reason to "
                             f"skip, got {entry!r}")
        return f"{where}, {args.preset}", [a.replace("{out}", folder) for a in entry]

    failed, skipped = [], 0
    with tempfile.TemporaryDirectory(prefix="sms-langevin-bench-") as tmp:
        base = out if args.out is not None else Path(tmp)
        for script in scripts:
            try:
                where, extra = how(script, str(base / script.stem))
            except ValueError as exc:
                print(f"== {script.name}: {' '.join(str(exc).split())}", flush=True)
                failed.append(f"{script.name} (BENCH_ARGS)")
                continue
            if isinstance(extra, str):
                print(f"== {script.name} ({where}): skipped, {' '.join(extra.split())}", flush=True)
                skipped += 1
                continue
            print(f"== {script.name} ({where}): {shlex.join(extra) or '(no arguments)'}", flush=True)
            t0 = time.perf_counter()
            code = subprocess.run([sys.executable, str(script), *extra], check=False, env=os.environ.copy()).returncode
            print(f"== {script.name}: exit {code} after {time.perf_counter() - t0:.1f} s", flush=True)
            if code != 0:
                failed.append(f"{script.name} (exit {code})")
    print(f"== {len(scripts) - skipped - len(failed)} benchmarks passed, {skipped} skipped, {len(failed)} failed",
          flush=True)
    if failed:
        raise CliError(f"{len(failed)} of {len(scripts)} benchmarks failed: {', '.join(failed)}")
    return 0
