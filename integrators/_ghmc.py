"""SMS-GHMC, the paper's supplement Algorithm 7 (Metropolized symmetric minibatch splitting).

Each iteration draws a fresh random partition ``w_1 .. w_Nm`` and runs ``L`` sweeps of leapfrog
steps ``x += h/2 v; v -= h G(x, w_b); x += h/2 v`` forward over the batches and then backward,
accepts the end point with probability ``min(1, exp(H_old - H_new))`` on the full Hamiltonian
``H = f(x) + |v|^2 / 2``, flips the momentum on rejection, and refreshes partially:
``v <- alpha v + sqrt(1 - alpha^2) Z``.

It runs on the stepping core of ``sample`` (:mod:`integrators._kernel`): blocks of chains with
chains innermost, the ``sms`` plan's batch rule (each chain its own partitions, from its own
batch stream; the ``L`` sweeps of an iteration reuse its partition), the leapfrog step
:func:`verlet_step` written like a scheme's ``step`` (the bounce box included), the same
divergence check and parking, and the same observers.  Chain ``c``'s acceptance uniforms and
refreshment normals come from its own stream (kind ``PATH_STREAM``: the only noise GHMC has), so a
chain's numbers depend on the seed and its index only.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba as nb
import numpy as np

from integrators._bounce import make_box, reflect
from integrators._chain_summary import ChainSummary
from integrators._disk_cache import disk_cached
from integrators._kernel import (
    BLOCK_SIZE,
    Divergence,
    Forces,
    PlanState,
    Schedule,
    all_in_bounds,
    count_diverged,
    make_work_buffers,
    mark_diverged,
    nan_diverged,
    park_diverged,
    reset_plan,
)
from integrators._memory import check_fits
from integrators._observers import Observers, add_moments, no_observers, no_test_functions, observe_chains
from integrators._rng import (
    PATH_STREAM,
    PLAN_STREAM,
    VELOCITY_STREAM,
    lane_normal_matrix,
    lane_normals,
    lane_states,
    lane_uniforms,
)
from integrators._spec import SPEC
from integrators._validation import Interval, at_least, check_parameters, declares, int_at_least
from integrators.plans import SMS, next_batches, resolve_plan
from integrators.targets._force import force_data, lane_force_for, target_function

if TYPE_CHECKING:
    from integrators._spec import RunSpec

LOW_ACCEPTANCE = 0.05  # below this rate GHMC chains hardly move: the warning says so

Proposal = namedtuple("Proposal", "n_sweeps alpha states x v z u accepted")
Proposal.__doc__ = """The Metropolis part of a block: ``L`` sweeps per proposal, the refreshment
``alpha``, the chains' acceptance/refreshment streams, buffers for the proposed state ``x, v``
``(n, d)``, the refreshment normals ``z`` ``(n, d)`` and uniforms ``u`` ``(n,)``, and the number
of accepted proposals per chain ``accepted`` ``(n,)``."""


@nb.njit(nogil=True)
def verlet_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """One leapfrog step ``x += h/2 v; v -= h G(x, w); x += h/2 v`` (``h = coef[0]``) with a scheme's
    ``step`` signature; the path ``dW, J`` is unused (the dynamics is Hamiltonian)."""
    h = coef[0]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            v[c, a] -= h * g[c, a]
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


@nb.njit(nogil=True, inline="always")
def hamiltonian(potential, arrays, x, v):
    kinetic = 0.0
    for a in range(v.shape[0]):
        kinetic += v[a] * v[a]
    return potential(x, arrays) + 0.5 * kinetic


_KERNELS: dict = {}


def ghmc_kernel_for(force, potential):
    key = (force, potential)
    if key not in _KERNELS:
        _KERNELS[key] = _make_ghmc_kernel(force, potential)
    return _KERNELS[key]


def _make_ghmc_kernel(force, potential):
    # observed by the default test functions, a constant (a Numba function in an argument's type would
    # keep the kernel off the disk cache: integrators._kernel._make_run)
    @nb.njit(nogil=True)
    def run_ghmc(coef, x, v, plan, forces, schedule, mh, arrays, o, div, work):
        obs = Observers(no_test_functions, o.test_data, o.sum_x, o.sum_xx, o.sum_outer, o.sum_tests, o.samples,
                        o.hist, o.hist_lo, o.hist_inv_width, o.hist_tails)
        n, d = x.shape
        g, batch, perm, position, z1, raw = work.g, work.batch, work.perm, work.position, work.z1, work.raw
        xp, vp = mh.x, mh.v
        m = (perm.shape[0] + plan.batch_size - 1) // plan.batch_size
        refresh = math.sqrt(1.0 - mh.alpha * mh.alpha)
        reset_plan(perm, position)
        no_source = perm[:0]
        n_dead = count_diverged(div.diverged_at)
        for k in range(1, schedule.n_steps + 1):
            lane_uniforms(mh.states, mh.u)
            for a in range(d):
                lane_normals(mh.states, z1, raw)
                for c in range(n):
                    mh.z[c, a] = z1[c]
            for c in range(n):
                for a in range(d):
                    xp[c, a] = x[c, a]
                    vp[c, a] = v[c, a]
            for sweep in range(mh.n_sweeps):
                for b in range(2 * m):  # the plan draws a partition; later sweeps reuse it (source = itself)
                    source = perm if sweep > 0 and b == 0 else no_source
                    n_b = next_batches(plan.code, perm, position, plan.batch_size, plan.states, batch, source, z1)
                    verlet_step(xp, vp, g, coef, work.dW, work.J, force, batch, n_b, plan.scale, forces.tdata,
                                forces.box)
            for c in range(n):
                if div.diverged_at[c] >= 0:
                    continue
                h_old = hamiltonian(potential, arrays, x[c], v[c])
                h_new = hamiltonian(potential, arrays, xp[c], vp[c])
                accept = math.isfinite(h_new) and math.log(mh.u[c]) < h_old - h_new
                if accept:
                    mh.accepted[c] += 1
                for a in range(d):
                    if accept:
                        x[c, a] = xp[c, a]
                        v[c, a] = vp[c, a]
                    else:
                        v[c, a] = -v[c, a]
                    v[c, a] = mh.alpha * v[c, a] + refresh * mh.z[c, a]
            if not all_in_bounds(x, v, div.bound) or n_dead > 0:
                n_dead += mark_diverged(k, x, v, div)
                park_diverged(x, v, g, div.diverged_at)
            if k > schedule.burn_in:
                add_moments(x, obs.sum_x, obs.sum_xx)
                observe_chains(x, div.diverged_at, obs, work.tvals, False, 0)
        nan_diverged(x, v, div.diverged_at)

    return disk_cached(run_ghmc, "run_ghmc")


@dataclass
class GHMCResult:
    """An SMS-GHMC run: per-chain averages after burn-in ``(n_chains, d)``, acceptance rates, the divergence
    record (in iterations) and final positions; statistics from :attr:`stats` (a ``ChainSummary``)."""

    chain_mean: np.ndarray
    chain_second_moment: np.ndarray
    acceptance_rate: float
    chain_acceptance: np.ndarray
    diverged_at: np.ndarray
    x: np.ndarray
    n_draws: int | None = None

    @property
    def stats(self) -> ChainSummary:
        """The pooled statistics of the chains, which every statistic below reads."""
        return ChainSummary(self.diverged_at, self.chain_mean, self.chain_second_moment, self.n_draws,
                            unit="iteration", run=" in SMS-GHMC")

    @property
    def ok(self) -> np.ndarray:
        """The chains that did not diverge (every statistic pools these)."""
        return self.stats.ok

    @property
    def mean(self):
        """The pooled mean of ``x``."""
        return self.stats.mean

    @property
    def mean_se(self):
        """The standard error of :attr:`mean`."""
        return self.stats.mean_se

    @property
    def variance(self):
        """The pooled variance of ``x`` per coordinate."""
        return self.stats.variance

    @property
    def variance_se(self):
        """The standard error of :attr:`variance` (delta method)."""
        return self.stats.variance_se

    @property
    def rhat(self):
        """R-hat per coordinate (:attr:`integrators._chain_summary.ChainSummary.rhat`)."""
        return self.stats.rhat

    @property
    def warnings(self) -> list[str]:
        """Why the pooled statistics should not be read as estimates (empty when nothing is wrong):
        divergence, R-hat, chains that accepted no proposal or a low acceptance rate."""
        out = self.stats.warnings
        stuck = int(np.sum(self.chain_acceptance[self.ok] == 0))
        if stuck:
            out.append(f"{stuck} of {int(np.sum(self.ok))} chains accepted no proposal: they never left their "
                       f"start, so their averages are not an estimate; use a smaller h")
        elif np.any(self.ok) and self.acceptance_rate < LOW_ACCEPTANCE:
            out.append(f"acceptance rate {self.acceptance_rate:.3g} < {LOW_ACCEPTANCE}: the chains hardly move")
        return out

    def summary(self) -> str:
        """One line: acceptance, mean and variance with their standard errors, R-hat and warnings."""
        return self.stats.summary("SMS-GHMC", lead=f"acceptance {self.acceptance_rate:.3g}, ", warnings=self.warnings)


GHMC_CONSTRAINTS = {"spec": SPEC, "n_sweeps": at_least(1), "alpha": Interval(float, 0, 1, closed="left")}


@declares(GHMC_CONSTRAINTS)
def sms_ghmc(spec: RunSpec, *, n_sweeps: int = 1, alpha: float = 0.7) -> GHMCResult:
    """Run SMS-GHMC (the paper's supplement, Algorithm 7) on ``spec.n_chains`` independent chains.

    Each iteration draws a fresh random partition ``w_1 .. w_Nm`` and runs ``L`` sweeps of leapfrog
    steps ``x += h/2 v; v -= h G(x, w_b); x += h/2 v`` forward over the batches and then backward,
    accepts the end point with probability ``min(1, exp(H_old - H_new))`` on the full Hamiltonian
    ``H = f(x) + |v|^2 / 2``, flips the momentum on rejection, and refreshes partially:
    ``v <- alpha v + sqrt(1 - alpha^2) Z``.  A chain diverges as in :func:`sample`, counted in
    iterations (:mod:`integrators._divergence`).

    Parameters
    ----------
    spec : RunSpec
        The run, with plan ``"sms"``: ``h`` is the leapfrog step, ``n_steps`` the iterations
        ``K``, ``burn_in`` the iterations left out of the statistics; also target, chains (at
        least 2), seed, batch size, ``x0``, control variate and divergence bound, on the Numba
        backend.  The proposal is leapfrog, whatever the spec's scheme; initial velocities are
        standard normal.
    n_sweeps : int, default 1
        ``L``, forward-and-backward sweeps per proposal, at least 1.
    alpha : float, default 0.7
        Partial refreshment, in ``[0, 1)``.

    Returns
    -------
    GHMCResult
        Per-chain averages after burn-in, the acceptance rate (overall and per chain), the
        divergence record and the final positions.

    Raises
    ------
    ValueError
        Naming the argument, if the plan is not ``"sms"``, the spec sets what GHMC does not run
        (another backend, ``v0``, ``path_refine``, a box, observers), ``n_chains < 2``, an option is
        outside what it allows, or the arrays would not fit in memory.

    Examples
    --------
    >>> from integrators import GaussianTarget, RunSpec
    >>> spec = RunSpec.from_options(GaussianTarget.one_d_example(), plan="sms", h=0.1, n_chains=4,
    ...                             n_steps=50, batch_size=1, seed=1)
    >>> 0 < sms_ghmc(spec, n_sweeps=2).acceptance_rate <= 1
    True
    """
    values = check_parameters(locals(), GHMC_CONSTRAINTS)
    n_sweeps, alpha = values["n_sweeps"], values["alpha"]
    if spec.plan_module.NAME != "sms":
        raise ValueError(f"sms_ghmc runs the sms plan's sweeps: the spec's plan must be 'sms', got "
                         f"{spec.plan_module.NAME!r}")
    spec.refuse_for("sms_ghmc", unread=("box", "observers"))
    n_chains = int_at_least("n_chains", spec.n_chains, 2)
    target, h, batch_size, seed = spec.target, spec.h, spec.batch_size, spec.seed
    n_iter, burn_in, divergence_bound = spec.n_steps, spec.burn_in, spec.divergence_bound
    d = target.dim
    check_fits(f"n_chains={n_chains} with d={d}", spec.backend.memory_bytes(spec, loop="ghmc"))
    x = spec.x0.copy()
    v = lane_normal_matrix(lane_states(seed, VELOCITY_STREAM, 0, n_chains), d)
    sum_x = np.zeros((n_chains, d))
    sum_xx = np.zeros((n_chains, d))
    accepted = np.zeros(n_chains, dtype=np.int64)
    diverged_at = np.full(n_chains, -1, dtype=np.int64)
    sms = resolve_plan("sms")
    kernel = ghmc_kernel_for(lane_force_for(target), target_function(type(target), "potential"))
    cv = spec.control_variate
    forces = Forces(force_data(target, cv is not None, None if cv is None else cv.x_ref), make_box(d))
    schedule = Schedule(n_iter, burn_in, 1)
    coef = np.array([h])
    for b in range(math.ceil(n_chains / BLOCK_SIZE)):
        lo, hi = b * BLOCK_SIZE, min((b + 1) * BLOCK_SIZE, n_chains)
        n = hi - lo
        observers = no_observers(n, d, None)._replace(sum_x=sum_x[lo:hi], sum_xx=sum_xx[lo:hi])
        proposal = Proposal(n_sweeps, float(alpha), lane_states(seed, PATH_STREAM, lo, n), np.zeros((n, d)),
                            np.zeros((n, d)), np.zeros((n, d)), np.zeros(n), accepted[lo:hi])
        kernel(coef, x[lo:hi], v[lo:hi], PlanState(SMS, batch_size, sms.force_scale(target.n_data, batch_size),
                                                    lane_states(seed, PLAN_STREAM, lo, n)),
               forces, schedule, proposal, target.arrays, observers,
               Divergence(divergence_bound, diverged_at[lo:hi]),
               make_work_buffers(n, d, target.n_data, batch_size, 0))
    n_stat = n_iter - burn_in
    return GHMCResult(sum_x / n_stat, sum_xx / n_stat, float(accepted.sum() / (n_chains * n_iter)),
                      accepted / n_iter, diverged_at, x, n_stat)
