"""OBABO on tensors, first-same-as-last (the rule and constants of :mod:`integrators.schemes.obabo`).

    v <- e^{-gamma h/2} v + sqrt(2 gamma) J_1 - h/2 g      (g = G(x_k, w_{k+1}), cached)
    x <- x + h v
    g <- G(x_{k+1}, w_{k+2})
    v <- e^{-gamma h/2} (v - h/2 g) + sqrt(2 gamma) J_2
"""

from integrators.schemes.obabo import SCHEME as _numba

NAME = _numba.NAME


def step(x, v, g, coef, dW, J, force, reflect):
    """One OBABO step on tensors, in place: the update of :mod:`integrators.schemes.obabo`."""
    h, eta_half, noise = coef
    v.copy_(eta_half * v + noise * J[0] - 0.5 * h * g)
    x.add_(h * v)
    if reflect is not None:
        reflect(x, v)
    g = force(x)
    v.copy_(eta_half * (v - 0.5 * h * g) + noise * J[1])
    return g


__all__ = ["step"]  # the contract of integrators.torch.schemes; NAME pairs it with its scheme
