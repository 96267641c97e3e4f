"""Speed of the Numba kernel on UBU x sms, the paper's 1-D example, 20,000 chains.

Prints chain-steps per second of
  (a) the project's kernel (one thread and all threads),
  (b) the same algorithm written as numpy operations vectorized over chains,
  (c) the same in torch on CPU (skipped if torch is absent),
  (d) drawing the step's normals alone inside Numba (4 per chain-step: (dW, J) per half step),
      with the kernel's own per-chain streams, exactly as the kernel draws them (numpy's Generator
      inside Numba is printed beside it for comparison),
and the ratios measured in this one run, with the issue's targets:
(a) >= 4x (b), (a) >= 6x (c), (a) within 1.5x of (d), two threads >= 1.7x one thread.

    python benchmarks/bench_kernels.py [--chains 20000] [--steps 400]
"""

from __future__ import annotations

import argparse
import math
import time

import numba as nb
import numpy as np

from integrators import GaussianTarget, sample
from integrators._backends import TILE_SIZE
from integrators._brownian import pair_cholesky
from integrators._kernel import aligned_zeros, draw_step_path, make_work_buffers
from integrators._rng import lane_states

H, GAMMA = 0.1, 1.0

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": {"tiny": ["--chains", "2000", "--steps", "40"], "quick": ["--chains", "20000", "--steps", "200"],
                      "full": []}}


def best_of(fn, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_ubu_sms(n_chains, n_steps, mu, prec, seed=0):
    rng = np.random.default_rng(seed)
    n_data = mu.size
    l11, l21, l22 = pair_cholesky(GAMMA, H / 2)
    eta = math.exp(-GAMMA * H / 2)
    x_from_v, s = -math.expm1(-GAMMA * H / 2) / GAMMA, math.sqrt(2 * GAMMA)
    x = np.zeros(n_chains)
    v = rng.standard_normal(n_chains)
    rows = np.arange(n_chains)
    for k in range(n_steps):
        p = k % (2 * n_data)
        if p == 0:
            perm = np.argsort(rng.random((n_chains, n_data)), axis=1)
        j = p if p < n_data else 2 * n_data - 1 - p
        idx = perm[rows, j]
        for half in range(2):
            z1, z2 = rng.standard_normal(n_chains), rng.standard_normal(n_chains)
            dW, J = l11 * z1, l21 * z1 + l22 * z2
            x += x_from_v * v + s / GAMMA * (dW - J)
            v = eta * v + s * J
            if half == 0:
                v -= H * n_data * prec[idx] * (x - mu[idx])
    return x


def torch_ubu_sms(n_chains, n_steps, mu, prec, seed=0):
    import torch
    torch.manual_seed(seed)
    n_data = mu.size
    l11, l21, l22 = pair_cholesky(GAMMA, H / 2)
    eta = math.exp(-GAMMA * H / 2)
    x_from_v, s = -math.expm1(-GAMMA * H / 2) / GAMMA, math.sqrt(2 * GAMMA)
    mu_t, prec_t = torch.tensor(mu), torch.tensor(prec)
    x = torch.zeros(n_chains, dtype=torch.float64)
    v = torch.randn(n_chains, dtype=torch.float64)
    rows = torch.arange(n_chains)
    for k in range(n_steps):
        p = k % (2 * n_data)
        if p == 0:
            perm = torch.argsort(torch.rand(n_chains, n_data, dtype=torch.float64), dim=1)
        j = p if p < n_data else 2 * n_data - 1 - p
        idx = perm[rows, j]
        for half in range(2):
            z1 = torch.randn(n_chains, dtype=torch.float64)
            z2 = torch.randn(n_chains, dtype=torch.float64)
            dW, J = l11 * z1, l21 * z1 + l22 * z2
            x += x_from_v * v + s / GAMMA * (dW - J)
            v = eta * v + s * J
            if half == 0:
                v -= H * n_data * prec_t[idx] * (x - mu_t[idx])
    return x


@nb.njit(nogil=True)
def draw_normals(rng, n):
    total = 0.0
    for _ in range(n):
        total += rng.standard_normal()
    return total


@nb.njit(nogil=True, _nrt=False)
def draw_path_normals(states, dW, J, z1, z2, raw, n_steps):
    """The kernel's own draws alone: every chain's four normals per step from its stream, written
    where the kernel writes them (``draw_step_path``), nothing else."""
    l11, l21, l22 = pair_cholesky(GAMMA, H / 2)
    for _ in range(n_steps):
        draw_step_path(states, l11, l21, l22, 0.0, 1, dW, J, z1, z2, raw)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args(argv)
    n, steps = args.chains, args.steps
    work = n * steps
    target = GaussianTarget.one_d_example()
    mu, prec = target.arrays[0][:, 0].copy(), target.arrays[1][:, 0, 0].copy()
    kw = dict(scheme="ubu", plan="sms", h=H, gamma=GAMMA, n_chains=n, n_steps=steps, batch_size=1)
    sample(target, **{**kw, "n_chains": 2, "n_steps": 4})  # compile
    rng = np.random.default_rng(0)
    draw_normals(rng, 10)
    t_a1 = best_of(lambda: sample(target, threads=1, **kw), repeats=5)
    t_a2 = best_of(lambda: sample(target, threads=2, **kw), repeats=5)
    t_b = best_of(lambda: numpy_ubu_sms(n, steps, mu, prec), repeats=1)
    t_numpy_normals = best_of(lambda: draw_normals(rng, 4 * work))
    # the kernel's own buffers (cache-line aligned) and a tile of stream states
    states = aligned_zeros((4, TILE_SIZE), np.uint64)
    states[...] = lane_states(0, 0, 0, TILE_SIZE)
    buffers = make_work_buffers(TILE_SIZE, 1, 2, 1, 0)  # not `work`: that is the chain-step count above
    path_work = (buffers.dW, buffers.J, buffers.z1, buffers.z2, buffers.raw)
    draw_path_normals(states, *path_work, 1)
    n_blocks = math.ceil(n / TILE_SIZE)
    t_d = best_of(lambda: [draw_path_normals(states, *path_work, steps) for _ in range(n_blocks)], repeats=5)
    t_d *= n / (n_blocks * TILE_SIZE)
    try:
        import torch  # noqa: F401
        t_c = best_of(lambda: torch_ubu_sms(n, steps, mu, prec), repeats=1)
    except ImportError:
        t_c = None
    rate = lambda t: work / t  # noqa: E731
    print(f"UBU x sms, 1-D example, {n} chains x {steps} steps ({work:.3g} chain-steps)")
    print(f"(a) numba kernel, 1 thread : {rate(t_a1):12.4g} chain-steps/s")
    print(f"(a) numba kernel, 2 threads: {rate(t_a2):12.4g} chain-steps/s")
    print(f"(b) numpy vectorized       : {rate(t_b):12.4g} chain-steps/s")
    if t_c is not None:
        print(f"(c) torch CPU vectorized   : {rate(t_c):12.4g} chain-steps/s")
    print(f"(d) normals alone (numba)  : {rate(t_d):12.4g} chain-steps/s  (4 normals per step, the kernel's "
          f"per-chain xoshiro256++ streams and ziggurat, written to the path arrays)")
    print(f"    for comparison, numpy's Generator inside numba: {rate(t_numpy_normals):.4g} chain-steps/s")
    checks = [("(a) 1 thread / (b) numpy", t_b / t_a1, 4.0),
              ("(a) 1 thread / (d) normals-only time ratio (d/a)", t_d / t_a1, 1 / 1.5),
              ("2 threads / 1 thread", t_a1 / t_a2, 1.7)]
    if t_c is not None:
        checks.insert(1, ("(a) 1 thread / (c) torch", t_c / t_a1, 6.0))
    print("ratios measured in this run (target):")
    for name, value, want in checks:
        print(f"  {name:50s} {value:7.2f}  (>= {want:.2f})  {'met' if value >= want else 'NOT MET'}")


if __name__ == "__main__":
    main()
