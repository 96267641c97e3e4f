"""Schemes and a plan with planted bugs, written as a user would write a scheme (against the
same path data and force callback, compiled by Numba), for the tests of ``verify``."""

import math

import numba as nb
import numpy as np

from integrators import Plan, Scheme
from integrators._bounce import reflect
from integrators.plans import n_batches, next_batches, shuffle_lanes
from integrators.plans._partitions import ordered_partitions, partition_plan_functions
from integrators.plans.sms import PLAN as sms
from integrators.schemes.baoab import SCHEME as baoab
from integrators.schemes.ubu import SCHEME as ubu


@nb.njit(nogil=True)
def ubu_independent_j_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose ``J`` is not the one of ``dW``'s interval: each half step takes the other half's
    ``J`` (same law, independent of its ``dW``)."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, a, c] - J[1, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[1, a, c]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            kicked = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, a, c] - J[0, a, c])
            v[c, a] = eta * kicked + v_noise * J[0, a, c]
    reflect(x, v, box)


@nb.njit(nogil=True)
def ubu_half_kick_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose kick uses ``h / 2`` instead of ``h``."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, a, c] - J[0, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, a, c]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            kicked = v[c, a] - 0.5 * h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * kicked + v_noise * J[1, a, c]
    reflect(x, v, box)


@nb.njit(nogil=True)
def ubu_noise_index_mod_2_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose path index is taken modulo 2 (written for a 2-D problem): right in 2-D, and from
    the third coordinate on each coordinate reuses the noise of coordinate ``a % 2``."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        k = a % 2
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, k, c] - J[0, k, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, k, c]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        k = a % 2
        for c in range(n):
            kicked = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, k, c] - J[1, k, c])
            v[c, a] = eta * kicked + v_noise * J[1, k, c]
    reflect(x, v, box)


def baoab_sqrt_one_minus_eta_coefficients(h, gamma):
    """BAOAB's O step with noise ``sqrt(1 - eta) Z`` instead of ``sqrt(1 - eta^2) Z``: in path
    variables ``sqrt(2 gamma) J`` is ``sqrt(1 - eta^2) Z``, so the noise is scaled by
    ``sqrt((1 - eta) / (1 - eta^2)) = 1 / sqrt(1 + eta)``."""
    coef = baoab.coefficients(h, gamma)
    coef[2] /= math.sqrt(1.0 + coef[1])
    return coef


UBU_INDEPENDENT_J = Scheme("ubu_independent_j", ubu_independent_j_step, ubu.coefficients, 2.0, 2.0)
UBU_HALF_KICK = Scheme("ubu_half_kick", ubu_half_kick_step, ubu.coefficients, 2.0, 2.0)
UBU_NOISE_INDEX_MOD_2 = Scheme("ubu_noise_index_mod_2", ubu_noise_index_mod_2_step, ubu.coefficients, 2.0, 2.0)
BAOAB_SQRT_ONE_MINUS_ETA = Scheme("baoab_sqrt_1_minus_eta", baoab.step, baoab_sqrt_one_minus_eta_coefficients,
                                  2.0, 1.0, FSAL=True)


def ubu_noise_2_percent_hot_coefficients(h, gamma):
    """UBU's coefficients with both noise factors 2 % too large: the dynamics run at temperature
    ``1.02^2``, every stationary variance about 4 % too large at every ``h``."""
    coef = ubu.coefficients(h, gamma)
    coef[3] *= 1.02
    coef[4] *= 1.02
    return coef


UBU_NOISE_2_PERCENT_HOT = Scheme("ubu_noise_2_percent_hot", ubu.step, ubu_noise_2_percent_hot_coefficients, 2.0, 2.0)


FAST_PATH_FROM = 32  # blocks with more chains than the probe's (1 + 7d + 3) take the fast path
_UBU_STEP = ubu.step  # a global Numba can call (the Scheme object is not one)


@nb.njit(nogil=True)
def ubu_block_fast_path_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU with a "fast path" for blocks of :data:`FAST_PATH_FROM` chains or more whose first
    position update forgets ``-J``: the probe (a block of at most 25 chains) reads the right step,
    the kernel (blocks of up to 256) runs the wrong one."""
    if x.shape[0] < FAST_PATH_FROM:
        _UBU_STEP(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)
        return
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for c in range(n):
        for a in range(d):
            x[c, a] += x_from_v * v[c, a] + x_noise * dW[0, a, c]
            v[c, a] = eta * v[c, a] + v_noise * J[0, a, c]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for c in range(n):
        for a in range(d):
            kicked = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * kicked + v_noise * J[1, a, c]
    reflect(x, v, box)


UBU_BLOCK_FAST_PATH = Scheme("ubu_block_fast_path", ubu_block_fast_path_step, ubu.coefficients, 2.0, 2.0)


@nb.njit(nogil=True)
def forward_twice_rule(plan_code, perm, position, batch_size, states, out, source, u):
    """SMS whose backward sweep is not reversed: ``w_1 ... w_m`` twice over one partition."""
    n_data, n = perm.shape
    m = (n_data + batch_size - 1) // batch_size
    p = position[0]
    if p == 0:
        shuffle_lanes(perm, states, u)
    j = p if p < m else p - m
    position[0] = (p + 1) % (2 * m)
    start = j * batch_size
    stop = min(start + batch_size, n_data)
    for i in range(start, stop):
        for c in range(n):
            out[i - start, c] = perm[i, c]
    return stop - start


def forward_twice_outcomes(n_data, batch_size):
    orders = list(ordered_partitions(n_data, batch_size))
    return [(1.0 / len(orders), list(o) + list(o)) for o in orders]


SMS_NOT_REVERSED = Plan("sms_not_reversed", forward_twice_outcomes, sms.force_scale, sms.period,
                        WEAK_ORDER=2.0, STRONG_ORDER=2.0, BATCH_RULE=forward_twice_rule)

def batch_mean_scale(n_data, batch_size):
    """The factor of the batch *mean* (``N_m / N_b`` times the sum) where the force wants the sum
    times ``N_m``: the same at batch size 1, too small by ``N_b`` above it."""
    return n_batches(n_data, batch_size) / batch_size


# sms whose force scales the batch mean instead of the sum (the kernel's own sms batch rule)
SMS_BATCH_MEAN = Plan("sms_batch_mean", sms.outcomes, batch_mean_scale, sms.period, WEAK_ORDER=2.0,
                      STRONG_ORDER=2.0, KIND=sms.KIND, batch_index=sms.batch_index, SWEEPS=sms.SWEEPS)

__all__ = ["BAOAB_SQRT_ONE_MINUS_ETA", "SMS_BATCH_MEAN", "SMS_NOT_REVERSED", "UBU_BLOCK_FAST_PATH", "UBU_HALF_KICK",
           "UBU_INDEPENDENT_J", "UBU_NOISE_2_PERCENT_HOT", "UBU_NOISE_INDEX_MOD_2", "next_batches", "np"]


# -- affine-exact bugs: right for affine forces (invisible on Gaussian targets), wrong for nonlinear ones
@nb.njit(nogil=True, inline="always")
def _shift(x, offset):
    """Move every coordinate of every chain by ``offset`` (in place)."""
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += offset


@nb.njit(nogil=True, inline="always")
def _kick(v, g, weight):
    n, d = v.shape
    for a in range(d):
        for c in range(n):
            v[c, a] -= weight * g[c, a]


@nb.njit(nogil=True)
def ubu_curvature_shortcut_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose kick adds a "curvature correction" ``(h/2) [g(x+1) - 2 g(x) + g(x-1)]``: a second
    difference over a unit stencil, zero for affine forces, an ``O(h)`` force error otherwise
    (weak order 1 on nonlinear forces)."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, a, c] - J[0, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, a, c]
    reflect(x, v, box)
    _shift(x, 1.0)
    force(x, g, batch, n_batch, scale, tdata)
    _kick(v, g, 0.5 * h * h)
    _shift(x, -2.0)
    force(x, g, batch, n_batch, scale, tdata)
    _kick(v, g, 0.5 * h * h)
    _shift(x, 1.0)
    force(x, g, batch, n_batch, scale, tdata)
    _kick(v, g, h * (1.0 - h))
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[1, a, c]
    reflect(x, v, box)


@nb.njit(nogil=True)
def ubu_stencil_force_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose force is the average ``(g(x + 1) + g(x - 1)) / 2`` over a unit stencil: equal to
    ``g(x)`` for affine forces, the gradient of a smoothed potential otherwise (an ``O(1)`` bias
    that keeps the weak order 2: only a comparison with the target's expectations sees it)."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, a, c] - J[0, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, a, c]
    reflect(x, v, box)
    _shift(x, 1.0)
    force(x, g, batch, n_batch, scale, tdata)
    _kick(v, g, 0.5 * h)
    _shift(x, -2.0)
    force(x, g, batch, n_batch, scale, tdata)
    _kick(v, g, 0.5 * h)
    _shift(x, 1.0)
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[1, a, c]
    reflect(x, v, box)


UBU_CURVATURE_SHORTCUT = Scheme("ubu_curvature_shortcut", ubu_curvature_shortcut_step, ubu.coefficients, 2.0, 2.0)
UBU_STENCIL_FORCE = Scheme("ubu_stencil_force", ubu_stencil_force_step, ubu.coefficients, 2.0, 2.0)


# -- bugs at degenerate settings: each is bit for bit the right step at friction 1, in three
# dimensions or fewer, with an inactive box, or for a scheme whose strong order is 1
def ubu_forgets_over_gamma_coefficients(h, gamma):
    """UBU's position coefficient ``(1 - eta) / gamma`` written ``1 - eta``: right at ``gamma = 1``."""
    coef = ubu.coefficients(h, gamma)
    coef[2] *= gamma
    return coef


def baoab_noise_sqrt_2_coefficients(h, gamma):
    """BAOAB's noise ``sqrt(2 gamma)`` written ``sqrt(2)``: right at ``gamma = 1``."""
    coef = baoab.coefficients(h, gamma)
    coef[2] = math.sqrt(2.0)
    return coef


UBU_FORGETS_OVER_GAMMA = Scheme("ubu_forgets_over_gamma", ubu.step, ubu_forgets_over_gamma_coefficients, 2.0, 2.0)
BAOAB_NOISE_SQRT_2 = Scheme("baoab_noise_sqrt_2", baoab.step, baoab_noise_sqrt_2_coefficients, 2.0, 1.0, FSAL=True)


@nb.njit(nogil=True)
def ubu_noise_loop_min_d_3_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose noise loops run over ``min(d, 3)`` coordinates (written for a 3-D problem): from the
    fourth coordinate on, the chains move without noise."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for half in range(2):
        if half == 1:
            reflect(x, v, box)
            force(x, g, batch, n_batch, scale, tdata)
            for a in range(d):
                for c in range(n):
                    v[c, a] -= h * g[c, a]
        for a in range(d):
            for c in range(n):
                x[c, a] += x_from_v * v[c, a]
                v[c, a] = eta * v[c, a]
        for a in range(min(d, 3)):
            for c in range(n):
                x[c, a] += x_noise * (dW[half, a, c] - J[half, a, c])
                v[c, a] += v_noise * J[half, a, c]
    reflect(x, v, box)


@nb.njit(nogil=True)
def ubu_index_mod_3_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU whose path index is taken modulo 3: right up to 3-D, from the fourth coordinate on each
    reuses the noise of coordinate ``a % 3``."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        k = a % 3
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, k, c] - J[0, k, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, k, c]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        k = a % 3
        for c in range(n):
            kicked = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, k, c] - J[1, k, c])
            v[c, a] = eta * kicked + v_noise * J[1, k, c]
    reflect(x, v, box)


UBU_NOISE_LOOP_MIN_D_3 = Scheme("ubu_noise_loop_min_d_3", ubu_noise_loop_min_d_3_step, ubu.coefficients, 2.0, 2.0)
UBU_INDEX_MOD_3 = Scheme("ubu_index_mod_3", ubu_index_mod_3_step, ubu.coefficients, 2.0, 2.0)


@nb.njit(nogil=True)
def ubu_forgets_first_reflect_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU with no ``reflect`` after its first half step: the force is evaluated outside the box
    (the last ``reflect`` folds the position back, so it ends inside)."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, a, c] - J[0, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, a, c]
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            kicked = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * kicked + v_noise * J[1, a, c]
    reflect(x, v, box)


UBU_FORGETS_FIRST_REFLECT = Scheme("ubu_forgets_first_reflect", ubu_forgets_first_reflect_step, ubu.coefficients,
                                   2.0, 2.0)


@nb.njit(nogil=True, inline="always")
def off_by_one_backward_index(position, n_batches):
    """sms's backward sweep off by one: ``w_1 ... w_m, w_(m-1) ... w_1, w_m``."""
    if position < n_batches:
        return position
    return (3 * n_batches - 2 - position) % n_batches


_off_force_scale, _off_period, _off_count, _off_outcomes = partition_plan_functions(2, off_by_one_backward_index)
# a weak slope of about 2 on every target; only a strong order of 2 (UBU's) sees it, BAOAB's 1 does not
SMS_OFF_BY_ONE = Plan("sms_off_by_one", _off_outcomes, _off_force_scale, _off_period, WEAK_ORDER=2.0,
                      STRONG_ORDER=2.0, KIND="partition", batch_index=off_by_one_backward_index, SWEEPS=2,
                      count_orders=_off_count)


@nb.njit(nogil=True)
def ubu_scratch_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """UBU that keeps its kicked velocities in a scratch array it allocates: right, and runs when
    called alone (the probe), but a kernel compiled without Numba's runtime cannot allocate."""
    h, eta, x_from_v, v_noise, x_noise = coef[0], coef[1], coef[2], coef[3], coef[4]
    n, d = x.shape
    kicked = np.empty((n, d))
    for a in range(d):
        for c in range(n):
            x[c, a] += x_from_v * v[c, a] + x_noise * (dW[0, a, c] - J[0, a, c])
            v[c, a] = eta * v[c, a] + v_noise * J[0, a, c]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            kicked[c, a] = v[c, a] - h * g[c, a]
            x[c, a] += x_from_v * kicked[c, a] + x_noise * (dW[1, a, c] - J[1, a, c])
            v[c, a] = eta * kicked[c, a] + v_noise * J[1, a, c]
    reflect(x, v, box)


UBU_SCRATCH = Scheme("ubu_scratch", ubu_scratch_step, ubu.coefficients, 2.0, 2.0)
