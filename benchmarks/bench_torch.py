"""Speed of the tensor backend (integrators.torch), measured side by side in one run.

(a) Module mode, the paper's Fashion-MNIST CNN (the supplement's listing with 1 input channel and
    10 classes: 1,265,258 parameters, as its Table 1 states), batch 200, float32: time of one
    SMS-UBU step (localized posterior, prior on weights, bounces) / time of one SGD-with-momentum
    step (torch.optim.SGD, momentum 0.9) with the same forward and backward.  Target <= 1.10.
    The data are random tensors of Fashion-MNIST's shape: a step's time does not depend on them.
(b) Chains mode, Figure 1's workload (1-D example, UBU x sms, batch size 1, float64): chain-steps
    per second of the sampler's step (path normals, plan, force, update) against drawing the four
    normals alone on the same device (torch.randn with a Generator, and the counter-based per-chain
    normals the sampler uses), eager and with torch.compile.

    PYTHONPATH=. python3 benchmarks/bench_torch.py --device cuda      # < 2 minutes on one H100
    PYTHONPATH=. python3 benchmarks/bench_torch.py --device cpu --small
    PYTHONPATH=. python3 benchmarks/bench_torch.py --device cpu --smoke     # every part, smallest sizes
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from integrators import GaussianTarget
from integrators.plans import force_scale
from integrators.schemes import SCHEMES
from integrators.torch import Localization, ModuleSampler, SamplerConfig
from integrators.torch._chains import TensorObservers, compiled_step, fused_step, observe
from integrators.torch._plans import ChainPlan
from integrators.torch._rng import (
    CounterNormals,
    box_muller,
    counter_normals,
    counters_per_normals,
    pair_factors,
    pairs_from_normals,
    words,
)
from integrators.torch._targets import torch_force
from integrators.torch.schemes import TORCH_STEPS

FMNIST_PARAMETERS = 1_265_258  # the supplement's Table 1
UBU_STEP = TORCH_STEPS["ubu"].step  # the tensor step the benchmarks time


def counter_normals_v1(keys: torch.Tensor, start: torch.Tensor, m: int, dtype: torch.dtype) -> torch.Tensor:
    """The sampler's previous stream (version 1), the baseline of part (b): one word per uniform,
    converted through an integer-to-float conversion of its top 53 (float64) or 24 (float32) bits."""
    half = (m + 1) // 2
    ctr = start + torch.arange(2 * half, device=keys.device, dtype=torch.int64)
    bits = 53 if dtype == torch.float64 else 24
    top = (words(keys, ctr) >> (64 - bits)) & ((1 << bits) - 1)  # logical shift of the int64 bit patterns
    u = (top.to(dtype) + 0.5) * (2.0**-bits)
    z1, z2 = box_muller(u[:half], u[half:])
    return torch.cat([z1, z2])[:m]

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cuda"][P] where torch sees a CUDA device, else
# BENCH_ARGS["cpu"][P]; skipped where torch is absent (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"requires": ["torch"],
              "cpu": {"tiny": ["--device", "cpu", "--smoke"],
                      "quick": ["--device", "cpu", "--small", "--no-compile", "--chains", "4096"],
                      "full": ["--device", "cpu", "--small"]},
              "cuda": {"tiny": ["--device", "cuda", "--smoke"], "quick": ["--device", "cuda", "--preset", "quick"],
                       "full": ["--device", "cuda"]}}


def fmnist_cnn(in_channels: int = 1, num_classes: int = 10, low_rank: int = 32) -> nn.Module:
    """The supplement's Fashion-MNIST network (28x28 inputs: 256 x 3 x 3 after three poolings)."""
    flattened = 256 * 3 * 3
    conv = nn.Sequential(
        nn.Conv2d(in_channels, 32, 3, padding=1), nn.Softplus(), nn.BatchNorm2d(32, momentum=1.0),
        nn.Conv2d(32, 64, 3, padding=1), nn.Softplus(), nn.MaxPool2d(2, 2), nn.BatchNorm2d(64, momentum=1.0),
        nn.Conv2d(64, 64, 3, padding=1), nn.Softplus(), nn.BatchNorm2d(64, momentum=1.0),
        nn.Conv2d(64, 128, 3, padding=1), nn.Softplus(), nn.BatchNorm2d(128, momentum=1.0),
        nn.Conv2d(128, 128, 3, padding=1), nn.MaxPool2d(2, 2),
        nn.BatchNorm2d(128, momentum=1.0),
        nn.Conv2d(128, 256, 3, padding=1), nn.Softplus(), nn.BatchNorm2d(256, momentum=1.0),
        nn.Conv2d(256, 256, 3, padding=1), nn.Softplus(), nn.MaxPool2d(2, 2),
    )
    fc = nn.Sequential(
        nn.Flatten(), nn.BatchNorm1d(flattened, momentum=1.0), nn.Linear(flattened, low_rank),
        nn.BatchNorm1d(low_rank, momentum=1.0), nn.Linear(low_rank, 512), nn.Softplus(),
        nn.BatchNorm1d(512, momentum=1.0),
    )
    return nn.Sequential(conv, fc, nn.Linear(512, num_classes))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device, reps):
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync(device)
    return (time.perf_counter() - t0) / reps


def bench_module(device, n_data, reps, rounds, batch=200):
    torch.manual_seed(0)
    model = fmnist_cnn().to(device)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == FMNIST_PARAMETERS, n_params
    X = torch.randn(n_data, 1, 28, 28, device=device)
    Y = torch.randint(0, 10, (n_data,), device=device)

    def loss_fn(net, idx):
        return F.cross_entropy(net(X[idx]), Y[idx], reduction="sum")

    sgd_model = fmnist_cnn().to(device)
    sgd_model.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(sgd_model.parameters(), lr=1e-5, momentum=0.9)
    perm = torch.randperm(n_data, device=device)
    counter = [0]

    def sgd_step():
        j = counter[0] % (n_data // batch)
        counter[0] += 1
        idx = perm[j * batch:(j + 1) * batch]
        opt.zero_grad(set_to_none=False)
        loss_fn(sgd_model, idx).backward()
        opt.step()

    cfg = SamplerConfig(h=2.5e-4, gamma=50**0.5, n_data=n_data, batch_size=batch, scheme="ubu", plan="sms",
                        prior=1.0, localization=Localization(rho=50**-0.5), seed=0)
    sampler = ModuleSampler(model, cfg)
    results = {}
    for _name, fn in (("sgd", sgd_step), ("sms_ubu", lambda: sampler.step(loss_fn))):
        fn()  # warm-up
        fn()
    for name, fn in (("sgd", sgd_step), ("sms_ubu", lambda: sampler.step(loss_fn))) * rounds:
        results.setdefault(name, []).append(timed(fn, device, reps))
    sgd, sms = statistics.median(results["sgd"]), statistics.median(results["sms_ubu"])
    print(f"(a) module mode, Fashion-MNIST CNN ({n_params:,} parameters), batch {batch}, float32, {device}:")
    print(f"    SGD with momentum  {sgd * 1e3:8.2f} ms/step")
    print(f"    SMS-UBU            {sms * 1e3:8.2f} ms/step")
    print(f"    ratio SMS-UBU / SGD = {sms / sgd:.3f}   (target <= 1.10; medians of {rounds} interleaved rounds)")
    return sms / sgd


def bench_chains(device, n_chains, steps, compile_too):
    """(b): the normals alone (torch.randn, the previous and the current counter-based streams) and
    the sampler's step, as it was (stream v1, eager plan, the step without observers compiled) and
    as it is (:func:`integrators.torch._chains.fused_step`: normals, plan draws, force, UBU,
    divergence check and the histogram observer in one compiled graph), all in this one run."""
    target = GaussianTarget.one_d_example()
    h, gamma, dt = 1 / 16, 1.0, torch.float64
    force_of = torch_force(target, device, dt)
    scale = force_scale("sms", 2, 1)
    coef = tuple(float(c) for c in SCHEMES["ubu"].coefficients(h, gamma))
    factors = pair_factors(gamma, h)
    chains = torch.arange(n_chains, device=device)
    keys = CounterNormals(0, 0, chains, dt).keys
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    law_sd = float(target.covariance[0, 0]) ** 0.5
    hist = (float(target.mean[0]) - 12 * law_sd, float(target.mean[0]) + 12 * law_sd, 291_043)  # Figure 1's

    def old_advance(x, v, start, batch):  # the step as measured on the H200 (stream v1, no observers)
        z = counter_normals_v1(keys, start, 4, dt).view(4, 1, n_chains).transpose(1, 2)
        dW, J = pairs_from_normals(z, factors)
        return UBU_STEP(x, v, None, coef, dW, J, lambda y: force_of(y, batch, scale), None)

    def randn_only():
        return torch.randn((4, n_chains), generator=gen, device=device, dtype=dt)

    def v1_only(start):
        return counter_normals_v1(keys, start, 4, dt)

    def v2_only(start):
        return counter_normals(keys, start, 4, dt)

    backends = [None] + (["inductor"] if compile_too else [])
    start0 = torch.tensor(12, device=device, dtype=torch.int64)
    print(f"(b) chains mode, Figure 1's workload (1-D, UBU x sms, batch 1, float64), {n_chains:,} chains, "
          f"{steps} steps, {device}:")
    randn_only()
    rate_randn = n_chains / timed(randn_only, device, steps)
    print(f"    four normals alone, torch.randn + Generator:            {rate_randn:10.3e} chain-steps/s")
    rates = {}

    def run_backend(backend):
        label = "eager" if backend is None else "compiled"

        def wrap(f):
            return f if backend is None else torch.compile(f, backend=backend)

        normals = {}
        for name, fn in (("v1", wrap(v1_only)), ("v2", wrap(v2_only))):
            ref = (counter_normals_v1 if name == "v1" else counter_normals)(keys[:1000].cpu(), start0.cpu(), 4, dt)
            diff = float((fn(start0)[:, :1000].cpu() - ref).abs().max())
            start = torch.zeros((), device=device, dtype=torch.int64)

            def normals_step(fn=fn, start=start, name=name):
                fn(start)
                start.add_(4 if name == "v1" else counters_per_normals(4))

            for _ in range(3):
                normals_step()
            normals[name] = (normals_step, diff)
        times = {}
        for _ in range(3):  # interleaved rounds, medians
            for name, (fn, _) in normals.items():
                times.setdefault(name, []).append(timed(fn, device, steps))
        for name, (_, diff) in normals.items():
            rates[(label, name)] = n_chains / statistics.median(times[name])
            print(f"    [{label}] four counter normals alone, stream {name}:  {rates[(label, name)]:10.3e} "
                  f"chain-steps/s   ({rates[(label, name)] / rate_randn:.2f} x torch.randn; "
                  f"{'this device' if backend is None else 'compiled'} vs CPU eager: max difference {diff:.1e})")
        print(f"    [{label}] stream v2 / stream v1 = {rates[(label, 'v2')] / rates[(label, 'v1')]:.2f}")
        x = torch.zeros(n_chains, 1, device=device, dtype=dt)
        v = torch.zeros(n_chains, 1, device=device, dtype=dt)
        old_fn = wrap(old_advance)
        old_plan = ChainPlan("sms", 2, 1, CounterNormals(0, 1, chains, dt).uniforms, n_chains, device)
        start = torch.zeros((), device=device, dtype=torch.int64)

        def old_step(old_fn=old_fn, start=start, x=x, v=v, plan=old_plan):
            old_fn(x, v, start, plan.next())
            start.add_(4)

        old_obs = TensorObservers(n_chains, 1, device, False, hist, 0, 1, 100.0)
        k = [0]

        def old_sampler_step(record, old_fn=old_fn, start=start, x=x, v=v, plan=old_plan, obs=old_obs):
            """The previous sample()'s step: the above, then its observers eagerly (the divergence
            check; when recording the sums and the histogram, by bincount over all the bins)."""
            k[0] += 1
            g = old_fn(x, v, start, plan.next())
            start.add_(4)
            ok = obs.check(k[0], x, v, g)
            if not record:
                return
            xd = x * ok
            obs.sum_x += xd
            obs.sum_xx += xd * xd
            first, live = xd[:, 0], ok[:, 0].to(torch.float64)
            below = (first < obs.hist_lo).to(torch.float64) * live
            above = (first >= obs.hist_hi).to(torch.float64) * live
            idx = ((first - obs.hist_lo) * obs.inv_width).floor().clamp(0, obs.n_bins - 1).to(torch.int64)
            obs.hist += torch.bincount(idx, weights=live - below - above, minlength=obs.n_bins)
            obs.tails += torch.stack([below.sum(), (below * (obs.hist_lo - first)).sum(),
                                      above.sum(), (above * (first - obs.hist_hi)).sum()])

        step_fn, observe_fn = (fused_step, observe) if backend is None else compiled_step(backend)
        obs = TensorObservers(n_chains, 1, device, False, hist, 0, 1, 100.0)
        plan = ChainPlan("sms", 2, 1, CounterNormals(0, 1, chains, dt), n_chains, device, compile=backend)
        as_t = functools.partial(torch.tensor, device=device, dtype=dt)
        coef_t, factors_t, scale_t = as_t(coef), as_t(factors), as_t(scale)
        counters = torch.zeros(2, device=device, dtype=torch.int64)
        g = torch.zeros_like(x)

        def new_step(record, step_fn=step_fn, plan=plan, x=x, v=v, g=g, counters=counters, obs=obs):
            step_fn(UBU_STEP, force_of, None, x, v, g, plan.next(), scale_t, coef_t, factors_t, keys, counters, obs)
            if record:
                observe_fn(x, obs)

        variants = (("previous step (v1, eager plan, no observers)", old_step),
                    ("previous sampler step, burn-in (+ eager check)", functools.partial(old_sampler_step, False)),
                    ("previous sampler step, recording (+ eager observers)", functools.partial(old_sampler_step, True)),
                    ("fused step, burn-in (divergence check only)", functools.partial(new_step, False)),
                    ("fused step + observe, recording (moments, histogram)", functools.partial(new_step, True)))
        for _, fn in variants:  # warm-up (compiles)
            for _ in range(5):
                fn()
        times = {}
        for _ in range(3):  # interleaved rounds, medians: the load of the moment hits every variant alike
            for what, fn in variants:
                times.setdefault(what, []).append(timed(fn, device, steps))
        for what, _ in variants:
            rates[(label, what)] = n_chains / statistics.median(times[what])
        assert bool(torch.isfinite(x).all()) and int((obs.diverged_at >= 0).sum()) == 0
        for i, (what, _) in enumerate(variants):
            r = rates[(label, what)]
            versus = f" = {r / rates[(label, variants[i - 2][0])]:.2f} x the previous sampler's" if i >= 3 else ""
            print(f"    [{label}] {what + ':':54s} {r:10.3e} chain-steps/s  ({r / rate_randn:.2f} x torch.randn's rate)"
                  + versus)

    for backend in backends:
        run_backend(backend)
    return rates


def bench_whole_figure1(device, preset, against_numba: bool):
    """(c) the whole Figure 1 at ``preset`` on the device from a cold process (compilation included), then
    warm; with ``against_numba``, the Numba backend on every core in the same process: the time ratio and
    each point's W1 difference in units of its two Monte Carlo errors (a Bonferroni bound over the points)."""
    from statistics import NormalDist

    from experiments.figure1 import _compute as figure1

    times = {}
    for attempt in ("cold process", "warm"):
        t0 = time.perf_counter()
        points = figure1.compute(preset, seed=0, backend="torch", device=str(device))
        times[attempt] = time.perf_counter() - t0
        print(f"(c) the whole Figure 1, preset {preset}, {len(points)} points, {device}, {attempt}: "
              f"{times[attempt]:.1f} s (diverged: {sum(q.diverged for q in points)} points)")
    if not against_numba:
        return
    t0 = time.perf_counter()
    reference = figure1.compute(preset, seed=0, threads=os.cpu_count())
    numba_seconds = time.perf_counter() - t0
    print(f"(c) the whole Figure 1, preset {preset}, Numba on {os.cpu_count()} cores: {numba_seconds:.1f} s; "
          f"numba / {device} warm = {numba_seconds / times['warm']:.2f}, "
          f"cold = {numba_seconds / times['cold process']:.2f}")
    pairs = [(a, b) for a, b in zip(points, reference, strict=True) if not (a.diverged or b.diverged)]
    z = [abs(a.w1 - b.w1) / math.hypot(a.mc_error, b.mc_error) for a, b in pairs if a.mc_error + b.mc_error > 0]
    bound = NormalDist().inv_cdf(1 - 0.01 / (2 * max(1, len(z))))
    relative = max((abs(a.w1 - b.w1) / b.w1 for a, b in pairs if b.w1 > 0), default=float("nan"))
    print(f"    W1 {device} against Numba over {len(z)} points: largest |z| = {max(z, default=float('nan')):.2f} "
          f"(two-sided 1% family bound {bound:.2f}; {sum(x > bound for x in z)} beyond), largest relative "
          f"difference {relative:.1%} (the chains per repeat differ between the backends, so does the noise floor)")


def bench_figure1(device, preset, chain_counts, whole):
    """(c) one Figure-1 point (UBU x sms at h = 1/32 with its full-gradient control) on the device,
    for each chain count per repeat asked for (the first call also compiles); then, with
    ``whole``, the whole figure at the preset (its graphs already compiled by the points)."""
    from experiments.figure1 import _compute as figure1
    from experiments.figure1 import _torch_backend as torch_figure1

    default = torch_figure1.CHAINS_PER_REPEAT[device.type][preset]
    first = "first call" + (" (compiles)" if torch_figure1.figure1_sampler(str(device)).compile else "")
    for i, chains in enumerate([default] + [c for c in chain_counts if c != default]):
        torch_figure1.CHAINS_PER_REPEAT[device.type][preset] = chains
        for attempt in (first, "again") if i == 0 else ("again",):
            t0 = time.perf_counter()
            point = figure1.run_point("ubu", "sms", 5, preset, seed=0, backend="torch", device=str(device))
            seconds = time.perf_counter() - t0
            print(f"(c) one Figure-1 point, preset {preset} (UBU x sms, h = 1/32, {point.n_samples:,} samples, control "
                  f"included), {chains:,} chains per repeat, {device}, {attempt}: {seconds:.2f} s, "
                  f"W1 = {point.w1:.3e} +/- {point.mc_error:.1e}")
    torch_figure1.CHAINS_PER_REPEAT[device.type][preset] = default
    if whole:
        t0 = time.perf_counter()
        points = figure1.compute(preset, seed=0, backend="torch", device=str(device))
        seconds = time.perf_counter() - t0
        diverged = [f"{q.scheme} x {q.plan} at h = {q.h}" for q in points if q.diverged]
        print(f"(c) the whole Figure 1, preset {preset}, {len(points)} points, {device}: {seconds:.1f} s "
              f"(diverged: {', '.join(diverged) or 'none'})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--small", action="store_true", help="a quick CPU-sized run")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run through every part (a check that it runs, not a measurement): (a) "
                             "batch 20, one round; (b) 1,024 chains x 5 steps, no torch.compile; (c) preset tiny")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--skip", default="", help="parts to skip, e.g. 'a' or 'ac'")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--chains", type=int, default=None, help="(b): chains (default: 2^23 cuda, 2^14/2^18 cpu)")
    parser.add_argument("--figure-chains", default="",
                        help="(c): more chain counts per repeat to time, e.g. 2**19,2**20")
    parser.add_argument("--preset", default=None, help="(c): Figure 1 preset (default: full on cuda, tiny on cpu)")
    parser.add_argument("--whole-figure", action="store_true", help="(c): also time the whole figure at the preset")
    parser.add_argument("--whole-figure-only", action="store_true",
                        help="(c): only the whole figure, first in the process (cold), then warm")
    parser.add_argument("--against-numba", action="store_true",
                        help="(c) with --whole-figure-only: the Numba backend's figure in the same process")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(device)})" if cuda else f", {torch.get_num_threads()} threads"))
    t0 = time.perf_counter()
    if "a" not in args.skip:
        if args.smoke:
            bench_module(device, n_data=40, reps=1, rounds=1, batch=20)
        elif cuda:
            bench_module(device, n_data=6000, reps=20, rounds=5)
        else:
            bench_module(device, n_data=1000, reps=1 if args.small else 5, rounds=3)
    if "b" not in args.skip:
        n_chains = args.chains or (2**10 if args.smoke else 2**23 if cuda else (2**14 if args.small else 2**18))
        steps = 5 if args.smoke else 50 if cuda else (20 if args.small else 50)
        bench_chains(device, n_chains, steps, compile_too=not (args.no_compile or args.smoke))
    if "c" not in args.skip and args.whole_figure_only:
        bench_whole_figure1(device, args.preset or ("full" if cuda and not args.smoke else "tiny"), args.against_numba)
    elif "c" not in args.skip:
        counts = [int(eval(c, {})) for c in args.figure_chains.split(",") if c]  # noqa: S307 (2**k from the command line)
        bench_figure1(device, args.preset or ("full" if cuda and not args.smoke else "tiny"), counts, args.whole_figure)
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
