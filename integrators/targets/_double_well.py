"""A tilted one-dimensional double well: a non-Gaussian target whose expectations are known by
quadrature, for measuring weak orders where no exact law of the scheme exists."""

from __future__ import annotations

import math

import numba as nb
import numpy as np
import scipy.integrate

from integrators._validation import real_number
from integrators.targets._base import Target

QUAD_TAIL = 745.0  # the quadrature range ends where the density is e^-745 (below the smallest double) of its peak
QUAD_EPS = 1e-13   # scipy.integrate.quad's relative and absolute tolerances
DEPTH_RANGE = (1e-3, 1e3)  # depths whose law the quadrature and the checks handle (a scale within 1e-1 .. 1e1)
WEIGHT_MAX = 1e3   # the tilt's and the prior's largest weight


@nb.njit(nogil=True, inline="always")
def _dw_prior_grad_add(x, arrays, out):
    """Add the prior's gradient ``lambda x`` to ``out`` (a Numba function).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(1,)``.
    arrays : tuple
        The target's ``arrays``: ``(array([depth, tilt, lambda]),)``.
    out : numpy.ndarray
        Shape ``(1,)``, added to in place.
    """
    out[0] += arrays[0][2] * x[0]


@nb.njit(nogil=True, inline="always")
def _dw_datum_grad_add(x, i, coef, arrays, out):
    """Add ``coef`` times the gradient of data term ``i`` to ``out`` (a Numba function).

    Term 0 is the quartic well ``depth (x^2 - 1)^2`` (gradient ``4 depth x (x^2 - 1)``); term 1
    the soft tilt ``tilt log(1 + e^{-x})`` (gradient ``-tilt sigmoid(-x)``, evaluated without
    overflow for either sign of ``x``).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(1,)``.
    i : int
        Index of the data term, 0 or 1.
    coef : float
        Factor of the term (the plan's force scale, or -1 for a control variate's reference).
    arrays : tuple
        The target's ``arrays``: ``(array([depth, tilt, lambda]),)``.
    out : numpy.ndarray
        Shape ``(1,)``, added to in place.
    """
    depth, tilt = arrays[0][0], arrays[0][1]
    y = x[0]
    if i == 0:
        out[0] += coef * 4.0 * depth * y * (y * y - 1.0)
    else:
        if y >= 0:
            e = math.exp(-y)
            s = e / (1.0 + e)
        else:
            s = 1.0 / (1.0 + math.exp(y))
        out[0] -= coef * tilt * s


@nb.njit(nogil=True, inline="always")
def _dw_potential(x, arrays):
    """The potential ``lambda x^2 / 2 + depth (x^2 - 1)^2 + tilt log(1 + e^{-x})`` at one point
    (a Numba function).

    Parameters
    ----------
    x : numpy.ndarray
        The point, shape ``(1,)``.
    arrays : tuple
        The target's ``arrays``: ``(array([depth, tilt, lambda]),)``.

    Returns
    -------
    float
        ``f(x)``.
    """
    depth, tilt, prior = arrays[0][0], arrays[0][1], arrays[0][2]
    y = x[0]
    z = -y
    softplus = z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
    return 0.5 * prior * y * y + depth * (y * y - 1.0) ** 2 + tilt * softplus


def _nonnegative(name, value) -> float:
    value = real_number(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


class DoubleWellTarget(Target):
    """A tilted double well in one dimension, with two data terms of different shapes.

    ``f(x) = f_0(x) + f_1(x) + f_2(x)`` with the prior ``f_0 = prior_precision x^2 / 2``, the
    quartic well ``f_1 = depth (x^2 - 1)^2`` (minima at ``x = +-1``, barrier ``depth``) and the
    soft tilt ``f_2 = tilt log(1 + e^{-x})``, which raises the left well by about ``tilt``
    (so odd moments do not vanish by symmetry).  At the defaults the tilt merges the left well
    into a flat, non-convex shoulder (one mode near ``x = 1.1``, a heavy left flank); with
    ``depth >= 1`` the law is bimodal, and there coupled ``h`` / ``h/2`` chains are often
    driven into different wells, which makes their level differences far noisier.  The law ``exp(-f)`` is not
    Gaussian, and no step of a scheme on it is affine: the target of the weak-order checks on
    nonlinear forces (:mod:`theory_checks._nonlinear`).  Its expectations are computed by adaptive
    quadrature (:meth:`exact_expectations`).

    Parameters
    ----------
    depth : float, default 0.25
        Height of the quartic's barrier between its wells, in ``[1e-3, 1e3]``.
    tilt : float, default 1.0
        Weight of the tilt term, in ``[0, 1e3]``.
    prior_precision : float, default 0.0
        Precision ``lambda`` of the Gaussian prior, in ``[0, 1e3]``.

    Attributes
    ----------
    name : str
        ``"double_well"``.
    arrays : tuple
        ``(array([depth, tilt, prior_precision]),)`` as the Numba functions take it.
    dim, n_data : int
        1 and 2.

    Raises
    ------
    ValueError
        If a parameter is not a number in its range (the message names the argument and the
        value).
    """

    name = "double_well"
    prior_grad_add = staticmethod(_dw_prior_grad_add)
    datum_grad_add = staticmethod(_dw_datum_grad_add)
    potential = staticmethod(_dw_potential)
    dim = 1
    n_data = 2

    def __init__(self, depth=0.25, tilt=1.0, prior_precision=0.0):
        depth = real_number("depth", depth)
        if not DEPTH_RANGE[0] <= depth <= DEPTH_RANGE[1]:
            raise ValueError(f"depth must lie in [{DEPTH_RANGE[0]:g}, {DEPTH_RANGE[1]:g}] (the quartic term confines "
                             f"the law; beyond, the quadrature's range and scale break down), got {depth!r}")
        self.depth = depth
        self.tilt = _nonnegative("tilt", tilt)
        self.prior_precision = _nonnegative("prior_precision", prior_precision)
        for name, value in (("tilt", self.tilt), ("prior_precision", self.prior_precision)):
            if value > WEIGHT_MAX:
                raise ValueError(f"{name} must be at most {WEIGHT_MAX:g}, got {value!r}")
        self.arrays = (np.array([self.depth, self.tilt, self.prior_precision]),)
        self._range = None
        self._norm = None

    def __repr__(self) -> str:
        return f"DoubleWellTarget(depth={self.depth!r}, tilt={self.tilt!r}, prior_precision={self.prior_precision!r})"

    def _f(self, x):
        """The potential on an array of points (numpy)."""
        x = np.asarray(x, dtype=float)
        return (0.5 * self.prior_precision * x * x + self.depth * (x * x - 1.0) ** 2
                + self.tilt * np.logaddexp(0.0, -x))

    def _quadrature_range(self) -> tuple[float, float, float]:
        """``(lo, hi, f_min)``: outside ``[lo, hi]`` the density is below ``e^-QUAD_TAIL`` of its peak."""
        if self._range is None:
            lo, hi = -3.0, 3.0
            for _ in range(2):  # the minimum on a grid over the range, then the range from that minimum
                f_min = float(np.min(self._f(np.linspace(lo, hi, 20001))))
                ends = []
                for sign in (-1.0, 1.0):
                    r = 1.0
                    while self._f(sign * r) - f_min < QUAD_TAIL:  # the quartic grows without bound
                        r *= 1.5
                    ends.append(sign * r)
                lo, hi = min(lo, ends[0]), max(hi, ends[1])
            self._range = (lo, hi, f_min)
        return self._range

    def _integral(self, fn) -> float:
        lo, hi, f_min = self._quadrature_range()
        val, _ = scipy.integrate.quad(lambda x: float(fn(x)) * math.exp(f_min - float(self._f(x))), lo, hi,
                                      points=[-1.0, 0.0, 1.0], epsabs=QUAD_EPS, epsrel=QUAD_EPS, limit=500)
        return val

    def exact_expectations(self, test_functions) -> np.ndarray:
        """``E_pi f`` for each test function, by adaptive quadrature of ``f exp(-U)`` over the range
        where the density exceeds ``e^-745`` of its peak (the rest is below the smallest double).

        ``scipy.integrate.quad`` runs at relative and absolute tolerance ``1e-13`` with the wells
        and the barrier as break points; for smooth test functions of moderate growth (moments
        up to the fourth, say) the results agree with 50-digit mpmath quadrature to about
        ``1e-12`` relative (``tests/test_verify_nonlinear.py``).

        Parameters
        ----------
        test_functions : sequence of callable
            Each maps a float ``x`` to a float.

        Returns
        -------
        numpy.ndarray
            ``E_pi f`` for each, in order.

        Raises
        ------
        ValueError
            If ``test_functions`` is not a sequence of callables.
        """
        fns = list(test_functions) if not callable(test_functions) else None
        if fns is None or not all(callable(f) for f in fns):
            raise ValueError(f"test_functions must be a sequence of callables f(x) -> float, got {test_functions!r}")
        if self._norm is None:
            norm = self._integral(lambda x: 1.0)
            if not (math.isfinite(norm) and norm > 0):
                raise ValueError(f"{self!r}: the quadrature of exp(-f) gave {norm!r}; no expectations")
            self._norm = norm
        return np.array([self._integral(f) / self._norm for f in fns])

    def moments(self, k: int = 2) -> np.ndarray:
        """``E x^j`` for ``j = 1 .. k`` (:meth:`exact_expectations`).

        Parameters
        ----------
        k : int, default 2
            The highest moment.

        Returns
        -------
        numpy.ndarray
            ``(E x, ..., E x^k)``.
        """
        return self.exact_expectations([lambda x, j=j: x**j for j in range(1, k + 1)])

    def typical_scale(self) -> tuple[float, float]:
        """The target's scale, from the quadrature.

        Returns
        -------
        tuple of float
            ``(|E x| + 1, sd)``: a bound on the centre and the standard deviation.
        """
        m1, m2 = self.moments(2)
        return abs(float(m1)) + 1.0, math.sqrt(max(float(m2 - m1 * m1), 0.0))
