"""``full``: all data every step, force scale 1 (no minibatching).

    w_k = {1, ..., N_D} for every k
"""

import math

NAME = "full"
KIND = "full"  # its batch rule (:data:`integrators.plans.KINDS`)
WEAK_ORDER = math.inf  # no cap: the sampler keeps the scheme's declared orders
STRONG_ORDER = math.inf
THEOREM = True  # its orders are proved
SOURCE = "full gradient"


def force_scale(n_data: int, batch_size: int) -> float:
    return 1.0


def period(n_data: int, batch_size: int) -> int:
    return 1


def count_orders(n_data: int, batch_size: int) -> int:
    return 1


def outcomes(n_data: int, batch_size: int) -> list:
    """One period's batch sequences with their probabilities (for the exact oracle)."""
    return [(1.0, [tuple(range(n_data))])]
