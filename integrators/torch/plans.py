"""Minibatch plans on tensors (the sequences of :mod:`integrators.plans`): each chain draws its own
batches; the chains stand at the same step of the plan's period, so their batches have one length.

``ChainPlan.next()`` returns the batch indices of every chain, shape ``(n_chains, n_b)`` (``None``
for the full gradient), contiguous (an even partition is stored batch-major, so every batch has
the same strides and a compiled step takes them all with one graph).  Partitions cut a random
permutation into ``N_m = ceil(N_D / N_b)`` batches (the last may be shorter); ``rr`` visits them
in order every epoch, ``sms`` forward then backward over two epochs; ``iid`` draws ``N_b`` indices
with replacement each step.
"""

from __future__ import annotations

import functools

import torch

from integrators.plans import PLAN_CODES, SMALL_SHUFFLE, force_scale, n_batches, period  # noqa: F401  (re-exported)


class ChainPlan:
    """The plan's batches for ``n_chains`` chains; ``uniforms(m)`` returns ``(m, n_chains)``
    uniforms (a chain's column from its own stream)."""

    def __init__(self, plan: str, n_data: int, batch_size: int, uniforms, n_chains: int, device, *,
                 shuffle=None):
        if plan not in PLAN_CODES:
            raise ValueError(f"unknown plan {plan!r}; choose from {sorted(PLAN_CODES)}")
        self.plan, self.n_data, self.batch_size = plan, n_data, batch_size
        self.uniforms = uniforms
        self.m = n_batches(n_data, batch_size)
        self.position = 0
        self.perm = None
        self.n_chains, self.device = n_chains, device
        self.shuffle_fn = self.shuffle if shuffle is None else functools.partial(shuffle, n_data)
        self.blocks = None

    def shuffle(self, u: torch.Tensor) -> torch.Tensor:
        """A uniform random permutation per chain from uniforms ``u`` of shape ``(n_data, n_chains)``
        (:func:`shuffle`)."""
        return shuffle(self.n_data, u)

    def next(self):
        if self.plan == "full":
            return None
        if self.plan == "iid":
            u = self.uniforms(self.batch_size).T  # (n_chains, batch_size)
            return torch.clamp((u * self.n_data).to(torch.int64), max=self.n_data - 1)
        p = self.position
        if p == 0:
            self.perm = self.shuffle_fn(self.uniforms(self.n_data))
            if self.n_data % self.batch_size == 0:  # batch-major: every batch contiguous
                self.blocks = self.perm.view(self.n_chains, self.m, self.batch_size).transpose(0, 1).contiguous()
        if self.plan == "rr":
            j = p
            self.position = (p + 1) % self.m
        else:
            j = p if p < self.m else 2 * self.m - 1 - p
            self.position = (p + 1) % (2 * self.m)
        if self.n_data % self.batch_size == 0:
            return self.blocks[j]
        start = j * self.batch_size
        return self.perm[:, start:min(start + self.batch_size, self.n_data)].contiguous()


def shuffle(n_data: int, u: torch.Tensor) -> torch.Tensor:
    """A uniform random permutation per chain from uniforms ``u`` of shape ``(n_data, n_chains)``:
    Fisher-Yates swaps for few data (a few passes over the chains), a sort of the uniforms
    otherwise."""
    if n_data > SMALL_SHUFFLE:
        return torch.argsort(u.T, dim=1)
    perm = torch.arange(n_data, device=u.device).repeat(u.shape[1], 1)
    for i in range(n_data - 1, 0, -1):
        j = torch.clamp((u[i] * (i + 1)).to(torch.int64), max=i)[:, None]
        at_i = perm[:, i:i + 1].clone()
        perm[:, i:i + 1] = perm.gather(1, j)
        perm.scatter_(1, j, at_i)
    return perm


@functools.lru_cache(maxsize=4)
def compiled_shuffle(backend: str = "inductor"):
    """:func:`shuffle` through ``torch.compile`` (one kernel instead of a few per swap)."""
    return torch.compile(shuffle, backend=backend)


def plan_batches(plan: str, n_data: int, batch_size: int, generator: torch.Generator, device):
    """An endless iterator over one chain's batches (1-D index tensors; the full plan yields
    ``arange(N_D)``), drawing from ``generator`` (module mode: the data loader gets these)."""
    m = n_batches(n_data, batch_size)
    while True:
        if plan == "full":
            yield torch.arange(n_data, device=device)
        elif plan == "iid":
            yield torch.randint(n_data, (batch_size,), generator=generator, device=device)
        else:
            perm = torch.randperm(n_data, generator=generator, device=device)
            parts = [perm[j * batch_size:min((j + 1) * batch_size, n_data)] for j in range(m)]
            yield from parts
            if plan == "sms":
                yield from reversed(parts)
