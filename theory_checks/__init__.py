"""Checks of the paper's claims by measurement: the exact Gaussian oracle, weak and strong order
estimation, dimension scaling, contraction, the variance lemma and the claims table.

``from theory_checks import verify`` gives the function :func:`theory_checks.verify`."""

from theory_checks._checks import VerifyReport
from theory_checks._claims import claims_table
from theory_checks._verify import default_target, default_targets, verify

__all__ = ["VerifyReport", "claims_table", "default_target", "default_targets", "verify"]
