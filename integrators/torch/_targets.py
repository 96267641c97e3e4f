"""The analytic targets' minibatch forces on tensors, over chains.

``force(x, batch, scale)`` with ``x`` of shape ``(n_chains, d)`` and ``batch`` of shape
``(n_chains, n_b)`` (``None``: every datum, each once) returns

    G(x, w) = grad f_0(x) + scale * sum_{i in w} grad f_i(x)

and, with a control variate at ``x_ref`` (the per-datum gradients there are computed once by
:func:`integrators.targets._force.force_data`, the Numba kernel's own precomputation),

    G(x, w) = grad f_0(x) + sum_i grad f_i(x_ref) + scale * sum_{i in w} (grad f_i(x) - grad f_i(x_ref)).

The data are the Numba target's arrays, moved to the device: one source of truth for a target.
"""

from __future__ import annotations

import torch

from integrators.targets import GaussianTarget, LogisticTarget, MultinomialLogisticTarget, Target
from integrators.targets._force import force_data


class TorchForce:
    """Prior plus scaled batch gradients of one target class, with the optional control variate."""

    def __init__(self, target: Target, device, dtype, control_variate=False, x_ref=None):
        arrays, ref_grads, ref_sum, use_cv = force_data(target, control_variate, x_ref)
        self.n_data, self.dim = target.n_data, target.dim
        self.device, self.dtype = device, dtype
        self.use_cv = bool(use_cv[0])
        self.ref_grads = torch.as_tensor(ref_grads, device=device, dtype=dtype)
        self.ref_sum = torch.as_tensor(ref_sum, device=device, dtype=dtype)
        self._setup(target, arrays)

    def _tensor(self, a, dtype=None):
        return torch.as_tensor(a, device=self.device, dtype=self.dtype if dtype is None else dtype)

    def __call__(self, x, batch, scale):
        g = self.prior_grad(x) + scale * self.batch_grads(x, batch)
        if self.use_cv:
            ref = self.ref_grads.sum(0) if batch is None else self.ref_grads[batch].sum(1)
            g = g + self.ref_sum - scale * ref
        return g


class GaussianForce(TorchForce):
    def _setup(self, target, arrays):
        mu, prec, p0, m0 = arrays
        self.mu, self.prec, self.p0, self.m0 = (self._tensor(a) for a in (mu, prec, p0, m0))
        self.has_prior = bool((p0 != 0).any())

    def prior_grad(self, x):
        if not self.has_prior:
            return torch.zeros_like(x)
        return (x - self.m0) @ self.p0.T

    def batch_grads(self, x, batch):
        if batch is None:  # (n, 1, d) - (N, d) -> (n, N, d)
            diff = x[:, None, :] - self.mu[None]
            return torch.einsum("iab,nib->na", self.prec, diff)
        if self.dim == 1:  # the 1-D example: no matrix products
            return (self.prec[batch, 0, 0] * (x - self.mu[batch, 0])).sum(1, keepdim=True)
        diff = x[:, None, :] - self.mu[batch]
        return torch.einsum("njab,njb->na", self.prec[batch], diff)


class LogisticForce(TorchForce):
    def _setup(self, target, arrays):
        feats, labels, prior = arrays
        self.feats, self.labels = self._tensor(feats), self._tensor(labels)
        self.prior = float(prior[0])

    def prior_grad(self, x):
        return self.prior * x

    def batch_grads(self, x, batch):
        feats = self.feats[None].expand(x.shape[0], -1, -1) if batch is None else self.feats[batch]
        labels = self.labels[None].expand(x.shape[0], -1) if batch is None else self.labels[batch]
        z = torch.einsum("njd,nd->nj", feats, x)
        return torch.einsum("nj,njd->nd", torch.sigmoid(z) - labels, feats)


class MultinomialLogisticForce(TorchForce):
    def _setup(self, target, arrays):
        feats, labels, prior = arrays
        self.feats = self._tensor(feats)
        self.labels = torch.as_tensor(labels, device=self.device, dtype=torch.int64)
        self.prior = float(prior[0])
        self.n_classes = target.n_classes

    def prior_grad(self, x):
        return self.prior * x

    def batch_grads(self, x, batch):
        n = x.shape[0]
        w = x.view(n, -1, self.n_classes)  # (n, p, K), row-major as the Numba target
        feats = self.feats[None].expand(n, -1, -1) if batch is None else self.feats[batch]
        labels = self.labels[None].expand(n, -1) if batch is None else self.labels[batch]
        probs = torch.softmax(torch.einsum("njp,npk->njk", feats, w), dim=-1)
        resid = probs - torch.nn.functional.one_hot(labels, self.n_classes).to(probs.dtype)
        return torch.einsum("njp,njk->npk", feats, resid).reshape(n, -1)


FORCES = {GaussianTarget: GaussianForce, LogisticTarget: LogisticForce,
          MultinomialLogisticTarget: MultinomialLogisticForce}


def torch_force(target: Target, device, dtype, control_variate=False, x_ref=None) -> TorchForce:
    """The tensor force of ``target`` (one of :data:`FORCES`' target classes)."""
    cls = FORCES.get(type(target))
    if cls is None:
        raise ValueError(f"no tensor force for target {type(target).__name__}; "
                         f"choose from {[c.__name__ for c in FORCES]}")
    return cls(target, device, dtype, control_variate, x_ref)
