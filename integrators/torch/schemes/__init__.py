"""The schemes on tensors, one file each, registered under the names of :data:`integrators.schemes.SCHEMES`.

Every module here holds only the tensor ``step`` of the Numba scheme module of the same name;
:class:`TorchScheme` pairs it with that module, whose constants, declared orders and ``FSAL`` are
read there, never retyped. The step writes the same update rule with tensor operations, in the
same order of floating-point operations:

    step(x, v, g, coef, dW, J, force, reflect) -> g

advances ``x`` and ``v`` in place (any shape: ``(n_chains, d)`` in chains mode, a flat parameter
buffer ``(P,)`` in module mode, ``(K, P)`` for an ensemble); ``dW`` and ``J`` have shape
``(2, *x.shape)`` (the path pair over each half step); ``force(x)`` returns the minibatch force at
``x`` (the caller binds the batch); ``reflect(x, v)`` applies the elastic bounce in place (or is
``None``); ``g`` is the cached force of first-same-as-last schemes, and the force the step computed
is returned.
"""

from dataclasses import dataclass
from types import ModuleType

from integrators.schemes import SCHEMES
from integrators.torch.schemes import baoab, em, obabo, ubu


@dataclass(frozen=True)
class TorchScheme:
    """A scheme's tensor step beside its Numba declarations (coefficients, orders, ``FSAL``)."""

    tensor: ModuleType    # the module of this package: ``step``
    declared: ModuleType  # the Numba scheme module: ``coefficients``, ``FSAL``, ``WEAK_ORDER``, ...

    @property
    def step(self):
        return self.tensor.step

    @property
    def FSAL(self) -> bool:  # noqa: N802 (the scheme modules' constant)
        return self.declared.FSAL

    def coefficients(self, h, gamma):
        return self.declared.coefficients(h, gamma)


TORCH_STEPS = {m.NAME: TorchScheme(m, SCHEMES[m.NAME]) for m in (em, baoab, ubu, obabo)}

if set(TORCH_STEPS) != set(SCHEMES):  # one registry: a scheme added in Numba must get its tensor step
    raise ImportError(f"integrators.torch.schemes covers {sorted(TORCH_STEPS)}, the Numba registry "
                      f"{sorted(SCHEMES)}")

__all__ = ["TORCH_STEPS", "TorchScheme"]
