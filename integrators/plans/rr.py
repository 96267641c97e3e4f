"""``rr`` (SG without replacement, random reshuffling): a fresh random partition every epoch,
visited in order, force scaled by ``N_m = ceil(N_D / N_b)``.

    epoch e: shuffle, cut into w_1 ... w_{N_m}, use w_1, ..., w_{N_m}
"""

import numba as nb

from integrators.plans import Plan
from integrators.plans._partitions import partition_plan_functions

_SWEEPS = 1  # epochs per fresh partition


@nb.njit(nogil=True, inline="always")
def batch_index(position, n_batches):
    """The batch of the partition used at step ``position`` of the period: ``w_1 ... w_{N_m}`` (``N_m = n_batches``)."""
    return position


_force_scale, _period, _count_orders, _outcomes = partition_plan_functions(_SWEEPS, batch_index)

PLAN = Plan(
    NAME="rr",
    KIND="partition",  # its batch rule (:data:`integrators.plans.KINDS`)
    batch_index=batch_index,
    SWEEPS=_SWEEPS,
    WEAK_ORDER=2.0,  # observed on the paper's 1-D example (Fig. 1); no theorem
    STRONG_ORDER=None,  # measured only
    THEOREM=False,  # its orders are observations (the paper, Fig. 1), not a theorem: measured, never a claim
    SOURCE="paper, Fig. 1 (observed, no theorem)",
    force_scale=_force_scale, period=_period, count_orders=_count_orders, outcomes=_outcomes,
)

__all__ = ["PLAN"]
