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
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from integrators import GaussianTarget
from integrators.plans import force_scale
from integrators.schemes import ubu as ubu_numba
from integrators.torch import Localization, ModuleSampler, SamplerConfig
from integrators.torch.plans import ChainPlan
from integrators.torch.rng import CounterNormals, counter_normals, pair_factors, pairs_from_normals
from integrators.torch.schemes import ubu
from integrators.torch.targets import torch_force

FMNIST_PARAMETERS = 1_265_258  # the supplement's Table 1


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


def bench_module(device, n_data, reps, rounds):
    torch.manual_seed(0)
    model = fmnist_cnn().to(device)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == FMNIST_PARAMETERS, n_params
    X = torch.randn(n_data, 1, 28, 28, device=device)
    Y = torch.randint(0, 10, (n_data,), device=device)
    batch = 200

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
    target = GaussianTarget.one_d_example()
    h, gamma, dt = 1 / 16, 1.0, torch.float64
    force_of = torch_force(target, device, dt)
    scale = force_scale("sms", 2, 1)
    coef = tuple(float(c) for c in ubu_numba.coefficients(h, gamma))
    factors = pair_factors(gamma, h)
    chains = torch.arange(n_chains, device=device)
    path = CounterNormals(0, 0, chains, dt)
    plan = ChainPlan("sms", 2, 1, CounterNormals(0, 1, chains, dt).uniforms, n_chains, device)
    gen = torch.Generator(device=device)
    gen.manual_seed(0)

    def advance(x, v, start, batch):
        z = counter_normals(path.keys, start, 4, dt).view(4, 1, n_chains).transpose(1, 2)
        dW, J = pairs_from_normals(z, factors)
        return ubu.step(x, v, None, coef, dW, J, lambda y: force_of(y, batch, scale), None)

    def randn_only():
        return torch.randn((4, n_chains), generator=gen, device=device, dtype=dt)

    def counter_only(start):
        return counter_normals(path.keys, start, 4, dt)

    variants = [("eager", advance, counter_only)]
    if compile_too:
        variants.append(("torch.compile", torch.compile(advance), torch.compile(counter_only)))
    # the counter-based stream is the same function on every device and compiled or not
    start0 = torch.tensor(12, device=device, dtype=torch.int64)
    ref = counter_normals(path.keys[:1000].cpu(), start0.cpu(), 4, dt)
    for label, _, fn in variants:
        diff = float((fn(start0)[:, :1000].cpu() - ref).abs().max())
        print(f"    [{label}] counter normals on {device} vs CPU eager: max difference {diff:.1e} "
              f"(integer stream exact; last-bit differences from log/sin/cos implementations)")
    print(f"(b) chains mode, Figure 1's workload (1-D, UBU x sms, batch 1, float64), {n_chains:,} chains, "
          f"{steps} steps, {device}:")
    rate_randn = None
    for label, step_fn, normals_fn in variants:
        x = torch.zeros(n_chains, 1, device=device, dtype=dt)
        v = torch.zeros(n_chains, 1, device=device, dtype=dt)
        start = torch.zeros((), device=device, dtype=torch.int64)  # the stream counter, kept on the device

        def one_step(step_fn=step_fn, x=x, v=v, start=start):
            step_fn(x, v, start, plan.next())
            start.add_(4)

        def normals_step(normals_fn=normals_fn, start=start):
            normals_fn(start)
            start.add_(4)

        for fn in (one_step, normals_step):  # warm-up (compiles)
            for _ in range(3):
                fn()
        t_step = timed(one_step, device, steps)
        t_counter = timed(normals_step, device, steps)
        if rate_randn is None:
            randn_only()
            rate_randn = n_chains / timed(randn_only, device, steps)
            print(f"    four normals alone, torch.randn + Generator:   {rate_randn:10.3e} chain-steps/s")
        assert bool(torch.isfinite(x).all())
        print(f"    [{label}] four counter-based normals alone:     {n_chains / t_counter:10.3e} chain-steps/s")
        print(f"    [{label}] sampler step (normals, plan, force, UBU): {n_chains / t_step:10.3e} chain-steps/s"
              f"   = {t_counter / t_step:.2f} x the rate of its normals alone, "
              f"{n_chains / t_step / rate_randn:.2f} x torch.randn's")


def bench_figure1_point(device, preset):
    """(c) one Figure-1 point (UBU x sms at h = 1/32 with its full-gradient control) on the device."""
    from bias import figure1

    t0 = time.perf_counter()
    point = figure1.run_point("ubu", "sms", 5, preset, seed=0, backend="torch", device=str(device))
    seconds = time.perf_counter() - t0
    print(f"(c) one Figure-1 point, preset {preset} (UBU x sms, h = 1/32, {point.n_samples:,} samples, "
          f"control included), {device}: {seconds:.1f} s, W1 = {point.w1:.3e} +/- {point.mc_error:.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--small", action="store_true", help="a quick CPU-sized run")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--skip", choices=["a", "b", "c"], default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(device)})" if cuda else f", {torch.get_num_threads()} threads"))
    t0 = time.perf_counter()
    if args.skip != "a":
        if cuda:
            bench_module(device, n_data=6000, reps=20, rounds=5)
        else:
            bench_module(device, n_data=1000, reps=1 if args.small else 5, rounds=3)
    if args.skip != "b":
        n_chains = 2**23 if cuda else (2**14 if args.small else 2**18)
        steps = 50 if cuda else (20 if args.small else 50)
        bench_chains(device, n_chains, steps, compile_too=not args.no_compile)
    if args.skip != "c" and (cuda or not args.small):
        bench_figure1_point(device, "full" if cuda else "tiny")
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
