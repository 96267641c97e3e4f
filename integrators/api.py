"""The public entry points: pick a target, a scheme, a plan, ``h``, ``gamma``, chains, steps,
burn-in, seed and observers; get a :class:`integrators.result.SampleResult`.

    >>> from integrators import GaussianTarget, sample
    >>> res = sample(GaussianTarget.one_d_example(), scheme="ubu", plan="sms", h=0.1,
    ...              n_chains=100, n_steps=2000, burn_in=200, seed=1)
    >>> res.mean.shape
    (1,)

:func:`sample` builds a :class:`integrators.spec.RunSpec` from its keywords (which checks every
argument before anything compiles; a bad value raises ``ValueError`` naming it) and runs it on its
backend: the Numba kernel by default, torch with ``backend=Torch(device, dtype, compile)``.
Every chain ``c`` has its own path, batch and initial-velocity streams (:mod:`integrators.rng`),
so the same seed gives identical output, and adding chains, or running them in other tiles or
threads, never changes existing ones.
"""

from __future__ import annotations

import inspect

from integrators.backends import Numba
from integrators.result import SampleResult
from integrators.spec import RunSpec


def sample(target, scheme="ubu", plan="sms", *, h=0.1, gamma=1.0, n_chains=100, n_steps=1000,
           burn_in=0, seed=0, batch_size=None, x0=None, v0=None, control_variate=False,
           x_ref=None, box_center=None, box_half_width=None, keep=0, full_moments=False,
           test_functions=None, n_test_functions=0, test_data=(), path_refine=1, threads=None,
           divergence_bound=None, histogram=None, backend=None) -> SampleResult:
    """Run ``n_chains`` independent chains of ``scheme x plan`` on ``target`` (every option
    keyword-only; ``scheme`` and ``plan`` are registered names or scheme / plan objects).

    Parameters: ``h`` step size, ``gamma`` friction, ``burn_in`` steps excluded from statistics,
    ``batch_size`` (required except for ``plan="full"``), ``x0`` / ``v0`` initial states (default:
    ``target.initial_point()`` and standard normal velocities), ``control_variate`` (at ``x_ref``,
    default the L-BFGS mode), ``box_center`` / ``box_half_width`` for the elastic bounce,
    ``keep`` thinned samples per chain, ``full_moments`` to track ``x x^T``,
    ``test_functions`` a Numba function (``@numba.njit``) ``f(x, out, test_data)`` filling
    ``n_test_functions`` values (``test_data``: a tuple of numpy arrays passed through),
    ``path_refine`` (a power of two) to drive the run with the Brownian path of ``h / path_refine``,
    ``histogram=(lo, hi, n_bins)`` streams a histogram of the first coordinate after burn-in
    (``SampleResult.histogram``, ``histogram_tails``) for :class:`bias.wasserstein.StreamingW1`,
    ``threads`` worker threads of the Numba backend (default: ``SMS_LANGEVIN_THREADS`` or all
    cores), ``backend``: :class:`integrators.backends.Numba` (the default) or
    :class:`integrators.backends.Torch` ``(device, dtype, compile)``, ``divergence_bound``:
    a chain is reported diverged at the first step where a coordinate of x or v is non-finite or
    exceeds it in absolute value (default: ``target.divergence_bound()``, a scale taken from the
    target: its centre plus 1000 of its standard deviations, and at least 1000 for the unit-variance
    velocities).
    """
    return RunSpec.from_options(**locals()).run()


def sample_together(target, samplers, *, batch_size=None, **options) -> list[SampleResult]:
    """Run several samplers ``[(scheme, plan), ...]`` on one Brownian path: the same chains,
    seed, ``h``, ``gamma`` and every other keyword option of :func:`sample`, which they share.

    Result ``i`` equals ``sample(target, scheme_i, plan_i, batch_size=..., **options)`` bit for
    bit (``batch_size`` applies to the minibatch plans; ``plan="full"`` always uses all the
    data): a chain's path depends only on the seed and its index, so every sampler of the same
    seed sees the same path, and here it is drawn once per step for all of them instead of once
    per sampler (on the 1-D example, drawing the path is most of a step's cost).  Each sampler
    keeps its own batch stream, state, observers and divergence record."""
    allowed = {name for name, par in inspect.signature(sample).parameters.items()
               if par.kind is inspect.Parameter.KEYWORD_ONLY and name != "batch_size"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"sample_together got unknown options {unknown}; it takes sample()'s keyword options")
    if isinstance(samplers, (str, dict)):  # a name or a mapping would be read key by key, letter by letter
        raise ValueError(f"samplers must be a list of (scheme, plan) pairs, got {samplers!r}")
    try:
        samplers = [tuple(pair) for pair in samplers]
    except TypeError:
        raise ValueError(f"samplers must be a list of (scheme, plan) pairs, got {samplers!r}") from None
    if not samplers or any(len(pair) != 2 for pair in samplers):
        raise ValueError(f"samplers must be a non-empty list of (scheme, plan) pairs, got {samplers!r}")
    defaults = {name: par.default for name, par in inspect.signature(sample).parameters.items()
                if par.kind is inspect.Parameter.KEYWORD_ONLY}
    specs = []
    for scheme, plan in samplers:
        is_full = isinstance(plan, str) and plan == "full"
        specs.append(RunSpec.from_options(**{**defaults, **options, "target": target, "scheme": scheme, "plan": plan,
                                             "batch_size": None if is_full else batch_size}))
    if not isinstance(specs[0].backend, Numba):
        raise ValueError(f"sample_together runs on the Numba backend (one path drawn once for every sampler); "
                         f"got backend={specs[0].backend!r}: call sample() per sampler instead")
    return specs[0].backend.run(specs)


__all__ = ["SampleResult", "sample", "sample_together"]
