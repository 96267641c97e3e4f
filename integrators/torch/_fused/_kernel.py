"""The fused chain kernel: one launch advances a block of chains through every step of a run.

Each program holds ``BLOCK`` chains' ``x``, ``v``, the cached force, the divergence step and the
running sums in registers (shape ``[BLOCK, DP]``, ``DP`` the dimension padded to a power of two,
padded columns kept at zero) and, step after step: draws the plan's batch from the plan stream,
the four path normals per coordinate from the path stream (:mod:`integrators.torch._fused._normals`),
runs the scheme's moves before the force, the Gaussian target's minibatch force (with the control
variate when asked), its moves after it, the divergence check (mark the step, park the chain at
zero), and after burn-in the observers: running sums, the first coordinate's histogram (atomic adds
of exact integer counts, so the result does not depend on their order) and its tails, kept samples.

The launch's grid is (blocks of chains, runs): runs of one scheme, target, chain count and observers' layout,
each with its own plan (``kinds``, ``periods``, a row of ``order``), step counts (a row of ``counts``:
steps, burn-in, the kept samples' stride), streams (a row of the keys, or the same keys for all) and state and
outputs (stacked along a leading run axis).  A run's numbers are read from its row of ``params``
(float64 on the device: a Python float argument would be float32):
``[c0 .. c4, L11, L21, L22, scale, bound, hist_lo, hist_hi, inv_width]`` (:data:`PARAMS`).
"""

import triton
import triton.language as tl

from integrators.torch._fused._normals import plan_uniform, step_normals

# the layout of a run's row of the params tensor
N_COEF = 5
N_PARAMS = tl.constexpr(13)
PARAMS = ("c0", "c1", "c2", "c3", "c4", "l11", "l21", "l22", "scale", "bound", "hist_lo", "hist_hi", "inv_width")


MAX_MOVES = 2  # a scheme's moves on each side of its force that the kernel calls (BEFORE1, BEFORE2, ...)


@triton.jit
def no_move(x, v, g, c0, c1, c2, c3, c4, dW1, J1, dW2, J2):
    """The move that fills an unused slot."""
    return x, v


@triton.jit
def _load5(ptr):
    """Five consecutive scalars from ``ptr``."""
    return tl.load(ptr), tl.load(ptr + 1), tl.load(ptr + 2), tl.load(ptr + 3), tl.load(ptr + 4)


@triton.jit
def _column(tile, col, j):
    """Column ``j`` (a scalar or ``[BLOCK]``) of an integer or float tile, ``[BLOCK]``."""
    return tl.sum(tl.where(col == j, tile, 0), axis=1)


@triton.jit
def _shuffle(key, ctr, coln, N_DATA: tl.constexpr, BLOCK: tl.constexpr, NP: tl.constexpr):
    """The period's permutation per chain from the plan uniforms at ``ctr .. ctr + N_DATA``: the
    Fisher-Yates swaps of :func:`integrators.torch._plans.shuffle`."""
    perm = tl.zeros([BLOCK, NP], dtype=tl.int64) + coln
    for i in tl.static_range(N_DATA - 1, 0, -1):
        u = plan_uniform(key, ctr + i)
        j = tl.minimum((u * (i + 1)).to(tl.int64), i)[:, None]
        at_i = _column(perm, coln, i)[:, None]
        at_j = _column(perm, coln, j)[:, None]
        perm = tl.where(coln == i, at_j, tl.where(coln == j, at_i, perm))
    return perm


@triton.jit
def _datum(x, idx, mu_ptr, prec_ptr, ref_ptr, a3, b3, col, cmask,
           D: tl.constexpr, USE_CV: tl.constexpr):
    """``(grad f_i(x), grad f_i(x_ref))`` of the Gaussian datum ``idx`` (``[BLOCK]``) per chain."""
    i2 = idx[:, None]
    mu = tl.load(mu_ptr + i2 * D + col, mask=cmask, other=0.0)
    prec = tl.load(prec_ptr + idx[:, None, None] * (D * D) + a3 * D + b3, mask=(a3 < D) & (b3 < D), other=0.0)
    grad = tl.sum(prec * (x - mu)[:, None, :], axis=2)
    ref = tl.zeros_like(grad)
    if USE_CV:
        ref = tl.load(ref_ptr + i2 * D + col, mask=cmask, other=0.0)
    return grad, ref


# sizes and counts are not specialized on (a new value is no new compilation), nor is the plan's kind: a
# figure's runs share one compiled kernel per scheme
@triton.jit(do_not_specialize=["n_chains", "n_bins", "keep", "order_stride", "keys_stride"])
def chain_kernel(
    x_ptr, v_ptr, g_ptr, diverged_ptr, sum_x_ptr, sum_xx_ptr, sum_outer_ptr, hist_ptr, tails_ptr, samples_ptr,
    path_keys_ptr, plan_keys_ptr, params_ptr, kinds_ptr, periods_ptr, order_ptr, counts_ptr,
    mu_ptr, prec_ptr, p0_ptr, m0_ptr, ref_ptr, ref_sum_ptr,
    n_chains, n_bins, keep, order_stride, keys_stride,
    BEFORE1: tl.constexpr, BEFORE2: tl.constexpr, AFTER1: tl.constexpr, AFTER2: tl.constexpr, FSAL: tl.constexpr,
    D: tl.constexpr, DP: tl.constexpr, N_DATA: tl.constexpr, NP: tl.constexpr, NB: tl.constexpr,
    SHUFFLE: tl.constexpr,
    HAS_PRIOR: tl.constexpr, USE_CV: tl.constexpr,
    FULL_MOMENTS: tl.constexpr, HIST: tl.constexpr, KEEP: tl.constexpr, BLOCK: tl.constexpr,
):
    # axis 1: the runs of one launch (same scheme, step, path and observers; each its own plan and outputs)
    run = tl.program_id(1).to(tl.int64)
    params_ptr += run * N_PARAMS
    order_ptr += run * order_stride
    n_steps = tl.load(counts_ptr + run * 3)
    burn_in = tl.load(counts_ptr + run * 3 + 1)
    stride = tl.load(counts_ptr + run * 3 + 2)
    path_keys_ptr += run * keys_stride  # 0: the runs share their chains' streams
    plan_keys_ptr += run * keys_stride
    kind = tl.load(kinds_ptr + run)
    period = tl.load(periods_ptr + run)
    x_ptr += run * n_chains * D
    v_ptr += run * n_chains * D
    g_ptr += run * n_chains * D
    diverged_ptr += run * n_chains
    sum_x_ptr += run * n_chains * D
    sum_xx_ptr += run * n_chains * D
    if FULL_MOMENTS:
        sum_outer_ptr += run * n_chains * D * D
    if HIST:
        hist_ptr += run * n_bins
        tails_ptr += run * 4
    if KEEP:
        samples_ptr += run * n_chains * keep * D
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rmask = rows < n_chains
    col = tl.arange(0, DP)[None, :]
    cmask = col < D
    m2 = rmask[:, None] & cmask
    a3 = tl.arange(0, DP)[None, :, None]
    b3 = tl.arange(0, DP)[None, None, :]
    coln = tl.arange(0, NP)[None, :]
    at = rows[:, None] * D + col

    c0, c1, c2, c3, c4 = _load5(params_ptr)  # the run's row, in the order of PARAMS
    l11, l21, l22, scale, bound = _load5(params_ptr + 5)
    hist_lo, hist_hi, inv_width = tl.load(params_ptr + 10), tl.load(params_ptr + 11), tl.load(params_ptr + 12)

    x = tl.load(x_ptr + at, mask=m2, other=0.0)
    v = tl.load(v_ptr + at, mask=m2, other=0.0)
    g = tl.zeros_like(x)
    diverged = tl.load(diverged_ptr + rows, mask=rmask, other=0)
    sum_x = tl.zeros([BLOCK, DP], dtype=tl.float64)
    sum_xx = tl.zeros([BLOCK, DP], dtype=tl.float64)
    sum_outer = tl.zeros([BLOCK, DP, DP], dtype=tl.float64)
    tails_below = tl.zeros([BLOCK], dtype=tl.float64)
    tails_below_dist = tl.zeros([BLOCK], dtype=tl.float64)
    tails_above = tl.zeros([BLOCK], dtype=tl.float64)
    tails_above_dist = tl.zeros([BLOCK], dtype=tl.float64)
    path_key = tl.load(path_keys_ptr + rows, mask=rmask, other=0).to(tl.uint64, bitcast=True)[:, None]
    plan_key = tl.load(plan_keys_ptr + rows, mask=rmask, other=0).to(tl.uint64, bitcast=True)
    prior = tl.zeros_like(x)
    ref_sum = tl.zeros_like(x)
    if USE_CV:
        ref_sum = tl.load(ref_sum_ptr + col + 0 * rows[:, None], mask=cmask, other=0.0)

    plan_ctr = tl.zeros([], dtype=tl.int64)
    position = tl.zeros([], dtype=tl.int64)
    perm = tl.zeros([BLOCK, NP], dtype=tl.int64)
    path_ctr = tl.zeros([], dtype=tl.int64)
    dW1 = tl.zeros_like(x)
    dW2 = tl.zeros_like(x)
    J1 = tl.zeros_like(x)
    J2 = tl.zeros_like(x)
    one = tl.full([BLOCK], 1.0, tl.float64)
    # k = 0 draws the first batch for the cached force of a first-same-as-last scheme only
    for k in range(1 - FSAL, n_steps + 1):
        # the force at x on this step's batch: G = grad f_0 + scale * sum_w grad f_i (+ the control variate)
        first = tl.zeros([], dtype=tl.int32)
        if SHUFFLE:  # compiled only where a partition can run: its unrolled swaps grow with N_DATA
            if kind == 2:  # a partition: a fresh permutation at the start of each period
                if position == 0:
                    perm = _shuffle(plan_key, plan_ctr, coln, N_DATA, BLOCK, NP)
                    plan_ctr += N_DATA
                first = tl.load(order_ptr + position) * NB
                position = (position + 1) % period
        if k > 0:
            z0, z1, z2, z3 = step_normals(path_key, path_ctr, col, D)
            path_ctr += 3 * D
            z0 = tl.where(cmask, z0, 0.0)
            z1 = tl.where(cmask, z1, 0.0)
            z2 = tl.where(cmask, z2, 0.0)
            z3 = tl.where(cmask, z3, 0.0)
            dW1 = l11 * z0
            dW2 = l11 * z2
            J1 = l21 * z0 + l22 * z1
            J2 = l21 * z2 + l22 * z3
            x, v = BEFORE1(x, v, g, c0, c1, c2, c3, c4, dW1, J1, dW2, J2)
            x, v = BEFORE2(x, v, g, c0, c1, c2, c3, c4, dW1, J1, dW2, J2)
        if HAS_PRIOR:
            prior = tl.zeros_like(x)
            for b in range(D):  # loops, not unrolled (here and over the batch): unrolled, the largest launches spill
                p0_col = tl.load(p0_ptr + col * D + b, mask=cmask, other=0.0)  # p0[:, b]
                prior += (_column(x, col, b) - tl.load(m0_ptr + b))[:, None] * p0_col
        batch = tl.zeros_like(x)
        batch_ref = tl.zeros_like(x)
        if kind == 0:
            for i in range(N_DATA):
                grad, ref = _datum(x, tl.zeros([BLOCK], dtype=tl.int64) + i, mu_ptr, prec_ptr, ref_ptr,
                                   a3, b3, col, cmask, D, USE_CV)
                batch += grad
                batch_ref += ref
        else:
            for t in range(NB):
                if kind == 1:
                    u = plan_uniform(plan_key, plan_ctr + t)
                    idx = tl.minimum((u * N_DATA).to(tl.int64), N_DATA - 1)
                    grad, ref = _datum(x, idx, mu_ptr, prec_ptr, ref_ptr, a3, b3, col, cmask, D, USE_CV)
                    batch += grad
                    batch_ref += ref
                else:
                    q = first + t
                    idx = _column(perm, coln, q)
                    grad, ref = _datum(x, idx, mu_ptr, prec_ptr, ref_ptr, a3, b3, col, cmask, D, USE_CV)
                    batch += tl.where(q < N_DATA, grad, 0.0)
                    batch_ref += tl.where(q < N_DATA, ref, 0.0)
            if kind == 1:
                plan_ctr += NB
        g = prior + scale * batch
        if USE_CV:
            g = g + ref_sum - scale * batch_ref
        if k > 0:
            x, v = AFTER1(x, v, g, c0, c1, c2, c3, c4, dW1, J1, dW2, J2)
            x, v = AFTER2(x, v, g, c0, c1, c2, c3, c4, dW1, J1, dW2, J2)
            # divergence: |x|, |v| beyond the bound or not finite (NaN fails every comparison)
            ok = (tl.abs(x) <= bound) & (tl.abs(x) < float("inf")) & (tl.abs(v) <= bound) & (tl.abs(v) < float("inf"))
            bad = tl.max((~ok & cmask).to(tl.int32), axis=1) > 0
            diverged = tl.where(bad & (diverged < 0), k, diverged)
            dead = (diverged >= 0)[:, None]
            x = tl.where(dead, 0.0, x)
            v = tl.where(dead, 0.0, v)
            g = tl.where(dead, 0.0, g)
            if k > burn_in:
                xd = x.to(tl.float64)
                sum_x += xd
                sum_xx += xd * xd
                if FULL_MOMENTS:
                    sum_outer += xd[:, :, None] * xd[:, None, :]
                if HIST:
                    first_x = _column(xd, col, 0)
                    alive = (diverged < 0) & rmask
                    below = alive & (first_x < hist_lo)
                    above = alive & (first_x >= hist_hi)
                    inside = alive & ~below & ~above
                    tails_below += below.to(tl.float64)
                    tails_below_dist += tl.where(below, hist_lo - first_x, 0.0)
                    tails_above += above.to(tl.float64)
                    tails_above_dist += tl.where(above, first_x - hist_hi, 0.0)
                    bin_of = tl.minimum(tl.maximum(tl.floor((first_x - hist_lo) * inv_width), 0.0), n_bins - 1.0)
                    tl.atomic_add(hist_ptr + bin_of.to(tl.int64), one, mask=inside)
                if KEEP:
                    if (k - burn_in) % stride == 0:
                        slot = (k - burn_in) // stride - 1
                        if slot < keep:
                            kept = tl.where(dead, float("nan"), xd)
                            tl.store(samples_ptr + (rows[:, None] * keep + slot) * D + col, kept, mask=m2)
    tl.store(x_ptr + at, x, mask=m2)
    tl.store(v_ptr + at, v, mask=m2)
    tl.store(g_ptr + at, g, mask=m2)
    tl.store(diverged_ptr + rows, diverged, mask=rmask)
    tl.store(sum_x_ptr + at, sum_x, mask=m2)
    tl.store(sum_xx_ptr + at, sum_xx, mask=m2)
    if FULL_MOMENTS:
        tl.store(sum_outer_ptr + rows[:, None, None] * (D * D) + a3 * D + b3, sum_outer,
                 mask=rmask[:, None, None] & (a3 < D) & (b3 < D))
    if HIST:
        tl.atomic_add(tails_ptr + 0, tl.sum(tails_below))
        tl.atomic_add(tails_ptr + 1, tl.sum(tails_below_dist))
        tl.atomic_add(tails_ptr + 2, tl.sum(tails_above))
        tl.atomic_add(tails_ptr + 3, tl.sum(tails_above_dist))
