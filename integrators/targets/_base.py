"""The common interface of every target (:class:`Target`) and the divergence bound it implies."""

from __future__ import annotations

import numpy as np
import scipy.optimize

DIVERGENCE_SDS = 1e3  # a chain this many target standard deviations out has left the target
LEGACY_DIVERGENCE_BOUND = 1e8  # for a target that knows no scale of its own
MAX_DIM = 10**8  # a model with more weights than this is a mistake in its labels or sizes


class Target:
    """Common interface; subclasses set ``arrays``, ``dim``, ``n_data`` and the Numba functions."""

    name = "target"
    allocates = False  # True if datum_grad_add allocates (the kernel then keeps reference counting)
    lane_grad = None  # optional: prior + scaled batch gradients of a block of chains, vectorized
    arrays: tuple
    dim: int
    n_data: int

    def initial_point(self) -> np.ndarray:
        """Where the L-BFGS search of :meth:`mode` starts: the origin unless a class says otherwise.

        Returns
        -------
        numpy.ndarray
            A point of shape ``(dim,)``.
        """
        return np.zeros(self.dim)

    def typical_scale(self) -> tuple[float, float] | None:
        """The target's location and spread, where the target knows them.

        Returns
        -------
        tuple of (float, float) or None
            ``(r, s)``: the target's centre lies within ``r`` of the origin (max norm) and its
            coordinates' standard deviations are at most ``s``; None when the target knows no such
            scale.
        """
        return None

    def divergence_bound(self) -> float:
        """Default bound on ``|x|`` and ``|v|`` beyond which a chain is reported diverged.

        A chain that far out is not sampling the target, whatever the scheme.

        Returns
        -------
        float
            ``r + DIVERGENCE_SDS * max(s, 1)`` from :meth:`typical_scale` (the 1 is the
            velocities' unit stationary scale), or ``LEGACY_DIVERGENCE_BOUND`` without one.
        """
        scale = self.typical_scale()
        if scale is None:
            return LEGACY_DIVERGENCE_BOUND
        centre, sd = scale
        return float(centre + DIVERGENCE_SDS * max(sd, 1.0))

    # Python-side helpers (used for validation, control variates and tests); a user class's
    # functions are called bounds-checked here too, as in the kernels
    def full_grad(self, x) -> np.ndarray:
        """The full gradient of the potential, prior and every datum.

        Parameters
        ----------
        x : array_like
            A point of shape ``(dim,)``.

        Returns
        -------
        numpy.ndarray
            ``grad U(x)``, shape ``(dim,)``.
        """
        from integrators.targets._force import target_function

        prior_grad_add = target_function(type(self), "prior_grad_add")
        datum_grad_add = target_function(type(self), "datum_grad_add")
        x = np.ascontiguousarray(x, dtype=float)
        out = np.zeros(self.dim)
        prior_grad_add(x, self.arrays, out)
        for i in range(self.n_data):
            datum_grad_add(x, i, 1.0, self.arrays, out)
        return out

    def value(self, x) -> float:
        """The potential ``U(x)`` (the negative log density, up to a constant).

        Parameters
        ----------
        x : array_like
            A point of shape ``(dim,)``.

        Returns
        -------
        float
            ``U(x)``.
        """
        from integrators.targets._force import target_function

        return float(target_function(type(self), "potential")(np.ascontiguousarray(x, dtype=float), self.arrays))

    def mode(self) -> np.ndarray:
        """Minimizer of the potential by scipy's L-BFGS (the control-variate reference point).

        Returns
        -------
        numpy.ndarray
            The minimizer, shape ``(dim,)``.
        """
        res = scipy.optimize.minimize(
            self.value, self.initial_point(), jac=self.full_grad, method="L-BFGS-B",
            options={"maxiter": 10_000, "gtol": 1e-10, "ftol": 1e-15},
        )
        return np.asarray(res.x)
