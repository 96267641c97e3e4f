"""The control variate of a BNN chain when the network has batch norm: its reference gradient
follows the batches the sampler will draw (:class:`BlockReferenceSampler`)."""

from __future__ import annotations

import torch

from integrators.plans import n_batches, plan_rule
from integrators.torch import ModuleSampler


def block_length(plan, n_data: int, batch_size: int) -> int:
    """The batches of one block of :class:`BlockReferenceSampler`, one period of the plan: ``2 N_m``
    for ``sms``, ``N_m`` for ``rr`` and ``iid``, 1 for ``full``."""
    rule = plan_rule(plan)
    m = n_batches(n_data, batch_size)
    return {"full": 1, "iid": m}.get(rule.kind, rule.sweeps * m)


class BlockReferenceSampler(ModuleSampler):
    """:class:`integrators.torch.ModuleSampler` whose control variate is exact over each block of
    batches, with or without batch norm.

    The control-variate force at batch ``w`` is

        G(x, w) = P x + (x - x*)/rho^2 + r_B + s (grad L(x; w) - grad L(x*; w)),

    with ``s`` the plan's force scale.  With batch norm a datum's loss depends on its batch, so
    ``sum_j grad L(x*; w_j)`` depends on the partition, which ``sms`` and ``rr`` redraw every period:
    the parent's fixed full gradient leaves a bias.  Here the batches are read one block ahead
    (:func:`block_length`) and ``r_B = (s / |B|) sum_{w in B} grad L(x*; w)``, so the correction
    averages to exactly zero over the block.  Cost: one more pass over the data at ``x*`` per block.
    ``config.control_variate`` must be True (``ValueError``)."""

    def __init__(self, model: torch.nn.Module, config, **kwargs):
        if not getattr(config, "control_variate", False):
            raise ValueError("BlockReferenceSampler is the control variate's sampler: config.control_variate "
                             "must be True (use ModuleSampler without it)")
        super().__init__(model, config, **kwargs)
        self.block: list = []
        self._length = block_length(config.plan, config.n_data, config.effective_batch_size)
        self._batches = self._blocks(self._batches)

    def _blocks(self, batches):
        """The batches of ``batches`` in order; the reference gradient is reset at each block's start."""
        while True:
            block = []
            for _ in range(self._length):
                try:
                    block.append(next(batches))
                except StopIteration:
                    break
            if not block:
                return
            self.block, self.ref_full = block, None  # the force computes r_B on its first use
            yield from block

    def full_reference_gradient(self, loss_fn) -> torch.Tensor:
        """``r_B``: ``s / |B|`` times the sum of ``grad L(x*; w)`` over the current block's batches, each
        distinct batch evaluated once (``ValueError`` before the first batch is drawn)."""
        if not self.block:
            raise ValueError("no block of batches drawn yet: the reference gradient follows the drawn batches")
        counts: dict[int, list] = {}
        for b in self.block:
            counts.setdefault(id(b), [b, 0])[1] += 1
        total = torch.zeros_like(self.x)
        for b, c in counts.values():
            total.add_(self._reference_gradient(loss_fn, b), alpha=float(c))
        return total.mul_(self.config.scale / len(self.block))
