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
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from integrators.rng import lane_states, lane_uniforms

PLAN_CODES = {"full": 0, "iid": 1, "rr": 2, "sms": 3}
SMALL_SHUFFLE = 8  # up to this many data, shuffles swap by masked passes instead of gathers
FULL, IID, RR, SMS = 0, 1, 2, 3


def n_batches(n_data: int, batch_size: int) -> int:
    return math.ceil(n_data / batch_size)


def force_scale(plan: str, n_data: int, batch_size: int) -> float:
    if plan == "full":
        return 1.0
    if plan == "iid":
        return n_data / batch_size
    return float(n_batches(n_data, batch_size))


def period(plan: str, n_data: int, batch_size: int) -> int:
    """Steps after which the plan draws fresh randomness (1 for full and iid)."""
    m = n_batches(n_data, batch_size)
    return {"full": 1, "iid": 1, "rr": m, "sms": 2 * m}[plan]


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


def batch_sequence(plan: str, n_data: int, batch_size: int, n_steps: int, seed: int = 0):
    """The first ``n_steps`` batches of a plan as a list of index arrays (for inspection/tests)."""
    if plan not in PLAN_CODES:
        raise ValueError(f"unknown plan {plan!r}; choose from {sorted(PLAN_CODES)}")
    states = lane_states(seed, 1, 0, 1)
    perm = np.arange(n_data, dtype=np.int64)[:, None].copy()
    position = np.zeros(1, dtype=np.int64)
    out = np.empty((max(n_data, batch_size), 1), dtype=np.int64)
    no_source = np.empty((0, 1), dtype=np.int64)
    scratch = np.empty(1)
    seq = []
    for _ in range(n_steps):
        n = next_batches(PLAN_CODES[plan], perm, position, batch_size, states, out, no_source, scratch)
        seq.append(out[:n, 0].copy())
    return seq
