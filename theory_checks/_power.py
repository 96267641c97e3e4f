"""The stated power of a Monte Carlo pass: what a check could have caught at its chains.

A statistical check compares estimates with a reference within ``z`` of their standard errors. A
pass then claims nothing unless the standard errors were small enough to catch the error the
check declares: :data:`RESOLUTION`, an error of a moment relative to its statistic's scale
(noise 4% off makes a variance ``1.04^2 - 1 = 0.08`` off; :func:`theory_checks.verify`'s 256
chains reach it on every default target, not the adapters' 0.04).
At ``z`` and power :data:`POWER`, the smallest relative error a check detects is
``(z + z_power) * max(se / scale)``; a check that sees no error passes only when that is at most
:data:`RESOLUTION`, and is otherwise inconclusive, saying what it could have detected.
"""

from __future__ import annotations

import numpy as np

from theory_checks._checks import Check

RESOLUTION = 0.08  # the relative error of a moment every Monte Carlo pass must detect: noise 4% off (1.04^2 - 1)
POWER = 0.95       # the probability of detecting it


def power_z() -> float:
    """The one-sided normal quantile of :data:`POWER`."""
    from scipy.stats import norm
    return float(norm.ppf(POWER))


def detectable(se, scale, z: float) -> float:
    """The smallest relative error ``(z + z_power) max(se / scale)`` detected with probability
    :data:`POWER` by a two-sided test at critical value ``z``."""
    rel = np.asarray(se, dtype=float) / np.maximum(np.asarray(scale, dtype=float), 1e-300)
    return float((z + power_z()) * np.max(rel))


def gaussian_scales(mean, covariance) -> np.ndarray:
    """The scale of each statistic ``(E x_a, E x_a x_b for a <= b)``: ``sd(x_a)`` for a mean and
    ``sd(x_a) sd(x_b) + |mu_a mu_b|`` for a second moment (a relative error of one variance is one
    of these in its own statistic)."""
    sd = np.sqrt(np.diag(covariance))
    iu = np.triu_indices(len(sd))
    return np.concatenate([sd, (np.outer(sd, sd) + np.abs(np.outer(mean, mean)))[iu]])


def powered(name: str, expected: str, worst_z: float, z: float, effect: float, measured: str, *, claim,
            hs=(), errors=()) -> Check:
    """The verdict of a statistical check: failed at ``worst_z >= z``; passed when no error was
    seen and ``effect`` (:func:`detectable`) is at most :data:`RESOLUTION`; else inconclusive.  The
    effect is stated in ``measured`` either way; ``claim`` False asserts nothing."""
    measured = f"{measured}; detects a relative error >= {effect:.3g} (power {POWER:g})"
    if not claim:
        return Check(name, None, expected, measured, list(hs), list(errors), claim=claim)
    if worst_z >= z:
        return Check(name, False, expected, measured, list(hs), list(errors), claim=True)
    if effect > RESOLUTION:
        return Check(name, None, expected, measured, list(hs), list(errors), claim=True,
                     skipped=f"cannot detect a relative error of {RESOLUTION:g} at these chains (smallest "
                             f"detectable {effect:.3g}): use more chains")
    return Check(name, True, expected, measured, list(hs), list(errors), claim=True)
