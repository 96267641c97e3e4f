"""``box``: the step keeps every position in an active localization box (the paper's Section 4),
checked where the bounce fires.

The step runs a few times on a block of chains that start inside a small box ``|x - c|_inf < w``
with velocities large enough that a free drift of one step leaves it, so the bounce must fire.
The force it is given is a watching one (:func:`watching_force`): a unit-curvature force that
records how far outside the box any position it is evaluated at lies.  A step that forgets a
``reflect`` after one of its position updates either evaluates the force outside the box (a
middle drift) or ends outside it (a last drift), and fails here by name.  An inactive box (every
other check) makes ``reflect`` a no-op, so no other check can see that bug.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from integrators._bounce import make_box
from integrators._kernel import step_caller
from integrators._user_code import guarded
from theory_checks._checks import Check

EXPECTED = "every position in the box where the bounce fires (force and step)"
N_CHAINS, N_STEPS = 64, 3
HALF_WIDTH = 0.5     # the box's half width, in the target's units
SPEED = 4.0          # velocities of this many half widths per step: a free drift leaves the box
SLACK = 1e-9         # relative: a folded position lies on or inside the wall to rounding


@nb.njit(nogil=True)
def watching_force(x, g, batch, n_batch, scale, tdata):
    """``g = x - c`` (a unit-curvature force about the box's centre); ``tdata[2][0]`` keeps the
    largest ``|x - c|_inf / w`` it was evaluated at, ``tdata[2][1]`` counts its calls."""
    center, half_width, seen = tdata
    n, d = x.shape
    for c in range(n):
        for a in range(d):
            g[c, a] = x[c, a] - center[a]
            r = abs(x[c, a] - center[a]) / half_width[a]
            if r > seen[0]:
                seen[0] = r
    seen[1] += 1.0


def box_check(module, target, h: float, gamma: float, backend: str, seed: int = 0) -> Check:
    """``box`` for ``module``'s Numba step at step ``h`` (see the module docstring)."""
    if backend == "torch":
        return Check("box", None, EXPECTED, "-", skipped="not checked on the torch step", claim=False)
    d = target.dim
    rng = np.random.default_rng([seed, d])
    center, width = np.zeros(d), np.full(d, HALF_WIDTH)
    box = make_box(d, center, width)
    x = np.ascontiguousarray(rng.uniform(-HALF_WIDTH, HALF_WIDTH, size=(N_CHAINS, d)))
    v = np.ascontiguousarray(rng.normal(size=(N_CHAINS, d)) * SPEED * HALF_WIDTH / h)
    fired = int(np.sum(np.any(np.abs(x + h * v) > HALF_WIDTH, axis=1)))
    g = np.ascontiguousarray(x - center)  # the cached force of first-same-as-last schemes
    seen = np.zeros(2)
    coef = np.asarray(module.coefficients(h, gamma), dtype=float)
    batch = np.zeros((1, N_CHAINS), dtype=np.int32)
    step = step_caller(guarded(module.step, f"scheme {module.NAME!r}: step"), watching_force)  # kept on disk
    worst_end = 0.0
    for _ in range(N_STEPS):
        dW = np.ascontiguousarray(rng.normal(scale=np.sqrt(h / 2), size=(2, d, N_CHAINS)))
        J = np.ascontiguousarray(rng.normal(scale=np.sqrt(h / 2), size=(2, d, N_CHAINS)))
        step(x, v, g, coef, dW, J, batch, 1, 1.0, (center, width, seen), box)
        worst_end = max(worst_end, float(np.max(np.abs(x - center) / width)) if np.all(np.isfinite(x)) else np.inf)
    worst_force = float(seen[0])
    measured = (f"the bounce fired in {fired} of {N_CHAINS} chains; largest |x - c|/w at a force evaluation "
                f"{worst_force:.3g}, after a step {worst_end:.3g}")
    if worst_force > 1 + SLACK or worst_end > 1 + SLACK:
        where = "at a force evaluation" if worst_force > 1 + SLACK else "after the step"
        return Check("box", False, EXPECTED, f"{measured}: a position outside the box {where} (a position "
                     f"update not followed by reflect)", claim=True)
    if fired == 0 or seen[1] == 0:
        return Check("box", None, EXPECTED, measured, skipped="the bounce never fired (or no force was "
                     "evaluated): nothing was checked", claim=True)
    return Check("box", True, EXPECTED, measured, claim=True)
