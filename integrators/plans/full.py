"""``full``: all data every step, force scale 1 (no minibatching).

    w_k = {1, ..., N_D} for every k
"""

import math

from integrators.plans import Plan


def force_scale(n_data: int, batch_size: int) -> float:
    """The factor on the batch's force: 1 (the batch is all the data)."""
    return 1.0


def period(n_data: int, batch_size: int) -> int:
    """The period of the batch sequence in steps: 1."""
    return 1


def count_orders(n_data: int, batch_size: int) -> int:
    """The number of possible batch sequences over one period: 1."""
    return 1


def outcomes(n_data: int, batch_size: int) -> list:
    """One period's batch sequences with their probabilities (for the exact oracle): the one batch of all the data."""
    return [(1.0, [tuple(range(n_data))])]


PLAN = Plan(
    NAME="full",
    KIND="full",  # its batch rule (:data:`integrators.plans.KINDS`)
    WEAK_ORDER=math.inf,  # no cap: the sampler keeps the scheme's declared orders
    STRONG_ORDER=math.inf,
    THEOREM=True,  # its orders are proved
    SOURCE="full gradient",
    force_scale=force_scale, period=period, count_orders=count_orders, outcomes=outcomes,
)

__all__ = ["PLAN"]
