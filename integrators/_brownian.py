"""One Brownian path for every scheme and every step size.

On an elementary interval of length ``tau`` the path is represented by the pair

    dW = int dW_s,        J = int exp(-gamma (t_end - s)) dW_s,

jointly Gaussian with ``Var dW = tau``, ``Cov(dW, J) = (1 - e^{-gamma tau}) / gamma`` and
``Var J = (1 - e^{-2 gamma tau}) / (2 gamma)``.  Two consecutive intervals of length ``tau``
compose exactly into one of length ``2 tau``:

    dW = dW1 + dW2,       J = e^{-gamma tau} J1 + J2.

The pair is drawn as ``dW = L11 z1``, ``J = L21 z1 + L22 z2`` with the lower Cholesky factor of
its covariance.  ``L22`` is a difference of nearly equal numbers when ``gamma tau`` is small, so
it is computed from a power series there (coefficients exact, from rational arithmetic).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from integrators._disk_cache import njit_cached

# Below this value of x = gamma * tau the series for L22^2 / tau is used.
_SERIES_SWITCH = 0.5
_N_SERIES = 30


def _series_coefficients(n_terms: int) -> list[float]:
    """Coefficients p_n of phi(x) = (1 - e^{-2x})/(2x) - ((1 - e^{-x})/x)^2 = sum p_n x^n."""
    fact = [math.factorial(k) for k in range(n_terms + 2)]
    b = [Fraction((-2) ** n, fact[n + 1]) for n in range(n_terms)]
    a = [Fraction((-1) ** n, fact[n + 1]) for n in range(n_terms)]
    c = [sum(a[j] * a[n - j] for j in range(n + 1)) for n in range(n_terms)]
    return [float(b[n] - c[n]) for n in range(n_terms)]


_PHI_COEFFS = np.array(_series_coefficients(_N_SERIES))  # p_0 = p_1 = 0, p_2 = 1/12


@njit_cached()
def _phi(x):
    """(1 - e^{-2x})/(2x) - ((1 - e^{-x})/x)^2, accurate to rounding for all x > 0."""
    if x < _SERIES_SWITCH:
        acc = 0.0
        for n in range(_N_SERIES - 1, 1, -1):
            acc = acc * x + _PHI_COEFFS[n]
        return acc * x * x
    a = -math.expm1(-x) / x
    b = -math.expm1(-2.0 * x) / (2.0 * x)
    return b - a * a


@njit_cached()
def pair_cholesky(gamma, tau):
    """Lower Cholesky factor of the covariance of the path pair ``(dW, J)`` over ``tau``.

    The pair is drawn as ``dW = L11 z1``, ``J = L21 z1 + L22 z2`` with independent standard normal
    ``z1``, ``z2``.  ``L22`` is a difference of nearly equal numbers when ``gamma tau`` is small, so
    below ``gamma tau = 0.5`` it is computed from a power series with exact (rational) coefficients;
    ``L21`` uses ``expm1``.  Both are accurate to rounding for every ``gamma tau > 0``.

    Parameters
    ----------
    gamma : float
        Friction, positive.
    tau : float
        Length of the interval, positive.

    Returns
    -------
    L11, L21, L22 : float
        ``L11 = sqrt(tau)``, ``L21 = sqrt(tau) (1 - e^{-gamma tau}) / (gamma tau)`` and
        ``L22 = sqrt(tau) sqrt(phi(gamma tau))`` with
        ``phi(x) = (1 - e^{-2x}) / (2x) - ((1 - e^{-x}) / x)^2``.

    Notes
    -----
    A Numba function (``@numba.njit``): callable from Python and from other Numba code.
    """
    x = gamma * tau
    sqrt_tau = math.sqrt(tau)
    l11 = sqrt_tau
    l21 = sqrt_tau * (-math.expm1(-x) / x)
    l22 = sqrt_tau * math.sqrt(_phi(x))
    return l11, l21, l22


def pair_covariance(gamma: float, tau: float) -> np.ndarray:
    """Exact covariance of the path pair ``(dW, J)`` over an interval of length ``tau``.

    ``dW = int dW_s`` and ``J = int exp(-gamma (t_end - s)) dW_s`` are jointly Gaussian with
    ``Var dW = tau``, ``Cov(dW, J) = (1 - e^{-gamma tau}) / gamma`` and
    ``Var J = (1 - e^{-2 gamma tau}) / (2 gamma)`` (computed with ``expm1``).

    Parameters
    ----------
    gamma : float
        Friction, positive.
    tau : float
        Length of the interval, positive.

    Returns
    -------
    numpy.ndarray
        The 2x2 covariance matrix of ``(dW, J)``.
    """
    cov_wj = -math.expm1(-gamma * tau) / gamma
    var_j = -math.expm1(-2.0 * gamma * tau) / (2.0 * gamma)
    return np.array([[tau, cov_wj], [cov_wj, var_j]])


def coarsen(dW: np.ndarray, J: np.ndarray, gamma: float, tau: float, levels: int = 1):
    """Compose consecutive intervals of the path pair exactly into coarser ones.

    Two consecutive intervals of length ``tau`` compose into one of length ``2 tau`` by
    ``dW = dW1 + dW2`` and ``J = e^{-gamma tau} J1 + J2``; this is applied ``levels`` times, so a
    path drawn at the finest level is read exactly at any coarser one and the coarse pair has
    exactly its own law.

    Parameters
    ----------
    dW, J : array_like
        The pair on intervals of length ``tau``, the interval index on the last axis (its length
        divisible by ``2**levels``).
    gamma : float
        Friction.
    tau : float
        Length of each given interval.
    levels : int, default 1
        How many times to halve the number of intervals.

    Returns
    -------
    dW, J : numpy.ndarray
        The pair on intervals of length ``tau * 2**levels``, interval index on the last axis.

    Raises
    ------
    ValueError
        If ``levels`` is negative, or a number of intervals to be halved is odd.
    """
    if levels < 0:
        raise ValueError(f"levels must be >= 0, got {levels}")
    dW = np.asarray(dW, dtype=float)
    J = np.asarray(J, dtype=float)
    for _ in range(levels):
        if dW.shape[-1] % 2:
            raise ValueError(f"number of intervals {dW.shape[-1]} is odd; cannot coarsen")
        decay = math.exp(-gamma * tau)
        dW = dW[..., 0::2] + dW[..., 1::2]
        J = decay * J[..., 0::2] + J[..., 1::2]
        tau *= 2.0
    return dW, J


def draw_pairs(rng: np.random.Generator, gamma: float, tau: float, shape) -> tuple:
    """Draw independent (dW, J) pairs of the given shape over intervals of length ``tau``."""
    if not (gamma > 0 and math.isfinite(gamma)):
        raise ValueError(f"gamma must be a positive finite number, got {gamma}")
    if not (tau > 0 and math.isfinite(tau)):
        raise ValueError(f"tau must be a positive finite number, got {tau}")
    l11, l21, l22 = pair_cholesky(gamma, tau)
    z1 = rng.standard_normal(shape)
    z2 = rng.standard_normal(shape)
    return l11 * z1, l21 * z1 + l22 * z2


class BrownianPath:
    """A seeded Brownian path at a fine resolution, readable exactly at any coarser one.

    The path is drawn once as the pairs ``(dW, J)`` of ``n_intervals`` fine intervals of length
    ``tau`` for an array of coordinates of shape ``shape`` (e.g. ``(n_chains, d)``), with the
    Cholesky factor of :func:`pair_cholesky`; :meth:`pairs` reads it on intervals of length
    ``tau * 2**level`` through :func:`coarsen`, so chains at ``h`` and ``h / 2`` share one path.

    Parameters
    ----------
    gamma : float
        Friction, positive and finite.
    tau : float
        Length of a fine interval, positive and finite.
    n_intervals : int
        Number of fine intervals, at least 1.
    shape : tuple of int, default ()
        Shape of the coordinates the path drives.
    seed : int, default 0
        Seed of the ``numpy.random.default_rng`` generator that draws the path.

    Attributes
    ----------
    gamma, tau : float
        As given.
    dW, J : numpy.ndarray
        The fine pairs, shape ``shape + (n_intervals,)``.

    Raises
    ------
    ValueError
        If ``n_intervals < 1``, or ``gamma`` or ``tau`` is not positive and finite.
    """

    def __init__(self, gamma: float, tau: float, n_intervals: int, shape=(), seed: int = 0):
        if n_intervals < 1:
            raise ValueError(f"n_intervals must be >= 1, got {n_intervals}")
        self.gamma = float(gamma)
        self.tau = float(tau)
        rng = np.random.default_rng(seed)
        self.dW, self.J = draw_pairs(rng, gamma, tau, tuple(shape) + (n_intervals,))

    def pairs(self, level: int = 0):
        """The path pair on intervals of length ``tau * 2**level``.

        Parameters
        ----------
        level : int, default 0
            How many times to coarsen the fine intervals (0: the fine pairs themselves).

        Returns
        -------
        dW, J : numpy.ndarray
            The pair, shape ``shape + (n_intervals / 2**level,)``.
        """
        return coarsen(self.dW, self.J, self.gamma, self.tau, level)
