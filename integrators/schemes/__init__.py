"""The schemes, one file each.  Every module declares ``NAME``, ``WEAK_ORDER``, ``STRONG_ORDER``
(for full gradients), ``FSAL`` (whether its one force is evaluated at the end of the step with
the next step's batch), ``coefficients(h, gamma)``, a Numba ``step`` and ``affine_ops(h, gamma)`` (the step as
operations, interpreted by the exact oracle in ``theory_checks.oracle``).

``step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)`` advances one chain in
place by one step of size ``h``; ``dW`` and ``J`` have shape ``(2, d)``: the path pair over each
half step.  A scheme never knows the plan, the target or the backend.
"""

from integrators.schemes import baoab, em, obabo, ubu

SCHEMES = {m.NAME: m for m in (em, baoab, ubu, obabo)}

__all__ = ["SCHEMES"]
