"""What bounds checking costs user Numba code in the kernel (:mod:`integrators._user_code`).

User Numba functions that the kernel calls run recompiled with ``boundscheck=True`` behind a
wrapper that names them in any error.  In one run, one thread, ``sample()`` wall time after a
compiling call, the best of ``--repeats`` rounds in which the three forms below take turns:

  (a) a user test function (``f(x, out, test_data)``, two values per step and chain, reading
      ``x`` and ``test_data``) on a 4-D Gaussian target with the built-in UBU x sms;
  (b) a user step (``Scheme``: ABOBA, the README's user scheme) on the same target, plan ``full``;
  (c) the test function of (a) alone, at d = 64, called for every row of a ``(chains, 64)`` array
      ``steps`` times from a Numba loop (the check's cost with nothing else around it; the guarded
      forms are called as the kernel calls them).

Each in three forms: as run by default (checked), compiled with ``@numba.njit(boundscheck=False)``
(the per-function switch: the wrapper stays, the checks go) and unguarded (the same function
declared toolkit code: called directly, as before the checks existed).  The ratios
checked/unchecked and checked/unguarded are printed; the numbers of the three forms are compared
(identical: a check changes no arithmetic).

    PYTHONPATH=. python benchmarks/bench_user_boundscheck.py [--chains 512] [--steps 2000] [--repeats 3] [--cases abc]
"""

from __future__ import annotations

import argparse
import math
import time
import types

import numba as nb
import numpy as np

from integrators import GaussianTarget, Scheme, sample
from integrators._bounce import reflect
from integrators._user_code import guarded

# how `sms-langevin bench --preset P` runs this script: BENCH_ARGS["cpu"][P] (see reports._bench_command.cmd_bench)
BENCH_ARGS = {"cpu": {"tiny": ["--chains", "64", "--steps", "200", "--repeats", "1", "--cases", "c"],
                      "quick": ["--chains", "256", "--steps", "1000", "--repeats", "2"], "full": []}}


def two_tests(x, out, test_data):
    """``|x|^2`` and ``w . x`` with ``w = test_data[0]``."""
    w = test_data[0]
    s, t = 0.0, 0.0
    for a in range(x.shape[0]):
        s += x[a] * x[a]
        t += w[a] * x[a]
    out[0] = s
    out[1] = t


def aboba_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """The README's ABOBA: A(h/2) B(h/2) O(h) B(h/2) A(h/2)."""
    h, eta, noise, eta_half = coef[0], coef[1], coef[2], coef[3]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            w = eta * (v[c, a] - 0.5 * h * g[c, a]) + noise * (eta_half * J[0, a, c] + J[1, a, c])
            v[c, a] = w - 0.5 * h * g[c, a]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


def aboba_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h), math.sqrt(2 * gamma), math.exp(-gamma * h / 2)])


def forms(fn):
    """``{"checked", "unchecked", "unguarded"}``: ``fn`` compiled three ways (see the module)."""
    toolkit = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    toolkit.__module__ = "integrators.bench_copy"  # read as toolkit code: run without the wrapper
    return {"checked": nb.njit(nogil=True)(fn), "unchecked": nb.njit(nogil=True, boundscheck=False)(fn),
            "unguarded": nb.njit(nogil=True)(toolkit)}


@nb.njit(nogil=True)
def _call_rows(fn, xs, out, data, repeats):
    total = 0.0
    for _ in range(repeats):
        for c in range(xs.shape[0]):
            fn(xs[c], out, data)
            total += out[0]
    return total


def timed(runs: dict, repeats: int) -> tuple[dict, dict]:
    """Each run's result from a compiling call, then its best wall time over ``repeats`` rounds,
    the forms taking turns within a round (load on the machine then falls on all of them alike)."""
    results = {form: go() for form, go in runs.items()}
    best = dict.fromkeys(runs, math.inf)
    for _ in range(repeats):
        for form, go in runs.items():
            t0 = time.perf_counter()
            go()
            best[form] = min(best[form], time.perf_counter() - t0)
    return results, best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=512)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default="abc",
                        help="which of (a), (b), (c) to time; (a) and (b) compile six sampler kernels (about a minute)")
    args = parser.parse_args(argv)
    if not args.cases or set(args.cases) - set("abc"):
        parser.error(f"--cases takes letters of 'abc', got {args.cases!r}")
    d = 4
    rng = np.random.default_rng(0)
    target = GaussianTarget(rng.normal(size=(4, d)), np.stack([np.eye(d)] * 4), prior_precision=0.5)
    run = dict(h=0.1, n_chains=args.chains, n_steps=args.steps, burn_in=args.steps // 10, seed=1, threads=1)
    weights = np.linspace(-1.0, 1.0, d)
    print(f"one thread, {args.chains} chains x {args.steps} steps, d = {d}, best of {args.repeats}")

    schemes = {form: Scheme(f"aboba_{form}", fn, aboba_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)
               for form, fn in forms(aboba_step).items()}
    cases = {
        "(a) test functions": {
            form: (lambda fn=fn: sample(target, "ubu", "sms", batch_size=1, test_functions=fn, n_test_functions=2,
                                        test_data=(weights,), **run).chain_tests)
            for form, fn in forms(two_tests).items()},
        "(b) user step": {
            form: (lambda s=scheme: sample(target, s, "full", **run).chain_mean)
            for form, scheme in schemes.items()},
    }
    xs = rng.normal(size=(args.chains, 64))
    wide = (np.linspace(-1.0, 1.0, 64),)
    alone = {form: guarded(fn, "test_functions") for form, fn in forms(two_tests).items()}
    cases["(c) test function alone, d = 64"] = {
        form: (lambda fn=fn: _call_rows(fn, xs, np.zeros(2), wide, args.steps)) for form, fn in alone.items()}
    for label, runs in cases.items():
        if label[1] not in args.cases:
            continue
        results, seconds = timed(runs, args.repeats)
        same = all(np.array_equal(results["checked"], r) for r in results.values())
        print(f"{label}: " + ", ".join(f"{form} {s:.4f} s" for form, s in seconds.items())
              + f"; numbers identical: {same}")
        print(f"    ratio checked/unchecked {seconds['checked'] / seconds['unchecked']:.3f}, "
              f"checked/unguarded {seconds['checked'] / seconds['unguarded']:.3f}")
        if not same:
            raise SystemExit(f"{label}: the three forms gave different numbers")


if __name__ == "__main__":
    main()
