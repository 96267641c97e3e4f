"""The schemes on tensors, one file each, under the names of the built-in schemes of :mod:`integrators.schemes`.

Every module here offers only the tensor ``step`` (``__all__ = ["step"]``) of the built-in scheme
of the same name (the ``SCHEME`` of :mod:`integrators.schemes`' module of that name, whose ``NAME``
it takes); :class:`TorchScheme` pairs it with that scheme, whose constants, declared orders and
``FSAL`` are read there, never retyped. The step writes the same update rule with tensor operations, in the
same order of floating-point operations:

    step(x, v, g, coef, dW, J, force, reflect) -> g

advances ``x`` and ``v`` in place (any shape: ``(n_chains, d)`` in chains mode, a flat parameter
buffer ``(P,)`` in module mode, ``(K, P)`` for an ensemble); ``dW`` and ``J`` have shape
``(2, *x.shape)`` (the path pair over each half step); ``force(x)`` returns the minibatch force at
``x`` (the caller binds the batch); ``reflect(x, v)`` applies the elastic bounce in place (or is
``None``); ``g`` is the cached force of first-same-as-last schemes, and the force the step computed
is returned.  The members' ``step`` functions carry a summary line: this docstring is their contract.

A scheme from user code (:func:`integrators.register_scheme`, or a scheme object) runs on the torch
backend when it declares ``TORCH_STEP``, its update written to this contract; without it the
torch backend refuses it by name (:func:`torch_step`).  Importing this package never depends on
what has been registered.
"""

from dataclasses import dataclass
from types import ModuleType, SimpleNamespace

import integrators.schemes as _numba_schemes
from integrators.registry import discover_modules
from integrators.schemes import SCHEMES


@dataclass(frozen=True)
class TorchScheme:
    """A scheme's tensor step beside its Numba declarations (coefficients, orders, ``FSAL``).

    Parameters
    ----------
    tensor : module
        The module of this package (or a namespace holding a user scheme's ``TORCH_STEP``) whose
        ``step`` is the update on tensors.
    declared : Scheme
        The scheme (or an object with its attributes): ``NAME``, ``coefficients``, ``FSAL``, the orders.
    """

    tensor: ModuleType    # the module of this package (or a user scheme's TORCH_STEP): ``step``
    declared: object      # the Scheme: ``coefficients``, ``FSAL``, ``WEAK_ORDER``, ...

    @property
    def NAME(self) -> str:  # noqa: N802 (the Scheme's field)
        """The scheme's name (its declaration's ``NAME``)."""
        return self.declared.NAME

    @property
    def step(self):
        """The tensor step, ``step(x, v, g, coef, dW, J, force, reflect) -> g``."""
        return self.tensor.step

    @property
    def FSAL(self) -> bool:  # noqa: N802 (the Scheme's field)
        """Whether the scheme is first-same-as-last (its declaration's ``FSAL``)."""
        return self.declared.FSAL

    def coefficients(self, h, gamma):
        """The declared scheme's coefficients.

        Parameters
        ----------
        h : float
            The step size.
        gamma : float
            The friction.

        Returns
        -------
        numpy.ndarray
            Its ``coefficients(h, gamma)``.
        """
        return self.declared.coefficients(h, gamma)


# each tensor step beside the built-in scheme it rewrites (its ``_numba``), not the registry's entry
# of that name: what user code registers (or unregisters) cannot change what a torch step declares
TORCH_STEPS = {m.NAME: TorchScheme(m, m._numba) for m in discover_modules(__name__, ("NAME", "step"))}

# every built-in scheme of integrators/schemes must get its tensor step (a built-in scheme, not a
# registered one: those are Numba-only and refused by name in torch_step)
_BUILT_IN = {m.SCHEME.NAME: m.SCHEME for m in discover_modules(_numba_schemes, ("SCHEME",))}
if {name: s.declared for name, s in TORCH_STEPS.items()} != _BUILT_IN:  # Scheme compares by identity
    raise ImportError(f"integrators.torch.schemes covers {sorted(TORCH_STEPS)}, the built-in schemes of "
                      f"integrators.schemes are {sorted(_BUILT_IN)}")


def torch_step(scheme) -> TorchScheme:
    """The tensor step of a scheme.

    Parameters
    ----------
    scheme : str or Scheme
        A scheme's name or a scheme object; one from user code runs when it declares
        ``TORCH_STEP``.

    Returns
    -------
    TorchScheme
        Its tensor step beside its declarations.

    Raises
    ------
    ValueError
        Naming the scheme, if it is unknown, registered for the Numba backend only (no torch step),
        a registration that replaced a built-in name with another step, or its ``TORCH_STEP`` is not
        callable.
    """
    name = scheme if isinstance(scheme, str) else getattr(scheme, "NAME", None)
    if not isinstance(name, str):
        raise ValueError(f"scheme must be a scheme name or a scheme object, got {scheme!r}")
    known = sorted(set(SCHEMES) | set(TORCH_STEPS))
    declared = scheme if not isinstance(scheme, str) else SCHEMES.get(name)
    own_step = getattr(declared, "TORCH_STEP", None)
    if own_step is not None and (name not in TORCH_STEPS or declared is not TORCH_STEPS[name].declared):
        if not callable(own_step):
            raise ValueError(f"scheme {name!r}: TORCH_STEP must be a function step(x, v, g, coef, dW, J, force, "
                             f"reflect) -> g, got {type(own_step).__name__}")
        return TorchScheme(SimpleNamespace(step=own_step), declared)
    if name not in TORCH_STEPS:
        if name in SCHEMES or not isinstance(scheme, str):
            raise ValueError(f"scheme {name!r} has no torch step (declare TORCH_STEP, its update on tensors, to run "
                             f"a scheme from user code on the torch backend); the torch backend runs "
                             f"{', '.join(sorted(TORCH_STEPS))} and schemes that declare TORCH_STEP")
        raise ValueError(f"unknown scheme {name!r}; choose from {known}")
    found = TORCH_STEPS[name]
    given = scheme if not isinstance(scheme, str) else SCHEMES.get(name, found.declared)
    if given is not found.declared:
        raise ValueError(f"scheme {name!r} here is a step of its own, which has no torch step (the torch "
                         f"backend's {name!r} is the built-in integrators.schemes.{name})")
    return found


__all__ = ["TORCH_STEPS", "TorchScheme", "torch_step"]
