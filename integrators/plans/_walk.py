"""The reference walk of a plan's batches, on numpy arrays or torch tensors alike.

Every backend but the Numba kernel walks a plan through :class:`PlanWalk` (the torch chains,
module mode, the adapters); the kernel derives a fast path from the same declaration
(:func:`integrators.plans.batch_rule`).  The walk reads the plan's ``integrators.plans._PlanRule``:

    full       every step: everything()
    iid        every step: indices()                      (N_b indices drawn with replacement)
    partition  at step 0 of a period: cut(permutation(), N_b) into w_1 ... w_{N_m};
               at step p of the period (0 <= p < SWEEPS N_m): w_{batch_index(p, N_m) + 1}

The randomness comes from the caller, so each backend keeps its own streams and draws.
"""

from __future__ import annotations

from integrators.plans import check_batch_indices, n_batches, plan_rule


def cut(permutation, batch_size: int) -> list:
    """The consecutive batches ``N_b, ..., N_b, rest`` a partition cuts ``permutation`` into,
    along its last axis (a numpy array or a torch tensor; the batches are views)."""
    n_data = permutation.shape[-1]
    return [permutation[..., start:min(start + batch_size, n_data)] for start in range(0, n_data, batch_size)]


class PlanWalk:
    """A plan's batches, step after step (the one walk of a plan's rule), from callables ``everything``
    (``full``), ``indices`` (``iid``), ``permutation`` and ``cut`` (partition plans; a period is cut once).
    Raises ``ValueError`` for an unknown plan or one whose batches come from a Numba ``BATCH_RULE`` or no rule."""

    def __init__(self, plan, n_data: int, batch_size: int, *, everything=None, indices=None, permutation=None,
                 cut=cut):
        self.rule = plan_rule(plan)
        check_batch_indices(plan, n_data, batch_size)  # a list would wrap a negative index round silently
        self.n_data, self.batch_size = n_data, batch_size
        self.everything, self.indices, self.permutation, self.cut = everything, indices, permutation, cut
        self.m = n_batches(n_data, batch_size)
        self.period = self.rule.sweeps * self.m if self.rule.kind == "partition" else 1
        self.position = 0
        self.batches = None

    def next(self):
        """The next step's batch."""
        kind = self.rule.kind
        if kind == "full":
            return self.everything()
        if kind == "iid":
            return self.indices()
        p = self.position
        if p == 0:
            self.batches = self.cut(self.permutation(), self.batch_size)
        self.position = (p + 1) % self.period
        return self.batches[self.rule.batch_index(p, self.m)]


def period_batches(plan, n_data: int, batch_size: int, randomness=None) -> list:
    """One period's batches, in order, from the plan's randomness: a permutation ``(..., N_D)`` (partition
    plans; views of it), the step's indices (``iid``), or the batch itself (``full``; default ``range(n_data)``)."""
    def given():
        return range(n_data) if randomness is None else randomness

    walk = PlanWalk(plan, n_data, batch_size, everything=given, indices=given, permutation=given)
    return [walk.next() for _ in range(walk.period)]
