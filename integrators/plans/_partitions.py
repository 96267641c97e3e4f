"""Partitions shared by the plans' declarations: batch counts and the enumeration of ordered
partitions that the exact oracle averages over."""

from __future__ import annotations

import itertools
import math


def n_batches(n_data: int, batch_size: int) -> int:
    """``N_m = ceil(N_D / N_b)``: batches per epoch (the last one may be shorter)."""
    return math.ceil(n_data / batch_size)


def batch_sizes(n_data: int, batch_size: int) -> list[int]:
    """Sizes of the consecutive batches a partition is cut into: ``N_b, ..., N_b, rest``."""
    m = n_batches(n_data, batch_size)
    return [batch_size] * (m - 1) + [n_data - (m - 1) * batch_size]


def count_partitions(n_data: int, batch_size: int) -> int:
    """Number of ordered partitions into :func:`batch_sizes` (a multinomial coefficient)."""
    count = math.factorial(n_data)
    for s in batch_sizes(n_data, batch_size):
        count //= math.factorial(s)
    return count


def ordered_partitions(n_data: int, batch_size: int):
    """All ordered partitions of ``range(n_data)`` into consecutive batches of
    :func:`batch_sizes`, each as a tuple of index tuples, equally likely under a uniform shuffle."""
    sizes = batch_sizes(n_data, batch_size)

    def rec(remaining, k):
        if k == len(sizes):
            yield ()
            return
        for first in itertools.combinations(remaining, sizes[k]):
            rest = tuple(i for i in remaining if i not in first)
            for tail in rec(rest, k + 1):
                yield (first,) + tail

    yield from rec(tuple(range(n_data)), 0)


def partition_outcomes(n_data: int, batch_size: int, sweeps: int, batch_index) -> list:
    """One period's batch sequences of a partition plan with their probabilities (for the exact
    oracle): every ordered partition, equally likely, visited by the plan's rule
    ``batch_index(position, n_batches)`` over ``sweeps * n_batches`` steps."""
    orders = list(ordered_partitions(n_data, batch_size))
    m = n_batches(n_data, batch_size)
    return [(1.0 / len(orders), [order[batch_index(p, m)] for p in range(sweeps * m)]) for order in orders]


def partition_plan_functions(sweeps: int, batch_index):
    """``(force_scale, period, count_orders, outcomes)`` of a partition plan visiting a fresh partition over
    ``sweeps`` epochs in the order of its Numba rule ``batch_index``: force scaled by ``N_m``, period
    ``sweeps * N_m`` steps, every ordered partition equally likely."""

    def force_scale(n_data: int, batch_size: int) -> float:
        return float(n_batches(n_data, batch_size))

    def period(n_data: int, batch_size: int) -> int:
        return sweeps * n_batches(n_data, batch_size)

    def count_orders(n_data: int, batch_size: int) -> int:
        return count_partitions(n_data, batch_size)

    def outcomes(n_data: int, batch_size: int) -> list:
        return partition_outcomes(n_data, batch_size, sweeps, batch_index.py_func)

    return force_scale, period, count_orders, outcomes
