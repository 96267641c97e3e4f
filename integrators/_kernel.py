"""The one stepping core: one scheme x one plan x one target over tiles of chains.

A tile of about 256 chains advances step by step, all chains together: each step draws every
chain's path from its own stream, each chain's batch from its own batch stream
(:mod:`integrators._rng`), then applies the scheme to the whole tile with loops over chains
innermost, so the arithmetic vectorizes.  One call runs a thread's tiles one after the other.
A chain's output depends only on the seed and its index, never on how many chains run beside it
or how they are tiled.  Observers are streamed: running sums of first and second moments and of
user test functions, a histogram of the first coordinate (for the streaming Wasserstein
evaluator), and thinned samples; memory does not grow with the number of steps.  A chain whose
state leaves ``[-bound, bound]`` (or is not finite) has its step recorded, is parked at the origin
and its statistics stop there (finite partial sums); its final state is returned as NaN.

The path is drawn ``refine`` fine intervals per half step and composed exactly, so a run at
``h`` with ``refine = 2^L`` sees the very same Brownian path as a run at ``h / 2^L``.  It is drawn
for a chunk of steps at a time (:func:`path_chunk`) and then read by every sampler of the run:
samplers of one seed share their path, so a run may advance several of them together
(:class:`Samplers`, stacked by kind, :func:`kernel_for_kinds`), each with its own batches, state,
observers and divergence record, and each with exactly the numbers of its run alone.

Every loop that advances chains (``sample``'s kernel here, the coupled h / h/2 chains of
:mod:`bias._coupled`, SMS-GHMC in :mod:`integrators._ghmc`) is built from the same pieces of this
module: the path (:func:`draw_step_path`), the plan's batch rule
(:func:`integrators.plans.batch_rule`), the scheme's ``step`` with the bounce box, the
divergence check and parking (:func:`all_in_bounds`, :func:`add_moments_in_bounds`,
:func:`mark_diverged`, :func:`park_diverged`) and the observers (:mod:`integrators._observers`).
Their inputs travel as the named structures below (:class:`Path`, :class:`PlanState`,
:class:`Forces`, :class:`Schedule`, :class:`integrators._observers.Observers`, :class:`Divergence`,
:class:`Work`, :class:`Samplers`), Numba named tuples whose fields are arrays and numbers.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba as nb
import numpy as np

from integrators._brownian import pair_cholesky
from integrators._disk_cache import disk_cached, njit_cached
from integrators._observers import Observers, add_moments, no_test_functions, observe_chains
from integrators._rng import lane_normals
from integrators._user_code import guarded
from integrators.plans import batch_rule

BLOCK_SIZE = 256  # chains per kernel call of the coupled h / h/2 chains and SMS-GHMC

# ----------------------------------------------------------------------- the named structures
Path = namedtuple("Path", "gamma tau refine states")
Path.__doc__ = """The Brownian path a block of chains draws: friction, the fine interval ``tau``,
``refine`` fine intervals per half step, and the chains' path streams (``(4, n)`` word-major;
the kernel takes ``(n_tiles, 4, tile)``)."""
PlanState = namedtuple("PlanState", "code batch_size scale states")
PlanState.__doc__ = """A plan as the batch rule sees it: its rule code (``-1`` for a plan's own
``BATCH_RULE``), batch size, force scale and the chains' batch streams."""
Forces = namedtuple("Forces", "tdata box")
Forces.__doc__ = """What the force and the step need beside the state: the target's force data
(:func:`integrators.targets._force.force_data`) and the bounce box (:func:`integrators._bounce.make_box`)."""
Schedule = namedtuple("Schedule", "n_steps burn_in thin")
Schedule.__doc__ = """Steps to run, steps left out of the statistics, and every how many steps
after burn-in a sample is kept (the coupled chains: every how many steps they are observed)."""
Divergence = namedtuple("Divergence", "bound diverged_at")
Divergence.__doc__ = """A chain diverges at the first step where a coordinate of ``x`` or ``v`` is not
finite or exceeds ``bound`` in absolute value; ``diverged_at[c]`` records that step (``-1``: never; a lane
marked beforehand, such as padding, stays parked throughout)."""
Work = namedtuple("Work", "dW J g batch perm position tvals z1 z2 raw")
Work.__doc__ = """Scratch arrays of one block: the path pairs ``dW, J`` ``(2, d, n)``, the force
``g`` ``(n, d)``, batches ``(width, n)`` and permutations ``(n_data, n)`` (int32), the plan's
position in its period ``(1,)``, the test functions' values and a copy of the state they read
``(n_tests + d,)`` (:func:`integrators._observers.observe_chains`) and per-lane scratch ``z1, z2, raw``."""
Samplers = namedtuple("Samplers", "coef x v plan forces schedule obs div work")
Samplers.__doc__ = """Samplers of one kind (one scheme, target class and batch rule) that advance together
over a thread's tiles, stacked along a leading axis of length ``m``: coefficients ``(m, n_coef)``,
states ``x, v`` ``(m, n, d)``, a :class:`PlanState` whose ``code, batch_size, scale`` are ``(m,)``
arrays and ``states`` ``(m, n_tiles, 4, tile)``, the shared :class:`Forces` and :class:`Schedule`,
:class:`Observers` with a leading ``m`` on every array (``hist`` ``(m, n_bins)``, ``hist_tails``
``(m, 4)``), a :class:`Divergence` with ``diverged_at`` ``(m, n)`` and a :class:`Work` with a
leading ``m`` (:func:`make_work_buffers` with ``samplers=m``; the path they read is the run's).
One stack of one sampler is a plain run."""


@njit_cached(nogil=True)
def draw_step_path(states, l11, l21, l22, decay_fine, refine, dW, J, z1, z2, raw):
    """Fill ``dW, J`` ``(2, d, n)`` with each chain's pair per half step, composed from ``refine`` fine
    intervals; chain ``c`` draws from ``states[:, c]`` (``(4, n)``) in an order independent of the number of
    chains.  ``z1, z2`` ``(n,)`` and ``raw`` are scratch."""
    n, d = dW.shape[2], dW.shape[1]
    for half in range(2):
        for a in range(d):  # the first interval: the normals land where the pair goes
            w, j = dW[half, a], J[half, a]
            lane_normals(states, w, raw)
            lane_normals(states, j, raw)
            for c in range(n):
                j[c] = l21 * w[c] + l22 * j[c]
                w[c] = l11 * w[c]
        for _ in range(1, refine):
            for a in range(d):
                lane_normals(states, z1, raw)
                lane_normals(states, z2, raw)
                for c in range(n):
                    dW[half, a, c] += l11 * z1[c]
                    J[half, a, c] = decay_fine * J[half, a, c] + l21 * z1[c] + l22 * z2[c]


# ------------------------------------------------------------------ the pieces every loop shares
@njit_cached(nogil=True, _nrt=False)
def reset_plan(perm, position):
    """A block's plan at the start of a run: identity permutations, position 0 of the period."""
    for i in range(perm.shape[0]):
        for c in range(perm.shape[1]):
            perm[i, c] = i
    position[0] = 0


@nb.njit(nogil=True, inline="always")
def all_in_bounds(x, v, bound):
    """Whether every coordinate of ``x`` and ``v`` (a block, ``(n, d)``) is finite and at most
    ``bound`` in absolute value: one branch-free pass over the block (it vectorizes)."""
    n, d = x.shape
    all_in = True
    for a in range(d):
        for c in range(n):
            all_in &= (abs(x[c, a]) <= bound) & (abs(v[c, a]) <= bound)  # False for NaN
    return all_in


@nb.njit(nogil=True, inline="always")
def add_moments_in_bounds(x, v, bound, sum_x, sum_xx):
    """:func:`all_in_bounds` and :func:`add_moments` in one pass (the usual step of a block with
    no parked chain): a chain out of bounds adds nothing this step, as if it were parked."""
    n, d = x.shape
    all_in = True
    for a in range(d):
        for c in range(n):
            xc = x[c, a]
            ok = (abs(xc) <= bound) & (abs(v[c, a]) <= bound)  # False for NaN
            all_in &= ok
            sum_x[c, a] += xc if ok else 0.0
            sum_xx[c, a] += xc * xc if ok else 0.0
    return all_in


@njit_cached(nogil=True, _nrt=False)
def mark_diverged(k, x, v, div):
    """Record step ``k`` in ``div.diverged_at`` for every chain not yet marked with a coordinate
    of ``x`` or ``v`` non-finite or beyond ``div.bound``; returns how many were newly marked."""
    n, d = x.shape
    at = div.diverged_at
    marked = 0
    for c in range(n):
        if at[c] >= 0:
            continue
        ok = True
        for a in range(d):
            ok &= (abs(x[c, a]) <= div.bound) & (abs(v[c, a]) <= div.bound)
        if not ok:
            at[c] = k
            marked += 1
    return marked


@njit_cached(nogil=True, _nrt=False)
def park_diverged(x, v, g, diverged_at):
    """Park every marked chain at the origin (state and cached force), out of every statistic."""
    n, d = x.shape
    for c in range(n):
        if diverged_at[c] >= 0:
            for a in range(d):
                x[c, a] = 0.0
                v[c, a] = 0.0
                g[c, a] = 0.0


@njit_cached(nogil=True, _nrt=False)
def count_diverged(diverged_at):
    marked = 0
    for c in range(diverged_at.shape[0]):
        if diverged_at[c] >= 0:
            marked += 1
    return marked


@njit_cached(nogil=True, _nrt=False)
def nan_diverged(x, v, diverged_at):
    """A diverged chain's final state is reported as NaN."""
    for c in range(x.shape[0]):
        if diverged_at[c] >= 0:
            for a in range(x.shape[1]):
                x[c, a] = np.nan
                v[c, a] = np.nan


_KERNELS: dict = {}
_GROUP_KERNELS: dict = {}


def _member_steps(key):
    """The compiled operations of one sampler (``key`` from :func:`sampler_kind`), built once and
    shared by every run that contains it."""
    if key not in _KERNELS:
        step, fsal, force, rule = key
        _KERNELS[key] = _make_member_steps(step, fsal, force, force.allocates, rule)
    return _KERNELS[key]


def kernel_for(scheme_module, force, plan_module=None, test_fn=no_test_functions):
    """The cached kernel ``run_chains(path, stacks, work)`` for one scheme, target class and batch rule
    (:func:`kernel_for_kinds` with one kind); ``work`` from :func:`make_work_buffers` with
    ``path_steps=path_chunk(d, tile)``."""
    return kernel_for_kinds([sampler_kind(scheme_module, force, plan_module)], test_fn)


def sampler_kind(scheme, force, plan=None) -> tuple:
    """What a kernel compiles for one sampler: the scheme's step (guarded where it is user code), its
    first-same-as-last flag, the target's force and the plan's batch rule."""
    step = guarded(scheme.step, f"scheme {getattr(scheme, 'NAME', '?')!r}: step")
    return (step, bool(scheme.FSAL), force, batch_rule(plan))


def kernel_for_kinds(kinds, test_fn=no_test_functions):
    """The kernel ``run_chains(path, stacks, work)`` advancing one :class:`Samplers` stack per kind on one
    shared path, observing ``test_fn``; each sampler's numbers equal its single-sampler run's bit for bit.
    Compiled once per tuple of kinds and test function, and kept on disk (:mod:`integrators._disk_cache`)."""
    keys = tuple(kinds)
    if not keys:
        raise ValueError("kernel_for_kinds needs at least one kind of sampler")
    if (keys, test_fn) not in _GROUP_KERNELS:
        allocates = any(k[2].allocates for k in keys)
        _GROUP_KERNELS[keys, test_fn] = _make_run([_member_steps(k) for k in keys], allocates, test_fn)
    return _GROUP_KERNELS[keys, test_fn]


_STEP_CALLERS: dict = {}


def step_caller(step, force, *, runtime: bool = True):
    """``call(x, v, g, coef, dW, J, batch, n_batch, scale, tdata, box)``: one ``step`` with ``force`` bound,
    for code that runs a single step from Python (the oracle's probe, the schemes' read check).  The
    force is a constant of this small kernel, so it is kept on disk (:mod:`integrators._disk_cache`),
    which a step called directly with a Numba function as an argument cannot be.  ``runtime=False``
    compiles it without Numba's runtime, as the kernels run a step that does not declare ``allocates``."""
    key = (step, force, runtime)
    if key not in _STEP_CALLERS:
        @nb.njit(nogil=True, _nrt=runtime)
        def call(x, v, g, coef, dW, J, batch, n_batch, scale, tdata, box):
            step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)

        _STEP_CALLERS[key] = disk_cached(call, "step_caller")
    return _STEP_CALLERS[key]


ALIGN_BYTES = 64  # a cache line: vector loads of a lane pass never straddle two lines


def aligned_zeros(shape, dtype=np.float64) -> np.ndarray:
    """``np.zeros`` starting on a cache line (numpy only promises 16 bytes; the kernel's passes
    over chains run measurably slower when their rows straddle cache lines)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(shape)  # (np.prod would cost more than the allocation: sample() makes ~30 of these)
    buf = np.zeros(max(size, 1) * dtype.itemsize + ALIGN_BYTES, dtype=np.uint8)
    start = (-buf.__array_interface__["data"][0]) % ALIGN_BYTES
    # view at least one item before cutting to size: an empty view may not keep the pointer
    return buf[start:start + max(size, 1) * dtype.itemsize].view(dtype)[:size].reshape(shape)


def make_work_buffers(n_chains: int, d: int, n_data: int, batch_size: int, n_tests: int, *,
                      path_steps: int | None = None, samplers: int | None = None) -> Work:
    """The :class:`Work` arrays of one block, cache-line aligned: the path ``(path_steps, 2, d, n)`` (or one
    step, ``(2, d, n)``); with ``samplers = m`` every other array gains a leading axis of length ``m``."""
    width = max(batch_size, n_data)
    pair = (2, d, n_chains) if path_steps is None else (path_steps, 2, d, n_chains)
    lead = () if samplers is None else (samplers,)
    return Work(dW=aligned_zeros(pair), J=aligned_zeros(pair), g=aligned_zeros(lead + (n_chains, d)),
                batch=aligned_zeros(lead + (width, n_chains), np.int32),
                perm=aligned_zeros(lead + (n_data, n_chains), np.int32),
                position=np.zeros(lead + (1,), dtype=np.int64), tvals=np.zeros(lead + (n_tests + d,)),
                z1=aligned_zeros(lead + (n_chains,)), z2=aligned_zeros(n_chains),
                raw=aligned_zeros(n_chains, np.uint64))


PATH_CHUNK_BYTES = 1 << 19  # the path of a chunk of steps (64 at d = 1), written then read back from cache


def path_chunk(d: int, tile: int) -> int:
    """Steps of path drawn ahead per tile (``dW`` and ``J`` together about ``PATH_CHUNK_BYTES``):
    several samplers then read each step's path from cache instead of drawing it again."""
    return max(1, min(64, PATH_CHUNK_BYTES // (2 * 2 * 8 * d * tile)))


START, STEPS, FINISH = 0, 1, 2  # the phases of a sampler over one tile (:func:`_make_member_steps`)


def _make_member_steps(step, fsal, force, allocates, rule):
    """``member_steps(stack, i, phase, t, k_first, k_last, dW, J, test_fn)``: phases ``START``, ``STEPS``
    (steps ``k_first .. k_last``), ``FINISH`` (NaN for diverged chains) of sampler ``i``; one function for the
    three phases, and ``test_fn`` passed in, to save compile time."""
    # Compiled without Numba's reference counting (``_nrt=False``): every array the loop touches
    # is an argument owned by the caller, and the kernel allocates nothing, so the views and calls
    # of the step loop need no increment/decrement calls (they once cost more than the arithmetic).
    # Targets whose gradients allocate scratch arrays (``Target.allocates``) keep it on.
    @nb.njit(nogil=True, _nrt=allocates)
    def member_steps(m, i, phase, t, k_first, k_last, dW, J, test_fn):
        # sampler i of the stack, tile t: a[i] then [lo:hi] keeps every view C-contiguous
        tile = m.plan.states.shape[3]
        lo, hi = t * tile, (t + 1) * tile
        o, w, schedule = m.obs, m.work, m.schedule
        x, v, coef = m.x[i][lo:hi], m.v[i][lo:hi], m.coef[i]
        obs = Observers(test_fn, o.test_data, o.sum_x[i][lo:hi], o.sum_xx[i][lo:hi], o.sum_outer[i][lo:hi],
                        o.sum_tests[i][lo:hi], o.samples[i][lo:hi], o.hist[i], o.hist_lo, o.hist_inv_width,
                        o.hist_tails[i])
        plan = PlanState(m.plan.code[i], m.plan.batch_size[i], m.plan.scale[i], m.plan.states[i][t])
        div = Divergence(m.div.bound, m.div.diverged_at[i][lo:hi])
        g, batch, perm, position, z1, tvals = w.g[i], w.batch[i], w.perm[i], w.position[i], w.z1[i], w.tvals[i]
        scale, tdata, bound, burn_in = plan.scale, m.forces.tdata, div.bound, schedule.burn_in
        no_source = perm[:0]
        if phase == START:
            reset_plan(perm, position)
            if fsal:
                n_b = rule(plan.code, perm, position, plan.batch_size, plan.states, batch, no_source, z1)
                force(x, g, batch, n_b, scale, tdata)
            return
        if phase == FINISH:
            nan_diverged(x, v, div.diverged_at)
            return
        n_keep = obs.samples.shape[1]
        kept = min(n_keep, max(0, (k_first - 1 - burn_in) // schedule.thin))  # samples kept before k_first
        n_dead = count_diverged(div.diverged_at)  # lanes marked beforehand (padding) stay parked
        for k in range(k_first, k_last + 1):
            n_b = rule(plan.code, perm, position, plan.batch_size, plan.states, batch, no_source, z1)
            step(x, v, g, coef, dW[k - k_first], J[k - k_first], force, batch, n_b, scale, tdata, m.forces.box)
            summed = k > burn_in and n_dead == 0
            if summed:  # the usual case: check every chain and add its moments in one pass
                all_in = add_moments_in_bounds(x, v, bound, obs.sum_x, obs.sum_xx)
            else:
                all_in = all_in_bounds(x, v, bound)
            if not all_in or n_dead > 0:
                n_dead += mark_diverged(k, x, v, div)
                park_diverged(x, v, g, div.diverged_at)
            if k <= burn_in:
                continue
            if not summed:
                add_moments(x, obs.sum_x, obs.sum_xx)
            keep_now = kept < n_keep and (k - burn_in) % schedule.thin == 0
            observe_chains(x, div.diverged_at, obs, tvals, keep_now, kept)
            if keep_now:
                kept += 1

    return member_steps


def _each(fns, allocates):
    """A Numba ``each(stacks, phase, t, k_first, k_last, dW, J, test_fn)`` calling ``fns[j]`` for every sampler
    of every stack ``j`` in order; the dispatch over stacks is unrolled at compile time, so m samplers of one
    kind compile no more than one."""
    loops = "".join(f"    for i in range(stacks[{j}].coef.shape[0]):\n"
                    f"        fn{j}(stacks[{j}], i, phase, t, k_first, k_last, dW, J, test_fn)\n"
                    for j in range(len(fns)))
    namespace = {f"fn{j}": fn for j, fn in enumerate(fns)}
    exec(f"def each(stacks, phase, t, k_first, k_last, dW, J, test_fn):\n{loops}", namespace)  # noqa: S102 (fixed text)
    return nb.njit(nogil=True, _nrt=allocates, inline="always")(namespace["each"])


def _make_run(member_steps, allocates, test_fn):
    each = _each(member_steps, allocates)

    # the test functions are a constant of the kernel, not an argument: a Numba function's type names
    # its address, so no argument types holding one can key a cache across processes
    @nb.njit(nogil=True, _nrt=allocates)
    def run_chains(path, stacks, work):
        """All tiles of ``tile = path.states.shape[2]`` chains, one after the other, in one call
        (one call per thread keeps the interpreter out of the loop); ``path.states`` has shape
        ``(n_tiles, 4, tile)`` and every stack's chain arrays ``n_tiles * tile`` rows.  Per tile, a
        chunk of steps' path is drawn, then every sampler of every stack advances over it."""
        l11, l21, l22 = pair_cholesky(path.gamma, path.tau)
        decay_fine = math.exp(-path.gamma * path.tau)
        dW, J, z1, z2, raw = work.dW, work.J, work.z1, work.z2, work.raw
        chunk = dW.shape[0]
        n_steps = stacks[0].schedule.n_steps
        for t in range(path.states.shape[0]):
            # phases and step numbers as run-time integers: a literal argument would compile
            # member_steps once more per distinct value
            none, start, steps, finish = 0 * t, START + 0 * t, STEPS + 0 * t, FINISH + 0 * t
            states = path.states[t]
            each(stacks, start, t, none, none, dW, J, test_fn)
            for k_first in range(1, n_steps + 1, chunk):
                k_last = min(k_first + chunk - 1, n_steps)
                for k in range(k_first, k_last + 1):
                    draw_step_path(states, l11, l21, l22, decay_fine, path.refine, dW[k - k_first], J[k - k_first],
                                   z1, z2, raw)
                each(stacks, steps, t, k_first, k_last, dW, J, test_fn)
            each(stacks, finish, t, none, none, dW, J, test_fn)

    return disk_cached(run_chains, "run_chains")
