"""What ``verify`` costs: its exact level (``strong=False, monte_carlo=False``) and its default level,
each the first call in a fresh process (compilation included) and a second call in the same process
(compiled), for a scheme written in user code (the README's ABOBA) and a built-in one.

Printed: the seconds of each call and the report's verdict line.  Run each level in its own process
so the first call pays every compilation it needs::

    PYTHONPATH=. python benchmarks/bench_verify.py --level exact [--scheme aboba]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def scheme_for(name: str):
    """A registered scheme's name, or ``aboba`` (the README's user scheme, from ``tests/user_schemes``)."""
    if name != "aboba":
        return name
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from user_schemes import ABOBA
    return ABOBA


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=("exact", "default"), default="exact")
    parser.add_argument("--scheme", default="aboba")
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args(argv)
    from theory_checks import verify

    options = dict(strong=False, monte_carlo=False) if args.level == "exact" else {}
    scheme = scheme_for(args.scheme)
    for call in range(args.calls):
        t0 = time.perf_counter()
        report = verify(scheme, **options)
        what = "first call (compiles)" if call == 0 else "again (compiled)"
        print(f"{args.level} {args.scheme} {what}: {time.perf_counter() - t0:.1f} s; {report.verdict_line()}",
              flush=True)


if __name__ == "__main__":
    main()
