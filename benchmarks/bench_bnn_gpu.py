"""One Fashion-MNIST-sized run of the BNN pipeline (Algorithm 4) on a device: per-epoch times.

The paper's Fashion-MNIST network (1,265,258 parameters, width 1) on synthetic data of Fashion-MNIST's
shape (60,000 + 10,000 images, 1 x 28 x 28, 10 classes; the real files are absent on the benchmark
machines, and the timing does not depend on the pixels), batch 200: Adam epochs, SWA epochs and
SMS-UBU epochs (burn-in, then one sampling epoch with its evaluation pass), through
:func:`experiments.bnn._pipeline.run`, exactly as the presets run it. Prints each epoch's wall time, the median
SMS-UBU epoch over the median Adam epoch (both measured in this run; the first epoch of each stage
includes warm-up and is left out of the medians when there are several), and a Markdown row for
``benchmarks/RESULTS.md`` (``--results PATH`` appends it there).

    PYTHONPATH=. python3 benchmarks/bench_bnn_gpu.py                # CUDA if present, < 2 min on an H100
    PYTHONPATH=. python3 benchmarks/bench_bnn_gpu.py --tiny         # CPU-sized run (small data, width 1/4)
    PYTHONPATH=. python3 benchmarks/bench_bnn_gpu.py --smoke        # the smallest run (a check that it runs)
    PYTHONPATH=. python3 benchmarks/bench_bnn_gpu.py --chains 4     # also: 4 SMS-UBU chains at once vs one

``--chains K`` then times the sampling stage in the torch samplers' multi-chain mode
(:func:`experiments.bnn._pipeline.run_chains`, ``RunConfig.chains``): K chains of SMS-UBU at once from one point
against one chain alone, and prints the throughput gain ``K * (single-chain epoch) / (K-chain epoch)``
(above 1: running chains together on one device pays).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from experiments.bnn import _pipeline as pipeline  # noqa: E402

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cuda"][P] where torch sees a CUDA device, else
# BENCH_ARGS["cpu"][P] (small CPU-sized runs); skipped where torch is absent (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"requires": ["torch"],
              "cpu": {"tiny": ["--smoke"], "quick": ["--tiny", "--epochs", "1"], "full": ["--tiny"]},
              "cuda": {"tiny": ["--device", "cuda", "--tiny"], "quick": ["--device", "cuda"],
                       "full": ["--device", "cuda", "--chains", "4"]}}


def _median(xs):
    xs = xs[1:] if len(xs) > 2 else xs
    return statistics.median(xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="small CPU check: 2,000 images, width 1/4")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run (a check that it runs, not a measurement): 400 images, width 1/8, "
                         "one epoch per stage unless --epochs")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--epochs", type=int, default=None,
                    help="Adam epochs and SMS-UBU epochs (default 3; 1 with --smoke)")
    ap.add_argument("--results", default=None, help="append the Markdown row to this file")
    ap.add_argument("--chains", type=int, default=0, help="also time K SMS-UBU chains at once against one (K >= 2)")
    args = ap.parse_args(argv)
    if args.tiny and args.smoke:
        ap.error("--tiny and --smoke are two sizes: give one")
    if args.epochs is None:
        args.epochs = 1 if args.smoke else 3
    if args.epochs < 1:
        ap.error(f"--epochs must be >= 1, got {args.epochs}")
    if args.chains == 1 or args.chains < 0:
        ap.error(f"--chains must be 0 (off) or >= 2, got {args.chains}")
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        ap.error("--device cuda but torch sees no CUDA device")
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else f"CPU ({torch.get_num_threads()} threads)"
    size = "smoke" if args.smoke else "tiny" if args.tiny else None
    width, n_train, n_test = {"smoke": (0.125, 400, 100), "tiny": (0.25, 2000, 500), None: (1.0, None, None)}[size]
    cfg = pipeline.RunConfig("synthetic_fashion", "fashion_mnist", width=width, n_train=n_train, n_test=n_test,
                             epochs_train=args.epochs, epochs_swa=1, epochs_burn=args.epochs - 1, epochs_sample=1,
                             h=2.5e-4, samplers=("SMS-UBU",))
    t0 = time.perf_counter()
    res = pipeline.run(cfg, seed=0, device=device)
    total = time.perf_counter() - t0
    t = res["timings"]
    print(f"device: {name}; torch {torch.__version__}; {res['n_parameters']:,} parameters; "
          f"{res['n_train']} training images, batch {cfg.batch_size}")
    for stage in ("adam", "swa", "SMS-UBU epoch"):
        print(f"{stage:>14s} epochs (s): " + ", ".join(f"{s:.3f}" for s in t.get(stage, [])))
    adam, sms = _median(t["adam"]), _median(t["SMS-UBU epoch"])
    diverged = res["methods"]["SMS-UBU"]["diverged"]
    print(f"median Adam epoch {adam:.3f} s, median SMS-UBU epoch {sms:.3f} s: ratio {sms / adam:.2f} "
          f"(SMS-UBU {'diverged at step ' + str(diverged) if diverged else 'finite'}); whole run {total:.1f} s")
    row = (f"| bench_bnn_gpu{' --' + size if size else ''} | {name} | {res['n_parameters']:,} | {adam:.3f} | "
           f"{sms:.3f} | {sms / adam:.2f} | {total:.1f} |")
    print("\n| run | device | parameters | Adam epoch (s) | SMS-UBU epoch (s) | ratio | whole run (s) |\n"
          "| --- | --- | --- | --- | --- | --- | --- |\n" + row)
    if args.results:
        with open(args.results, "a") as fh:
            fh.write(row + "\n")
    if args.chains:
        chains_timing(cfg, device, args.chains, name, epochs=max(2, args.epochs))
    return 0


def chains_timing(cfg: pipeline.RunConfig, device: str, k: int, name: str, *, epochs: int) -> None:
    """Per-epoch time of one SMS-UBU chain and of ``k`` chains at once, from the network's random
    initialisation (the cost of a step does not depend on where the chain is), measured in this run."""
    from bnn import models

    torch.manual_seed(0)
    data = pipeline.tensors(pipeline.load(cfg), cfg, device, 0)
    net = models.build(cfg.network, width=cfg.width, in_shape=data.in_shape, n_classes=data.n_classes).to(device)
    spec = pipeline.SAMPLERS["SMS-UBU"]
    one = pipeline.run_chain(net, net, spec, data, cfg, h=cfg.h, seed=1, epochs_burn=epochs, epochs_sample=0,
                             evaluate=False)
    many = pipeline.run_chains([net] * k, net, spec, data, cfg, h=cfg.h, seed=1, epochs_burn=epochs, epochs_sample=0,
                               evaluate=False)
    t1, tk = _median(one.epoch_seconds), _median(many[0].epoch_seconds)
    print("SMS-UBU epochs, 1 chain (s): " + ", ".join(f"{s:.3f}" for s in one.epoch_seconds))
    print(f"SMS-UBU epochs, {k} chains at once (s): " + ", ".join(f"{s:.3f}" for s in many[0].epoch_seconds))
    print(f"\n| chains at once | device | 1-chain epoch (s) | {k}-chain epoch (s) | throughput gain |\n"
          f"| --- | --- | --- | --- | --- |\n| {k} | {name} | {t1:.3f} | {tk:.3f} | {k * t1 / tk:.2f} |")


if __name__ == "__main__":
    raise SystemExit(main())
