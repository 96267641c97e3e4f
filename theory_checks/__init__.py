"""Checks of the paper's claims by measurement: the exact Gaussian oracle, weak and strong order
estimation, dimension scaling, contraction, the variance lemma and the claims table.

``from theory_checks import verify`` gives the function :func:`theory_checks._verify.verify` (not its
module), so ``verify(MyScheme)`` works after either import."""

from theory_checks._checks import VerifyReport
from theory_checks._verify import verify  # binds the name to the function, over the submodule

__all__ = ["VerifyReport", "verify"]
