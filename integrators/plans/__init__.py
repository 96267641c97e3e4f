"""Minibatch plans: the sequence of batches a sampler uses.

| plan   | sequence of batches                                                              |
| ------ | -------------------------------------------------------------------------------- |
| full   | all data every step, scale 1                                                     |
| iid    | each step ``batch_size`` indices drawn uniformly with replacement, scale N_D/N_b |
| rr     | a fresh random partition every epoch, visited in order, scale N_m                |
| sms    | a fresh random partition every two epochs: w_1 ... w_Nm then w_Nm ... w_1        |

A partition cuts a random permutation into ``N_m = ceil(N_D / N_b)`` consecutive batches of
``N_b`` indices (the last one may be shorter).  Scaling by ``N_m`` makes the average force over
one epoch exactly the full gradient, uneven batches included.  A plan never knows the scheme.

A plan is a :class:`Plan`; a built-in plan is a module of this package (``full.py``, ``iid.py``,
``rr.py``, ``sms.py``; found by :func:`integrators.registry.discover`, so a new file is a new plan)
that ends with ``PLAN = Plan(NAME=..., KIND=..., ...)`` and ``__all__ = ["PLAN"]`` (:data:`PLANS`
holds that object).  A plan declares ``NAME``, its batch rule in one vocabulary, ``KIND``:
``"full"``, ``"iid"``, or ``"partition"`` with the rule ``batch_index(position, n_batches)`` (a
Numba function: the index of the batch of the partition used at step ``position`` of the period)
and ``SWEEPS`` (epochs per fresh partition), which every backend and the exact oracle follow
(``plan_rule`` reads the declaration, the one reference walker
:class:`integrators.plans._walk.PlanWalk` walks it; the Numba kernel derives its fast path from it
privately), or a ``BATCH_RULE`` of its own (a Numba function with the signature of
:func:`next_batches`, Numba backend only); ``WEAK_ORDER`` / ``STRONG_ORDER`` (the
orders the plan allows a scheme: a sampler's expected order is the smaller of the scheme's
and the plan's; ``None``: no cap, or no claim for ``STRONG_ORDER``), ``THEOREM`` (whether
those orders are proved or only observed), ``SOURCE`` (where that claim comes from), and
``force_scale``, ``period``, ``count_orders`` and ``outcomes`` of ``(n_data, batch_size)``, the
number of data points ``N_D`` and the batch size ``N_b`` (the float factor on a batch's force, the
int period of the batch sequence in steps, the int number of batch sequences over one period, and
one period's batch sequences with their probabilities for the exact oracle: a list of
``(probability, batches)`` pairs, each batch a tuple of indices).  The member modules' functions carry a
summary line: this docstring is their contract.  ``PLANS`` is the
registry every caller reads; :func:`register_plan` adds a plan from user code (a :class:`Plan`
built from functions, or any object with its attributes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from integrators._disk_cache import disk_cached, njit_cached
from integrators._rng import PLAN_STREAM, lane_states, lane_uniforms
from integrators._validation import positive_real
from integrators.plans._partitions import n_batches  # noqa: F401  (re-exported)
from integrators.registry import Registry, discover_modules

SMALL_SHUFFLE = 8  # up to this many data, shuffles swap by masked passes instead of gathers
FULL, IID, RR, SMS = 0, 1, 2, 3  # the kernel's built-in batch rules, derived from a plan's declaration
PLAN_ATTRIBUTES = ("NAME", "WEAK_ORDER", "STRONG_ORDER", "force_scale", "period", "outcomes")


@dataclass(frozen=True)
class Plan:
    """A minibatch plan: its declared constants and functions (see the package docstring).

    A plan is the sequence of batches a sampler uses; it never knows the scheme.  A plan crossed
    with a scheme is a sampler (``SMS-UBU = UBU x sms``).  Every built-in plan module of
    :mod:`integrators.plans` declares one (``PLAN``); :func:`register_plan` checks one built in user
    code and adds it to :data:`PLANS`.

    Parameters
    ----------
    NAME : str
        The plan's name in the registry, tables and figures.
    outcomes : callable
        ``outcomes(n_data, batch_size)``: one period's batch sequences as a list of
        ``(probability, [batch, ...])`` pairs, each batch a tuple of indices (for the exact oracle).
    force_scale : callable
        ``force_scale(n_data, batch_size)``: the factor of the minibatch sum in the force
        (``N_m = ceil(N_D / N_b)`` for partition plans: the average over an epoch is then exactly
        the full gradient, uneven batches included).
    period : callable
        ``period(n_data, batch_size)``: steps after which the plan draws fresh randomness.
    WEAK_ORDER, STRONG_ORDER : float or None, default None
        The orders the plan allows a scheme (a sampler's expected order is the smaller of the
        scheme's and the plan's; ``None``: no cap, or no claim for ``STRONG_ORDER``).
    SOURCE : str, default "declared in user code"
        Where the orders come from.
    THEOREM : bool, default True
        Whether those orders are proved (else only observed).
    count_orders : callable or None, default None
        ``count_orders(n_data, batch_size)``: how many batch sequences a period has (``None``:
        ``len(outcomes(...))``).
    BATCH_RULE : numba function or None, default None
        A batch rule of its own with the signature of :func:`next_batches` (Numba backend only).
    batch_index : numba function or None, default None
        For a partition plan: ``batch_index(position, n_batches)``, the index of the batch of the
        partition used at step ``position`` of the period; every backend and the oracle follow it.
    SWEEPS : int, default 1
        For a partition plan: epochs per fresh partition (``sms``: 2, forward then backward).
    KIND : str or None, default None
        What the batches are: ``"full"`` (all data), ``"iid"`` (``batch_size`` indices drawn with
        replacement) or ``"partition"`` (then ``batch_index`` and ``SWEEPS``); ``None``:
        ``"partition"`` when ``batch_index`` is given.
    """

    NAME: str
    outcomes: object
    force_scale: object
    period: object
    WEAK_ORDER: float | None = None
    STRONG_ORDER: float | None = None
    SOURCE: str = "declared in user code"
    THEOREM: bool = True
    count_orders: object = None
    BATCH_RULE: object = None
    batch_index: object = None
    SWEEPS: int = 1
    KIND: str | None = None


KINDS = ("full", "iid", "partition")  # the vocabulary of KIND

# the kernel's built-in partition rules (next_batches, _declared); their modules declare a Plan, defined above
from integrators.plans import rr as _rr  # noqa: E402
from integrators.plans import sms as _sms  # noqa: E402

_RR_INDEX, _RR_SWEEPS = _rr.PLAN.batch_index, _rr.PLAN.SWEEPS
_SMS_INDEX, _SMS_SWEEPS = _sms.PLAN.batch_index, _sms.PLAN.SWEEPS


@dataclass(frozen=True)
class _PlanRule:
    """A plan's batch rule as it declares it.

    :func:`plan_rule` reads it; :class:`integrators.plans._walk.PlanWalk` walks it.
    """

    kind: str
    batch_index: object = None
    sweeps: int = 1


@dataclass(frozen=True)
class _Declaration:
    """Everything a plan declares about its batches, read in one place (:func:`_declared`):
    ``rule`` (``None``: a Numba ``BATCH_RULE`` of its own, or no rule), the kernel's built-in rule
    ``code`` it matches (``None``: none), the Numba ``batch_index`` and ``BATCH_RULE``, ``count_orders``."""

    rule: _PlanRule | None
    code: int | None
    numba_index: object
    numba_rule: object
    count_orders: object


def _optional(plan) -> dict:
    """The one reader of a plan's optional attributes (``None`` where it declares none)."""
    return {name: getattr(plan, name, None) for name in ("KIND", "batch_index", "SWEEPS", "BATCH_RULE",
                                                         "count_orders")}


_PARTITIONS = {RR: _rr.PLAN, SMS: _sms.PLAN}  # the kernel's built-in partition rules, by code


def _declared(plan) -> _Declaration:
    """What a plan (an object, not a name) declares about its batches, with what follows from it."""
    a = _optional(plan)
    kind, index, own = a["KIND"], a["batch_index"], a["BATCH_RULE"]
    sweeps = 1 if a["SWEEPS"] is None else a["SWEEPS"]
    if kind is None and index is not None:
        kind = "partition"
    rule, code = None, None
    if own is None and kind == "partition":
        rule = _PlanRule(kind, index.py_func, sweeps)
        # the kernel's fast path where the declaration is one of its built-in partition rules
        code = next((c for c, m in _PARTITIONS.items() if index is m.batch_index and sweeps == m.SWEEPS), None)
    elif own is None and kind in KINDS:
        rule, code = _PlanRule(kind), {"full": FULL, "iid": IID}[kind]
    return _Declaration(rule, code, index, own, a["count_orders"])


def _check_plan(plan) -> None:
    a = _optional(plan)
    kind, rule, sweeps = a["KIND"], a["batch_index"], a["SWEEPS"]
    if kind not in (None, *KINDS):
        raise ValueError(f"plan {plan.NAME!r}: KIND must be one of {KINDS} or None, got {kind!r}")
    if kind == "partition" and rule is None:
        raise ValueError(f"plan {plan.NAME!r}: a partition plan declares batch_index(position, n_batches) "
                         f"and SWEEPS")
    if rule is not None:
        if not hasattr(rule, "py_func"):
            raise ValueError(f"plan {plan.NAME!r}: batch_index must be a Numba function (decorate "
                             f"batch_index(position, n_batches) with @numba.njit), got {type(rule).__name__}")
        if isinstance(sweeps, bool) or not isinstance(sweeps, int) or sweeps < 1:
            raise ValueError(f"plan {plan.NAME!r}: SWEEPS must be an integer >= 1 (epochs per fresh "
                             f"partition), got {sweeps!r}")
        for m in (1, 2, 3, 5):  # a rule must pick a batch of the partition at every step of the period
            picked = [rule.py_func(position, m) for position in range(sweeps * m)]
            if any(isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < m for j in picked):
                raise ValueError(f"plan {plan.NAME!r}: batch_index(position, {m}) must be an integer in "
                                 f"[0, {m}) for every position < SWEEPS * {m}, got {picked}")


def register_plan(plan, *, replace: bool = False):
    """Add a plan to the registry :data:`PLANS`.

    Every table, figure, oracle and test that iterates over plans then finds it; nothing else
    changes.

    Parameters
    ----------
    plan : Plan
        A :class:`Plan` (or any object with its attributes).
    replace : bool, default False
        Replace a different plan already registered under the same name.

    Returns
    -------
    Plan
        The plan, as given.

    Raises
    ------
    ValueError
        If the plan lacks a required attribute, its ``NAME`` is empty, its ``KIND`` is not one
        of ``KINDS``, its ``batch_index`` is not a Numba function picking a batch of the
        partition at every step, its ``SWEEPS`` is not an integer ``>= 1``, or another plan has
        its name and ``replace`` is false.
    """
    return PLANS.register(plan, replace=replace)


def unregister_plan(name: str) -> None:
    """Remove a plan from the registry :data:`PLANS`.

    Parameters
    ----------
    name : str
        The plan's name.

    Raises
    ------
    ValueError
        If no plan has that name.
    """
    PLANS.unregister(name)


def resolve_plan(plan):
    """The plan for a registered name, or the plan object itself (validated).

    Parameters
    ----------
    plan : str or Plan
        A registered plan's name or a plan object.

    Returns
    -------
    Plan
        The plan.

    Raises
    ------
    ValueError
        If the name is unknown, or the plan object lacks a plan's attributes.
    """
    return PLANS.resolve(plan)


def kernel_code(plan) -> int:
    """The code the kernel passes to the plan's batch rule: the built-in rule's code, or -1 for a rule of
    the plan's own.  Refuses (``ValueError``) an unknown plan, or one the kernel cannot run (it declares
    neither ``KIND``, a ``batch_index`` nor its own Numba ``BATCH_RULE``)."""
    p = resolve_plan(plan)
    d = _declared(p)
    if d.rule is None and d.numba_rule is None:
        raise ValueError(f"plan {p.NAME!r} declares no kernel batch rule (neither KIND, batch_index nor "
                         f"BATCH_RULE): it runs in the exact oracle only")
    return -1 if d.code is None else d.code


def force_scale(plan, n_data: int, batch_size: int) -> float:
    """The factor on a batch's force under a plan (1 for full, ``N_D / N_b`` for iid, ``N_m`` for a partition).

    Parameters
    ----------
    plan : str or Plan
        A registered plan's name or a plan object.
    n_data : int
        Number of data terms ``N_D``.
    batch_size : int
        Batch size ``N_b``.

    Returns
    -------
    float
        The plan's ``force_scale(n_data, batch_size)``.

    Raises
    ------
    ValueError
        If the plan is unknown, or (naming the plan and the value) its factor is not a finite positive real
        number: a plan's own ``force_scale`` returning -2, "2" or NaN would otherwise sample a wrong
        posterior or read as a divergence.
    """
    p = resolve_plan(plan)
    value = p.force_scale(n_data, batch_size)
    return positive_real(f"plan {p.NAME!r}: force_scale({n_data}, {batch_size})", value)


def check_batch_indices(plan, n_data: int, batch_size: int) -> None:
    """Check a partition plan's ``batch_index`` over one period of a run (pure Python, its ``py_func``).

    Registration checks the rule at a few numbers of batches only; at the run's number an index past
    the last batch is an empty batch (a silent wrong run), a negative one wraps around.  A period longer
    than :data:`MAX_CHECKED` positions is checked at its first and last ``MAX_CHECKED / 2``; the built-in
    rules (rr, sms) are not checked (they are tested).

    Parameters
    ----------
    plan : str or Plan
        A registered plan's name or a plan object (any but a partition plan passes).
    n_data : int
        Number of data terms ``N_D``.
    batch_size : int
        Batch size ``N_b``.

    Raises
    ------
    ValueError
        If the plan is unknown, or (naming the plan, the position and the index) ``batch_index(position,
        N_m)`` is not an integer in ``[0, N_m)`` at some position of the period.
    """
    p = resolve_plan(plan)
    d = _declared(p)
    if d.rule is None or d.rule.kind != "partition":
        return
    if any(d.numba_index is built_in.batch_index for built_in in _PARTITIONS.values()):
        return  # the kernel's own rules, tested at every size (a period of 2e11 steps is checked by no pass)
    m = n_batches(n_data, batch_size)
    bad = _first_bad_index(d.rule.batch_index, d.rule.sweeps, m)
    if bad is not None:
        position, j = bad
        raise ValueError(f"plan {p.NAME!r}: batch_index({position}, {m}) must be an integer in [0, {m}) "
                         f"(n_data={n_data}, batch_size={batch_size}), got {j!r}")


MAX_CHECKED = 2**21  # positions of a period check_batch_indices calls batch_index at (about a second)


@functools.lru_cache(maxsize=64)  # every chain of an ensemble walks the same rule: one pass per (rule, N_m)
def _first_bad_index(batch_index, sweeps: int, m: int):
    """The first ``(position, index)`` of a period at which ``batch_index`` picks no batch of ``m``, or None."""
    period = sweeps * m
    # a period beyond MAX_CHECKED positions: its first and last halves of that many (the rule's edges)
    half = MAX_CHECKED // 2
    positions = range(period) if period <= MAX_CHECKED else [*range(half), *range(period - half, period)]
    for position in positions:
        j = batch_index(position, m)
        if isinstance(j, bool) or not isinstance(j, int | np.integer) or not 0 <= j < m:
            return position, j
    return None


def check_for_run(plan, n_data: int, batch_size: int) -> None:
    """Check what a plan's user code gives for a run, before the run.

    Its force scale (:func:`force_scale`) and, for a partition plan, its batch index over one period
    (:func:`check_batch_indices`).

    Parameters
    ----------
    plan : str or Plan
        A registered plan's name or a plan object.
    n_data : int
        Number of data terms ``N_D``.
    batch_size : int
        Batch size ``N_b``.

    Raises
    ------
    ValueError
        Naming the plan, if either check fails.
    """
    force_scale(plan, n_data, batch_size)
    check_batch_indices(plan, n_data, batch_size)


def period(plan, n_data: int, batch_size: int) -> int:
    """Steps after which the plan draws fresh randomness (1 for full and iid)."""
    return resolve_plan(plan).period(n_data, batch_size)


def count_orders(plan, n_data: int, batch_size: int) -> int:
    """Number of batch sequences per period the oracle enumerates: the plan's ``count_orders``, else the
    number of its ``outcomes``."""
    p = resolve_plan(plan)
    own = _declared(p).count_orders
    return len(p.outcomes(n_data, batch_size)) if own is None else own(n_data, batch_size)


@nb.njit(nogil=True, inline="always")
def shuffle_lanes(perm, states, u):
    """Fisher-Yates shuffle of every column ``perm[:, c]`` of ``perm`` ``(n_data, n)`` in place (Numba); chain
    ``c`` draws from ``states[:, c]`` (word-major, :mod:`integrators._rng`); ``u`` ``(n,)`` is scratch."""
    n_data, n = perm.shape
    for i in range(n_data - 1, 0, -1):
        lane_uniforms(states, u)
        if n_data <= SMALL_SHUFFLE:
            # few data: swap by masked passes over the rows j < i (vectorizes; the same
            # permutations as the gathers below)
            for c in range(n):
                u[c] = math.floor(u[c] * (i + 1))  # j of chain c, bias <= n / 2^53
            for j in range(i):
                for c in range(n):
                    hit = u[c] == j
                    pj, pi = perm[j, c], perm[i, c]
                    perm[j, c] = pi if hit else pj
                    perm[i, c] = pj if hit else pi
            continue
        for c in range(n):
            j = int(u[c] * (i + 1))  # bias <= n / 2^53
            tmp = perm[i, c]
            perm[i, c] = perm[j, c]
            perm[j, c] = tmp


@njit_cached(nogil=True)
def next_batches(plan_code, perm, position, batch_size, states, out, source, u):
    """Write the next batch of every chain of a block into ``out[:n_b, c]`` and return ``n_b``.

    The chains of a block stand at the same step of the plan's period, ``position[0]`` (shared;
    partitions cut alike, so every chain's batch has the same length); each chain has its own
    permutation ``perm[:, c]`` and batch stream ``states[:, c]`` (word-major, :mod:`integrators._rng`).
    A new period shuffles each ``perm[:, c]``, or, when ``source`` is not empty, copies ``source``
    (the permutations of other chains: the coupled h / h/2 chains).  ``full`` writes
    its batch once, on the first call.

    Parameters
    ----------
    plan_code : int
        The built-in rule's code (:func:`kernel_code`).
    perm : numpy.ndarray
        The chains' permutations, shape ``(n_data, n)``.
    position : numpy.ndarray
        The step within the period, shape ``(1,)``; advanced in place.
    batch_size : int
        The batch size ``N_b``.
    states : numpy.ndarray
        The chains' batch streams, word-major.
    out : numpy.ndarray
        The batches, shape ``(k, n)``; written in place.
    source : numpy.ndarray
        Permutations to copy at a new period, or an empty array.
    u : numpy.ndarray
        Scratch, shape ``(n,)``.

    Returns
    -------
    int
        ``n_b``, the length of the batches written.
    """
    n_data, n = perm.shape
    if plan_code == FULL:
        if position[0] == 0:
            for i in range(n_data):
                for c in range(n):
                    out[i, c] = i
            position[0] = 1
        return n_data
    if plan_code == IID:
        for j in range(batch_size):
            lane_uniforms(states, u)
            for c in range(n):
                out[j, c] = int(u[c] * n_data)
        return batch_size
    new_partitions(perm, position, states, source, u)
    if plan_code == RR:  # each partition plan's own rule
        return partition_batch(_RR_INDEX, _RR_SWEEPS, perm, position, batch_size, out)
    return partition_batch(_SMS_INDEX, _SMS_SWEEPS, perm, position, batch_size, out)


@nb.njit(nogil=True, inline="always")
def new_partitions(perm, position, states, source, u):
    """At the start of a period (``position[0] == 0``), shuffle each chain's permutation ``perm[:, c]``, or
    copy ``source``'s when it is not empty (the coupled h / h/2 chains) (Numba)."""
    if position[0] == 0:
        if source.shape[0] > 0:
            for i in range(perm.shape[0]):
                for c in range(perm.shape[1]):
                    perm[i, c] = source[i, c]
        else:
            shuffle_lanes(perm, states, u)


@nb.njit(nogil=True, inline="always")
def partition_batch(batch_index, sweeps, perm, position, batch_size, out):
    """Write the batch that ``batch_index(position, N_m)`` picks from the partitions into ``out`` for every
    chain and return its length ``n_b`` (the last batch of a partition may be shorter); ``position[0]``
    advances in place, over a period of ``sweeps * N_m`` steps (Numba)."""
    n_data, n = perm.shape
    m = (n_data + batch_size - 1) // batch_size
    p = position[0]
    j = batch_index(p, m)
    position[0] = (p + 1) % (sweeps * m)
    start = j * batch_size
    stop = min(start + batch_size, n_data)
    for i in range(start, stop):
        for c in range(n):
            out[i - start, c] = perm[i, c]
    return stop - start


@functools.cache
def partition_rule(batch_index, sweeps: int):
    """The Numba batch rule (the signature of :func:`next_batches`) of a partition plan declared
    in user code by its ``batch_index`` and ``SWEEPS``."""

    @nb.njit(nogil=True)
    def rule(plan_code, perm, position, batch_size, states, out, source, u):
        new_partitions(perm, position, states, source, u)
        return partition_batch(batch_index, sweeps, perm, position, batch_size, out)

    return disk_cached(rule, "partition_rule")


def batch_rule(plan=None):
    """The Numba batch rule of a plan: its own ``BATCH_RULE`` (the signature of :func:`next_batches`), the
    rule made from its ``batch_index`` (:func:`partition_rule`), or the built-in rules,
    :func:`next_batches` (also for ``plan=None``).  A rule or ``batch_index`` from user code is
    bounds-checked and named in its errors (:func:`integrators._user_code.guarded`)."""
    if plan is None:
        return next_batches
    from integrators._user_code import guarded  # (imports the kernel's modules: not at import time)

    p = resolve_plan(plan)
    d = _declared(p)
    if d.numba_rule is not None:
        return guarded(d.numba_rule, f"plan {p.NAME!r}: BATCH_RULE")
    if d.code is None and d.rule is not None and d.rule.kind == "partition":
        return partition_rule(guarded(d.numba_index, f"plan {p.NAME!r}: batch_index"), d.rule.sweeps)
    return next_batches


def plan_rule(plan) -> _PlanRule:
    """The ``_PlanRule`` of a plan: its batch rule as every backend follows it.  Refuses (``ValueError``,
    naming the plan) an unknown plan, or one whose batches come from a Numba ``BATCH_RULE`` of its own
    (only the Numba kernel runs those) or from no rule at all."""
    p = resolve_plan(plan)
    d = _declared(p)
    if d.rule is not None:
        return d.rule
    raise ValueError(f"plan {p.NAME!r} has no batch rule this backend can run: it declares "
                     + ("a Numba BATCH_RULE of its own (the Numba backend only); declare batch_index and SWEEPS "
                        "instead to run it on every backend" if d.numba_rule is not None
                        else "neither KIND nor batch_index (it runs in the exact oracle only)"))


def batch_sequence(plan: str, n_data: int, batch_size: int, n_steps: int, seed: int = 0):
    """The first batches of a plan, as one chain of the Numba kernel draws them.

    For inspection and tests: the batches come from the same rule and the same per-chain batch
    stream (chain 0 of ``seed``) as in a run.

    Parameters
    ----------
    plan : str or Plan
        A registered plan's name or a plan object.
    n_data : int
        Number of data terms ``N_D``.
    batch_size : int
        Batch size ``N_b``.
    n_steps : int
        Number of steps (batches) to draw.
    seed : int, default 0
        The run's seed.

    Returns
    -------
    list of numpy.ndarray
        ``n_steps`` arrays of data indices (int64), one batch per step.

    Raises
    ------
    ValueError
        If the plan is unknown or declares no batch rule the kernel can run.
    """
    code = kernel_code(plan)
    rule = batch_rule(plan)
    states = lane_states(seed, PLAN_STREAM, 0, 1)
    perm = np.arange(n_data, dtype=np.int64)[:, None].copy()
    position = np.zeros(1, dtype=np.int64)
    out = np.empty((max(n_data, batch_size), 1), dtype=np.int64)
    no_source = np.empty((0, 1), dtype=np.int64)
    scratch = np.empty(1)
    seq = []
    for _ in range(n_steps):
        n = rule(code, perm, position, batch_size, states, out, no_source, scratch)
        seq.append(out[:n, 0].copy())
    return seq


# the built-in plans: the PLAN of each module of this package that declares one (a new file is a new plan)
PLANS = Registry("plan", PLAN_ATTRIBUTES, _check_plan, (m.PLAN for m in discover_modules(__name__, ("PLAN",))))

__all__ = ["PLANS", "Plan", "batch_sequence", "register_plan",
           "resolve_plan", "unregister_plan"]
