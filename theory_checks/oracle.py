"""The exact oracle for Gaussian targets: stationary moments of every scheme x plan, no Monte Carlo.

For Gaussian data terms the minibatch force is affine, ``G(x, w) = H_w x - b_w``, so one step of
any scheme with batch ``w`` is an affine map of ``z = (x, v)`` plus Gaussian path noise:

    z' = A_w z + a_w + B_w xi,      xi = (dW_1, J_1, dW_2, J_2) ~ N(0, Q)   (two half steps)

(first-same-as-last schemes are written in rotated form, see their ``affine_ops``, so that one
transition uses one batch; the x-marginal is unchanged).  Then

* ``full``: ``m = A m + a`` and ``S = A S A^T + B Q B^T`` (discrete Lyapunov equation);
* ``iid``: ``w`` is fresh every step: the mean solves ``m = E[A_w] m + E[a_w]`` and the second
  moment the linear fixed point ``M = E[A_w M A_w^T + A_w m a_w^T + a_w m^T A_w^T + a_w a_w^T] + E[B Q B^T]``;
* ``rr`` / ``sms``: the maps of one period (one or two epochs) are composed for every possible
  order of the batches (exact enumeration, all orders equally likely), the period-boundary law is
  the fixed point of that random affine system, and the moments are averaged over the positions
  of the period.

The step's map is read off the scheme's declared ``affine_ops`` (``maps="declared"``) or off
its compiled step by probing (``maps="probed"``, :mod:`theory_checks._probe`; the state is then
``(x, v, g)`` with the cached force, and no rotation is needed), and the force's ``(H_w, b_w)``
off the Numba force itself (control variates included), so the oracle referees the very code
that runs.  Schemes and plans come from their registries (``integrators.schemes.SCHEMES``,
``integrators.plans.PLANS``) or are passed as objects.  A step size whose (mean-square)
spectral radius is at least 1 is reported unstable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from integrators._brownian import pair_covariance
from integrators._validation import batch_size_for, boolean, finite_array, positive_float
from integrators.plans import count_orders as plan_count_orders
from integrators.plans import resolve_plan
from integrators.schemes import resolve_scheme
from integrators.targets import GaussianTarget
from integrators.targets._force import force_data, force_for
from theory_checks._probe import checked_batch, probe_step_map

_MAPS = ("declared", "probed")
_AT = ("average", "period_end")  # the law averaged over the period's steps, or at its ends

_MAX_ORDERS = 5000


class NonFiniteStepError(ValueError):
    """A step that turns finite inputs into non-finite numbers at some ``(h, gamma)``: it has no law."""


class UnstableStepError(ValueError):
    """The scheme x plan at this step size has no stationary law (spectral radius >= 1)."""


@dataclass
class OracleMoments:
    """Exact stationary moments, time-averaged over the plan's period.

    Parameters
    ----------
    scheme, plan : str
        The sampler's scheme and plan.
    h : float
        The step size.
    gamma : float
        The friction.
    mean : numpy.ndarray
        ``E[x]``, shape ``(d,)``.
    second_moment : numpy.ndarray
        ``E[x x^T]``, shape ``(d, d)``.
    v_second_moment : numpy.ndarray
        ``E[v v^T]`` at the state the transition map carries.
    radius : float
        The spectral radius of the transition (mean-square for random plans).
    """

    scheme: str
    plan: str
    h: float
    gamma: float
    mean: np.ndarray            # E[x]
    second_moment: np.ndarray   # E[x x^T]
    v_second_moment: np.ndarray  # E[v v^T] at the state the transition map carries (the tour shows it)
    radius: float               # spectral radius (mean-square for random plans)

    @property
    def covariance(self) -> np.ndarray:
        """The covariance of ``x``, ``E[x x^T] - E[x] E[x]^T``."""
        return self.second_moment - np.outer(self.mean, self.mean)

    @property
    def variance(self) -> np.ndarray:
        """The variances of the coordinates of ``x`` (the covariance's diagonal)."""
        return np.diag(self.covariance).copy()


# ----------------------------------------------------------------------------- step maps
def affine_force(target: GaussianTarget, batch, scale: float, control_variate=False, x_ref=None):
    """``(H, b)`` with ``G(x, batch) = H x - b`` (shapes ``(d, d)``, ``(d,)``), read off the Numba force at
    ``scale``, with the control variate at ``x_ref`` (None: the mode) if asked."""
    d = target.dim
    force = force_for(target)
    tdata = force_data(target, control_variate, x_ref)
    batch = checked_batch(target, batch).astype(np.int64)
    out = np.zeros(d)
    force(np.zeros(d), out, batch, len(batch), scale, tdata)
    b = -out.copy()
    hess = np.zeros((d, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = 1.0
        force(e, out, batch, len(batch), scale, tdata)
        hess[:, j] = out + b
    return hess, b


def step_map(scheme, hess: np.ndarray, b: np.ndarray, h: float, gamma: float):
    """``(A, a, C)`` of one transition, from the scheme's declared ``affine_ops`` (``ValueError`` without
    them, or for an unknown operation): ``z' = A z + a + C xi`` with ``z = (x, v)``, ``xi`` the 4d path
    noise and the force ``G(x) = H x - b`` (``hess = H``); shapes ``(2d, 2d)``, ``(2d,)``, ``(2d, 4d)``."""
    module = resolve_scheme(scheme)
    if getattr(module, "affine_ops", None) is None:
        raise ValueError(f"scheme {module.NAME!r} declares no affine_ops; use maps='probed'")
    return _ops_map(module.affine_ops(h, gamma), hess, b, h, gamma, module.NAME)


def rotation_map(scheme, hess: np.ndarray, b: np.ndarray, h: float, gamma: float, *, noise: bool = False):
    """``(K, k)``: the map from the state after a step to the rotated state of ``affine_ops``
    (identity for schemes that are not first-same-as-last), without the noise it undoes; with
    ``noise=True``, ``(K, k, N)``: the rotated state is ``K z + k + N xi`` with ``xi`` the step's
    own path noise (nonzero columns of ``N``: the slots a rotation that crosses an O step undoes,
    which in the rotated transition belong to the previous step, see :func:`rotation_slots`)."""
    module = resolve_scheme(scheme)
    rotation = getattr(module, "rotation_ops", None)
    ops = rotation(h, gamma) if rotation is not None else []
    mat, vec, noise_map = _ops_map(ops, hess, b, h, gamma, module.NAME)
    return (mat, vec, noise_map) if noise else (mat, vec)


def rotation_slots(noise_map: np.ndarray) -> list[int]:
    """The path-noise slots (0 dW1, 1 J1, 2 dW2, 3 J2), in order, on which a rotation's noise map ``N``
    (``rotation_map(..., noise=True)``, ``(2d, 4d)``) depends: in the rotated transition of
    ``affine_ops`` those slots carry the previous step's noise, the others the current step's."""
    d = noise_map.shape[1] // 4
    return [k for k in range(4) if np.any(noise_map[:, k * d:(k + 1) * d] != 0.0)]


def _ops_map(ops, hess: np.ndarray, b: np.ndarray, h: float, gamma: float, scheme: str = "?"):
    """``(A, a, C)`` of a list of affine operations (``kick``, ``drift``, ``o``, ``u``, ``em``)."""
    d = hess.shape[0]
    n = 6 * d + 1  # (x, v, dW1, J1, dW2, J2, 1)
    eye = np.eye(d)
    xs, vs, one = slice(0, d), slice(d, 2 * d), 6 * d
    s = math.sqrt(2.0 * gamma)

    def slot(k):
        return slice(2 * d + k * d, 2 * d + (k + 1) * d)

    total = np.eye(n)
    for op in ops:
        m = np.eye(n)
        kind = op[0]
        if kind == "kick":  # v -= c (H x - b)
            c = op[1]
            m[vs, xs] = -c * hess
            m[vs, one] = c * b
        elif kind == "drift":
            m[xs, vs] = op[1] * eye
        elif kind == "o":  # v = e^{-gamma t} v + sqrt(2 gamma) sum coef * xi_slot
            m[vs, vs] = math.exp(-gamma * op[1]) * eye
            for k, coef in op[2]:
                m[vs, slot(k)] = s * coef * eye
        elif kind == "u":  # exact OU flow over h/2 with the pair of that half step
            half = op[1]
            eta = math.exp(-gamma * h / 2)
            m[xs, vs] = -math.expm1(-gamma * h / 2) / gamma * eye
            m[xs, slot(2 * half)] = s / gamma * eye
            m[xs, slot(2 * half + 1)] = -s / gamma * eye
            m[vs, vs] = eta * eye
            m[vs, slot(2 * half + 1)] = s * eye
        elif kind == "em":  # x' = x + h v, v' = v - h G(x) - h gamma v + sqrt(2 gamma) dW
            hh = op[1]
            m[xs, vs] = hh * eye
            m[vs, xs] = -hh * hess
            m[vs, vs] = (1.0 - hh * gamma) * eye
            m[vs, one] = hh * b
            m[vs, slot(0)] = s * eye
            m[vs, slot(2)] = s * eye
        else:
            raise ValueError(f"unknown affine op {kind!r} in scheme {scheme!r}")
        total = m @ total
    return total[: 2 * d, : 2 * d], total[: 2 * d, one], total[: 2 * d, 2 * d: 6 * d]


def path_noise_covariance(d: int, h: float, gamma: float) -> np.ndarray:
    """Covariance ``(4d, 4d)`` of ``xi = (dW_1, J_1, dW_2, J_2)`` over the two half steps of one step."""
    pair = pair_covariance(gamma, h / 2)
    cov = np.zeros((4 * d, 4 * d))
    for half in (0, 1):
        for p in range(2):
            for q in range(2):
                i, j = 2 * half + p, 2 * half + q
                cov[i * d:(i + 1) * d, j * d:(j + 1) * d] = pair[p, q] * np.eye(d)
    return cov


# --------------------------------------------------------------------------- the plans' laws
def count_orders(plan, n_data: int, batch_size: int) -> int:
    """Number of batch orders the oracle enumerates per period (:func:`integrators.plans.count_orders`)."""
    return plan_count_orders(plan, n_data, batch_size)


def _plan_outcomes(plan, n_data: int, batch_size: int):
    """``[(probability, [batch, batch, ...]), ...]``: one period's batch sequences and their law,
    as the plan declares them (``outcomes``), within the enumeration limit."""
    module = resolve_plan(plan)
    n_orders = count_orders(module, n_data, batch_size)
    if n_orders > _MAX_ORDERS:
        raise ValueError(
            f"plan {module.NAME!r} with {n_data} data terms and batch_size={batch_size} has {n_orders} "
            f"batch orders per period; exact enumeration is limited to {_MAX_ORDERS}")
    return module.outcomes(n_data, batch_size)


def _solve_random_affine(outcomes):
    """Stationary mean and second moment of ``z' = Phi z + phi + noise`` with (Phi, phi) drawn
    from ``outcomes = [(p, Phi, phi, noise_cov), ...]`` independently each transition."""
    n = outcomes[0][1].shape[0]
    e_phi_mat = sum(p * Phi for p, Phi, _, _ in outcomes)
    e_phi = sum(p * phi for p, _, phi, _ in outcomes)
    # X -> E[Phi X Phi^T] on symmetric X only (n(n+1)/2 unknowns, a seventh of the eigenvalue work at
    # d = 7): the map keeps the cone of positive semi-definite matrices, so its spectral radius has a
    # symmetric eigenvector and is the radius on symmetric matrices.  Entry ((i, j), (k, l)) of
    # E[Phi x Phi] is E[Phi_ik Phi_jl], summed over the outcomes as one batched product.
    iu, ju = np.triu_indices(n)
    probs = np.array([p for p, _, _, _ in outcomes])
    phis = np.array([Phi for _, Phi, _, _ in outcomes])                        # (K, n, n)
    rows = np.matmul((phis[:, iu, :] * probs[:, None, None]).transpose(1, 2, 0), phis[:, ju, :].transpose(1, 0, 2))
    sym = rows[:, iu, ju] + np.where(iu == ju, 0.0, 1.0) * rows[:, ju, iu]
    if len(outcomes) == 1:  # the eigenvalues of Phi x Phi are products of Phi's
        radius = float(np.max(np.abs(np.linalg.eigvals(outcomes[0][1]))))
    else:
        radius = float(np.max(np.abs(np.linalg.eigvals(sym)))) ** 0.5
    if radius >= 1.0 - 1e-12:
        raise UnstableStepError(f"mean-square spectral radius {radius:.6g} >= 1")
    mean = np.linalg.solve(np.eye(n) - e_phi_mat, e_phi)
    rhs = np.zeros((n, n))
    for p, Phi, phi, noise in outcomes:
        cross = np.outer(Phi @ mean, phi)
        rhs += p * (cross + cross.T + np.outer(phi, phi) + noise)
    upper = np.linalg.solve(np.eye(iu.size) - sym, 0.5 * (rhs + rhs.T)[iu, ju])
    second = np.zeros((n, n))
    second[iu, ju] = upper
    second[ju, iu] = upper
    return mean, second, radius


def stationary_moments(target: GaussianTarget, scheme, plan, h: float, gamma: float = 1.0,
                       batch_size: int | None = None, control_variate=False, x_ref=None, *,
                       maps: str | None = None, at: str = "average", backend: str | None = None) -> OracleMoments:
    """Exact stationary moments of ``scheme x plan`` on a Gaussian target, time-averaged over
    the plan's period.  ``maps``: ``"declared"`` (the scheme's ``affine_ops``), ``"probed"``
    (its step, probed on ``backend``: ``"numba"``, or ``"torch"`` for its tensor step; default
    Numba, torch for a scheme with no Numba step), default declared when the scheme has
    ``affine_ops``.  ``at``:
    ``"average"`` over the steps of the plan's period, or ``"period_end"`` (the law at the ends
    of periods, where the palindrome of ``sms`` closes).

    Parameters
    ----------
    target : GaussianTarget
        The target.
    scheme : str or Scheme
        A registered scheme's name or a scheme object.
    plan : str or Plan
        A registered plan's name or a plan object.
    h : float
        The step size.
    gamma : float, default 1.0
        The friction.
    batch_size : int or None, default None
        The batch size; None (plan ``full`` only): all the data.
    control_variate : bool, default False
        Whether the force uses the control variate.
    x_ref : array_like or None, optional
        The control variate's reference point (None: the mode).
    maps : str or None, optional
        ``"declared"`` or ``"probed"``.
    at : str, default "average"
        ``"average"`` or ``"period_end"``.
    backend : str or None, optional
        The backend probed with ``maps="probed"``.

    Returns
    -------
    OracleMoments
        The moments.

    Raises
    ------
    UnstableStepError
        When there is no stationary law (a ``ValueError``).
    NonFiniteStepError
        When a step gives non-finite numbers from finite inputs (a ``ValueError``).
    ValueError
        If the target is not a ``GaussianTarget``, an option is unknown or out of range, or
        ``batch_size`` is missing for a plan other than ``full``.
    """
    if not isinstance(target, GaussianTarget):
        raise ValueError(f"the exact oracle needs a GaussianTarget, got {type(target).__name__}")
    module = resolve_scheme(scheme)
    plan_module = resolve_plan(plan)
    scheme, plan = module.NAME, plan_module.NAME
    if maps is None:
        maps = "declared" if getattr(module, "affine_ops", None) is not None else "probed"
    if maps not in _MAPS:
        raise ValueError(f"unknown maps {maps!r}; choose from {_MAPS}")
    if at not in _AT:
        raise ValueError(f"unknown at {at!r}; choose from {_AT}")
    h, gamma = positive_float("h", h), positive_float("gamma", gamma)
    control_variate = boolean("control_variate", control_variate)
    n_data, d = target.n_data, target.dim
    if batch_size is None and plan == "full":
        batch_size = n_data
    batch_size = batch_size_for(target, batch_size, plan=plan)
    scale = plan_module.force_scale(n_data, batch_size)
    noise_cov = path_noise_covariance(d, h, gamma)
    cache: dict = {}

    def batch_map(batch):
        key = tuple(batch)
        if key not in cache:
            if maps == "probed":
                probed = probe_step_map(module, target, key, scale, h, gamma, control_variate, x_ref,
                                        backend=backend)
                a_mat, a_vec, c_mat = probed.A, probed.a, probed.C
            else:
                hess, b = affine_force(target, key, scale, control_variate, x_ref)
                a_mat, a_vec, c_mat = step_map(module, hess, b, h, gamma)
            if not all(np.all(np.isfinite(m)) for m in (a_mat, a_vec, c_mat)):
                raise NonFiniteStepError(
                    f"scheme {scheme!r}: one step at h={h:g}, gamma={gamma:g} gives non-finite numbers from finite "
                    f"inputs (its coefficients there: {np.asarray(module.coefficients(h, gamma)).tolist()})")
            cache[key] = (a_mat, a_vec, c_mat @ noise_cov @ c_mat.T)
        return cache[key]

    n = 3 * d if maps == "probed" else 2 * d
    per_period = []  # per outcome: (p, list of partial (Phi_j, phi_j, noise_j) for j = 1..P)
    for p, sequence in _plan_outcomes(plan_module, n_data, batch_size):
        partial = []
        phi_mat, phi_vec, noise = np.eye(n), np.zeros(n), np.zeros((n, n))
        for batch in sequence:
            a_mat, a_vec, q = batch_map(batch)
            phi_mat, phi_vec, noise = a_mat @ phi_mat, a_mat @ phi_vec + a_vec, a_mat @ noise @ a_mat.T + q
            partial.append((phi_mat, phi_vec, noise))
        per_period.append((p, partial))
    try:
        mean, second, radius = _solve_random_affine(
            [(p, *partial[-1]) for p, partial in per_period])
    except UnstableStepError as exc:
        raise UnstableStepError(f"{scheme} x {plan} at h={h:g}, gamma={gamma:g} is unstable: {exc}") from None
    if at == "period_end":
        return OracleMoments(scheme, plan, h, gamma, mean[:d], second[:d, :d], second[d:, d:], radius)
    # time average over the period's positions
    avg_mean, avg_second = np.zeros(n), np.zeros((n, n))
    period = len(per_period[0][1])
    for p, partial in per_period:
        for phi_mat, phi_vec, noise in partial:
            m_j = phi_mat @ mean + phi_vec
            cross = np.outer(phi_mat @ mean, phi_vec)
            s_j = phi_mat @ second @ phi_mat.T + cross + cross.T + np.outer(phi_vec, phi_vec) + noise
            avg_mean += p * m_j / period
            avg_second += p * s_j / period
    return OracleMoments(scheme, plan, h, gamma, avg_mean[:d], avg_second[:d, :d], avg_second[d:, d:], radius)


# ------------------------------------------------------------ helpers kept for the full plan
def affine_step_map(scheme, hess, h, gamma):
    """Full-gradient map on ``f(x) = x^T H x / 2``: ``(A, Q)`` with ``z' = A z + noise``, ``noise ~ N(0, Q)``,
    both ``(2d, 2d)``.  Refuses (``ValueError``) a ``hess`` that is not a finite symmetric square
    matrix, and ``h`` or ``gamma`` not positive."""
    hess = finite_array("hess", hess, 2)
    if hess.shape[0] != hess.shape[1] or not np.allclose(hess, hess.T):
        raise ValueError(f"hess must be a symmetric square matrix, got shape {hess.shape}")
    h, gamma = positive_float("h", h), positive_float("gamma", gamma)
    a_mat, _, c_mat = step_map(scheme, hess, np.zeros(hess.shape[0]), h, gamma)
    return a_mat, c_mat @ path_noise_covariance(hess.shape[0], h, gamma) @ c_mat.T


def spectral_radius(scheme, hess, h, gamma) -> float:
    """The spectral radius of the full-gradient map (:func:`affine_step_map`): stable below 1.

    Parameters
    ----------
    scheme : str or Scheme
        A registered scheme's name or a scheme object.
    hess : array_like
        ``H``, symmetric, shape ``(d, d)``.
    h : float
        The step size.
    gamma : float
        The friction.

    Returns
    -------
    float
        The largest modulus of the eigenvalues of ``A``.
    """
    a, _ = affine_step_map(scheme, hess, h, gamma)
    return float(np.max(np.abs(np.linalg.eigvals(a))))


def stationary_covariance(scheme, hess, h, gamma):
    """Exact stationary covariance of ``z = (x, v)`` of the full-gradient scheme (Lyapunov).

    Parameters
    ----------
    scheme : str or Scheme
        A registered scheme's name or a scheme object.
    hess : array_like
        ``H``, symmetric, shape ``(d, d)``.
    h : float
        The step size.
    gamma : float
        The friction.

    Returns
    -------
    numpy.ndarray
        The covariance, shape ``(2d, 2d)``.

    Raises
    ------
    UnstableStepError
        If the spectral radius is >= 1.
    """
    a, q = affine_step_map(scheme, hess, h, gamma)
    if np.max(np.abs(np.linalg.eigvals(a))) >= 1:
        raise UnstableStepError(f"{scheme} at h={h:g}, gamma={gamma:g} is unstable (spectral radius >= 1)")
    return scipy.linalg.solve_discrete_lyapunov(a, q)


def stationary_full(scheme, target, h, gamma):
    """Exact stationary mean of ``x`` and covariance of ``(x, v)`` of ``scheme x full``.

    Parameters
    ----------
    scheme : str or Scheme
        A registered scheme's name or a scheme object.
    target : GaussianTarget
        The target.
    h : float
        The step size.
    gamma : float
        The friction.

    Returns
    -------
    tuple of numpy.ndarray
        The target's mean (the full-gradient schemes keep it) and the covariance of ``(x, v)``.
    """
    return target.mean, stationary_covariance(scheme, target.precision, h, gamma)


__all__ = ["NonFiniteStepError", "OracleMoments", "UnstableStepError", "spectral_radius", "stationary_covariance",
           "stationary_full", "stationary_moments"]
