"""The schemes on tensors: each scheme's ``UPDATE`` (:mod:`integrators.schemes`) applied to tensors.

A tensor step has the contract

    step(x, v, g, coef, dW, J, force, reflect) -> g

and advances ``x`` and ``v`` in place (any shape: ``(n_chains, d)`` in chains mode, a flat parameter
buffer ``(P,)`` in module mode, ``(K, P)`` for an ensemble); ``dW`` and ``J`` have shape
``(2, *x.shape)`` (the path pair over each half step); ``force(x)`` returns the minibatch force at
``x`` (the caller binds the batch); ``reflect(x, v)`` applies the elastic bounce in place (or is
``None``); ``g`` is the cached force of first-same-as-last schemes, and the force the step computed
is returned.

:func:`tensor_step` makes it from a scheme's ``UPDATE``: the same moves the numpy reference and the
fused kernel call, on tensors, in the same order of floating-point operations.  Every built-in
scheme declares one (:data:`TORCH_STEPS`), and so may a scheme from user code.  A user scheme may
instead declare ``TORCH_STEP``, a step written to this contract; with neither the torch backend
refuses it by name (:func:`torch_step`).  Importing this package never depends on what has been
registered.
"""

from dataclasses import dataclass
from types import SimpleNamespace

import integrators.schemes as _numba_schemes
from integrators.registry import discover_modules
from integrators.schemes import FORCE, REFLECT, SCHEMES, move_coefficients, run_coefficients


def tensor_step(update: tuple):
    """The tensor ``step(x, v, g, coef, dW, J, force, reflect) -> g`` of a scheme's ``UPDATE``.

    Parameters
    ----------
    update : tuple
        The scheme's moves and markers (:mod:`integrators.schemes`).

    Returns
    -------
    callable
        The step: the moves in order (a move that returns new tensors has them copied into the
        caller's, where the state lives; the built-in ones update in place), the force and the
        bounce where the markers stand.
    """
    def step(x, v, g, coef, dW, J, force, reflect):
        c = move_coefficients(coef)
        for move in update:
            if move == FORCE:
                g = force(x)
            elif move == REFLECT:
                if reflect is not None:
                    reflect(x, v)
            else:
                new_x, new_v = move(x, v, g, *c, dW[0], J[0], dW[1], J[1])
                if new_x is not x:
                    x.copy_(new_x)
                if new_v is not v:
                    v.copy_(new_v)
        return g

    return step


@dataclass(frozen=True)
class TorchScheme:
    """A scheme's tensor step beside its Numba declarations (coefficients, orders, ``FSAL``).

    Parameters
    ----------
    tensor : namespace
        Its ``step``, the update on tensors (:func:`tensor_step`, or a user scheme's ``TORCH_STEP``).
    declared : Scheme
        The scheme (or an object with its attributes): ``NAME``, ``coefficients``, ``FSAL``, the orders.
    """

    tensor: SimpleNamespace  # ``step``: tensor_step(UPDATE), or a user scheme's TORCH_STEP
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
        return run_coefficients(self.declared, h, gamma)  # checked at this (h, gamma), by the scheme's name


# each built-in scheme's tensor step, from the scheme itself, not the registry's entry of that name:
# what user code registers (or unregisters) cannot change what a built-in runs
_BUILT_IN = [m.SCHEME for m in discover_modules(_numba_schemes, ("SCHEME",))]
_NO_UPDATE = [s.NAME for s in _BUILT_IN if s.UPDATE is None]
if _NO_UPDATE:  # every built-in scheme runs on every backend
    raise ImportError(f"the built-in schemes {_NO_UPDATE} declare no UPDATE (their moves, for the torch backend)")
TORCH_STEPS = {s.NAME: TorchScheme(SimpleNamespace(step=tensor_step(s.UPDATE)), s) for s in _BUILT_IN}


def torch_step(scheme) -> TorchScheme:
    """The tensor step of a scheme.

    Parameters
    ----------
    scheme : str or Scheme
        A scheme's name or a scheme object; one from user code runs when it declares
        ``TORCH_STEP`` or ``UPDATE``.

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
    own_update = getattr(declared, "UPDATE", None)
    if own_update is not None and (name not in TORCH_STEPS or declared is not TORCH_STEPS[name].declared):
        return TorchScheme(SimpleNamespace(step=tensor_step(own_update)), declared)  # checked when it was made
    if name not in TORCH_STEPS:
        if name in SCHEMES or not isinstance(scheme, str):
            raise ValueError(f"scheme {name!r} has no torch step (declare UPDATE, its moves, or TORCH_STEP, its update "
                             f"on tensors, to run a scheme from user code on the torch backend); the torch backend "
                             f"runs {', '.join(sorted(TORCH_STEPS))} and schemes that declare UPDATE or TORCH_STEP")
        raise ValueError(f"unknown scheme {name!r}; choose from {known}")
    found = TORCH_STEPS[name]
    given = scheme if not isinstance(scheme, str) else SCHEMES.get(name, found.declared)
    if given is not found.declared:
        raise ValueError(f"scheme {name!r} here is a step of its own, which has no torch step (the torch "
                         f"backend's {name!r} is the built-in integrators.schemes.{name})")
    return found


__all__ = ["TORCH_STEPS", "TorchScheme", "tensor_step", "torch_step"]
