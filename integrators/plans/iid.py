"""``iid`` (SG, with replacement): each step ``N_b`` indices drawn independently and uniformly
from ``[N_D]``, force scaled by ``N_D / N_b`` (an unbiased gradient estimate).

    w_k = (i_1, ..., i_{N_b}),  i_j ~ U{1..N_D} independent of everything else

Any scheme under ``iid`` is first order weakly and of order 1/2 strongly (the paper's Thm. SG-UBU).
"""

import itertools
import math

import numpy as np

from integrators.plans import Plan


def force_scale(n_data: int, batch_size: int) -> float:
    """The factor on the batch's force: ``N_D / N_b`` (an unbiased force)."""
    return n_data / batch_size


def period(n_data: int, batch_size: int) -> int:
    """The period of the batch sequence in steps: 1 (steps are independent)."""
    return 1


def count_orders(n_data: int, batch_size: int) -> int:
    """The number of possible batches of one step: the multisets of ``N_b`` of ``N_D`` indices."""
    return math.comb(n_data + batch_size - 1, batch_size)


def outcomes(n_data: int, batch_size: int) -> list:
    """Every multiset of ``batch_size`` indices with its multinomial probability (for the exact oracle)."""
    out = []
    total = n_data**batch_size
    for multiset in itertools.combinations_with_replacement(range(n_data), batch_size):
        counts = np.bincount(multiset, minlength=n_data)
        ways = math.factorial(batch_size)
        for c in counts:
            ways //= math.factorial(int(c))
        out.append((ways / total, [multiset]))
    return out


PLAN = Plan(
    NAME="iid",
    KIND="iid",  # its batch rule (:data:`integrators.plans.KINDS`)
    WEAK_ORDER=1.0,
    STRONG_ORDER=0.5,
    THEOREM=True,  # its orders are proved
    SOURCE="paper, Thm. SG-UBU (any scheme, iid)",
    force_scale=force_scale, period=period, count_orders=count_orders, outcomes=outcomes,
)

__all__ = ["PLAN"]
