"""The control variate of a BNN chain when the network has batch norm: its reference gradient
follows the batches the sampler will draw (:class:`BlockReferenceSampler`)."""

from __future__ import annotations

import torch

from integrators.plans import n_batches, plan_rule
from integrators.torch import ModuleSampler


def block_length(plan, n_data: int, batch_size: int) -> int:
    """The batches of one block of :class:`BlockReferenceSampler`: one period of the plan.

    Parameters
    ----------
    plan : str or module or Plan
        The gradient plan.
    n_data, batch_size : int
        Training data and the (effective) batch size.

    Returns
    -------
    int
        ``sweeps * N_m`` for a partition plan (``2 N_m`` for ``sms``: forward then backward over
        one partition, ``N_m`` for ``rr``), ``N_m`` for ``iid``, 1 for ``full``.
    """
    rule = plan_rule(plan)
    m = n_batches(n_data, batch_size)
    return {"full": 1, "iid": m}.get(rule.kind, rule.sweeps * m)


class BlockReferenceSampler(ModuleSampler):
    """:class:`integrators.torch.ModuleSampler` whose control variate is exact over each block of
    batches, with or without batch norm.

    The control-variate force at batch ``w`` is

        G(x, w) = P x + (x - x*)/rho^2 + r_B + s (grad L(x; w) - grad L(x*; w)),

    with ``s`` the plan's force scale (``N_m`` for partitions). With batch norm (current-batch
    statistics) the loss of a datum depends on the other data of its batch, so
    ``sum_j grad L(x*; w_j)`` depends on the partition; the parent class sums it over contiguous
    batches once, while the partition of ``sms`` and ``rr`` is redrawn every period, and the
    correction's average over a sweep is then not zero (the force is biased). Here the batches are
    read one block ahead (:func:`block_length`: one period of the plan, e.g. one partition visited
    forward and backward for ``sms``) and

        r_B = (s / |B|) sum_{w in B} grad L(x*; w)

    over the block's batches ``B`` (with multiplicity), so the correction averaged over the block's
    force evaluations is exactly zero: for a partition, ``r_B = sum_j grad L(x*; w_j)`` over the
    current partition. Without batch norm ``r_B`` is the full gradient at ``x*`` as before.

    Cost: one more pass over the data at ``x*`` per block (each distinct batch's gradient once),
    against none after the first for the parent class: about half a pass per epoch more for
    ``sms``, one per epoch for ``rr`` and ``iid``.

    Parameters
    ----------
    model : torch.nn.Module
        As for :class:`integrators.torch.ModuleSampler`.
    config : integrators.torch.SamplerConfig
        As there; ``control_variate`` must be True (else the parent class is the sampler).
    **kwargs
        Passed on (``generator``, ``batches``, ``noise``, ``v0``); an explicit ``batches``
        sequence is read in blocks, a last incomplete block being its own block.

    Attributes
    ----------
    block : list of torch.Tensor
        The current block's batches, in the order drawn.

    Raises
    ------
    ValueError
        If ``config.control_variate`` is False, or as the parent class raises.
    """

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
        """``r_B``: ``s / |B|`` times the sum of ``grad L(x*; w)`` over the current block's batches.

        Each distinct batch (by identity: a partition plan yields the same tensor at each visit)
        is evaluated once and counted with its multiplicity; ``x`` visits ``x*`` and comes back.

        Parameters
        ----------
        loss_fn : callable
            ``loss_fn(model, indices)``: the summed loss of the batch ``indices``.

        Returns
        -------
        torch.Tensor
            The flat reference gradient, a new tensor.

        Raises
        ------
        ValueError
            If no batch has been drawn yet (the force is evaluated at a drawn batch).
        """
        if not self.block:
            raise ValueError("no block of batches drawn yet: the reference gradient follows the drawn batches")
        counts: dict[int, list] = {}
        for b in self.block:
            counts.setdefault(id(b), [b, 0])[1] += 1
        total = torch.zeros_like(self.x)
        for b, c in counts.values():
            total.add_(self._reference_gradient(loss_fn, b), alpha=float(c))
        return total.mul_(self.config.scale / len(self.block))
