"""The schemes, one file each.  Every module declares ``NAME``, ``WEAK_ORDER``, ``STRONG_ORDER``
(for full gradients), ``FSAL`` (whether its one force is evaluated at the end of the step with
the next step's batch), ``coefficients(h, gamma)``, a Numba ``step`` and ``affine_ops(h, gamma)`` (the step as
operations, interpreted by the exact oracle in ``theory_checks.oracle``).

``step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)`` advances a block of ``n``
chains in place by one step of size ``h``: ``x, v, g`` have shape ``(n, d)``, ``dW`` and ``J``
shape ``(2, d, n)`` (the path pair over each half step, chains innermost), ``batch`` shape ``(k, n)`` (chain ``c``'s
batch in ``batch[:n_batch, c]``).  Loops run over coordinates outside and chains inside,
so the arithmetic vectorizes over chains.  A scheme never knows the plan, the target or the backend.
"""

from integrators.schemes import baoab, em, obabo, ubu

SCHEMES = {m.NAME: m for m in (em, baoab, ubu, obabo)}

__all__ = ["SCHEMES"]
