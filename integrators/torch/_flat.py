"""The trainable parameters of an ``nn.Module`` as views into one flat buffer (and their gradients
into one flat gradient buffer): the layout module mode's scheme updates with whole-buffer tensor
operations."""

from __future__ import annotations

from collections.abc import Mapping

import torch


class FlatParameters:
    """The trainable parameters of ``model`` as views into one flat buffer (gradients likewise).

    Every trainable parameter's ``data`` becomes a view into ``x`` and its ``grad`` a view into
    ``grad``, in the order of ``model.named_parameters()``: module mode's scheme updates the whole
    buffer with tensor operations and the model sees the new values at once.  All trainable
    parameters must share one device and one floating-point dtype.

    Parameters
    ----------
    model : torch.nn.Module
        The model; parameters with ``requires_grad=False`` are left alone.

    Attributes
    ----------
    x : torch.Tensor
        The flat parameter buffer.
    grad : torch.Tensor
        The flat gradient buffer.
    named : list of (str, torch.nn.Parameter)
        The trainable parameters, in buffer order.
    frozen : list of str
        Names of the parameters that do not require gradients.
    sizes, offsets : list of int
        Each trainable parameter's size and offset in the buffer.
    device : torch.device
        The parameters' device.
    dtype : torch.dtype
        The parameters' dtype.
    state_names : set of str
        The keys of ``model.state_dict()``.

    Raises
    ------
    ValueError
        If ``model`` is not an ``nn.Module``, has no trainable parameter, or its trainable
        parameters are on several devices or the ``meta`` device, of several dtypes or not
        floating point.
    """

    def __init__(self, model: torch.nn.Module):
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.state_names = set(model.state_dict())  # what a state_dict of the model may also hold
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
        if not named:
            raise ValueError("the model has no trainable parameters")
        devices = sorted({str(p.device) for _, p in named})
        if len(devices) > 1:
            raise ValueError(f"parameters on mixed devices {devices}; move the model to one device")
        dtypes = sorted({str(p.dtype) for _, p in named})
        if len(dtypes) > 1:
            raise ValueError(f"parameters of mixed dtypes {dtypes}; convert the model to one dtype")
        self.named = named
        self.device, self.dtype = named[0][1].device, named[0][1].dtype
        if self.device.type == "meta":  # shapes without values: nothing to sample from
            raise ValueError("the model's parameters are on the 'meta' device (shapes without values); "
                             "materialize them first, e.g. model.to_empty(device='cpu') and load its weights")
        if not self.dtype.is_floating_point:
            raise ValueError(f"parameters must be floating point, got {self.dtype}")
        self.sizes = [p.numel() for _, p in named]
        self.offsets = [sum(self.sizes[:i]) for i in range(len(named))]
        total = sum(self.sizes)
        with torch.no_grad():
            self.x = torch.cat([p.detach().reshape(-1) for _, p in named])
        self.grad = torch.zeros(total, device=self.device, dtype=self.dtype)
        for (_, p), off, size in zip(named, self.offsets, self.sizes, strict=True):
            p.data = self.x[off:off + size].view_as(p)
            p.grad = self.grad[off:off + size].view_as(p)

    def __len__(self) -> int:
        return self.x.numel()

    def check_bound(self, model: torch.nn.Module) -> None:
        """Refuse a model whose trainable parameters are no longer this buffer's views: a parameter
        replaced (``model.fc.weight = nn.Parameter(...)``), added or removed, or converted or moved
        (``model.double()``, ``model.to(...)`` give a parameter new data) after the layout was made.
        The sampler would otherwise move the old buffer while the model computes with the new values.

        Parameters
        ----------
        model : torch.nn.Module
            The model the layout was made from.

        Raises
        ------
        ValueError
            Naming the first parameter that changed and how.
        """
        now = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        names = [n for n, _ in self.named]
        if [n for n, _ in now] != names:
            changed = sorted(set(names).symmetric_difference(n for n, _ in now)) or names
            raise ValueError(f"the model's trainable parameters changed after the sampler was built (parameter "
                             f"{changed[0]!r} added, removed or reordered); build a new sampler for the model")
        for (name, p), (_, mine), off in zip(now, self.named, self.offsets, strict=True):
            if p is not mine:
                raise ValueError(f"parameter {name!r} was replaced after the sampler was built; the sampler moves "
                                 f"the parameters it was built with: build a new sampler for the model")
            if p.dtype != self.dtype or p.device != self.device or p.data_ptr() != self.x[off:].data_ptr():
                raise ValueError(f"parameter {name!r} is now {p.dtype} on {p.device}, no longer the sampler's "
                                 f"{self.dtype} buffer on {self.device}: the model was converted or moved "
                                 f"(model.double(), model.to(...)) after the sampler was built; convert it first, "
                                 f"then build the sampler")

    def reaches(self, loss: torch.Tensor) -> bool:
        """Whether ``loss``'s autograd graph leads to a trainable parameter.

        Else every gradient is None and ``backward`` leaves the gradient buffer zero: the sampler
        would sample the prior.

        Parameters
        ----------
        loss : torch.Tensor
            A scalar loss computed from the model.

        Returns
        -------
        bool
            True when some trainable parameter of these flat parameters receives a gradient from it.
        """
        mine = {id(p) for _, p in self.named}
        seen, todo = set(), [loss.grad_fn]
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if id(getattr(node, "variable", None)) in mine:  # an AccumulateGrad node: a leaf's gradient
                return True
            todo.extend(fn for fn, _ in node.next_functions)
        return False

    def check_finite(self, what: str = "the model's parameters") -> None:
        """Refuse non-finite parameter values by the parameter's name.

        Bad input, not a divergence: the sampler has not stepped.

        Parameters
        ----------
        what : str, default "the model's parameters"
            What the values are, for the message.

        Raises
        ------
        ValueError
            Naming the first parameter with a non-finite value.
        """
        for (name, _), off, size in zip(self.named, self.offsets, self.sizes, strict=True):
            if not bool(torch.isfinite(self.x[off:off + size]).all()):
                raise ValueError(f"{what} must be finite: parameter {name!r} contains non-finite values")

    def per_coordinate(self, values) -> torch.Tensor:
        """A flat tensor holding one number per parameter on all of that parameter's coordinates.

        Parameters
        ----------
        values : sequence of float
            One number per trainable parameter, in buffer order.

        Returns
        -------
        torch.Tensor
            Shape ``(len(self),)``, ``values[j]`` on parameter ``j``'s coordinates.
        """
        return torch.cat([torch.full((s,), float(val), device=self.device, dtype=self.dtype)
                          for s, val in zip(self.sizes, values, strict=True)])

    def flatten(self, value) -> torch.Tensor:
        """A flat tensor in buffer order from a flat tensor or a ``{name: tensor}`` mapping.

        A mapping must name every trainable parameter (in its shape or flat); it may also hold
        the model's buffers and frozen parameters (a ``state_dict``), which are skipped.

        Parameters
        ----------
        value : torch.Tensor or array_like or mapping
            The values, flat or by parameter name.

        Returns
        -------
        torch.Tensor
            Shape ``(len(self),)``, on the parameters' device and in their dtype.

        Raises
        ------
        ValueError
            If the mapping lacks a parameter, names something the model does not have, or gives
            a wrong shape; the number of values is not the number of coordinates; or a value is
            not finite.
        """
        if isinstance(value, Mapping):
            missing = [n for n, _ in self.named if n not in value]
            if missing:
                raise ValueError(f"the mapping lacks parameters {missing}")
            unknown = sorted(set(value) - self.state_names - {n for n, _ in self.named})
            if unknown:  # (buffers and frozen parameters of a state_dict are skipped)
                raise ValueError(f"the mapping names no parameter of the model: {unknown}")
            for n, p in self.named:
                shape = tuple(torch.as_tensor(value[n]).shape)
                if shape != tuple(p.shape) and shape != (p.numel(),):  # the parameter's shape, or flat
                    raise ValueError(f"the mapping's {n!r} has shape {shape}, the parameter {tuple(p.shape)}")
            flat = torch.cat([torch.as_tensor(value[n]).reshape(-1) for n, _ in self.named])
        else:
            flat = torch.as_tensor(value).reshape(-1)
        if flat.numel() != len(self):
            raise ValueError(f"expected {len(self)} parameter values, got {flat.numel()}")
        flat = flat.to(device=self.device, dtype=self.dtype)
        if not torch.isfinite(flat).all():
            raise ValueError("x_star contains non-finite values")
        return flat

    def gradient(self, loss: torch.Tensor) -> torch.Tensor:
        """The gradient of ``loss`` with respect to the parameters, in the flat gradient buffer.

        ``backward`` accumulates into the buffer's views; where autograd replaced a view (or a
        user cleared it) the gradient is copied back and the view re-attached.

        Parameters
        ----------
        loss : torch.Tensor
            A scalar computed from the model's parameters.

        Returns
        -------
        torch.Tensor
            The flat gradient buffer ``grad`` (the same tensor every call).
        """
        self.grad.zero_()
        loss.backward()
        for (_, p), off, size in zip(self.named, self.offsets, self.sizes, strict=True):
            if p.grad is None or p.grad.data_ptr() != self.grad[off:].data_ptr():
                # autograd replaced the view (or a user cleared it): copy and re-attach
                if p.grad is not None:
                    self.grad[off:off + size].copy_(p.grad.reshape(-1))
                else:
                    self.grad[off:off + size].zero_()
                p.grad = self.grad[off:off + size].view_as(p)
        return self.grad
