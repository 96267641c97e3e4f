"""Speed of the fused Triton chain kernel (integrators.torch._fused), side by side in one run.

Figure 1's workload: the 1-D example, UBU x sms, batch size 1, control variate, float64.

(a) The fused kernel (one launch runs every step: path normals, plan, force, update, divergence)
    in chain-steps per second, during burn-in and while recording the figure's histogram, against
    the same step written in plain torch the way a user would (``torch.randn`` normals, the sweep's
    order drawn with ``torch.rand``) through ``torch.compile``, one call a step.  Target >= 3x.
(b) The kernel's counter-based normals alone (drawn and summed in registers) in normals per second,
    against ``torch.randn`` filling a tensor.  Target >= 0.8x.

    PYTHONPATH=. python3 benchmarks/bench_fused.py --device cuda       # < 1 minute on one H100
    PYTHONPATH=. python3 benchmarks/bench_fused.py --device cpu --smoke  # Triton's interpreter, tiny sizes
"""

from __future__ import annotations

import argparse
import math
import os
import time

import torch

if not torch.cuda.is_available():  # Triton picks its interpreter when imported
    os.environ.setdefault("TRITON_INTERPRET", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from integrators import GaussianTarget, sample  # noqa: E402
from integrators._backends import Torch  # noqa: E402
from integrators.schemes import SCHEMES  # noqa: E402
from integrators.torch._fused._normals import step_normals  # noqa: E402
from integrators.torch._rng import chain_keys, pair_factors  # noqa: E402

# how `sms-langevin bench --preset P` runs this script (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"requires": ["torch", "triton"],
              "cpu": {"tiny": ["--device", "cpu", "--smoke"], "quick": ["--device", "cpu", "--smoke"],
                      "full": ["--device", "cpu", "--smoke"]},
              "cuda": {"tiny": ["--device", "cuda", "--smoke"], "quick": ["--device", "cuda", "--chains", "2**20"],
                       "full": ["--device", "cuda"]}}


def _seconds(fn, repeats: int = 3) -> float:
    """The best of ``repeats`` timed calls (after one warm-up call), synchronised."""
    fn()
    best = math.inf
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def fused_rates(device, n_chains: int, n_steps: int) -> tuple[float, float]:
    """Chain-steps per second of the fused kernel: burn-in only, then recording a histogram."""
    target = GaussianTarget.one_d_example()
    options = dict(h=1 / 32, gamma=1.0, n_steps=n_steps, n_chains=n_chains, seed=0, batch_size=1, control_variate=True,
                   backend=Torch(device, "float64", kernel="triton"))
    burn = _seconds(lambda: sample(target, "ubu", "sms", burn_in=n_steps - 1, **options))
    record = _seconds(lambda: sample(target, "ubu", "sms", burn_in=0, histogram=(-6.0, 6.0, 291_043), **options))
    return n_chains * n_steps / burn, n_chains * n_steps / record


def plain_step(x, v, order_bit, p, mu, prec, x_ref, coef, factors):
    """UBU x sms on the 1-D example as a user writes it: normals from torch.randn, the sweep's order a
    random bit per chain and period (two data: batches (0, 1, 1, 0) or (1, 0, 0, 1))."""
    h, eta, x_from_v, v_noise, x_noise = coef
    l11, l21, l22 = factors
    z = torch.randn((4,) + x.shape, dtype=x.dtype, device=x.device)
    dW1, dW2 = l11 * z[0], l11 * z[2]
    J1, J2 = l21 * z[0] + l22 * z[1], l21 * z[2] + l22 * z[3]
    order_bit = torch.where(p == 0, (torch.rand(x.shape, device=x.device) < 0.5).to(x.dtype), order_bit)
    i = ((p == 1) | (p == 2)).to(x.dtype)  # (0, 1, 1, 0) at positions 0 .. 3
    i = (i + order_bit) % 2
    x = x + x_from_v * v + x_noise * (dW1 - J1)
    v = eta * v + v_noise * J1
    a = torch.where(i == 0, prec[0], prec[1])
    g = (prec * (x_ref - mu)).sum() + 2.0 * a * (x - x_ref)  # the control variate; N_m = 2
    kicked = v - h * g
    x = x + x_from_v * kicked + x_noise * (dW2 - J2)
    v = eta * kicked + v_noise * J2
    return x, v, order_bit


def plain_rate(device, n_chains: int, n_steps: int, *, compile: bool) -> float:
    target = GaussianTarget.one_d_example()
    mu = torch.as_tensor(target.arrays[0][:, 0], device=device, dtype=torch.float64)
    prec = torch.as_tensor(target.arrays[1][:, 0, 0], device=device, dtype=torch.float64)
    x_ref = (prec * mu).sum() / prec.sum()
    coef = tuple(float(c) for c in SCHEMES["ubu"].coefficients(1 / 32, 1.0))
    factors = pair_factors(1.0, 1 / 32)
    step = torch.compile(plain_step) if compile else plain_step
    positions = [torch.tensor(p, device=device) for p in range(4)]

    def run():
        x = torch.zeros(n_chains, device=device, dtype=torch.float64)
        v = torch.randn(n_chains, device=device, dtype=torch.float64)
        bit = torch.zeros_like(x)
        for k in range(n_steps):
            x, v, bit = step(x, v, bit, positions[k % 4], mu, prec, x_ref, coef, factors)
        return x

    return n_chains * n_steps / _seconds(run)


@triton.jit
def normals_kernel(keys_ptr, out_ptr, n, n_steps, BLOCK: tl.constexpr):
    """Four normals a chain-step from the fused kernel's stream, summed in registers."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    key = tl.load(keys_ptr + rows, mask=rows < n, other=0).to(tl.uint64, bitcast=True)[:, None]
    col = tl.arange(0, 1)[None, :]
    acc = tl.zeros([BLOCK, 1], dtype=tl.float64)
    for k in range(n_steps):
        z0, z1, z2, z3 = step_normals(key, tl.zeros([], dtype=tl.int64) + 3 * k, col, 1)
        acc += (z0 + z1) + (z2 + z3)
    tl.store(out_ptr + rows[:, None] + col, acc, mask=(rows < n)[:, None])


def normal_rates(device, n_chains: int, n_steps: int) -> tuple[float, float]:
    """Normals per second: the kernel's stream (4 a chain-step, summed in registers), torch.randn."""
    kernel = normals_kernel
    keys = chain_keys(0, 1, torch.arange(n_chains, device=device))
    out = torch.empty(n_chains, device=device, dtype=torch.float64)
    block = 128
    stream = _seconds(lambda: kernel[(triton.cdiv(n_chains, block),)](keys, out, n_chains, n_steps, BLOCK=block))
    buffer = torch.empty(4 * n_chains, device=device, dtype=torch.float64)
    generator = torch.Generator(device=device).manual_seed(0)

    def randn():
        for _ in range(n_steps):
            torch.randn(buffer.shape, out=buffer, generator=generator)

    return 4 * n_chains * n_steps / stream, 4 * n_chains * n_steps / _seconds(randn)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--chains", default="2**22", help="chains (a Python expression)")
    parser.add_argument("--steps", type=int, default=256)
    parser.add_argument("--smoke", action="store_true", help="the smallest sizes: every part runs, no figure")
    args = parser.parse_args(argv)
    n_chains, n_steps = (16, 4) if args.smoke else (int(eval(args.chains, {})), args.steps)  # noqa: S307
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (Triton's interpreter)"
    print(f"torch {torch.__version__}, {name}; {n_chains:,} chains x {n_steps} steps, float64")
    burn, record = fused_rates(device, n_chains, n_steps)
    plain = plain_rate(device, n_chains, n_steps, compile=not args.smoke)
    print(f"(a) fused kernel, burn-in:                {burn:10.3e} chain-steps/s")
    print(f"    fused kernel, recording a histogram:  {record:10.3e} chain-steps/s")
    print(f"    plain torch step{'' if args.smoke else ', torch.compile'}, torch.randn:  {plain:10.3e} chain-steps/s")
    print(f"    ratio fused (burn-in) / plain = {burn / plain:.2f}   (target >= 3)")
    stream, randn = normal_rates(device, n_chains, n_steps)
    print(f"(b) the kernel's counter normals:  {stream:10.3e} normals/s")
    print(f"    torch.randn into a tensor:     {randn:10.3e} normals/s")
    print(f"    ratio = {stream / randn:.2f}   (target >= 0.8)")


if __name__ == "__main__":
    main()
