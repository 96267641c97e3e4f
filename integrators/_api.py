"""The public entry points (:func:`sample` and friends): each builds a :class:`integrators._spec.RunSpec`
from its keywords (which checks every argument before anything compiles) and runs it on its backend.

Every chain ``c`` has its own path, batch and initial-velocity streams (:mod:`integrators._rng`),
so the same seed gives identical output, and adding chains, or running them in other tiles or
threads, never changes existing ones.
"""

from __future__ import annotations

import inspect

from integrators._result import SampleResult
from integrators._spec import RunSpec


def sample(target, scheme="ubu", plan="sms", *, h=0.1, gamma=1.0, n_chains=100, n_steps=1000,
           burn_in=0, seed=0, batch_size=None, x0=None, v0=None, control_variate=False,
           x_ref=None, box_center=None, box_half_width=None, keep=0, full_moments=False,
           test_functions=None, n_test_functions=0, test_data=(), path_refine=1, threads=None,
           divergence_bound=None, histogram=None, backend=None) -> SampleResult:
    """Run ``n_chains`` independent chains of ``scheme x plan`` on ``target``.

    The keywords become a :class:`integrators._spec.RunSpec` (:meth:`RunSpec.from_options`), which
    checks every argument before anything compiles and runs on its backend: the Numba kernel by
    default, torch with ``backend=Torch(device, dtype, compile)``.  Every chain has its own path,
    batch and initial-velocity streams (:mod:`integrators._rng`), so the same seed gives identical
    output, and adding chains, or running them in other tiles or threads, never changes existing
    ones.  Every option after ``plan`` is keyword-only.

    Parameters
    ----------
    target : Target
        The potential ``f = f_0 + sum_i f_i``, e.g. :class:`integrators.GaussianTarget`.
    scheme : str or Scheme, default "ubu"
        A registered scheme's name (``"em"``, ``"baoab"``, ``"ubu"``, ``"obabo"``, or one added
        with :func:`register_scheme`) or a scheme object.
    plan : str or Plan, default "sms"
        A registered plan's name (``"full"``, ``"iid"``, ``"rr"``, ``"sms"``, or one added with
        :func:`register_plan`) or a plan object.
    h : float, default 0.1
        Step size, positive.
    gamma : float, default 1.0
        Friction, positive, with ``h / gamma >= 1e-12``.
    n_chains : int, default 100
        Independent chains, at least 1.
    n_steps : int, default 1000
        Steps per chain, at least 1 and at most ``2**48``.
    burn_in : int, default 0
        Steps excluded from the statistics, smaller than ``n_steps``.
    seed : int, default 0
        An integer in ``[0, 2**64)``.
    batch_size : int or None, default None
        Batch size ``N_b`` in ``[1, n_data]``; required except for ``plan="full"``, which always
        uses all the data.
    x0 : array_like or None, default None
        Initial positions, shape ``(d,)`` for every chain or ``(n_chains, d)`` (default:
        ``target.initial_point()``).
    v0 : array_like or None, default None
        Initial velocities, same shapes (default: standard normal, from each chain's stream).
    control_variate : bool, default False
        Use the control-variate force (the paper's SG1) at ``x_ref``.
    x_ref : array_like or None, default None
        The control variate's reference point, shape ``(d,)`` (default: the L-BFGS mode);
        needs ``control_variate=True``.
    box_center : float or array_like or None, default None
        Centre of the elastic-bounce box (default: the origin); needs ``box_half_width``.
    box_half_width : float or array_like or None, default None
        Half width of the box ``|x - box_center|_inf < box_half_width`` (``None``: no box);
        ``x0`` must lie inside it.
    keep : int, default 0
        Thinned samples kept per chain (``SampleResult.samples``).
    full_moments : bool, default False
        Also average ``x x^T`` per chain (``SampleResult.chain_outer``).
    test_functions : numba function or None, default None
        A Numba function (``@numba.njit``) ``f(x, out, test_data)`` writing
        ``n_test_functions`` values into ``out``, averaged per chain (Numba backend only).  Its
        ``x`` is a copy of the chain's state (writing into it changes nothing).  It is compiled
        bounds-checked (:mod:`integrators._user_code`), but the Numba functions it calls are not:
        an index out of bounds in such a helper goes unchecked (garbage or a crash) unless the
        helper is compiled with ``@numba.njit(boundscheck=True)`` or Python is started with
        ``NUMBA_BOUNDSCHECK=1``.  A function that never returns (an infinite loop) cannot be
        stopped by Ctrl-C: bound such a run in a process of its own with a timeout (the sampling
        guide, "User code that never returns").
    n_test_functions : int, default 0
        How many values ``test_functions`` writes; required (``>= 1``) with it.
    test_data : tuple of numpy.ndarray, default ()
        Arrays of numbers passed through to ``test_functions`` (only with ``test_functions``).
    path_refine : int, default 1
        A power of two: drive the run with the Brownian path of ``h / path_refine``, coarsened
        exactly to ``h`` (Numba backend only).
    threads : int or None, default None
        Worker threads of the Numba backend (default: every core this process may run on); leave
        it out when giving ``backend``.
    divergence_bound : float or None, default None
        A chain is reported diverged at the first step where a coordinate of ``x`` or ``v`` is
        non-finite or exceeds it in absolute value (default: ``target.divergence_bound()``, a
        scale taken from the target: its centre plus 1000 of its standard deviations, and at
        least 1000 for the unit-variance velocities).
    histogram : tuple (lo, hi, n_bins) or None, default None
        Stream a histogram of the first coordinate after burn-in (``SampleResult.histogram``,
        ``histogram_tails``), e.g. for :class:`bias._streaming_w1.StreamingW1`; finite
        ``lo < hi`` and bins of a finite positive width.
    backend : Numba or Torch or None, default None
        :class:`integrators._backends.Numba` (``None``: ``Numba(threads)``) or
        :class:`integrators._backends.Torch` ``(device, dtype, compile)``.

    Returns
    -------
    SampleResult
        Per-chain moments and what the observers recorded; statistics pool the chains that did
        not diverge.

    Raises
    ------
    ValueError
        Naming the argument, for any value outside what it allows (see
        :class:`integrators._spec.RunSpec`), an option the backend cannot run, or a run whose
        arrays would not fit in memory.

    See Also
    --------
    sample_together : several samplers on one Brownian path.
    RunSpec : the same run as one checked object.

    Examples
    --------
    >>> from integrators import GaussianTarget, sample
    >>> res = sample(GaussianTarget.one_d_example(), scheme="ubu", plan="sms", h=0.1,
    ...              n_chains=100, n_steps=2000, burn_in=200, batch_size=1, seed=1)
    >>> res.mean.shape
    (1,)
    """
    return RunSpec.from_options(**locals()).run()


def sample_together(target, samplers, *, batch_size=None, **options) -> list[SampleResult]:
    """Run several samplers on one Brownian path, sharing every other option of :func:`sample`.

    Result ``i`` equals ``sample(target, scheme_i, plan_i, batch_size=..., **options)`` bit for
    bit: a chain's path depends only on the seed and its index, so every sampler of the same
    seed sees the same path, and here it is drawn once per step for all of them instead of once
    per sampler (on the 1-D example, drawing the path is most of a step's cost).  Each sampler
    keeps its own batch stream, state, observers and divergence record.  On the torch backend the
    samplers of one scheme go in one launch of the fused kernel where it runs them (their results
    equal ``sample()``'s to rounding), else one after another.

    Parameters
    ----------
    target : Target
        The potential.
    samplers : list of (scheme, plan)
        The samplers, each a pair of a scheme and a plan (names or objects).
    batch_size : int or None, default None
        Batch size of the minibatch plans (``plan="full"`` always uses all the data).
    **options : object
        Any keyword option of :func:`sample` (``h``, ``gamma``, ``n_chains``, ``n_steps``,
        ``seed``, observers, ...), shared by every sampler.

    Returns
    -------
    list of SampleResult
        One result per sampler, in order.

    Raises
    ------
    ValueError
        If an option is not one of :func:`sample`'s, ``samplers`` is not a non-empty list of
        pairs, or a sampler's spec fails its checks.
    """
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
    return specs[0].backend.run(specs)


__all__ = ["SampleResult", "sample", "sample_together"]
