"""The reference walk of a plan's batches, on numpy arrays or torch tensors alike.

Every backend but the Numba kernel walks a plan through :class:`PlanWalk` (the torch chains,
module mode, the adapters); the kernel derives a fast path from the same declaration
(:func:`integrators.plans.batch_rule`).  The walk reads the plan's :class:`integrators.plans.PlanRule`:

    full       every step: everything()
    iid        every step: indices()                      (N_b indices drawn with replacement)
    partition  at step 0 of a period: cut(permutation(), N_b) into w_1 ... w_{N_m};
               at step p of the period (0 <= p < SWEEPS N_m): w_{batch_index(p, N_m) + 1}

The randomness comes from the caller, so each backend keeps its own streams and draws.
"""

from __future__ import annotations

from integrators.plans import n_batches, plan_rule


def cut(permutation, batch_size: int) -> list:
    """The consecutive batches ``N_b, ..., N_b, rest`` a partition cuts ``permutation`` into,
    along its last axis (a numpy array or a torch tensor; the batches are views)."""
    n_data = permutation.shape[-1]
    return [permutation[..., start:min(start + batch_size, n_data)] for start in range(0, n_data, batch_size)]


class PlanWalk:
    """A plan's batches, step after step: the one walk of a plan's rule.

    Parameters
    ----------
    plan : str or module or Plan
        A registered plan's name or a plan object with a rule every backend runs
        (:func:`integrators.plans.plan_rule`).
    n_data : int
        Number of data terms ``N_D``.
    batch_size : int
        Batch size ``N_b``.
    everything : callable, optional
        ``everything()``: the ``full`` plan's batch (any object; the walk returns it each step).
    indices : callable, optional
        ``indices()``: an ``iid`` step's ``N_b`` indices drawn with replacement.
    permutation : callable, optional
        ``permutation()``: the permutations of a partition plan's new period, shape
        ``(..., N_D)``.
    cut : callable, default :func:`cut`
        ``cut(permutation, batch_size)``: the partition's ``N_m`` batches, in order.  A
        period's batches are cut once, so a batch visited twice (``sms``) is the same object.

    Raises
    ------
    ValueError
        If the plan is unknown or its batches come from a Numba ``BATCH_RULE`` or from no rule.
    """

    def __init__(self, plan, n_data: int, batch_size: int, *, everything=None, indices=None, permutation=None,
                 cut=cut):
        self.rule = plan_rule(plan)
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
    """One period's batches of a plan from its randomness: a permutation of ``range(n_data)``
    (partition plans; shape ``(..., N_D)``), the step's indices (``iid``), or nothing (``full``:
    the batch is ``randomness`` if given, else ``range(n_data)``).

    Returns
    -------
    list
        The period's batches, in order (views of ``randomness`` for a partition plan).
    """
    def given():
        return range(n_data) if randomness is None else randomness

    walk = PlanWalk(plan, n_data, batch_size, everything=given, indices=given, permutation=given)
    return [walk.next() for _ in range(walk.period)]
