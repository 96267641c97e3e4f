"""Checks of the paper's claims by measurement: the exact Gaussian oracle (so far for full
gradients), to be extended with order estimation and the claims table."""
