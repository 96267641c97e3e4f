"""Coupled chains at ``h`` (coarse) and ``h/2`` (fine), driven by one Brownian path, in one kernel
built from the pieces of ``sample``'s stepping core (:mod:`integrators._kernel`: path, batch rule,
scheme step with bounce, divergence check and parking, observers); the fine chains are exactly
``sample``'s chains at ``h/2`` with the same seed.

Each coarse step draws the four path pairs of the fine chain's two steps (intervals of ``h/4``);
the fine chain uses them as they are, the coarse chain composes them exactly (``dW = dW1 + dW2``,
``J = e^{-gamma h/4} J1 + J2``), so each chain's noise has exactly its own law and the two are
strongly correlated.  Minibatch coupling:

* ``iid``: ``"shared"`` reuses the first of the fine chain's two batches for the coarse step;
  ``"independent"`` draws the coarse batch separately;
* ``rr`` / ``sms``: ``"shared"`` gives the coarse chain, at the start of each of its periods, the
  permutation the fine chain has just drawn (periods align in time: one coarse period is two fine
  periods); ``"independent"`` draws its own.  A plan with its own Numba ``BATCH_RULE`` runs here
  too: its coarse chains call the rule with the fine chains' permutations as ``source`` (shared).

Either way each chain's batches have exactly the plan's law, so each chain's marginal is that of
an uncoupled chain.  Test functions are evaluated for both chains at the coarse step times and
accumulated per chain and per time chunk, so level differences get standard errors.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import numba as nb
import numpy as np

from integrators._brownian import pair_cholesky
from integrators._chain_summary import ChainSummary
from integrators._disk_cache import disk_cached, njit_cached
from integrators._kernel import (
    BLOCK_SIZE,
    Divergence,
    Forces,
    Path,
    PlanState,
    Schedule,
    all_in_bounds,
    count_diverged,
    draw_step_path,
    make_work_buffers,
    mark_diverged,
    park_diverged,
    reset_plan,
    sampler_kind,
)
from integrators._memory import check_fits
from integrators._observers import Observers, no_observers, observe_chains
from integrators._rng import (
    COARSE_PLAN_STREAM,
    PATH_STREAM,
    PLAN_STREAM,
    VELOCITY_STREAM,
    lane_normal_matrix,
    lane_states,
)
from integrators._spec import SPEC, RunSpec
from integrators._user_code import guarded
from integrators._validation import BOOLEAN, at_least, check_parameters, declares, one_of
from integrators.plans import IID, kernel_code
from integrators.seeds import derive
from integrators.targets._force import force_data, lane_force_for

COUPLINGS = ("shared", "independent")
INDEPENDENT_SEED_LABELS = ("coupled", "independent paths")  # the uncoupled baseline's coarse chain's seed's labels


@njit_cached(nogil=True)
def first_coordinates(x, out, data):
    """Default test functions: ``x_0`` and ``x_0^2`` of one chain's position, written into ``out`` ``(2,)``."""
    out[0] = x[0]
    out[1] = x[0] * x[0]


@nb.njit(nogil=True, inline="always")
def _coarse_batches(rule, shared, plan, perm_c, pos_c, states_c, out, fine_batches, n_fine, perm_f, u):
    """The coarse chains' next batches (shared: the fine chains' first batches for ``iid``, else the
    plan's rule fed the fine permutations as ``source``); returns the number written to ``out``."""
    if shared and plan.code == IID:
        for j in range(n_fine):
            for c in range(out.shape[1]):
                out[j, c] = fine_batches[j, c]
        return n_fine
    return rule(plan.code, perm_c, pos_c, plan.batch_size, states_c, out, perm_f if shared else perm_f[:0], u)


@njit_cached(nogil=True, _nrt=False)
def _coarsen_halves(dWf, Jf, decay, dWc, Jc):
    """The coarse chain's path over each of its half steps, composed exactly from the fine
    chain's two steps (``dWf, Jf`` of shape ``(2, 2, d, n)``: fine step, half, coordinate, chain);
    ``decay = e^{-gamma tau}`` over one fine interval."""
    for sub in range(2):
        for a in range(dWc.shape[1]):
            for c in range(dWc.shape[2]):
                dWc[sub, a, c] = dWf[sub, 0, a, c] + dWf[sub, 1, a, c]
                Jc[sub, a, c] = decay * Jf[sub, 0, a, c] + Jf[sub, 1, a, c]


# the kernel's argument bundles: one chain of every pair (scheme coefficients, state ``x, v`` ``(n, d)``);
# how the coarse chains get their batches (``shared``: the fine chains' permutations or first
# batches, or not; their own batch streams; a buffer for the fine chains' first batch)
_Chains = namedtuple("Chains", "coef x v")
_Coupling = namedtuple("Coupling", "shared states first")


@nb.njit(nogil=True, inline="always")
def _chunk_observers(obs, chunk, test_fn):
    """The observers of one time chunk: ``obs.sum_tests`` has shape ``(n, n_chunks, n_tests)``."""
    return Observers(test_fn, obs.test_data, obs.sum_x, obs.sum_xx, obs.sum_outer, obs.sum_tests[:, chunk],
                     obs.samples, obs.hist, obs.hist_lo, obs.hist_inv_width, obs.hist_tails)


_KERNELS: dict = {}


def _coupled_kernel_for(scheme_module, force, plan_module, test_fn):
    """The coupled kernel for one scheme, target class, batch rule and test function (compiled once per
    process, kept on disk: :mod:`integrators._disk_cache`)."""
    kind = sampler_kind(scheme_module, force, plan_module)  # a user step: bounds-checked, named in its errors
    if (kind, test_fn) not in _KERNELS:
        step, fsal, _, rule = kind
        _KERNELS[kind, test_fn] = _make_coupled_kernel(step, fsal, force, force.allocates, rule, test_fn)
    return _KERNELS[kind, test_fn]


def _make_coupled_kernel(step, fsal, force, allocates, rule, test_fn):
    # the pieces of ``sample``'s kernel (integrators._kernel): path, batch rule, step with bounce,
    # divergence check and parking, observers; only the coarse path and batches are its own.  The
    # test functions are a constant, not in an argument (see integrators._kernel._make_run)
    @nb.njit(nogil=True, _nrt=allocates)
    def run_pairs(fine, coarse, path, plan, coupling, forces, schedule, obs_f, obs_c, div, work_f, work_c):
        xf, vf, xc, vc = fine.x, fine.v, coarse.x, coarse.v
        n_chunks = obs_f.sum_tests.shape[1]
        l11, l21, l22 = pair_cholesky(path.gamma, path.tau)
        decay = math.exp(-path.gamma * path.tau)
        dWf, Jf, gf, batch_f, perm_f, pos_f = work_f.dW, work_f.J, work_f.g, work_f.batch, work_f.perm, work_f.position
        gc, batch_c, perm_c, pos_c = work_c.g, work_c.batch, work_c.perm, work_c.position
        z1, z2, raw = work_f.z1, work_f.z2, work_f.raw
        scale, tdata, box, burn_in = plan.scale, forces.tdata, forces.box, schedule.burn_in
        reset_plan(perm_f, pos_f)
        reset_plan(perm_c, pos_c)
        no_source = perm_f[:0]
        n_stat = max(1, (schedule.n_steps - burn_in) // schedule.thin)
        per_chunk = max(1, n_stat // n_chunks)
        counted = 0
        n_dead = count_diverged(div.diverged_at)
        nbf, nbc, n_first = 0, 0, 0
        if fsal:
            nbf = rule(plan.code, perm_f, pos_f, plan.batch_size, plan.states, batch_f, no_source, z1)
            nbc = _coarse_batches(rule, coupling.shared, plan, perm_c, pos_c, coupling.states, batch_c, batch_f, nbf,
                                 perm_f, z1)
            force(xf, gf, batch_f, nbf, scale, tdata)
            force(xc, gc, batch_c, nbc, scale, tdata)
        for k in range(1, schedule.n_steps + 1):
            # the fine chains' two steps (four intervals of h/4); each coarse half step is
            # the exact composition of one fine step's two intervals
            for sub in range(2):
                draw_step_path(path.states, l11, l21, l22, decay, path.refine, dWf[sub], Jf[sub], z1, z2, raw)
            _coarsen_halves(dWf, Jf, decay, work_c.dW, work_c.J)
            for sub in range(2):
                nbf = rule(plan.code, perm_f, pos_f, plan.batch_size, plan.states, batch_f, no_source, z1)
                if sub == 0:
                    for j in range(nbf):
                        for c in range(batch_f.shape[1]):
                            coupling.first[j, c] = batch_f[j, c]
                    n_first = nbf
                step(xf, vf, gf, fine.coef, dWf[sub], Jf[sub], force, batch_f, nbf, scale, tdata, box)
            nbc = _coarse_batches(rule, coupling.shared, plan, perm_c, pos_c, coupling.states, batch_c,
                                 coupling.first, n_first, perm_f, z1)
            step(xc, vc, gc, coarse.coef, work_c.dW, work_c.J, force, batch_c, nbc, scale, tdata, box)
            if not (all_in_bounds(xf, vf, div.bound) and all_in_bounds(xc, vc, div.bound)) or n_dead > 0:
                # a pair diverges when either chain does; both are parked
                n_dead += mark_diverged(k, xf, vf, div)
                n_dead += mark_diverged(k, xc, vc, div)
                park_diverged(xf, vf, gf, div.diverged_at)
                park_diverged(xc, vc, gc, div.diverged_at)
            observe = k > burn_in and (k - burn_in) % schedule.thin == 0
            chunk = min(counted // per_chunk, n_chunks - 1)
            if observe:
                counted += 1
                observe_chains(xf, div.diverged_at, _chunk_observers(obs_f, chunk, test_fn), work_f.tvals, False, 0)
                observe_chains(xc, div.diverged_at, _chunk_observers(obs_c, chunk, test_fn), work_c.tvals, False, 0)

    return disk_cached(run_pairs, "run_pairs")


@dataclass
class CoupledResult:
    """Per chain and time chunk, averages of the test functions for the fine (``h/2``) and
    coarse (``h``) chains.

    Attributes
    ----------
    h, fine, coarse, diverged_at
        The coarse step; the ``(n_chains, n_chunks, n_tests)`` chunk averages; per pair the first
        divergent coarse step, -1 if none.
    """

    h: float
    fine: np.ndarray     # (n_chains, n_chunks, n_tests)
    coarse: np.ndarray
    diverged_at: np.ndarray

    @property
    def stats(self) -> ChainSummary:
        """The pairs' divergence record and pooling rule (every chunk of a pair a replicate)."""
        return ChainSummary(self.diverged_at, member="coupled pair", unit="coarse step", run=f" at h={self.h:g}")

    @property
    def ok(self):
        """``(n_chains,)``: whether each pair stayed finite."""
        return self.stats.ok

    @property
    def warnings(self) -> list[str]:
        """The pairs that diverged, if any (the statistics pool the others)."""
        return self.stats.warnings

    def replicates(self, values):
        """The replicates (chain x chunk) of the pairs that did not diverge.

        Parameters
        ----------
        values : numpy.ndarray
            ``(n_chains, n_chunks, n_tests)``.

        Returns
        -------
        numpy.ndarray
            ``(n_replicates, n_tests)``.

        Raises
        ------
        RuntimeError
            When every pair diverged (no estimate; never NaN as a number).
        """
        return self.stats.replicates(values)

    @property
    def difference(self) -> np.ndarray:
        """Estimate of ``E_{h/2} f - E_h f``."""
        return self.stats.pooled_mean(self.fine - self.coarse)

    @property
    def difference_se(self) -> np.ndarray:
        """Standard error of :attr:`difference` over the replicates."""
        return self.stats.pooled_se(self.fine - self.coarse)

    @property
    def difference_variance(self) -> np.ndarray:
        """Variance of one replicate's level difference (what the coupling should make small)."""
        return self.replicates(self.fine - self.coarse).var(axis=0, ddof=1)

    def mean(self, which="fine"):
        """Mean of the test functions over the ``which`` chains.

        Parameters
        ----------
        which : {"fine", "coarse"}

        Returns
        -------
        numpy.ndarray
            ``(n_tests,)``.
        """
        return self.stats.pooled_mean(self.fine if which == "fine" else self.coarse)

    def se(self, which="fine"):
        """Standard error of :meth:`mean` over the replicates.

        Parameters
        ----------
        which : {"fine", "coarse"}

        Returns
        -------
        numpy.ndarray
        """
        return self.stats.pooled_se(self.fine if which == "fine" else self.coarse)


COUPLED_CONSTRAINTS = {"spec": SPEC, "coupling": one_of(COUPLINGS), "test_every": at_least(1),
                       "n_chunks": at_least(1), "independent_paths": BOOLEAN}


@declares(COUPLED_CONSTRAINTS)
def coupled_run(spec: RunSpec, *, coupling: str = "shared", test_every: int = 1, n_chunks: int = 4,
                independent_paths: bool = False) -> CoupledResult:
    """Run ``spec.n_chains`` coupled (h, h/2) pairs; see the module docstring.

    The spec describes the coarse chains: ``spec.h`` is the coarse step (the fine chains run at
    ``h/2``), ``spec.n_steps`` and ``spec.burn_in`` are counted in coarse steps, and the test
    functions are the spec's observers' (default :func:`first_coordinates`, ``x_0`` and ``x_0^2``).
    A pair is reported diverged (and parked) at the first coarse step where a coordinate of either
    chain is non-finite or exceeds ``spec.divergence_bound``.

    Parameters
    ----------
    spec : RunSpec
        Target, scheme, plan, coarse step, friction, chains, steps, burn-in, seed, batch size,
        ``x0``, control variate, box, divergence bound and test functions, on the Numba backend.
    coupling : {"shared", "independent"}, default "shared"
        Whether the coarse chains reuse the fine chains' batches or permutations.
    test_every : int, default 1
        Observe every ``test_every`` coarse steps after burn-in.
    n_chunks : int, default 4
        Equal time chunks per chain (the replicates of the standard errors).
    independent_paths : bool, default False
        Drive the coarse chain by a different Brownian path (and its own batches): the uncoupled
        baseline against which the coupling's variance reduction is measured.

    Returns
    -------
    CoupledResult
        The chunk averages of both chains of every pair.

    Raises
    ------
    ValueError
        On a spec the coupled kernel cannot run (another backend, ``v0``, ``path_refine``, or
        observers other than test functions), an unknown ``coupling``, a ``test_every`` that
        observes no step, more ``n_chunks`` than observed steps, or arrays that would not fit in memory.

    Examples
    --------
    >>> from integrators import GaussianTarget, RunSpec
    >>> spec = RunSpec.from_options(GaussianTarget.one_d_example(), "ubu", "sms", h=0.1, n_chains=4,
    ...                             n_steps=200, burn_in=20, batch_size=1, seed=1)
    >>> coupled_run(spec).fine.shape
    (4, 4, 2)
    """
    values = check_parameters(locals(), COUPLED_CONSTRAINTS)
    test_every, independent_paths, n_chunks = values["test_every"], values["independent_paths"], values["n_chunks"]
    spec.refuse_for("coupled_run")
    if test_every > spec.n_steps - spec.burn_in:  # bounded by the spec: no declaration states it
        raise ValueError(f"test_every must be at most n_steps - burn_in = {spec.n_steps - spec.burn_in}, "
                         f"got {test_every} (no step would be observed)")
    n_observed = (spec.n_steps - spec.burn_in) // test_every
    if n_chunks > n_observed:  # an empty chunk would be averaged in as zeros
        raise ValueError(f"n_chunks must be at most the number of observed steps, (n_steps - burn_in) // test_every "
                         f"= ({spec.n_steps} - {spec.burn_in}) // {test_every} = {n_observed}, got {n_chunks}")
    target, h, gamma, seed = spec.target, spec.h, spec.gamma, spec.seed
    n_chains, n_coarse_steps, burn_in, batch_size = spec.n_chains, spec.n_steps, spec.burn_in, spec.batch_size
    obs = spec.observers
    test_functions, n_test_functions, test_data = obs.test_functions, obs.n_test_functions, obs.test_data
    if test_functions is None:
        test_functions, n_test_functions, test_data = first_coordinates, 2, ()
    check_fits(f"n_chains={n_chains} with d={target.dim}, n_chunks={n_chunks} and {n_test_functions} test functions",
               spec.backend.memory_bytes(spec, loop="coupled", n_chunks=n_chunks))
    module = spec.scheme_module
    plan_module = spec.plan_module
    test_fn = guarded(test_functions, "test_functions")
    kernel = _coupled_kernel_for(module, lane_force_for(target), plan_module, test_fn)
    cv = spec.control_variate
    tdata = force_data(target, cv is not None, None if cv is None else cv.x_ref)
    scale = plan_module.force_scale(target.n_data, batch_size)
    box, x_init, divergence_bound = spec.box_arrays(), spec.x0, spec.divergence_bound
    fine = np.zeros((n_chains, n_chunks, n_test_functions))
    coarse = np.zeros_like(fine)
    diverged_at = np.full(n_chains, -1, dtype=np.int64)
    shared = coupling == "shared"
    d, code = target.dim, kernel_code(plan_module)
    forces, schedule = Forces(tdata, box), Schedule(n_coarse_steps, burn_in, test_every)
    coef_f, coef_c = module.coefficients(h / 2, gamma), module.coefficients(h, gamma)
    for b in range(math.ceil(n_chains / BLOCK_SIZE)):
        lo, hi = b * BLOCK_SIZE, min((b + 1) * BLOCK_SIZE, n_chains)
        n = hi - lo
        v_init = lane_normal_matrix(lane_states(seed, VELOCITY_STREAM, lo, n), d)
        work_f = make_work_buffers(n, d, target.n_data, batch_size, n_test_functions, path_steps=2)
        work_c = make_work_buffers(n, d, target.n_data, batch_size, n_test_functions)
        kernel(_Chains(coef_f, x_init[lo:hi].copy(), v_init.copy()),
               _Chains(coef_c, x_init[lo:hi].copy(), v_init.copy()),
               Path(gamma, h / 4.0, 1, lane_states(seed, PATH_STREAM, lo, n)),
               PlanState(code, batch_size, scale, lane_states(seed, PLAN_STREAM, lo, n)),
               _Coupling(shared, lane_states(seed, COARSE_PLAN_STREAM, lo, n), np.zeros_like(work_f.batch)),
               forces, schedule,
               no_observers(n, d, None, test_data, fine[lo:hi]),
               no_observers(n, d, None, test_data, coarse[lo:hi]),
               Divergence(divergence_bound, diverged_at[lo:hi]), work_f, work_c)
    n_stat = max(1, (n_coarse_steps - burn_in) // test_every)
    per_chunk = max(1, n_stat // n_chunks)
    counts = np.full(n_chunks, per_chunk, dtype=float)
    counts[-1] = n_stat - per_chunk * (n_chunks - 1)
    fine, coarse = fine / counts[None, :, None], coarse / counts[None, :, None]  # chunk sums -> chunk averages
    if independent_paths:
        # the uncoupled baseline: rerun the coarse chain on another seed's path and batches
        other = coupled_run(spec.replace(seed=derive(seed, *INDEPENDENT_SEED_LABELS)), coupling="independent",
                            test_every=test_every, n_chunks=n_chunks)
        coarse = other.coarse  # chunk averages already
        # a pair diverged at the earlier of its two runs' divergence steps (-1: neither diverged)
        both = (diverged_at >= 0) & (other.diverged_at >= 0)
        diverged_at = np.where(both, np.minimum(diverged_at, other.diverged_at),
                               np.maximum(diverged_at, other.diverged_at))
    return CoupledResult(h, fine, coarse, diverged_at)
