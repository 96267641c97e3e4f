"""Coupled chains at ``h`` (coarse) and ``h/2`` (fine), driven by one Brownian path, in one kernel.

Each coarse step draws the four path pairs of the fine chain's two steps (intervals of ``h/4``);
the fine chain uses them as they are, the coarse chain composes them exactly (``dW = dW1 + dW2``,
``J = e^{-gamma h/4} J1 + J2``), so each chain's noise has exactly its own law and the two are
strongly correlated.  Minibatch coupling:

* ``iid``: ``"shared"`` reuses the first of the fine chain's two batches for the coarse step;
  ``"independent"`` draws the coarse batch separately;
* ``rr`` / ``sms``: ``"shared"`` gives the coarse chain, at the start of each of its periods, the
  permutation the fine chain has just drawn (periods align in time: one coarse period is two fine
  periods); ``"independent"`` draws its own.

Either way each chain's batches have exactly the plan's law, so each chain's marginal is that of
an uncoupled chain.  Test functions are evaluated for both chains at the coarse step times and
accumulated per chain and per time chunk, so level differences get standard errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from integrators.api import BLOCK_SIZE, _int_at_least, _positive_float, validate
from integrators.bounce import make_box
from integrators.brownian import pair_cholesky
from integrators.kernel import draw_step_path
from integrators.plans import IID, next_batches, resolve_plan
from integrators.rng import (
    COARSE_PLAN_STREAM,
    PATH_STREAM,
    PLAN_STREAM,
    VELOCITY_STREAM,
    lane_normal_matrix,
    lane_states,
)
from integrators.schemes import resolve_scheme
from integrators.targets import force_data, lane_force_for

COUPLINGS = ("shared", "independent")
INDEPENDENT_SEED_OFFSET = 7919  # the uncoupled baseline's coarse chain runs on seed + this


@nb.njit(nogil=True)
def first_coordinates(x, out, data):
    """Default test functions: ``x_0`` and ``x_0^2``."""
    out[0] = x[0]
    out[1] = x[0] * x[0]


@nb.njit(nogil=True, inline="always")
def coarse_batches(plan_code, shared, perm_c, pos_c, batch_size, rng, out, fine_batches, n_fine, perm_f, u):
    """The coarse chains' next batches: the fine chains' first batches of the step (``iid``,
    shared), or the plan's next batches with the fine chains' permutations at a new period
    (shared) or their own."""
    if shared and plan_code == IID:
        for j in range(n_fine):
            for c in range(out.shape[1]):
                out[j, c] = fine_batches[j, c]
        return n_fine
    return next_batches(plan_code, perm_c, pos_c, batch_size, rng, out, perm_f if shared else perm_f[:0], u)


_KERNELS: dict = {}


def coupled_kernel_for(scheme_module, force):
    key = (scheme_module.step, bool(scheme_module.FSAL), force)
    if key not in _KERNELS:
        _KERNELS[key] = _make_coupled_kernel(scheme_module.step, bool(scheme_module.FSAL), force)
    return _KERNELS[key]


def _make_coupled_kernel(step, fsal, force):
    @nb.njit(nogil=True)
    def run_pairs(coef_f, coef_c, gamma, h, xf0, vf0, n_coarse_steps, burn_in, test_every, plan_code,
                  batch_size, scale, n_data, tdata, box, path_states, plan_states_f, plan_states_c, shared,
                  test_fn, test_data, sums_f, sums_c, diverged_at, bound):
        n, d = xf0.shape
        n_chunks, n_t = sums_f.shape[1], sums_f.shape[2]
        tau = h / 4.0
        l11, l21, l22 = pair_cholesky(gamma, tau)
        decay = math.exp(-gamma * tau)
        dWf, Jf = np.empty((2, 2, d, n)), np.empty((2, 2, d, n))
        dWc, Jc = np.empty((2, d, n)), np.empty((2, d, n))
        gf, gc = np.zeros((n, d)), np.zeros((n, d))
        xf, vf, xc, vc = xf0.copy(), vf0.copy(), xf0.copy(), vf0.copy()
        width = max(batch_size, n_data)
        batch_f = np.empty((width, n), dtype=np.int32)  # as the kernel's batches
        batch_c = np.empty((width, n), dtype=np.int32)
        first_f = np.empty((width, n), dtype=np.int32)
        perm_f, perm_c = np.empty((n_data, n), dtype=np.int32), np.empty((n_data, n), dtype=np.int32)
        pos_f, pos_c = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        for c in range(n):
            for i in range(n_data):
                perm_f[i, c] = i
                perm_c[i, c] = i
        no_source = perm_f[:0]
        z1, z2, raw = np.empty(n), np.empty(n), np.empty(n, dtype=np.uint64)
        tf, tc = np.zeros(n_t), np.zeros(n_t)
        n_stat = max(1, (n_coarse_steps - burn_in) // test_every)
        per_chunk = max(1, n_stat // n_chunks)
        counted = 0
        nbf, nbc, n_first = 0, 0, 0
        if fsal:
            nbf = next_batches(plan_code, perm_f, pos_f, batch_size, plan_states_f, batch_f, no_source, z1)
            nbc = coarse_batches(plan_code, shared, perm_c, pos_c, batch_size, plan_states_c, batch_c, batch_f,
                                 nbf, perm_f, z1)
            force(xf, gf, batch_f, nbf, scale, tdata)
            force(xc, gc, batch_c, nbc, scale, tdata)
        for k in range(1, n_coarse_steps + 1):
            # the fine chains' two steps (four intervals of h/4); each coarse half step is
            # the exact composition of one fine step's two intervals
            for sub in range(2):
                draw_step_path(path_states, l11, l21, l22, decay, 1, dWf[sub], Jf[sub], z1, z2, raw)
                for a in range(d):
                    for c in range(n):
                        dWc[sub, a, c] = dWf[sub, 0, a, c] + dWf[sub, 1, a, c]
                        Jc[sub, a, c] = decay * Jf[sub, 0, a, c] + Jf[sub, 1, a, c]
            for sub in range(2):
                nbf = next_batches(plan_code, perm_f, pos_f, batch_size, plan_states_f, batch_f, no_source, z1)
                if sub == 0:
                    first_f[:nbf] = batch_f[:nbf]
                    n_first = nbf
                step(xf, vf, gf, coef_f, dWf[sub], Jf[sub], force, batch_f, nbf, scale, tdata, box)
            nbc = coarse_batches(plan_code, shared, perm_c, pos_c, batch_size, plan_states_c, batch_c, first_f,
                                 n_first, perm_f, z1)
            step(xc, vc, gc, coef_c, dWc, Jc, force, batch_c, nbc, scale, tdata, box)
            observe = k > burn_in and (k - burn_in) % test_every == 0
            chunk = min(counted // per_chunk, n_chunks - 1)
            if observe:
                counted += 1
            for c in range(n):
                size = 0.0
                for a in range(d):
                    size = max(size, abs(xf[c, a]), abs(vf[c, a]), abs(xc[c, a]), abs(vc[c, a]))
                if not size <= bound:  # record once, park the pair at the origin, leave it out
                    if diverged_at[c] < 0:
                        diverged_at[c] = k
                    for a in range(d):
                        xf[c, a], vf[c, a], gf[c, a] = 0.0, 0.0, 0.0
                        xc[c, a], vc[c, a], gc[c, a] = 0.0, 0.0, 0.0
                    continue
                if diverged_at[c] >= 0 or not observe:
                    continue
                test_fn(xf[c], tf, test_data)
                test_fn(xc[c], tc, test_data)
                for t in range(n_t):
                    sums_f[c, chunk, t] += tf[t]
                    sums_c[c, chunk, t] += tc[t]

    return run_pairs


@dataclass
class CoupledResult:
    """Per chain and time chunk, averages of the test functions for the fine (``h/2``) and
    coarse (``h``) chains."""

    h: float
    fine: np.ndarray     # (n_chains, n_chunks, n_tests)
    coarse: np.ndarray
    diverged_at: np.ndarray

    @property
    def ok(self):
        return self.diverged_at < 0

    def replicates(self, values):
        v = values[self.ok]
        return v.reshape(-1, v.shape[-1])

    @property
    def difference(self) -> np.ndarray:
        """Estimate of ``E_{h/2} f - E_h f``."""
        return self.replicates(self.fine - self.coarse).mean(axis=0)

    @property
    def difference_se(self) -> np.ndarray:
        r = self.replicates(self.fine - self.coarse)
        return r.std(axis=0, ddof=1) / math.sqrt(r.shape[0])

    @property
    def difference_variance(self) -> np.ndarray:
        """Variance of one replicate's level difference (what the coupling should make small)."""
        return self.replicates(self.fine - self.coarse).var(axis=0, ddof=1)

    def mean(self, which="fine"):
        return self.replicates(self.fine if which == "fine" else self.coarse).mean(axis=0)

    def se(self, which="fine"):
        r = self.replicates(self.fine if which == "fine" else self.coarse)
        return r.std(axis=0, ddof=1) / math.sqrt(r.shape[0])


def coupled_run(target, scheme, plan, h: float, gamma: float = 1.0, *, n_chains: int = 64,
                n_coarse_steps: int = 10_000, burn_in: int = 1000, seed: int = 0, batch_size=None,
                coupling: str = "shared", test_functions=None, n_test_functions: int = 2, test_data=(),
                test_every: int = 1, n_chunks: int = 4, x0=None, control_variate=False, x_ref=None,
                independent_paths: bool = False, box_center=None, box_half_width=None,
                divergence_bound: float = 1e8) -> CoupledResult:
    """Run ``n_chains`` coupled (h, h/2) pairs; see the module docstring.

    ``independent_paths=True`` drives the coarse chain by a different Brownian path (and its own
    batches): the uncoupled baseline against which the coupling's variance reduction is measured.
    ``box_center`` / ``box_half_width``: the elastic bounce, as in ``sample``;
    ``divergence_bound``: a pair is reported diverged (and parked) at the first coarse step where
    a coordinate of either chain is non-finite or exceeds it, as in ``sample``.
    """
    h, gamma, n_chains, n_coarse_steps, burn_in, batch_size, seed = validate(
        target, scheme, plan, h, gamma, n_chains, n_coarse_steps, burn_in, batch_size, seed)
    if coupling not in COUPLINGS:
        raise ValueError(f"unknown coupling {coupling!r}; choose from {COUPLINGS}")
    test_every = _int_at_least("test_every", test_every, 1)
    divergence_bound = _positive_float("divergence_bound", divergence_bound)
    n_chunks = _int_at_least("n_chunks", n_chunks, 1)
    if test_functions is None:
        test_functions, n_test_functions = first_coordinates, 2
    module = resolve_scheme(scheme)
    plan_module = resolve_plan(plan)
    if plan_module.CODE is None or getattr(plan_module, "BATCH_RULE", None) is not None:
        raise ValueError(f"plan {plan_module.NAME!r}: the coupled chains run the built-in batch rules only "
                         f"(a plan's own BATCH_RULE has no coarse coupling)")
    kernel = coupled_kernel_for(module, lane_force_for(target))
    tdata = force_data(target, control_variate, x_ref)
    scale = plan_module.force_scale(target.n_data, batch_size)
    box = make_box(target.dim, box_center, box_half_width)
    x_init = np.broadcast_to(target.initial_point() if x0 is None else np.asarray(x0, float),
                             (n_chains, target.dim)).copy()
    if box[2][0] and np.any(np.abs(x_init - box[0]) >= box[1]):
        raise ValueError("x0 lies outside the box |x - box_center|_inf < box_half_width")
    fine = np.zeros((n_chains, n_chunks, n_test_functions))
    coarse = np.zeros_like(fine)
    diverged_at = np.full(n_chains, -1, dtype=np.int64)
    shared = coupling == "shared"
    for b in range(math.ceil(n_chains / BLOCK_SIZE)):
        lo, hi = b * BLOCK_SIZE, min((b + 1) * BLOCK_SIZE, n_chains)
        v_init = lane_normal_matrix(lane_states(seed, VELOCITY_STREAM, lo, hi - lo), target.dim)
        kernel(module.coefficients(h / 2, gamma), module.coefficients(h, gamma), gamma, h, x_init[lo:hi],
               v_init, n_coarse_steps, burn_in, test_every, plan_module.CODE, batch_size, scale,
               target.n_data, tdata, box,
               lane_states(seed, PATH_STREAM, lo, hi - lo), lane_states(seed, PLAN_STREAM, lo, hi - lo),
               lane_states(seed, COARSE_PLAN_STREAM, lo, hi - lo),
               shared, test_functions, test_data, fine[lo:hi], coarse[lo:hi], diverged_at[lo:hi], divergence_bound)
    if independent_paths:
        # the uncoupled baseline: rerun the coarse chain on another seed's path and batches
        other = coupled_run(target, scheme, plan, h, gamma, n_chains=n_chains, n_coarse_steps=n_coarse_steps,
                            burn_in=burn_in, seed=seed + INDEPENDENT_SEED_OFFSET, batch_size=batch_size,
                            coupling="independent", test_functions=test_functions,
                            n_test_functions=n_test_functions, test_data=test_data, test_every=test_every,
                            n_chunks=n_chunks, x0=x0, control_variate=control_variate, x_ref=x_ref,
                            box_center=box_center, box_half_width=box_half_width,
                            divergence_bound=divergence_bound)
        coarse = other.coarse
        diverged_at = np.maximum(diverged_at, other.diverged_at)
    n_stat = max(1, (n_coarse_steps - burn_in) // test_every)
    per_chunk = max(1, n_stat // n_chunks)
    counts = np.full(n_chunks, per_chunk, dtype=float)
    counts[-1] = n_stat - per_chunk * (n_chunks - 1)
    return CoupledResult(h, fine / counts[None, :, None], coarse / counts[None, :, None], diverged_at)
