"""Targets: potentials ``f(x) = f_0(x) + sum_i f_i(x)`` with per-datum gradients usable from Numba.

Every target exposes ``arrays`` (a tuple of numpy arrays) and three Numba functions taking it:
``prior_grad_add(x, arrays, out)`` adds grad f_0(x); ``datum_grad_add(x, i, coef, arrays, out)``
adds ``coef * grad f_i(x)``; ``potential(x, arrays)`` returns f(x).  The minibatch force
``G(x, w) = grad f_0(x) + scale * sum_{i in w} grad f_i(x)`` (with an optional control variate
at a reference point ``xh``) is assembled from them by ``integrators.targets._force.make_force``;
a target never knows which plan or scheme drives it.
"""

from integrators.targets._base import Target
from integrators.targets._double_well import DoubleWellTarget
from integrators.targets._gaussian import GaussianTarget
from integrators.targets._logistic import LogisticTarget, MultinomialLogisticTarget

__all__ = ["DoubleWellTarget", "GaussianTarget", "LogisticTarget", "MultinomialLogisticTarget", "Target"]
