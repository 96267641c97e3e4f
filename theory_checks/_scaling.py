"""Dimension dependence of the stationary bias, from the exact oracle.

Claim checked (the paper's main theorem): under a strongly Hessian-Lipschitz potential (Gaussian
targets qualify, their Hessian is constant) the W2 bias of SMS-UBU grows like ``h^2 sqrt(d)``.
Measured: for anisotropic Gaussian targets whose data terms do not commute
(``theory_checks.orders.anisotropic_gaussian``), the oracle's exact stationary mean and
covariance of ``x`` give the W2 distance between the Gaussian laws with those moments and the
target (the Bures formula; for ``rr``/``sms`` the time-averaged law is a Gaussian mixture, so this
is the W2 distance of its moment-matched Gaussian).  The exponent in ``d`` is a least-squares
slope on log-log axes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from integrators._validation import finite_array
from theory_checks.oracle import stationary_moments
from theory_checks.orders import anisotropic_gaussian, ladder


def gaussian_w2(mean1, cov1, mean2, cov2) -> float:
    """W2 between N(mean1, cov1) and N(mean2, cov2) (Bures-Wasserstein formula)."""
    means, covs = [], []
    for name, mean, cov in (("1", mean1, cov1), ("2", mean2, cov2)):
        mean, cov = finite_array(f"mean{name}", mean, 1), finite_array(f"cov{name}", cov, 2)
        if cov.shape != (mean.size, mean.size) or not np.allclose(cov, cov.T):
            raise ValueError(f"cov{name} must be a symmetric {mean.size} x {mean.size} matrix, got shape {cov.shape}")
        # rounding leaves a singular covariance eigenvalues of about -d eps of its scale: allow 1e3 times that
        if np.linalg.eigvalsh(cov).min() < -1e3 * cov.shape[0] * np.finfo(float).eps * float(np.abs(cov).max()):
            raise ValueError(f"cov{name} must be positive semi-definite (a covariance)")
        means.append(mean)
        covs.append(cov)
    if means[0].shape != means[1].shape:
        raise ValueError(f"the two laws have dimensions {means[0].size} and {means[1].size}")
    (mean1, mean2), (cov1, cov2) = means, covs
    root2 = scipy.linalg.sqrtm(cov2)
    middle = scipy.linalg.sqrtm(root2 @ cov1 @ root2)
    trace = np.trace(cov1) + np.trace(cov2) - 2.0 * np.real(np.trace(middle))
    return float(np.sqrt(max(np.sum((np.asarray(mean1) - mean2) ** 2) + max(trace, 0.0), 0.0)))


@dataclass
class DimensionScaling:
    sampler: str
    dims: np.ndarray
    bias: np.ndarray
    exponent: float


def dimension_scaling(scheme: str, plan: str, dims=(4, 8, 12, 16), h: float = 0.05,
                      gamma: float = 1.0, n_data: int = 4, batch_size: int = 2,
                      seed: int = 0) -> DimensionScaling:
    """Claim: SMS-UBU's W2 bias is ``O(h^2 sqrt(d))`` (the paper's main theorem, strongly
    Hessian-Lipschitz case).  Measured: exact-oracle moments on anisotropic Gaussians of growing
    ``d``, Bures W2 to the target, least-squares exponent in ``d`` (see the module docstring)."""
    dims = ladder("dims", dims, integer=True)[::-1].astype(int)
    bias = []
    for d in dims:
        target = anisotropic_gaussian(d, n_data=n_data, seed=seed)
        m = stationary_moments(target, scheme, plan, h, gamma, batch_size=batch_size)
        bias.append(gaussian_w2(m.mean, m.covariance, target.mean, target.covariance))
    dims = np.asarray(dims, dtype=float)
    bias = np.asarray(bias)
    exponent = float(np.polyfit(np.log(dims), np.log(bias), 1)[0])
    return DimensionScaling(f"{scheme} x {plan}", dims, bias, exponent)
