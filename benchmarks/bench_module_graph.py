"""Module mode and ensembles without launch overhead (issue 38, items 3 and 4), each against plain
PyTorch written the way a user would write it, measured in this process on one device.

(a) One step of the paper's Fashion-MNIST CNN (:func:`bnn.models.build`, 1,265,258 parameters),
    batch 200, float32, synthetic data of Fashion-MNIST's shape: SMS-UBU (localized, prior on weights,
    bounces) eager (``SamplerConfig(graph=False)``) and replayed from a CUDA graph (``graph=True``),
    against SGD with momentum 0.9 (``torch.optim.SGD``) eager and captured in a CUDA graph by hand
    (static batch indices, the whole forward, backward and ``opt.step()`` captured).  Prints the
    ratio SMS-UBU (graph) / SGD (graph): the acceptance asks <= 1.05.
(b) K chains at once (:class:`integrators.torch._ensemble.EnsembleSampler`, ``vmap`` over the stacked
    parameters, replayed from one CUDA graph): time per chain-step, against one chain replayed from
    a graph (a) and against plain ``torch.func.vmap`` of ``grad`` over K stacked copies with an
    SGD update (eager).  Prints the throughput gain over one chain (the acceptance asks >= 2 at
    K = 8) and the per-chain-step time (<= 1.5 ms on an H100-class GPU).

    PYTHONPATH=. python3 -u benchmarks/bench_module_graph.py --device cuda          # < 1 minute on an H100
    PYTHONPATH=. python3 -u benchmarks/bench_module_graph.py --device cpu --smoke   # a check that it runs

On a CPU there are no CUDA graphs: the "graph" rows are then the same arithmetic as plain calls and
the hand-captured SGD row is left out (its ratios print as n/a).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.func import functional_call, grad_and_value, replace_all_batch_norm_modules_, vmap  # noqa: E402

from bnn import models  # noqa: E402
from integrators.torch import Localization, ModuleSampler, SamplerConfig  # noqa: E402
from integrators.torch._ensemble import EnsembleSampler  # noqa: E402

FMNIST_PARAMETERS = 1_265_258  # the supplement's Table 1

BENCH_ARGS = {"requires": ["torch"],
              "cpu": {"tiny": ["--device", "cpu", "--smoke"], "quick": ["--device", "cpu", "--smoke"],
                      "full": ["--device", "cpu", "--small"]},
              "cuda": {"tiny": ["--device", "cuda", "--smoke"], "quick": ["--device", "cuda"],
                       "full": ["--device", "cuda"]}}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device, reps, rounds):
    """Median over ``rounds`` of the mean time of ``reps`` calls (after two warm-up calls)."""
    fn()
    fn()
    out = []
    for _ in range(rounds):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync(device)
        out.append((time.perf_counter() - t0) / reps)
    return statistics.median(out)


def sgd_steps(model, loss_fn, perm, batch, device):
    """``(eager, graph)``: one SGD-with-momentum step each, eager and captured in a CUDA graph (None off CUDA)."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
    n_batches = len(perm) // batch
    counter = [0]

    def batch_indices():
        j = counter[0] % n_batches
        counter[0] += 1
        return perm[j * batch:(j + 1) * batch]

    def eager():
        opt.zero_grad(set_to_none=False)
        loss_fn(model, batch_indices()).backward()
        opt.step()

    if device.type != "cuda":
        return eager, None
    static_idx = batch_indices().clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph asks
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        opt.zero_grad(set_to_none=False)
        loss_fn(model, static_idx).backward()
        opt.step()

    def replayed():
        static_idx.copy_(batch_indices())
        graph.replay()

    return eager, replayed


def vmap_sgd_step(model, width, loss_fn, k, perm, batch, device):
    """Plain ``torch.func``: ``vmap(grad)`` over ``k`` stacked copies of ``model`` and an SGD update, eager."""
    net = replace_all_batch_norm_modules_(models.build("fashion_mnist", width=width).to(device))
    net.load_state_dict(model.state_dict(), strict=False)
    names = [n for n, _ in net.named_parameters()]
    stacked = {n: p.detach()[None].repeat(k, *([1] * p.dim())) for n, p in net.named_parameters()}
    buffers = dict(net.named_buffers())
    n_batches = len(perm) // batch
    counter = [0]

    def single(params, idx):
        return loss_fn(lambda x: functional_call(net, (params, buffers), (x,)), idx)

    grad_fn = vmap(grad_and_value(single))

    def step():
        j = counter[0]
        counter[0] += 1
        idx = torch.stack([perm[((j + c) % n_batches) * batch:((j + c) % n_batches + 1) * batch] for c in range(k)])
        grads, _ = grad_fn(stacked, idx)
        torch._foreach_add_([stacked[n] for n in names], [grads[n] for n in names], alpha=-1e-6)

    return step


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--small", action="store_true", help="width 1/4, 2,000 images (a CPU-sized measurement)")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run (a check that it runs): width 1/8, batch 20, 2 chains")
    ap.add_argument("--chains", type=int, default=8, help="K chains at once in part (b), >= 2 (default 8)")
    ap.add_argument("--batch", type=int, default=200, help="batch size (default 200, the paper's)")
    ap.add_argument("--skip", default="", help="parts to skip: a and/or b")
    args = ap.parse_args(argv)
    if args.chains < 2:
        ap.error(f"--chains must be >= 2, got {args.chains}")
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but torch sees no CUDA device")
    if args.smoke:
        args.chains = 2
    width, n_data, reps, rounds = (0.125, 200, 1, 1) if args.smoke else (0.25, 2000, 5, 3) if args.small \
        else (1.0, 4000, 20, 5)
    batch = min(args.batch, n_data // 2) if not args.smoke else 20
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = models.build("fashion_mnist", width=width).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    if width == 1.0:
        assert n_params == FMNIST_PARAMETERS, n_params
    X = torch.randn(n_data, 1, 28, 28, device=device)
    Y = torch.randint(0, 10, (n_data,), device=device)

    def loss_fn(net, idx):
        return F.cross_entropy(net(X[idx]), Y[idx], reduction="sum")

    print(f"device: {name}; torch {torch.__version__}; {n_params:,} parameters; batch {batch}; float32")
    perm = torch.randperm(n_data, device=device)

    def sampler_config(graph):
        return SamplerConfig(h=2.5e-4, gamma=50**0.5, n_data=n_data, batch_size=batch, scheme="ubu", plan="sms",
                             prior=1.0, localization=Localization(rho=50**-0.5), seed=0, graph=graph,
                             check_every=1000)

    def fresh():
        net = models.build("fashion_mnist", width=width).to(device)
        net.load_state_dict(model.state_dict())
        return net

    ms = {}
    one_chain_graph = None
    if "a" not in args.skip or "b" not in args.skip:
        sampler = ModuleSampler(fresh(), sampler_config(True))
        one_chain_graph = ms["SMS-UBU step, graph"] = 1e3 * timed(lambda: sampler.step(loss_fn), device, reps,
                                                                   rounds)
    if "a" not in args.skip:
        eager_sampler = ModuleSampler(fresh(), sampler_config(False))
        ms["SMS-UBU step, eager"] = 1e3 * timed(lambda: eager_sampler.step(loss_fn), device, reps, rounds)
        sgd_eager, sgd_graph = sgd_steps(fresh(), loss_fn, perm, batch, device)
        ms["SGD momentum step, eager"] = 1e3 * timed(sgd_eager, device, reps, rounds)
        if sgd_graph is not None:
            ms["SGD momentum step, CUDA graph"] = 1e3 * timed(sgd_graph, device, reps, rounds)
        print("\n(a) module mode, one step of the Fashion-MNIST CNN (ms)")
        for key, value in ms.items():
            print(f"  {key:<32s} {value:8.3f}")
        sgd_g = ms.get("SGD momentum step, CUDA graph")

        def ratio(a, b):
            return "n/a" if b is None else f"{a / b:.3f}"

        print(f"ratio SMS-UBU (graph) / SGD (CUDA graph): {ratio(ms['SMS-UBU step, graph'], sgd_g)} "
              f"(acceptance <= 1.05)")
        print(f"ratio SMS-UBU (eager) / SGD (eager): {ms['SMS-UBU step, eager'] / ms['SGD momentum step, eager']:.3f}")
        print(f"ratio SMS-UBU (graph) / SMS-UBU (eager): {ms['SMS-UBU step, graph'] / ms['SMS-UBU step, eager']:.3f}")
        print(f"ratio SGD (eager) / SGD (CUDA graph): {ratio(ms['SGD momentum step, eager'], sgd_g)}")
    if "b" not in args.skip:
        k = args.chains
        ensemble = EnsembleSampler(fresh(), sampler_config(True), k)
        per_chain = 1e3 * timed(lambda: ensemble.step(loss_fn), device, max(1, reps // 2), rounds) / k
        plain = vmap_sgd_step(fresh(), width, loss_fn, k, perm, batch, device)
        plain_per_chain = 1e3 * timed(plain, device, max(1, reps // 2), rounds) / k
        print(f"\n(b) {k} chains at once (ms per chain-step)")
        print(f"  {'SMS-UBU x ' + str(k) + ', vmap, graph':<32s} {per_chain:8.3f}")
        print(f"  {'SMS-UBU x 1, graph':<32s} {one_chain_graph:8.3f}")
        print(f"  {'plain vmap(grad) + SGD x ' + str(k) + ', eager':<32s} {plain_per_chain:8.3f}")
        print(f"ratio throughput {k} chains / 1 chain (graph): {one_chain_graph / per_chain:.3f} (acceptance >= 2 "
              f"at K = 8)")
        print(f"ratio per chain-step, ensemble / plain vmap: {per_chain / plain_per_chain:.3f}")
        print(f"per chain-step {per_chain:.3f} ms (acceptance <= 1.5 ms on an H100-class GPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
