"""Chains mode: ``n_chains`` independent chains of an analytic target as a tensor dimension.

:func:`run_spec` is the torch backend's adapter: it runs a :class:`integrators._spec.RunSpec` on
:class:`integrators._backends.Torch` and returns the same :class:`integrators._result.SampleResult`
as the Numba kernel, on any device and dtype, with the kernel's streaming observers and divergence
rule (a diverged chain is parked and drops out of every statistic).

Randomness is counter-based (:class:`integrators.torch._rng.CounterNormals`): chain ``c``'s path,
batches and initial velocity depend only on ``(seed, c)``, not on ``n_chains`` nor on the device.
For cross-backend tests :func:`run_spec` (and :func:`sample_given`) also takes ``noise=(dW, J)`` (the
kernel's layout ``(n_steps, 2, d, n_chains)``) and ``batches`` in place of the draws.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import torch

from integrators._backends import Torch
from integrators._result import SampleResult
from integrators._rng import PATH_STREAM, PLAN_STREAM, VELOCITY_STREAM  # one list of stream kinds, both backends
from integrators._spec import RunSpec
from integrators.plans import force_scale
from integrators.torch._bounce import make_reflect
from integrators.torch._divergence import mark_divergence
from integrators.torch._plans import ChainPlan
from integrators.torch._rng import STREAM_VERSION, CounterNormals, counters_per_normals, normal_pairs, pair_factors
from integrators.torch._targets import torch_force
from integrators.torch.schemes import torch_step

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def resolve_device(device) -> torch.device:
    try:
        dev = torch.device("cpu" if device is None else device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must name a torch device (cpu, cuda, cuda:1), got {device!r}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        build = (f" (this torch, {torch.__version__}, is a CPU-only build; on a machine with an NVIDIA GPU, "
                 "plain PyPI's torch on Linux is the CUDA build)" if torch.version.cuda is None else
                 " (no CUDA device or driver found)")
        raise ValueError(f"device {device!r} asked for, but CUDA is not available here{build}: use the cpu "
                         "device (--device cpu; device='cpu' in Python)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device {device!r} asked for, but only {torch.cuda.device_count()} CUDA device(s) here")
    mps = getattr(torch.backends, "mps", None)
    if dev.type not in ("cpu", "cuda") and not (dev.type == "mps" and mps is not None and mps.is_available()):
        raise ValueError(f"device must be cpu or an available cuda (or mps) device, got {device!r}")
    return dev


def resolve_compile(compile) -> bool | str:
    """``compile``: ``True``, ``False`` or a ``torch.compile`` backend's name."""
    if not isinstance(compile, (bool, str)):
        raise ValueError(f"compile must be True, False or a torch.compile backend's name, got {compile!r}")
    if isinstance(compile, str) and compile not in torch.compiler.list_backends(exclude_tags=()):
        raise ValueError(f"compile={compile!r} is not a torch.compile backend; choose True, False or one of "
                         f"{', '.join(torch.compiler.list_backends(exclude_tags=()))}")
    return compile


KERNELS = ("auto", "triton", "torch")


def resolve_kernel(kernel) -> str:
    """``kernel``: one of :data:`KERNELS`; ``"triton"`` needs Triton installed."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")
    if kernel == "triton" and importlib.util.find_spec("triton") is None:
        raise ValueError("kernel='triton' asked for, but Triton is not installed (pip install triton)")
    return kernel


def kernel_for(spec: RunSpec, *, explicit_draws: bool) -> str | None:
    """Why the run goes to the tensor step (None: the fused kernel runs it), by the backend's
    ``kernel`` choice and :func:`integrators.torch._fused.refusal`; ``kernel="triton"`` that cannot run
    is refused by name."""
    choice = spec.backend.kernel
    if choice == "torch":
        return "kernel='torch'"
    if choice == "auto" and torch.device(spec.backend.device).type != "cuda":
        return "not on cuda"
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed"
    from integrators.torch._fused import refusal

    reason = refusal(spec, explicit_draws=explicit_draws)
    if reason is not None and choice == "triton":
        raise ValueError(f"kernel='triton' cannot run this spec: {reason}")
    return reason


def resolve_dtype(dtype) -> torch.dtype:
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        return DTYPES[dtype]
    if dtype not in DTYPES.values():
        raise ValueError(f"dtype must be torch.float64 or torch.float32, got {dtype!r}")
    return dtype


class TensorObservers:
    """Running sums after burn-in, the first-coordinate histogram and divergence, on the device."""

    def __init__(self, n, d, dev, full_moments, histogram, keep, n_keep_stride, bound):
        f64 = torch.float64
        self.sum_x = torch.zeros(n, d, device=dev, dtype=f64)
        self.sum_xx = torch.zeros(n, d, device=dev, dtype=f64)
        self.sum_outer = torch.zeros(n, d, d, device=dev, dtype=f64) if full_moments else None
        self.diverged_at = torch.full((n,), -1, device=dev, dtype=torch.int64)
        self.bound = bound
        self.hist = None
        if histogram is not None:
            lo, hi, n_bins = histogram
            self.hist_lo, self.hist_hi, self.n_bins = lo, hi, n_bins
            self.inv_width = n_bins / (hi - lo)
            self.hist = torch.zeros(n_bins, device=dev, dtype=f64)
            self.tails = torch.zeros(4, device=dev, dtype=f64)
        # NaN where a chain has no sample to give (keep beyond the post-burn-in steps), as on Numba
        self.samples = torch.full((n, keep, d), torch.nan, device=dev, dtype=f64) if keep else None
        self.keep, self.stride, self.kept = keep, n_keep_stride, 0

    def check(self, k, x, v, g):
        """Mark (:func:`integrators.torch._divergence.mark_divergence`) and park chains that left
        the bound at step ``k`` (an int or a 0-d device tensor); returns the mask of live chains.
        Branch-free: no value is read back to the host."""
        mark_divergence(self.diverged_at, k, x, v, bound=self.bound)
        dead = (self.diverged_at >= 0)[:, None]
        x.masked_fill_(dead, 0.0)
        v.masked_fill_(dead, 0.0)
        g.masked_fill_(dead, 0.0)
        return ~dead

    def add(self, x, live):
        """Add the live chains' states to the running sums and the histogram (``live``: a bool
        mask ``(n, 1)``; a chain that is not live adds zeros).  The histogram is a scatter-add
        into its bins (``index_add_``, no per-step tensor of ``n_bins``, no host read)."""
        xd = x.to(torch.float64) * live
        self.sum_x += xd
        self.sum_xx += xd * xd
        if self.sum_outer is not None:
            self.sum_outer += xd[:, :, None] * xd[:, None, :]
        if self.hist is not None:
            first, w = xd[:, 0], live[:, 0].to(torch.float64)
            below = (first < self.hist_lo).to(torch.float64) * w
            above = (first >= self.hist_hi).to(torch.float64) * w
            inside = w - below - above
            idx = ((first - self.hist_lo) * self.inv_width).floor().clamp(0, self.n_bins - 1).to(torch.int64)
            self.hist.index_add_(0, idx, inside)
            self.tails += torch.stack([below.sum(), (below * (self.hist_lo - first)).sum(),
                                       above.sum(), (above * (first - self.hist_hi)).sum()])

    def keep_sample(self, k, burn_in, x):
        if self.kept < self.keep and (k - burn_in) % self.stride == 0:
            # a diverged chain has no sample to give: NaN, as on the Numba backend (integrators._divergence)
            self.samples[:, self.kept] = torch.where((self.diverged_at < 0)[:, None], x.to(torch.float64), torch.nan)
            self.kept += 1


def fused_step(scheme_step, force, reflect, x, v, g, batch, scale, coef, factors, keys, counters, obs):
    """One step of every chain as one function of tensors (one ``torch.compile`` graph): path normals, the
    scheme with its force on ``batch`` and the divergence check; ``counters = [path counter, step]`` advance
    in place on the device, and ``coef``/``factors``/``scale`` are tensors (a new ``h`` is no new graph)."""
    n, d = x.shape
    zc, zs = normal_pairs(keys, counters[0], 2 * d, x.dtype)  # (2d, n) each
    l11, l21, l22 = factors[0], factors[1], factors[2]
    z0, z1, z2, z3 = zc[:d].T, zc[d:].T, zs[:d].T, zs[d:].T   # the rows of counter_normals(.., 4d, ..)
    dW = (l11 * z0, l11 * z2)
    J = (l21 * z0 + l22 * z1, l21 * z2 + l22 * z3)
    g = scheme_step(x, v, g, coef, dW, J, lambda y: force(y, batch, scale), reflect)
    counters[0] += counters_per_normals(4 * d)
    counters[1] += 1
    obs.check(counters[1], x, v, g)
    return g


def observe(x, obs) -> None:
    """The observers after burn-in (running sums, the histogram): a graph of its own, the same for
    every scheme and plan, and no work at all during burn-in."""
    obs.add(x, (obs.diverged_at >= 0)[:, None].logical_not())


@functools.lru_cache(maxsize=4)
def compiled_step(backend: str = "inductor"):
    """:func:`fused_step` and :func:`observe` through ``torch.compile`` (one wrapper per backend,
    reused by every run: graphs are cached by scheme, plan kind and shapes, not
    by ``h``)."""
    # every (scheme, plan kind, force) is a graph of its own: Figure 1 alone needs more than
    # dynamo's default of 8 per function, beyond which it would fall back to eager for good
    config = torch._dynamo.config
    limit = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    setattr(config, limit, max(getattr(config, limit), 64))
    return torch.compile(fused_step, backend=backend), torch.compile(observe, backend=backend)


def _explicit_batches(batches, n, dev):
    out = []
    for b in batches:
        t = torch.as_tensor(np.asarray(b), dtype=torch.int64, device=dev)
        out.append(t[None, :].expand(n, -1) if t.ndim == 1 else t.T)
    return iter(out)


def sample_given(target, scheme="ubu", plan="sms", *, device="cpu", dtype="float64", compile: bool | str = False,
            noise=None, batches=None, **options) -> SampleResult:
    """For tests: :func:`integrators.sample` with ``backend=Torch(device, dtype, compile)`` and
    ``noise=(dW, J)`` / ``batches`` in place of the draws; options torch does not run are refused by name."""
    spec = RunSpec.from_options(target, scheme, plan, backend=Torch(device, dtype, compile), **options)
    return run_spec(spec, noise=noise, batches=batches)


class _Chains:
    """A run's tensors and streams, set up from its spec (:func:`_start`)."""

    def __init__(self, spec: RunSpec, noise):
        target, wanted = spec.target, spec.observers
        self.module = torch_step(spec.scheme)
        self.dev, self.dt = torch.device(spec.backend.device), DTYPES[spec.backend.dtype]
        n, d, dev, dt = spec.n_chains, target.dim, self.dev, self.dt
        chains = torch.arange(n, device=dev)
        self.x = torch.as_tensor(spec.x0, device=dev, dtype=dt).clone()
        if spec.v0 is None:
            self.v = CounterNormals(spec.seed, VELOCITY_STREAM, chains, dt).normals(d).T.contiguous()
        else:
            self.v = torch.as_tensor(spec.v0, device=dev, dtype=dt).clone()
        self.noise = None
        if noise is not None:
            dW_all = torch.as_tensor(np.asarray(noise[0]), device=dev, dtype=dt)
            J_all = torch.as_tensor(np.asarray(noise[1]), device=dev, dtype=dt)
            if dW_all.shape != (spec.n_steps, 2, d, n) or J_all.shape != dW_all.shape:
                raise ValueError(f"noise must be (dW, J) of shape {(spec.n_steps, 2, d, n)}, got "
                                 f"{tuple(dW_all.shape)} and {tuple(J_all.shape)}")
            self.noise = (dW_all.transpose(2, 3), J_all.transpose(2, 3))  # (n_steps, 2, n, d)
        self.path = CounterNormals(spec.seed, PATH_STREAM, chains, dt)
        self.plan_rng = CounterNormals(spec.seed, PLAN_STREAM, chains, dt)
        keep = wanted.keep
        self.obs = TensorObservers(n, d, dev, wanted.full_moments, wanted.histogram, keep,
                                   max(1, (spec.n_steps - spec.burn_in) // keep) if keep else 1,
                                   spec.divergence_bound)


def run_specs(specs: list[RunSpec]) -> list[SampleResult]:
    """Run checked specs on :class:`integrators._backends.Torch`: those the fused kernel runs that share its
    launch's key (:func:`integrators.torch._fused.shared`: scheme, target, chains, observers) go in one
    launch; the others one after another."""
    results: list = [None] * len(specs)
    groups: dict = {}
    for i, spec in enumerate(specs):
        if kernel_for(spec, explicit_draws=False) is None:
            from integrators.torch._fused import shared

            batch = None if spec.plan_module.NAME == "full" else spec.batch_size
            groups.setdefault(shared(spec), {}).setdefault(batch, []).append(i)
        else:
            results[i] = run_spec(spec)
    for by_batch in groups.values():
        full = by_batch.pop(None, [])
        launches = list(by_batch.values()) or [[]]
        launches[0] = launches[0] + full  # the full-gradient runs join the first launch
        for members in launches:
            for i, result in zip(members, _run_fused([specs[i] for i in members]), strict=True):
                results[i] = result
    return results


def _run_fused(specs: list[RunSpec]) -> list[SampleResult]:
    from integrators.torch._fused import advance_together

    runs = [_Chains(spec, None) for spec in specs]
    one_seed = len({spec.seed for spec in specs}) == 1  # one set of streams for all, else a row per run
    path_keys = runs[0].path.keys if one_seed else torch.stack([r.path.keys for r in runs])
    plan_keys = runs[0].plan_rng.keys if one_seed else torch.stack([r.plan_rng.keys for r in runs])
    advance_together(specs, [r.x for r in runs], [r.v for r in runs], [r.obs for r in runs], path_keys, plan_keys)
    return [_result(spec, r, "triton") for spec, r in zip(specs, runs, strict=True)]


def run_spec(spec: RunSpec, *, noise=None, batches=None) -> SampleResult:
    """Run a checked spec whose backend is :class:`integrators._backends.Torch` (``noise=(dW, J)`` and
    ``batches`` replace the draws: the cross-backend tests)."""
    run = _Chains(spec, noise)
    tensor_step_because = kernel_for(spec, explicit_draws=noise is not None or batches is not None)
    if tensor_step_because is None:
        from integrators.torch._fused import advance

        advance(spec, run.x, run.v, run.obs, run.path.keys, run.plan_rng.keys)
        return _result(spec, run, "triton")
    target, module, dev, dt = spec.target, run.module, run.dev, run.dt
    compile = spec.backend.compile
    backend = ("inductor" if compile is True else compile) if compile else None
    force_of = torch_force(target, dev, dt, spec.control_variate is not None,
                           None if spec.control_variate is None else spec.control_variate.x_ref)
    box = spec.box_arrays()
    reflect = None
    if box[2][0]:
        reflect = make_reflect(torch.as_tensor(box[0], device=dev, dtype=dt),
                               torch.as_tensor(box[1], device=dev, dtype=dt))
    if batches is not None:
        if len(batches) != spec.n_steps + int(module.FSAL):
            raise ValueError(f"{module.NAME} needs {spec.n_steps + int(module.FSAL)} batches for {spec.n_steps} "
                             f"steps, got {len(batches)}")
        source = _explicit_batches(batches, spec.n_chains, dev)
        next_batch = lambda: next(source)  # noqa: E731
    else:
        next_batch = ChainPlan(spec.plan, target.n_data, spec.batch_size, run.plan_rng, spec.n_chains, dev,
                               compile=backend).next
    coef = tuple(float(c) for c in module.coefficients(spec.h, spec.gamma))
    _run_tensor_step(spec, module, force_of, reflect, run.x, run.v, run.obs, next_batch,
                     force_scale(spec.plan_module, target.n_data, spec.batch_size), coef,
                     pair_factors(spec.gamma, spec.h), run.path, noise=run.noise, backend=backend)
    return _result(spec, run, f"torch step ({tensor_step_because})")


def _result(spec: RunSpec, run: _Chains, kernel: str) -> SampleResult:
    """The run's :class:`integrators._result.SampleResult` from its final state and observers."""
    obs, wanted, n_steps, burn_in = run.obs, spec.observers, spec.n_steps, spec.burn_in
    diverged_at = obs.diverged_at.cpu().numpy()
    x_out = run.x.to(torch.float64).cpu().numpy()
    v_out = run.v.to(torch.float64).cpu().numpy()
    x_out[diverged_at >= 0] = np.nan
    v_out[diverged_at >= 0] = np.nan
    n_stat = n_steps - burn_in
    histogram = wanted.histogram is not None
    return SampleResult(
        scheme=run.module.NAME, plan=spec.plan_module.NAME, h=spec.h, gamma=spec.gamma, n_steps=n_steps,
        burn_in=burn_in, seed=spec.seed,
        chain_mean=obs.sum_x.cpu().numpy() / n_stat, chain_second_moment=obs.sum_xx.cpu().numpy() / n_stat,
        chain_outer=obs.sum_outer.cpu().numpy() / n_stat if wanted.full_moments else None, chain_tests=None,
        samples=obs.samples.cpu().numpy() if wanted.keep else None, diverged_at=diverged_at, x=x_out, v=v_out,
        histogram=obs.hist.cpu().numpy() if histogram else None,
        histogram_tails=obs.tails.cpu().numpy() if histogram else None,
        meta={"batch_size": spec.batch_size, "n_chains": spec.n_chains,
              "control_variate": spec.control_variate is not None, "target": spec.target.name, "backend": "torch",
              "device": str(run.dev), "dtype": str(run.dt).replace("torch.", ""), "torch": torch.__version__,
              "compiled": spec.backend.compile, "rng_stream": STREAM_VERSION, "kernel": kernel},
    )


def _run_tensor_step(spec, module, force_of, reflect, x, v, obs, next_batch, scale, coef, factors, path, *,
                     noise, backend) -> None:
    """Every step through the tensor step (eager or compiled), or the explicit ``noise`` step by step."""
    n_steps, burn_in = spec.n_steps, spec.burn_in
    dev, dt = x.device, x.dtype
    g = force_of(x, next_batch(), scale) if module.FSAL else torch.zeros_like(x)
    if noise is not None:  # the explicit path of the cross-backend tests, step by step
        dW_all, J_all = noise
        for k in range(1, n_steps + 1):
            batch = next_batch()
            g = module.step(x, v, g, coef, dW_all[k - 1], J_all[k - 1],
                            lambda y, b=batch: force_of(y, b, scale), reflect)
            ok = obs.check(k, x, v, g)
            if k > burn_in:
                obs.add(x, ok)
                obs.keep_sample(k, burn_in, x)
        return
    step_fn, observe_fn = (fused_step, observe) if backend is None else compiled_step(backend)
    as_tensor = functools.partial(torch.tensor, device=dev, dtype=dt)
    coef_t, factors_t, scale_t = as_tensor(coef), as_tensor(factors), as_tensor(float(scale))
    counters = torch.zeros(2, device=dev, dtype=torch.int64)  # [path counter, step], on the device
    for k in range(1, n_steps + 1):
        g = step_fn(module.step, force_of, reflect, x, v, g, next_batch(), scale_t, coef_t, factors_t, path.keys,
                    counters, obs)
        if k > burn_in:
            observe_fn(x, obs)
            obs.keep_sample(k, burn_in, x)
