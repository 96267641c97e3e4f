"""BAOAB on tensors, first-same-as-last (the rule and constants of :mod:`integrators.schemes.baoab`).

    v <- v - h/2 g                     (g = G(x_k, w_{k+1}), cached from the previous step)
    x <- x + h/2 v
    v <- e^{-gamma h} v + sqrt(2 gamma) (e^{-gamma h/2} J_1 + J_2)   (J over the step, composed)
    x <- x + h/2 v
    g <- G(x_{k+1}, w_{k+2})
    v <- v - h/2 g
"""

from integrators.schemes.baoab import SCHEME as _numba

NAME = _numba.NAME


def step(x, v, g, coef, dW, J, force, reflect):
    """One BAOAB step on tensors, in place: the update of :mod:`integrators.schemes.baoab`."""
    h, eta, noise, eta_half = coef
    v.sub_(0.5 * h * g)
    x.add_(0.5 * h * v)
    if reflect is not None:
        reflect(x, v)
    v.copy_(eta * v + noise * (eta_half * J[0] + J[1]))
    x.add_(0.5 * h * v)
    if reflect is not None:
        reflect(x, v)
    g = force(x)
    v.sub_(0.5 * h * g)
    return g


__all__ = ["step"]  # the contract of integrators.torch.schemes; NAME pairs it with its scheme
