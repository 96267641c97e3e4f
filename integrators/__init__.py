"""Reference kinetic Langevin integrators (EM, BAOAB, UBU, OBABO) crossed with minibatch plans
(full, iid, rr, sms), driven by one exactly coarsenable Brownian path, in Numba."""

from integrators._api import SampleResult, sample, sample_together
from integrators._backends import Numba, Torch
from integrators._bounce import reflect
from integrators._brownian import BrownianPath, coarsen, pair_cholesky, pair_covariance
from integrators._divergence import SamplerDiverged
from integrators._ghmc import sms_ghmc
from integrators._options import Box, ControlVariate, Observers
from integrators._spec import RunSpec
from integrators._user_code import UserCodeError
from integrators.plans import PLANS, Plan, batch_sequence, register_plan
from integrators.schemes import SCHEMES, Scheme, register_scheme
from integrators.targets import GaussianTarget, LogisticTarget, MultinomialLogisticTarget

__all__ = [
    "Box", "BrownianPath", "ControlVariate", "GaussianTarget", "LogisticTarget", "MultinomialLogisticTarget",
    "Numba", "Observers", "PLANS", "Plan", "RunSpec", "SCHEMES", "SampleResult", "SamplerDiverged", "Scheme", "Torch",
    "UserCodeError", "batch_sequence", "coarsen", "pair_cholesky", "pair_covariance", "reflect", "register_plan",
    "register_scheme", "sample", "sample_together", "sms_ghmc",
]
