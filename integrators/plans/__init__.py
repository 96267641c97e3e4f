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

A plan is one module of this package (``full.py``, ``iid.py``, ``rr.py``, ``sms.py``) declaring
``NAME``, ``CODE`` (its rule in the kernel's :func:`next_batches`; ``None`` for a plan with a
rule of its own, ``BATCH_RULE``: a Numba function with the signature of :func:`next_batches`,
or for a plan that runs in the exact oracle only), ``WEAK_ORDER`` / ``STRONG_ORDER`` (the
orders the plan allows a scheme: a sampler's expected order is the smaller of the scheme's
and the plan's; ``None``: no cap, or no claim for ``STRONG_ORDER``), ``THEOREM`` (whether
those orders are proved or only observed), ``SOURCE`` (where that claim comes from), and
``force_scale``, ``period``, ``count_orders`` and ``outcomes`` of ``(n_data, batch_size)`` (one
period's batch sequences with their probabilities, for the exact oracle).  ``PLANS`` is the
registry every caller reads; :func:`register_plan` adds a plan from user code (or a
:class:`Plan` built from functions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from integrators.plans.partitions import n_batches  # noqa: F401  (re-exported)
from integrators.registry import Registry
from integrators.rng import PLAN_STREAM, lane_states, lane_uniforms

SMALL_SHUFFLE = 8  # up to this many data, shuffles swap by masked passes instead of gathers
FULL, IID, RR, SMS = 0, 1, 2, 3  # the kernel's batch rules (each plan module's CODE)
PLAN_ATTRIBUTES = ("NAME", "CODE", "WEAK_ORDER", "STRONG_ORDER", "force_scale", "period", "outcomes")


@dataclass(frozen=True)
class Plan:
    """A plan written in user code, with the attributes of a plan module (see the module
    docstring).  ``code`` names one of the kernel's batch rules, or ``None`` (oracle only)."""

    NAME: str
    outcomes: object
    force_scale: object
    period: object
    WEAK_ORDER: float | None = None
    STRONG_ORDER: float | None = None
    CODE: int | None = None
    SOURCE: str = "declared in user code"
    THEOREM: bool = True
    count_orders: object = None
    BATCH_RULE: object = None


def _check_plan(plan) -> None:
    if plan.CODE not in (None, FULL, IID, RR, SMS):
        raise ValueError(f"plan {plan.NAME!r}: CODE must be one of the kernel's rules "
                         f"{(FULL, IID, RR, SMS)} or None, got {plan.CODE!r}")


def register_plan(plan, *, replace: bool = False):
    """Add a plan (a module or a :class:`Plan`) to :data:`PLANS`; every table, figure, oracle
    and test that iterates over plans then finds it.  Returns the plan."""
    return PLANS.register(plan, replace=replace)


def unregister_plan(name: str) -> None:
    PLANS.unregister(name)


def resolve_plan(plan):
    """The plan for a registered name, or the plan object itself (validated)."""
    return PLANS.resolve(plan)


def kernel_code(plan) -> int:
    """The code the kernel passes to the plan's batch rule; a clear error for a plan the kernel
    cannot run (neither a built-in ``CODE`` nor its own Numba ``BATCH_RULE``)."""
    p = resolve_plan(plan)
    if p.CODE is None and getattr(p, "BATCH_RULE", None) is None:
        raise ValueError(f"plan {p.NAME!r} declares no kernel batch rule (neither CODE nor BATCH_RULE): "
                         f"it runs in the exact oracle only")
    return -1 if p.CODE is None else p.CODE


def force_scale(plan, n_data: int, batch_size: int) -> float:
    return resolve_plan(plan).force_scale(n_data, batch_size)


def period(plan, n_data: int, batch_size: int) -> int:
    """Steps after which the plan draws fresh randomness (1 for full and iid)."""
    return resolve_plan(plan).period(n_data, batch_size)


def count_orders(plan, n_data: int, batch_size: int) -> int:
    """Number of equally likely batch sequences per period the oracle enumerates."""
    p = resolve_plan(plan)
    if getattr(p, "count_orders", None) is not None:
        return p.count_orders(n_data, batch_size)
    return len(p.outcomes(n_data, batch_size))


@nb.njit(nogil=True, inline="always")
def shuffle_lanes(perm, states, u):
    """Fisher-Yates shuffle of every column ``perm[:, c]`` in place, chain ``c`` drawing from its
    stream ``states[:, c]`` (word-major, :mod:`integrators.rng`); ``u`` (shape ``(n,)``) is scratch."""
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


@nb.njit(nogil=True)
def next_batches(plan_code, perm, position, batch_size, states, out, source, u):
    """Write the next batch of every chain of a block into ``out[:n_b, c]`` and return ``n_b``.

    The chains of a block stand at the same step of the plan's period, ``position[0]`` (shared;
    partitions cut alike, so every chain's batch has the same length); each chain has its own
    permutation ``perm[:, c]`` and batch stream ``states[:, c]`` (word-major, :mod:`integrators.rng`).
    A new period shuffles each ``perm[:, c]``, or, when ``source`` is not empty, copies ``source``
    (the permutations of other chains: the coupled h / h/2 chains).  ``full`` writes
    its batch once, on the first call.  ``u`` (shape ``(n,)``) is scratch.
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
    m = (n_data + batch_size - 1) // batch_size
    p = position[0]
    if p == 0:
        if source.shape[0] > 0:
            for i in range(n_data):
                for c in range(n):
                    perm[i, c] = source[i, c]
        else:
            shuffle_lanes(perm, states, u)
    if plan_code == RR:
        j = p
        position[0] = (p + 1) % m
    else:  # SMS: forward then backward over the same partition
        j = p if p < m else 2 * m - 1 - p
        position[0] = (p + 1) % (2 * m)
    start = j * batch_size
    stop = min(start + batch_size, n_data)
    for i in range(start, stop):
        for c in range(n):
            out[i - start, c] = perm[i, c]
    return stop - start


def batch_rule(plan=None):
    """The Numba batch rule of a plan: its own ``BATCH_RULE`` (same signature as
    :func:`next_batches`) or the built-in rules, :func:`next_batches`."""
    rule = None if plan is None else getattr(resolve_plan(plan), "BATCH_RULE", None)
    return next_batches if rule is None else rule


def batch_sequence(plan: str, n_data: int, batch_size: int, n_steps: int, seed: int = 0):
    """The first ``n_steps`` batches of a plan as a list of index arrays (for inspection/tests)."""
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


from integrators.plans import full, iid, rr, sms  # noqa: E402  (the built-in plans, registered)

PLANS = Registry("plan", PLAN_ATTRIBUTES, _check_plan, (full, iid, rr, sms))
PLAN_CODES = {name: m.CODE for name, m in PLANS.items()}  # the built-ins' kernel rules
