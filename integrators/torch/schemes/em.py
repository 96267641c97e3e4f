"""Euler-Maruyama on tensors (SG-HMC; the rule and constants of :mod:`integrators.schemes.em`).

    x' = x + h v
    v' = v - h G(x, w_k) - h gamma v + sqrt(2 gamma) (dW_1 + dW_2)
"""

from integrators.schemes import em as _numba

NAME = _numba.NAME


def step(x, v, g, coef, dW, J, force, reflect):
    """One Euler-Maruyama step on tensors, in place: the update of :mod:`integrators.schemes.em`.

    Parameters
    ----------
    x, v : torch.Tensor
        Positions and velocities, of one shape (``(n_chains, d)``, ``(P,)`` or ``(K, P)``);
        updated in place.
    g : torch.Tensor
        The previous force (not read: this scheme evaluates its force within the step).
    coef : tuple of float
        The scheme's coefficients (:func:`integrators.schemes.em.coefficients`).
    dW, J : torch.Tensor
        The Brownian path pair over each half step, shape ``(2, *x.shape)``.
    force : callable
        ``force(x)``: the minibatch force at ``x`` (the caller binds the batch).
    reflect : callable or None
        ``reflect(x, v)``: the elastic bounce in place, or None.

    Returns
    -------
    torch.Tensor
        The force the step computed (the next step's cached force in a first-same-as-last scheme).
    """
    h, gamma, noise = coef
    g = force(x)
    v_old = v.clone()
    x.add_(h * v_old)
    v.copy_(v_old - h * g - h * gamma * v_old + noise * (dW[0] + dW[1]))
    if reflect is not None:
        reflect(x, v)
    return g
