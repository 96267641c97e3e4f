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

PLAN_CODES = {"full": 0, "iid": 1, "rr": 2, "sms": 3}
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
def shuffle(perm, rng):
    """Fisher-Yates shuffle in place with a numpy Generator."""
    for i in range(perm.shape[0] - 1, 0, -1):
        j = int(rng.random() * (i + 1))  # bias <= n / 2^53; Generator.integers is ~20x slower in numba
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp


@nb.njit(nogil=True, inline="always")
def next_batch(plan_code, perm, position, batch_size, rng, out, source):
    """Write the next batch into ``out`` and return its length.

    ``perm`` holds the current permutation, ``position[0]`` the step within the plan's period.
    A new period shuffles ``perm`` with ``rng``, or, when ``source`` has the length of ``perm``,
    copies ``source`` (a permutation shared with another chain: the coupled h / h/2 chains).
    """
    n_data = perm.shape[0]
    if plan_code == FULL:
        for i in range(n_data):
            out[i] = i
        return n_data
    if plan_code == IID:
        for j in range(batch_size):
            out[j] = int(rng.random() * n_data)
        return batch_size
    m = (n_data + batch_size - 1) // batch_size
    p = position[0]
    if p == 0:
        if source.shape[0] == n_data:
            for i in range(n_data):
                perm[i] = source[i]
        else:
            shuffle(perm, rng)
    if plan_code == RR:
        j = p
        position[0] = (p + 1) % m
    else:  # SMS: forward then backward over the same partition
        j = p if p < m else 2 * m - 1 - p
        position[0] = (p + 1) % (2 * m)
    start = j * batch_size
    stop = min(start + batch_size, n_data)
    for i in range(start, stop):
        out[i - start] = perm[i]
    return stop - start


def batch_sequence(plan: str, n_data: int, batch_size: int, n_steps: int, seed: int = 0):
    """The first ``n_steps`` batches of a plan as a list of index arrays (for inspection/tests)."""
    if plan not in PLAN_CODES:
        raise ValueError(f"unknown plan {plan!r}; choose from {sorted(PLAN_CODES)}")
    rng = np.random.default_rng(seed)
    perm = np.arange(n_data, dtype=np.int64)
    position = np.zeros(1, dtype=np.int64)
    out = np.empty(max(n_data, batch_size), dtype=np.int64)
    no_source = np.empty(0, dtype=np.int64)
    seq = []
    for _ in range(n_steps):
        n = next_batch(PLAN_CODES[plan], perm, position, batch_size, rng, out, no_source)
        seq.append(out[:n].copy())
    return seq
