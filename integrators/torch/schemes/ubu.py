"""UBU on tensors: ``U(h/2) B(h) U(h/2)`` (the rule and constants of :mod:`integrators.schemes.ubu`).

    x <- x + (1 - e^{-gamma h/2}) / gamma * v + sqrt(2 gamma) / gamma * (dW_1 - J_1)
    v <- e^{-gamma h/2} v + sqrt(2 gamma) J_1
    g <- G(x, w_k)
    v <- v - h g
    x <- x + (1 - e^{-gamma h/2}) / gamma * v + sqrt(2 gamma) / gamma * (dW_2 - J_2)
    v <- e^{-gamma h/2} v + sqrt(2 gamma) J_2
"""

from integrators.schemes.ubu import SCHEME as _numba

NAME = _numba.NAME


def step(x, v, g, coef, dW, J, force, reflect):
    """One UBU step on tensors, in place: the update of :mod:`integrators.schemes.ubu`."""
    h, eta, x_from_v, v_noise, x_noise = coef
    x.add_(x_from_v * v + x_noise * (dW[0] - J[0]))
    v.copy_(eta * v + v_noise * J[0])
    if reflect is not None:
        reflect(x, v)
    g = force(x)
    kicked = v - h * g
    x.add_(x_from_v * kicked + x_noise * (dW[1] - J[1]))
    v.copy_(eta * kicked + v_noise * J[1])
    if reflect is not None:
        reflect(x, v)
    return g


__all__ = ["step"]  # the contract of integrators.torch.schemes; NAME pairs it with its scheme
