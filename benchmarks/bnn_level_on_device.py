"""Every unit of a BNN preset level run on one torch device in one process, with the same unit
seeds as ``sms-langevin run bnn`` (``reports.store.unit_seed``), then drawn by ``experiments.bnn``
into ``--out``: the ``regime`` level's tables and verdicts on a GPU, comparable with a CPU run's.

    PYTHONPATH=. python3 benchmarks/bnn_level_on_device.py --level regime --device cuda --out OUT

Prints each unit's seconds and the total.  The data must be where ``data_sets`` finds it (copy
``../shared/data`` into an ignored folder of the checkout and pass ``--data-dir``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", default="regime", help="a BNN preset level (default: regime)")
    ap.add_argument("--device", default="cuda", help="torch device (default: cuda)")
    ap.add_argument("--out", required=True, help="folder for the drawn tables and figures")
    ap.add_argument("--seed", type=int, default=0, help="run seed, as sms-langevin run --seed (default: 0)")
    ap.add_argument("--units", type=int, default=None, help="run only the first N units (a smoke test)")
    ap.add_argument("--data-dir", default=None, help="folder of data files, searched first")
    args = ap.parse_args(argv)
    if args.data_dir:
        os.environ[__import__("data_sets").DATA_DIR_ENV] = str(Path(args.data_dir).resolve())

    import torch

    from experiments import bnn as fig_bnn
    from experiments.bnn import _pipeline as pipeline
    from experiments.bnn import _presets as presets
    from reports._metadata import metadata
    from reports.drawing import write_drawing, write_metadata
    from reports.store import unit_seed

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error("--device cuda but torch sees no CUDA device")
    units = fig_bnn.EXPERIMENT.units(args.level)[:args.units]
    results, start = [], time.perf_counter()
    for unit in units:
        t0 = time.perf_counter()
        cfg = presets.run_config(args.level, unit["dataset"], unit["run"])
        results.append((unit, pipeline.run(cfg, unit_seed(args.seed, "bnn", unit), device=args.device)))
        print(f"{unit['dataset']} run {unit['run']}: {time.perf_counter() - t0:.1f} s", flush=True)
    total = time.perf_counter() - start
    written = write_drawing(fig_bnn.EXPERIMENT.draw(results, args.level), Path(args.out))
    meta = {**metadata(args.seed, args.level), "device": args.device, "units": len(units), "seconds": round(total, 1)}
    written.append(str(write_metadata(Path(args.out) / "metadata.json", meta)))
    print(f"{len(units)} units of bnn:{args.level} on {args.device}: {total:.1f} s; wrote {len(written)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
