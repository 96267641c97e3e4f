"""The Monte Carlo checks of :func:`theory_checks._verify.verify`: chains of the compiled kernel
against two references.

* :func:`probe_law_check` (``monte_carlo[plan]``): the chains' first and second moments at one
  step ``h`` against the exact stationary law of the *probed* step at that ``h``.  It checks the
  kernel's arithmetic against what the probe read (a block-size fast path, a kernel that is not the
  step the probe ran); a scheme bug that the probe also reads passes it by construction.
* :func:`target_law_check` (``target_law[plan]``): the chains against the *target's* law, through
  the bias model that the declared weak order ``p`` implies.  Coupled ``(h, h/2)`` and
  ``(h/2, h/4)`` pairs on one Brownian path each (:func:`bias._coupled.coupled_run`) give the level
  differences ``D_1 = m(h/2) - m(h)`` and ``D_2 = m(h/4) - m(h/2)`` with little noise; fitting
  ``m(h) = m_0 + a h^p + c h^(p+1)`` to them extrapolates the coarsest level ``m(h)`` (the
  cheapest for the same simulated time, which sets its variance) to ``m_0``, which must equal the
  target's moments within a family-wise ``z`` of its standard error (per chain: the pairs' chains
  are independent, so the standard error is over chains).  No probe is used: a
  wrong noise law, a wrong force scale or a lower order than declared leaves ``m_0`` off the
  target.  Its sensitivity is ``z`` standard errors of a moment (the
  check's row gives the standard error it reached); the model leaves out ``O(h^(p+2))``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from theory_checks._checks import Check
from theory_checks._power import detectable, gaussian_scales, powered
from theory_checks.oracle import UnstableStepError, stationary_moments

__all__ = ["family_critical", "probe_law_check", "target_law_check"]

MC_ALPHA = 1e-5         # family-wise level of each Monte Carlo comparison
MC_STEPS = 2000         # steps observed at the probe-law check's step size
TARGET_STEPS = 8000     # steps observed at the target-law check's coarsest step h (the (h, h/2) pair)
SECOND_PAIR_TIME = 0.25  # the (h/2, h/4) pair runs this fraction of the first pair's time: its coupled
                         # difference is all it gives, and that has little variance
RELAX_TIMES = 5.0       # burn-in: this many of the slowest relaxation times
PROBE_EXPECTED = "MC within z s.e. of the oracle"
TARGET_EXPECTED = "extrapolated MC law = target within z s.e."


@nb.njit(nogil=True)
def moment_functions(x, out, data):
    """``out = (x_a for every a, x_a x_b for a <= b)``: the statistics compared with a Gaussian law."""
    d = x.shape[0]
    k = 0
    for a in range(d):
        out[k] = x[a]
        k += 1
    for a in range(d):
        for b in range(a, d):
            out[k] = x[a] * x[b]
            k += 1


def family_critical(n_compared: int, n_replicates: int) -> float:
    """Two-sided Bonferroni critical value of ``n_compared`` t statistics over ``n_replicates``
    independent chains (Student's t with ``n_replicates - 1`` degrees of freedom) at family-wise
    level :data:`MC_ALPHA`.

    Parameters
    ----------
    n_compared : int
        Statistics compared in the family.
    n_replicates : int
        Independent replicates (chains) behind each standard error.

    Returns
    -------
    float
        The critical value of ``|estimate - reference| / se``.
    """
    from scipy.stats import t
    return float(t.isf(MC_ALPHA / (2 * max(n_compared, 1)), max(n_replicates - 1, 1)))


def _schedule(target, plan, bs, h, gamma, observed=MC_STEPS) -> tuple[int, int]:
    """``(burn_in, total)`` steps at ``h``, whole periods of the plan: the slowest relaxation time
    (``1/gamma`` or ``gamma / lambda_min``) :data:`RELAX_TIMES` times, then ``observed`` steps."""
    per = plan.period(target.n_data, bs or target.n_data)
    small = float(np.linalg.eigvalsh(target.precision).min())
    relax = RELAX_TIMES * max(1.0 / gamma, gamma / small) / h
    burn = per * int(relax / per + 1)
    return burn, burn + per * int(observed / per + 1)


def probe_law_check(module, plan, target, gamma, batch_size, n_chains, seed, n_plans, backend="numba") -> Check:
    """``monte_carlo[plan]``: Monte Carlo moments at a moderate step against the exact oracle of the
    probed step, on the Numba kernel or the torch backend (see the module docstring).

    Parameters
    ----------
    module : Scheme
        The scheme, resolved.
    plan : Plan
        The plan, resolved.
    target : GaussianTarget
        The target.
    gamma : float
        Friction.
    batch_size : int
        Batch size of a minibatch plan (``full`` uses all the data).
    n_chains, seed : int
        Chains and seed.
    n_plans : int
        Plans checked in the same run (the family of the Bonferroni level).
    backend : {"numba", "torch"}, default "numba"
        Where the chains run (and the step is probed).

    Returns
    -------
    Check
        Passed within the family-wise critical value; failed beyond it or when a chain diverged
        where the step has a stationary law; inconclusive when it has none or the backend cannot
        run the plan.
    """
    from integrators import Torch, sample

    name = f"monte_carlo[{plan.NAME}]"
    bs = None if plan.NAME == "full" else batch_size
    big = float(np.linalg.eigvalsh(target.precision).max())
    h = 0.25 / math.sqrt(big * (1 if plan.NAME == "full" else target.n_data))
    try:
        exact = stationary_moments(target, module, plan, h, gamma, bs, maps="probed", backend=backend)
    except UnstableStepError as exc:
        return Check(name, None, PROBE_EXPECTED, "-", skipped=f"not checked: {exc}", claim=True)
    burn, steps = _schedule(target, plan, bs, h, gamma)
    on = {"backend": Torch()} if backend == "torch" else {}
    try:
        res = sample(target, module, plan, h=h, gamma=gamma, n_chains=n_chains, n_steps=steps, burn_in=burn,
                     batch_size=bs, seed=seed, full_moments=True, x0=target.mean, **on)
    except ValueError as exc:  # a plan this backend cannot run, by name
        return Check(name, None, PROBE_EXPECTED, "-", skipped=f"not checked: {exc}", claim=True)
    if not np.all(res.ok):  # the oracle has a stationary law at this h: a diverging chain is a kernel bug
        return Check(name, False, PROBE_EXPECTED, _diverged(res.ok, res.diverged_at, h), claim=True)
    iu = np.triu_indices(target.dim)
    outer = res.chain_outer[res.ok]
    z = family_critical(n_plans * (target.dim + len(iu[0])), outer.shape[0])
    se2 = outer.std(axis=0, ddof=1)[iu] / math.sqrt(outer.shape[0])
    worst = max(float(np.max(np.abs(res.mean - exact.mean) / res.mean_se)),
                float(np.max(np.abs(outer.mean(axis=0)[iu] - exact.second_moment[iu]) / (se2 + 1e-300))))
    effect = detectable(np.concatenate([res.mean_se, se2]), gaussian_scales(exact.mean, exact.covariance), z)
    return powered(name, f"MC within {z:.1f} s.e. of the oracle", worst, z, effect, f"{worst:.2f} s.e. at h={h:.3g}",
                   claim=True)


def extrapolation_weights(p: float) -> np.ndarray:
    """``(alpha, beta)`` with ``a h^p + c h^(p+1) = alpha D_1 + beta D_2`` for the model
    ``m(h) = m_0 + a h^p + c h^(p+1)``, ``D_1 = m(h/2) - m(h)``, ``D_2 = m(h/4) - m(h/2)``:
    ``m_0 = m(h) - alpha D_1 - beta D_2`` (``p`` the declared weak order)."""
    rows = np.array([[2.0 ** -p - 1.0, 2.0 ** -(p + 1) - 1.0],
                     [4.0 ** -p - 2.0 ** -p, 4.0 ** -(p + 1) - 2.0 ** -(p + 1)]])
    return np.array([1.0, 1.0]) @ np.linalg.inv(rows)


def target_moments(target) -> np.ndarray:
    """The target's ``(E x_a, E x_a x_b for a <= b)``, in :func:`moment_functions`' order."""
    iu = np.triu_indices(target.dim)
    return np.concatenate([target.mean, (target.covariance + np.outer(target.mean, target.mean))[iu]])


def target_law_check(module, plan, target, gamma, batch_size, n_chains, seed, n_plans, *, h: float,
                     order: float | None, claim: bool) -> Check:
    """``target_law[plan]``: the chains extrapolated with the declared weak ``order`` against the
    target's law (see the module docstring), starting from the step ``h``.

    Parameters
    ----------
    module : Scheme
        The scheme, resolved.
    plan : Plan
        The plan, resolved.
    target : GaussianTarget
        The target.
    gamma : float
        Friction.
    batch_size : int
        Batch size of a minibatch plan (``full`` uses all the data).
    n_chains, seed : int
        Chains and seed.
    n_plans : int
        Plans checked in the same run (the family of the Bonferroni level).
    h : float
        The coarsest step (the pairs run at ``h, h/2`` and ``h/2, h/4``).
    order : float or None
        The declared weak order ``p`` of the bias model; ``None``: inconclusive.
    claim : bool
        ``False`` measures and asserts nothing (``rr``).

    Returns
    -------
    Check
        With the ladder of the largest moment bias at ``h``, ``h/2``, ``h/4`` as its ``hs`` and
        ``errors``.
    """
    from bias._coupled import coupled_run
    from integrators import RunSpec
    from integrators.seeds import derive

    name = f"target_law[{plan.NAME}]"
    if order is None:
        return Check(name, None, TARGET_EXPECTED, "-", skipped="not checked: no weak order declared", claim=claim)
    bs = None if plan.NAME == "full" else batch_size
    d = target.dim
    n_tests = d + d * (d + 1) // 2
    levels = []
    for level, coarse in enumerate((h, h / 2)):
        burn, steps = _schedule(target, plan, bs, coarse, gamma,
                                TARGET_STEPS if level == 0 else int(SECOND_PAIR_TIME * TARGET_STEPS * h / coarse))
        run = coupled_run(RunSpec.from_options(target, module, plan, h=coarse, gamma=gamma, n_chains=n_chains,
                                               n_steps=steps, burn_in=burn,
                                               seed=derive(seed, "verify", "target_law", plan.NAME, level),
                                               batch_size=bs, test_functions=moment_functions, n_test_functions=n_tests,
                                               x0=target.mean), n_chunks=1)
        if not np.all(run.ok):
            try:  # diverged where the step has a stationary law: a failure; where it has none: no verdict
                stationary_moments(target, module, plan, coarse, gamma, bs, maps="probed")
            except UnstableStepError as exc:
                return Check(name, None, TARGET_EXPECTED, "-", claim=claim, skipped=f"not checked: {exc}")
            return Check(name, False if claim else None, TARGET_EXPECTED,
                         _diverged(run.ok, run.diverged_at, coarse), claim=claim)
        levels.append(run)
    alpha, beta = extrapolation_weights(order)
    first, second = levels
    d1 = first.fine[:, 0] - first.coarse[:, 0]
    d2 = second.fine[:, 0] - second.coarse[:, 0]
    limit = first.coarse[:, 0] - alpha * d1 - beta * d2 - target_moments(target)  # (n_chains, n_tests)
    bias = limit.mean(axis=0)
    se = limit.std(axis=0, ddof=1) / math.sqrt(n_chains)
    exact = target_moments(target)
    ladder = [float(np.max(np.abs(r.mean(axis=0) - exact)))
              for r in (first.coarse[:, 0], first.fine[:, 0], second.fine[:, 0])]
    z = family_critical(n_plans * n_tests, n_chains)
    worst = float(np.max(np.abs(bias) / np.maximum(se, 1e-300)))
    k = int(np.argmax(np.abs(bias) / np.maximum(se, 1e-300)))
    measured = (f"limit {worst:.2f} s.e. from the target (worst: {_statistic(k, d)} off by {bias[k]:.2e}, "
                f"s.e. {se[k]:.1e}); largest bias at h={h:.3g}: {ladder[0]:.2e}; declared order {order:g} imposed on "
                f"h, h/2, h/4")
    effect = detectable(se, gaussian_scales(target.mean, target.covariance), z)
    return powered(name, f"extrapolated MC law = target within {z:.1f} s.e.", worst, z, effect, measured,
                   claim=claim, hs=[h, h / 2, h / 4], errors=ladder)


def _diverged(ok, diverged_at, h) -> str:
    first = int(diverged_at[diverged_at >= 0].min())
    return f"diverged: {int(np.sum(~ok))} of {ok.size} chains at h={h:.3g} (first at step {first})"


def _statistic(k: int, d: int) -> str:
    """The name of statistic ``k`` of :func:`moment_functions`: ``E x1`` or ``E x1 x2``."""
    if k < d:
        return f"E x{k + 1}"
    pairs = [(a, b) for a in range(d) for b in range(a, d)]
    a, b = pairs[k - d]
    return f"E x{a + 1} x{b + 1}"
