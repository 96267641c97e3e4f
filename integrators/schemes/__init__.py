"""The schemes, one file each.  Every module declares ``NAME``, ``WEAK_ORDER``, ``STRONG_ORDER``
(for full gradients), ``FSAL`` (whether its one force is evaluated at the end of the step with
the next step's batch), ``coefficients(h, gamma)``, a Numba ``step`` and, optionally,
``affine_ops(h, gamma)`` (the step as operations, interpreted by the exact oracle in
``theory_checks.oracle``; without it the oracle reads the step's affine map off the compiled
``step`` itself by probing, see ``theory_checks.probe``).  First-same-as-last schemes write
``affine_ops`` in a rotated form and declare ``rotation_ops(h, gamma)``: the operations taking
the state after a step to the rotated state (with the noise they undo, in the step's own path
slots, when the rotation crosses an O step).

``step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)`` advances a block of ``n``
chains in place by one step of size ``h``: ``x, v, g`` have shape ``(n, d)``, ``dW`` and ``J``
shape ``(2, d, n)`` (the path pair over each half step, chains innermost), ``batch`` shape ``(k, n)`` (chain ``c``'s
batch in ``batch[:n_batch, c]``).  Loops run over coordinates outside and chains inside,
so the arithmetic vectorizes over chains.  A scheme never knows the plan, the target or the backend.

``SCHEMES`` is the registry that the kernel, the oracle, the coupled chains, the claims table,
the weak-orders figure and the tests read.  A scheme in user code (a module, or a :class:`Scheme`
built from a Numba step) joins it with :func:`register_scheme`; nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from integrators.registry import Registry
from integrators.schemes import baoab, em, obabo, ubu

SCHEME_ATTRIBUTES = ("NAME", "WEAK_ORDER", "STRONG_ORDER", "FSAL", "coefficients", "step")


@dataclass(frozen=True, eq=False)
class Scheme:
    """A scheme written in user code, with the attributes of a scheme module.

    ``step`` is a Numba function with the signature above, ``coefficients(h, gamma)`` returns the
    float array it receives as ``coef``; ``affine_ops`` and ``rotation_ops`` are optional (the
    oracle probes the compiled step when they are absent)."""

    NAME: str
    step: object
    coefficients: object
    WEAK_ORDER: float
    STRONG_ORDER: float
    FSAL: bool = False
    affine_ops: object = None
    rotation_ops: object = None


def _check_orders(scheme) -> None:
    for attr in ("WEAK_ORDER", "STRONG_ORDER"):
        value = getattr(scheme, attr)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"scheme {scheme.NAME!r}: {attr} must be a positive number, got {value!r}")


SCHEMES = Registry("scheme", SCHEME_ATTRIBUTES, _check_orders, (em, baoab, ubu, obabo))


def register_scheme(scheme, *, replace: bool = False):
    """Add a scheme (a module or a :class:`Scheme`) to :data:`SCHEMES`.  Returns the scheme."""
    return SCHEMES.register(scheme, replace=replace)


def unregister_scheme(name: str) -> None:
    SCHEMES.unregister(name)


def resolve_scheme(scheme):
    """The scheme for a registered name, or the scheme object itself (validated)."""
    return SCHEMES.resolve(scheme)


__all__ = ["SCHEMES", "Scheme", "register_scheme", "resolve_scheme", "unregister_scheme"]
