"""Minibatch plans on tensors (the sequences of :mod:`integrators.plans`): each chain draws its own
batches; the chains stand at the same step of the plan's period, so their batches have one length.

``ChainPlan.next()`` returns the batch indices of every chain, shape ``(n_chains, n_b)`` (``None``
for the full gradient), contiguous (an even partition is stored batch-major, so every batch has
the same strides and a compiled step takes them all with one graph).  The batches follow the
reference walk of the plan's rule (:class:`integrators.plans._walk.PlanWalk`); this module draws
its randomness: a random permutation per chain for each period of a partition plan, ``N_b``
indices with replacement each step for ``iid``.
"""

from __future__ import annotations

import functools

import torch

from integrators.plans import SMALL_SHUFFLE
from integrators.plans._walk import PlanWalk, cut
from integrators.torch._rng import bits_to_uniform, words


class ChainPlan:
    """The plan's batches for ``n_chains`` chains from ``stream`` (a ``CounterNormals``, or anything whose
    ``uniforms(m)`` gives ``(m, n_chains)``); with a ``CounterNormals`` and ``compile``, each draw is one
    compiled function of the stream's counter (same numbers, fewer kernels)."""

    def __init__(self, plan, n_data: int, batch_size: int, stream, n_chains: int, device, *,
                 compile: str | None = None):
        self.n_data, self.batch_size = n_data, batch_size
        self.stream = stream if hasattr(stream, "keys") else None
        self.uniforms = stream.uniforms if self.stream is not None else stream
        self.compile = compile if self.stream is not None else None
        self.n_chains, self.device = n_chains, device
        # a name or a plan object; refused by name without a rule to follow
        self.walk = PlanWalk(plan, n_data, batch_size, everything=lambda: None, cut=self._cut,
                             indices=lambda: self._draw(functools.partial(iid_batch, n_data), batch_size),
                             permutation=lambda: self._draw(functools.partial(shuffle, n_data), n_data))

    def _draw(self, fn, m: int) -> torch.Tensor:
        """``fn`` of the next ``m`` uniforms of every chain, compiled with the uniforms' draw
        when asked (the stream's counter passes as a 0-d device tensor: no new graph per draw)."""
        if self.compile is None:
            return fn(self.uniforms(m))
        s = self.stream
        start = torch.full((), s.counter, device=s.keys.device, dtype=torch.int64)
        s.counter += m
        return compiled_draw(self.compile)(fn, s.keys, start, m, s.dtype)

    def shuffle(self, u: torch.Tensor) -> torch.Tensor:
        """A uniform random permutation per chain from uniforms ``u`` of shape ``(n_data, n_chains)``
        (:func:`shuffle`)."""
        return shuffle(self.n_data, u)

    def _cut(self, perm: torch.Tensor, batch_size: int) -> list:
        """The partitions' batches, each ``(n_chains, n_b)`` and contiguous (an even partition
        stored batch-major: one copy, every batch with the same strides)."""
        if self.n_data % batch_size == 0:
            m = self.n_data // batch_size
            return list(perm.view(self.n_chains, m, batch_size).transpose(0, 1).contiguous())
        return [b.contiguous() for b in cut(perm, batch_size)]

    def next(self):
        """Every chain's next batch, ``(n_chains, n_b)`` (``None`` for the full gradient)."""
        return self.walk.next()


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


def iid_batch(n_data: int, u: torch.Tensor) -> torch.Tensor:
    """Indices ``(n_chains, n_b)`` drawn with replacement from uniforms ``u`` of shape ``(n_b, n_chains)``."""
    return torch.clamp((u.T * n_data).to(torch.int64), max=n_data - 1)


def draw(fn, keys: torch.Tensor, start: torch.Tensor, m: int, dtype: torch.dtype) -> torch.Tensor:
    """``fn`` of the uniforms at counters ``start .. start + m`` of the streams ``keys``."""
    ctr = start + torch.arange(m, device=keys.device, dtype=torch.int64)
    return fn(bits_to_uniform(words(keys, ctr), dtype))


@functools.lru_cache(maxsize=4)
def compiled_draw(backend: str = "inductor"):
    """:func:`draw` through ``torch.compile`` (graphs by ``fn``, ``m`` and shapes)."""
    return torch.compile(draw, backend=backend)


def plan_batches(plan, n_data: int, batch_size: int, generator: torch.Generator, device):
    """An endless iterator over one chain's batches (1-D index tensors; the full plan yields
    ``arange(N_D)``), drawing from ``generator`` (module mode: the data loader gets these)."""
    walk = PlanWalk(plan, n_data, batch_size, everything=lambda: torch.arange(n_data, device=device),
                    indices=lambda: torch.randint(n_data, (batch_size,), generator=generator, device=device),
                    permutation=lambda: torch.randperm(n_data, generator=generator, device=device))
    while True:
        yield walk.next()
