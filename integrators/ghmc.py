"""SMS-GHMC, the paper's supplement Algorithm 7 (Metropolized symmetric minibatch splitting).

Each iteration draws a fresh random partition ``w_1 .. w_Nm`` and runs ``L`` sweeps of leapfrog
steps ``x += h/2 v; v -= h G(x, w_b); x += h/2 v`` forward over the batches and then backward,
accepts the end point with probability ``min(1, exp(H_old - H_new))`` on the full Hamiltonian
``H = f(x) + |v|^2 / 2``, flips the momentum on rejection, and refreshes partially:
``v <- alpha v + sqrt(1 - alpha^2) Z``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from integrators.api import _int_at_least, _positive_float
from integrators.plans import shuffle_lanes
from integrators.rng import PLAN_STREAM, VELOCITY_STREAM, lane_normal_matrix, lane_states, stream_normal, stream_uniform
from integrators.targets import Target, force_data, force_for


@nb.njit(nogil=True)
def _leapfrog(x, v, g, h, force, batch, n_b, scale, tdata):
    d = x.shape[0]
    for a in range(d):
        x[a] += 0.5 * h * v[a]
    force(x, g, batch, n_b, scale, tdata)
    for a in range(d):
        v[a] -= h * g[a]
        x[a] += 0.5 * h * v[a]


@nb.njit(nogil=True)
def _ghmc_chains(force, potential, arrays, tdata, x, v, h, n_sweeps, alpha, n_iter, burn_in,
                 batch_size, rng, sum_x, sum_xx, accepted, diverged_at):
    n_chains, d = x.shape
    n_data = arrays[0].shape[0]
    m = (n_data + batch_size - 1) // batch_size
    scale = float(m)
    perm = np.arange(n_data).reshape(n_data, 1)  # shuffled as a block of one chain
    scratch = np.empty(1)
    row = rng[:, 0]
    batch = np.empty(batch_size, dtype=np.int64)
    g = np.zeros(d)
    xp = np.empty(d)
    vp = np.empty(d)
    refresh = math.sqrt(1.0 - alpha * alpha)
    for c in range(n_chains):
        xc = x[c]
        vc = v[c]
        dead = False
        for k in range(1, n_iter + 1):
            shuffle_lanes(perm, rng, scratch)
            u = stream_uniform(row)
            z = np.empty(d)
            for a in range(d):
                z[a] = stream_normal(row)
            if dead:
                continue
            xp[:] = xc
            vp[:] = vc
            for _ in range(n_sweeps):
                for sweep in range(2 * m):
                    j = sweep if sweep < m else 2 * m - 1 - sweep
                    start = j * batch_size
                    stop = min(start + batch_size, n_data)
                    for i in range(start, stop):
                        batch[i - start] = perm[i, 0]
                    _leapfrog(xp, vp, g, h, force, batch, stop - start, scale, tdata)
            h_old = potential(xc, arrays) + 0.5 * np.dot(vc, vc)
            h_new = potential(xp, arrays) + 0.5 * np.dot(vp, vp)
            if not math.isfinite(h_old):
                dead = True
                diverged_at[c] = k
                continue
            if math.isfinite(h_new) and math.log(u) < h_old - h_new:
                xc[:] = xp
                vc[:] = vp
                accepted[c] += 1
            else:
                for a in range(d):
                    vc[a] = -vc[a]
            for a in range(d):
                vc[a] = alpha * vc[a] + refresh * z[a]
            if k > burn_in:
                for a in range(d):
                    sum_x[c, a] += xc[a]
                    sum_xx[c, a] += xc[a] * xc[a]


@dataclass
class GHMCResult:
    """Per-chain averages after burn-in, acceptance rate and divergence of an SMS-GHMC run."""

    chain_mean: np.ndarray
    chain_second_moment: np.ndarray
    acceptance_rate: float
    chain_acceptance: np.ndarray
    diverged_at: np.ndarray
    x: np.ndarray

    @property
    def mean(self):
        return self.chain_mean[self.diverged_at < 0].mean(axis=0)

    @property
    def mean_se(self):
        m = self.chain_mean[self.diverged_at < 0]
        return m.std(axis=0, ddof=1) / math.sqrt(m.shape[0])

    @property
    def variance(self):
        ok = self.diverged_at < 0
        return self.chain_second_moment[ok].mean(axis=0) - self.mean**2

    @property
    def variance_se(self):
        ok = self.diverged_at < 0
        lin = self.chain_second_moment[ok] - 2 * self.mean * self.chain_mean[ok]
        return lin.std(axis=0, ddof=1) / math.sqrt(lin.shape[0])


def sms_ghmc(target, h, batch_size, *, n_sweeps=1, alpha=0.7, n_iter=1000, burn_in=0, n_chains=16,
             seed=0, x0=None, control_variate=False) -> GHMCResult:
    """Run SMS-GHMC (Algorithm 7) on ``n_chains`` independent chains; see the module docstring.

    ``h`` step size, ``batch_size`` the minibatch size (partitions into ``ceil(N_D / batch_size)``
    batches); every option keyword-only: ``n_sweeps`` (``L``, forward-and-backward sweeps per
    proposal), ``alpha`` partial refreshment in ``[0, 1)``, ``n_iter`` iterations (``K``),
    ``burn_in`` iterations left out of the statistics, ``n_chains``, ``seed``, ``x0``,
    ``control_variate``.  Returns a :class:`GHMCResult`."""
    if not isinstance(target, Target):
        raise ValueError(f"target must be a Target, got {type(target).__name__}")
    h = _positive_float("h", h)
    batch_size = _int_at_least("batch_size", batch_size, 1)
    if batch_size > target.n_data:
        raise ValueError(f"batch_size={batch_size} is larger than the data ({target.n_data} terms)")
    n_sweeps = _int_at_least("n_sweeps", n_sweeps, 1)
    if not (0.0 <= alpha < 1.0):
        raise ValueError(f"alpha must lie in [0, 1), got {alpha}")
    n_iter = _int_at_least("n_iter", n_iter, 1)
    burn_in = _int_at_least("burn_in", burn_in, 0)
    if burn_in >= n_iter:
        raise ValueError(f"burn_in must be smaller than n_iter={n_iter}, got {burn_in}")
    n_chains = _int_at_least("n_chains", n_chains, 2)
    seed = _int_at_least("seed", seed, 0)
    d = target.dim
    x = np.tile(target.initial_point() if x0 is None else np.asarray(x0, float), (n_chains, 1))
    if x.shape != (n_chains, d) or not np.all(np.isfinite(x)):
        raise ValueError(f"x0 must be a finite vector of shape {(d,)}")
    v = lane_normal_matrix(lane_states(seed, VELOCITY_STREAM, 0, n_chains), d)
    sum_x = np.zeros((n_chains, d))
    sum_xx = np.zeros((n_chains, d))
    accepted = np.zeros(n_chains, dtype=np.int64)
    diverged_at = np.full(n_chains, -1, dtype=np.int64)
    _ghmc_chains(force_for(target), type(target).potential, target.arrays,
                 force_data(target, control_variate), x, v, h, n_sweeps, float(alpha), n_iter,
                 burn_in, batch_size, lane_states(seed, PLAN_STREAM, 0, 1), sum_x, sum_xx,
                 accepted, diverged_at)
    n_stat = n_iter - burn_in
    return GHMCResult(sum_x / n_stat, sum_xx / n_stat, float(accepted.sum() / (n_chains * n_iter)),
                      accepted / n_iter, diverged_at, x)
