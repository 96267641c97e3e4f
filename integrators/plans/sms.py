"""``sms`` (symmetric minibatch splitting): a fresh random partition every two epochs, visited
forward then backward, force scaled by ``N_m = ceil(N_D / N_b)``.

    shuffle, cut into w_1 ... w_{N_m}, use w_1, ..., w_{N_m}, w_{N_m}, ..., w_1

The palindrome cancels the first-order error of the sweep: weak (and, for UBU, strong) order 2
(the paper's main theorem).
"""

import numba as nb

from integrators.plans import Plan
from integrators.plans._partitions import partition_plan_functions

_SWEEPS = 2  # epochs per fresh partition: forward, then backward


@nb.njit(nogil=True, inline="always")
def batch_index(position, n_batches):
    """The batch of the partition used at step ``position`` of the period: ``w_1 ... w_{N_m}`` then
    ``w_{N_m} ... w_1`` (``N_m = n_batches``), a period of ``2 N_m`` steps."""
    return position if position < n_batches else 2 * n_batches - 1 - position


_force_scale, _period, _count_orders, _outcomes = partition_plan_functions(_SWEEPS, batch_index)

PLAN = Plan(
    NAME="sms",
    KIND="partition",  # its batch rule (:data:`integrators.plans.KINDS`)
    batch_index=batch_index,
    SWEEPS=_SWEEPS,
    WEAK_ORDER=2.0,
    STRONG_ORDER=2.0,
    THEOREM=True,  # its orders are proved
    SOURCE="paper, main theorem",
    force_scale=_force_scale, period=_period, count_orders=_count_orders, outcomes=_outcomes,
)

__all__ = ["PLAN"]
