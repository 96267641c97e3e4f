"""Euler-Maruyama on tensors (SG-HMC; the rule and constants of :mod:`integrators.schemes.em`).

    x' = x + h v
    v' = v - h G(x, w_k) - h gamma v + sqrt(2 gamma) (dW_1 + dW_2)
"""

from integrators.schemes.em import SCHEME as _numba

NAME = _numba.NAME


def step(x, v, g, coef, dW, J, force, reflect):
    """One Euler-Maruyama step on tensors, in place: the update of :mod:`integrators.schemes.em`."""
    h, gamma, noise = coef
    g = force(x)
    v_old = v.clone()
    x.add_(h * v_old)
    v.copy_(v_old - h * g - h * gamma * v_old + noise * (dW[0] + dW[1]))
    if reflect is not None:
        reflect(x, v)
    return g


__all__ = ["step"]  # the contract of integrators.torch.schemes; NAME pairs it with its scheme
