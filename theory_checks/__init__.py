"""Checks of the paper's claims by measurement: the exact Gaussian oracle, weak and strong order
estimation, dimension scaling, contraction, the variance lemma and the claims table."""
