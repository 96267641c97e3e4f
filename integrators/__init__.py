"""Reference kinetic Langevin integrators (EM, BAOAB, UBU, OBABO) crossed with minibatch plans
(full, iid, rr, sms), driven by one exactly coarsenable Brownian path, in Numba."""

from integrators.api import SampleResult, sample
from integrators.brownian import BrownianPath, coarsen, pair_cholesky, pair_covariance
from integrators.ghmc import sms_ghmc
from integrators.plans import PLAN_CODES, batch_sequence
from integrators.schemes import SCHEMES
from integrators.targets import GaussianTarget, LogisticTarget, MultinomialLogisticTarget

PLANS = tuple(PLAN_CODES)

__all__ = [
    "BrownianPath", "GaussianTarget", "LogisticTarget", "MultinomialLogisticTarget", "PLANS",
    "SCHEMES", "SampleResult", "batch_sequence", "coarsen", "pair_cholesky", "pair_covariance",
    "sample", "sms_ghmc",
]
