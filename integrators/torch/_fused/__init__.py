"""The fused chain kernel of the torch backend's chains mode (Triton): one launch runs a whole run.

:func:`advance` runs a checked :class:`integrators._spec.RunSpec` in one kernel launch per block of
chains (:mod:`integrators.torch._fused._kernel`), the state, the plan's permutation and the running
sums in registers, the normals drawn in the kernel from the per-chain counter streams of
:mod:`integrators.torch._rng` (so a chain's numbers do not depend on how many chains run beside it,
and a run equals the torch step's to rounding). It fills the torch chains' observers in place, so
:func:`integrators.torch._chains.run_spec` builds the same result from either.

Each built-in scheme runs its own ``UPDATE`` here (:mod:`integrators.schemes`): its moves, the
functions the numpy reference and the tensor step call, compiled by Triton (:func:`triton_move`), up
to :data:`MAX_MOVES` on each side of the force (the bounce's markers dropped: the kernel runs no
box). :func:`refusal` names what the kernel does not run (a scheme from user code, a target other
than a Gaussian one, float32, the localization box, partitions of more than
:data:`integrators.plans.SMALL_SHUFFLE` data, more than :data:`MAX_DIM` coordinates); the torch
backend then runs its compiled step, and says which ran.

Without CUDA the kernels run in Triton's interpreter on CPU tensors (slowly), which is how the tests
check the kernel: the interpreter is chosen when Triton is imported (``TRITON_INTERPRET=1``), so
importing this package on such a machine sets that variable if Triton is not imported yet.
"""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass

import numpy as np
import torch

if "triton" not in sys.modules and not torch.cuda.is_available():  # nothing to compile for: interpret
    os.environ.setdefault("TRITON_INTERPRET", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from integrators.plans import SMALL_SHUFFLE, force_scale, n_batches, plan_rule  # noqa: E402
from integrators.schemes import FORCE, REFLECT, run_coefficients  # noqa: E402
from integrators.targets import GaussianTarget  # noqa: E402
from integrators.targets._force import force_data  # noqa: E402
from integrators.torch._fused._kernel import MAX_MOVES, N_COEF, PARAMS, chain_kernel, no_move  # noqa: E402
from integrators.torch._rng import pair_factors  # noqa: E402
from integrators.torch.schemes import TORCH_STEPS, torch_step  # noqa: E402


def triton_move(move):
    """A scheme's move as a Triton function: the same code object, with ``triton.language`` in its
    globals (where Triton's interpreter looks for the language it patches)."""
    return triton.jit(types.FunctionType(move.__code__, {"tl": tl, "__name__": move.__module__}, move.__name__))


@dataclass(frozen=True)
class FusedStep:
    """A scheme's moves as the kernel calls them: ``before`` and ``after`` the force, each
    :data:`MAX_MOVES` Triton functions (:func:`no_move` in the unused slots)."""

    NAME: str
    before: tuple
    after: tuple


def fused_step(scheme) -> FusedStep | None:
    """The :class:`FusedStep` of a scheme's ``UPDATE`` (None when it has more moves than the kernel's slots)."""
    moves = [m for m in scheme.UPDATE if m != REFLECT]
    split = moves.index(FORCE)
    sides = moves[:split], moves[split + 1:]
    if max(len(side) for side in sides) > MAX_MOVES:
        return None
    before, after = (tuple(triton_move(m) for m in side) + (no_move,) * (MAX_MOVES - len(side)) for side in sides)
    return FusedStep(scheme.NAME, before, after)


FUSED_STEPS = {name: step for name, s in TORCH_STEPS.items() if (step := fused_step(s.declared)) is not None}
MAX_DIM = 16  # registers per chain grow as DP^2 (the precision tiles)
INTERPRETED = bool(triton.knobs.runtime.interpret)
_KINDS = {"full": 0, "iid": 1, "partition": 2}


def refusal(spec, *, explicit_draws: bool = False) -> str | None:
    """Why the fused kernel cannot run ``spec`` (None when it can)."""
    step = torch_step(spec.scheme)
    if step.NAME not in FUSED_STEPS or TORCH_STEPS.get(step.NAME) is not step:  # a user scheme, by name
        return f"scheme {step.NAME!r} has no fused kernel step (built-in schemes: {', '.join(sorted(FUSED_STEPS))})"
    if explicit_draws:
        return "explicit noise or batches are replayed step by step"
    backend = spec.backend
    if backend.dtype != "float64":
        return f"dtype {backend.dtype} (the fused kernel runs float64)"
    device = torch.device(backend.device)
    if device.type != "cuda" and not INTERPRETED:
        return (f"device {backend.device} (the fused kernel runs on cuda, or in Triton's interpreter where "
                f"TRITON_INTERPRET=1 was set before Triton was imported)")
    if type(spec.target) is not GaussianTarget:
        return f"target {type(spec.target).__name__} (the fused kernel's force is the Gaussian target's)"
    if spec.target.dim > MAX_DIM:
        return f"dimension {spec.target.dim} (the fused kernel runs up to {MAX_DIM})"
    if spec.box_arrays()[2][0]:
        return "the localization box (its bounce runs on the torch step)"
    rule = plan_rule(spec.plan)
    if rule.kind == "partition" and spec.target.n_data > SMALL_SHUFFLE:
        return (f"a partition of {spec.target.n_data} data (the fused kernel shuffles up to {SMALL_SHUFFLE}; "
                f"beyond, the torch step sorts)")
    return None


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


_STACKED = ("diverged_at", "sum_x", "sum_xx", "sum_outer", "hist", "tails", "samples")


def advance(spec, x, v, obs, path_keys, plan_keys) -> None:
    """Run every step of ``spec`` from ``x``, ``v`` (``(n, d)`` float64, updated in place), filling the
    torch chains' observers ``obs`` in place. ``refusal(spec)`` must be None."""
    advance_together([spec], [x], [v], [obs], path_keys, plan_keys)


def shared(spec) -> tuple:
    """What runs of one launch share: the scheme, the target, the chain count, the observers' layout, the
    control variate and the backend (the key of :func:`advance_together`'s groups). Step size, friction,
    seed, step counts, initial state, divergence bound and plan are each run's own."""
    observers = spec.observers
    as_bytes = lambda a: None if a is None else np.asarray(a, dtype=np.float64).tobytes()  # noqa: E731
    cv = spec.control_variate
    return (torch_step(spec.scheme).NAME, id(spec.target), spec.n_chains, observers.keep, observers.full_moments,
            observers.histogram, None if cv is None else as_bytes(cv.x_ref), spec.backend)


def launch_config(d: int) -> tuple[int, int]:
    """``(BLOCK, num_warps)`` of a launch on cuda for ``d`` coordinates (1 to :data:`MAX_DIM`): chains per
    program and warps."""
    if not (isinstance(d, int) and 1 <= d <= MAX_DIM):
        raise ValueError(f"d must be an integer from 1 to {MAX_DIM}, got {d!r}")
    return _BLOCKS[_pow2(d)], 4


# Chains a program by padded dimension DP, with 4 warps, chosen from the compiled kernels' registers and spills
# (benchmarks/bench_fused_compile.py, the table in benchmarks/RESULTS.md): each compiles without spilling on
# sm_80 and sm_90, smallest and largest launches alike. Larger ones spilled: at d = 2, 128 (OBABO with the
# prior, histogram and full moments, sm_80) and 64 (EM's smallest launch, sm_80: 64 registers and 16 B); at
# d = 16, 8 (the smallest launch) and 4 (the largest). Register use is not monotone in BLOCK or in the
# launch's flags: measure a change, do not extrapolate.
_BLOCKS = {1: 128, 2: 32, 4: 32, 8: 8, 16: 2}


@dataclass(frozen=True)
class Launch:
    """One launch of :func:`_kernel.chain_kernel` as :func:`advance_together` makes it: the grid, the
    runtime arguments in the kernel's order, the specialization (``constexprs``) and ``num_warps``;
    ``outputs``: the stacked tensors the kernel fills (``x``, ``v`` and the observers of :data:`_STACKED`)."""

    grid: tuple
    args: tuple
    constexprs: dict
    num_warps: int
    outputs: dict


def advance_together(specs, xs, vs, observers, path_keys, plan_keys, *, block: int | None = None) -> None:
    """:func:`advance` for runs that share :func:`shared` (minibatch plans of one batch size): one launch.
    ``path_keys``, ``plan_keys``: ``(n,)`` shared by every run (one path drawn once per step for all of them)
    or ``(runs, n)``, a row per run."""
    launch = launch_of(specs, xs, vs, observers, path_keys, plan_keys, block=block)
    chain_kernel[launch.grid](*launch.args, **launch.constexprs, num_warps=launch.num_warps)
    out = launch.outputs
    for r, o in enumerate(observers):
        xs[r].copy_(out["x"][r])
        vs[r].copy_(out["v"][r])
        for name in _STACKED:
            if getattr(o, name, None) is not None:
                getattr(o, name).copy_(out[name][r])
        o.kept = o.keep


def launch_of(specs, xs, vs, observers, path_keys, plan_keys, *, block: int | None = None, device=None) -> Launch:
    """The :class:`Launch` of :func:`advance_together` (its arguments), on the tensors' device; ``device``
    (``"cuda"``) picks the block size and warps of that device instead (the compilation checks build
    cuda launches from CPU tensors)."""
    spec = specs[0]
    target, obs = spec.target, observers[0]
    dev = xs[0].device
    n, d = xs[0].shape
    cuda_block, num_warps = launch_config(d)
    block = block or (cuda_block if torch.device(device or dev).type == "cuda" else 64)
    declared = torch_step(spec.scheme)
    module = FUSED_STEPS[declared.NAME]
    n_data = target.n_data
    rules = [plan_rule(s.plan) for s in specs]
    batch_sizes = {s.batch_size for s, rule in zip(specs, rules, strict=True) if rule.kind != "full"}
    if len(batch_sizes) > 1:
        raise ValueError(f"runs of one launch share their batch size, got {sorted(batch_sizes)}")
    nb = batch_sizes.pop() if batch_sizes else 1
    m = n_batches(n_data, nb)
    periods = [rule.sweeps * m if rule.kind == "partition" else 1 for rule in rules]
    orders = [[rule.batch_index(p, m) for p in range(period)] if rule.kind == "partition" else [0]
              for rule, period in zip(rules, periods, strict=True)]
    order = torch.zeros(len(specs), max(periods), device=dev, dtype=torch.int32)
    for r, row in enumerate(orders):
        order[r, :len(row)] = torch.tensor(row, dtype=torch.int32)
    (mu, prec, p0, m0), ref_grads, ref_sum, use_cv = force_data(
        target, spec.control_variate is not None, None if spec.control_variate is None else spec.control_variate.x_ref)
    as_f64 = lambda a: torch.as_tensor(np.ascontiguousarray(a, dtype=np.float64), device=dev)  # noqa: E731
    lo, hi, n_bins = (0.0, 1.0, 1) if obs.hist is None else (obs.hist_lo, obs.hist_hi, obs.n_bins)
    rows = []
    for s, o in zip(specs, observers, strict=True):
        bound = float("inf") if o.bound is None else float(o.bound)
        coef = (list(run_coefficients(declared, s.h, s.gamma)) + [0.0] * N_COEF)[:N_COEF]
        scale = force_scale(s.plan_module, n_data, s.batch_size)
        values = dict(zip(PARAMS, coef + list(pair_factors(s.gamma, s.h)) + [scale, bound, lo, hi,
                                                                               n_bins / (hi - lo)], strict=True))
        rows.append([float(values[p]) for p in PARAMS])
    params = torch.tensor(rows, device=dev, dtype=torch.float64)
    dummy = torch.zeros(1, device=dev, dtype=torch.float64)
    stacked = {name: dummy if getattr(obs, name, None) is None else torch.stack([getattr(o, name) for o in observers])
               for name in _STACKED}
    x, v = torch.stack(xs), torch.stack(vs)
    g = torch.zeros_like(x)
    keep = obs.keep or 0
    counts = torch.tensor([[s.n_steps, s.burn_in, max(1, (s.n_steps - s.burn_in) // keep) if keep else 1]
                           for s in specs], device=dev, dtype=torch.int64)
    keys_stride = n if path_keys.ndim == 2 else 0
    shuffle = n_data <= SMALL_SHUFFLE
    args = (
        x, v, g, stacked["diverged_at"], stacked["sum_x"], stacked["sum_xx"], stacked["sum_outer"], stacked["hist"],
        stacked["tails"], stacked["samples"],
        path_keys.contiguous(), plan_keys.contiguous(), params,
        torch.tensor([_KINDS[rule.kind] for rule in rules], device=dev, dtype=torch.int32),
        torch.tensor(periods, device=dev, dtype=torch.int32), order, counts,
        as_f64(mu), as_f64(prec), as_f64(p0), as_f64(m0), as_f64(ref_grads), as_f64(ref_sum),
        n, int(n_bins), keep, order.shape[1], keys_stride,
    )
    constexprs = dict(
        BEFORE1=module.before[0], BEFORE2=module.before[1], AFTER1=module.after[0], AFTER2=module.after[1],
        FSAL=int(declared.FSAL),
        # past SMALL_SHUFFLE data no partition runs (refusal): no permutation to hold or shuffle
        D=d, DP=_pow2(d), N_DATA=n_data, NP=_pow2(n_data) if shuffle else 1, NB=nb, SHUFFLE=shuffle,
        HAS_PRIOR=bool((np.asarray(p0) != 0).any()), USE_CV=bool(use_cv[0]),
        FULL_MOMENTS=obs.sum_outer is not None, HIST=obs.hist is not None, KEEP=bool(keep), BLOCK=block,
    )
    outputs = dict(stacked, x=x, v=v)
    return Launch((triton.cdiv(n, block), len(specs)), args, constexprs, num_warps, outputs)
