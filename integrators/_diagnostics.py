"""Between-chain convergence diagnostics: the potential scale reduction factor R-hat.

All functions take ``draws`` of shape ``(n_chains, n_draws)`` (one scalar quantity) or
``(n_chains, n_draws, d)`` (one value per coordinate, returned as an array of shape ``(d,)``).

Classic R-hat (Gelman and Rubin 1992, Gelman et al. BDA3 eq. 11.4) for ``m`` chains of ``n``
draws ``theta_{jt}``:

    B = n / (m - 1) * sum_j (mean_j - mean)^2           (between-chain variance)
    W = 1 / m * sum_j s_j^2,  s_j^2 = sum_t (theta_{jt} - mean_j)^2 / (n - 1)
    var+ = (n - 1) / n * W + B / n,   R-hat = sqrt(var+ / W).

R-hat is near 1 when the chains agree; it grows when the chains' means differ by more than their
within-chain spread explains.  Split R-hat first cuts every chain into its first and last halves
(the middle draw of an odd ``n`` is dropped) and treats them as ``2 m`` chains, so a trend within
each chain shows up too.  The rank-normalized split R-hat of Vehtari, Gelman, Simpson, Carpenter
and Buerkner (2021, Bayesian Analysis 16(2), eqs. 11-14) replaces the draws by normal scores of
their pooled ranks, ``z = Phi^{-1}((r - 3/8) / (S + 1/4))`` (average ranks for ties, ``S`` the
total number of draws), which makes it defined for heavy tails, and returns the larger of the
bulk value (split R-hat of ``z``) and the tail value (split R-hat of the normal scores of the
folded draws ``|theta - median(theta)|``).

Constant draws (no within- or between-chain spread at all) give NaN: no R-hat is defined.
Chains that are each constant but differ from each other give ``inf``.
"""

from __future__ import annotations

import numbers

import numpy as np


def _as_draws(draws, min_chains: int, min_draws: int, name: str = "draws") -> tuple[np.ndarray, bool]:
    """Validated ``(n_chains, n_draws, d)`` float array and whether the input was 2-D."""
    try:
        arr = np.asarray(draws)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers, got {type(draws).__name__} ({exc})") from None
    real = np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    if arr.dtype == bool or not real:
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim not in (2, 3):
        raise ValueError(f"{name} must have shape (n_chains, n_draws) or (n_chains, n_draws, d), got {arr.shape}")
    scalar = arr.ndim == 2
    arr = arr.astype(float)[..., None] if scalar else arr.astype(float)
    n_chains, n_draws, dim = arr.shape
    if n_chains < min_chains:
        raise ValueError(f"{name} needs at least {min_chains} chains, got {n_chains}")
    if n_draws < min_draws:
        raise ValueError(f"{name} needs at least {min_draws} draws per chain, got {n_draws}")
    if dim < 1:
        raise ValueError(f"{name} must have at least one coordinate, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr, scalar


def _rhat(arr: np.ndarray) -> np.ndarray:
    """Classic R-hat per coordinate of validated ``(m, n, d)`` draws."""
    n = arr.shape[1]
    chain_means = arr.mean(axis=1)
    between = n * chain_means.var(axis=0, ddof=1)
    within = arr.var(axis=1, ddof=1).mean(axis=0)
    var_plus = (n - 1) / n * within + between / n
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(var_plus / within)
    out = np.where(within > 0, out, np.where(between > 0, np.inf, np.nan))
    return out


def _split(arr: np.ndarray) -> np.ndarray:
    half = arr.shape[1] // 2
    return np.concatenate([arr[:, :half], arr[:, arr.shape[1] - half:]], axis=0)


def _normal_scores(arr: np.ndarray) -> np.ndarray:
    """``Phi^{-1}((r - 3/8) / (S + 1/4))`` of the pooled average ranks, per coordinate."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    m, n, d = arr.shape
    flat = arr.reshape(m * n, d)
    ranks = rankdata(flat, method="average", axis=0)
    return ndtri((ranks - 0.375) / (m * n + 0.25)).reshape(m, n, d)


def _finish(values: np.ndarray, scalar: bool):
    return float(values[0]) if scalar else values


def gelman_rubin_rhat(draws) -> float | np.ndarray:
    """Classic R-hat (no split) of ``draws`` ``(n_chains >= 2, n_draws >= 2[, d])``."""
    arr, scalar = _as_draws(draws, min_chains=2, min_draws=2)
    return _finish(_rhat(arr), scalar)


def split_rhat(draws) -> float | np.ndarray:
    """Split R-hat: every chain cut into halves, then the classic R-hat of the ``2 n_chains`` halves
    (``n_draws >= 4`` so that each half has two draws)."""
    arr, scalar = _as_draws(draws, min_chains=1, min_draws=4)
    return _finish(_rhat(_split(arr)), scalar)


def rank_normalized_split_rhat(draws) -> float | np.ndarray:
    """Vehtari et al. (2021): the larger of the bulk and the folded (tail) rank-normalized split R-hat."""
    arr, scalar = _as_draws(draws, min_chains=1, min_draws=4)
    split = _split(arr)
    bulk = _rhat(_normal_scores(split))
    folded = np.abs(arr - np.median(arr.reshape(-1, arr.shape[2]), axis=0))
    tail = _rhat(_normal_scores(_split(folded)))
    constant = np.ptp(arr.reshape(-1, arr.shape[2]), axis=0) == 0
    out = np.where(constant, np.nan, np.fmax(bulk, tail))
    return _finish(out, scalar)


def rhat_from_moments(chain_mean, chain_second_moment, n_draws) -> float | np.ndarray:
    """Classic R-hat from per-chain averages of ``x`` and ``x^2`` (``(n_chains >= 2,)`` or ``(n_chains, d)``)
    over ``n_draws`` draws: equals :func:`gelman_rubin_rhat` on the draws, as ``s_j^2 = n/(n-1) (m2_j - m1_j^2)``."""
    m1 = np.asarray(chain_mean, dtype=float)
    m2 = np.asarray(chain_second_moment, dtype=float)
    if m1.shape != m2.shape or m1.ndim not in (1, 2):
        raise ValueError(f"chain_mean and chain_second_moment must have one shape (n_chains[, d]), "
                         f"got {m1.shape} and {m2.shape}")
    if isinstance(n_draws, bool) or not isinstance(n_draws, numbers.Integral) or n_draws < 2:
        raise ValueError(f"n_draws must be an integer >= 2, got {n_draws!r}")
    if m1.shape[0] < 2:
        raise ValueError(f"rhat_from_moments needs at least 2 chains, got {m1.shape[0]}")
    if not (np.all(np.isfinite(m1)) and np.all(np.isfinite(m2))):
        raise ValueError("chain moments contain non-finite values")
    scalar = m1.ndim == 1
    m1, m2 = (m1[:, None], m2[:, None]) if scalar else (m1, m2)
    n = int(n_draws)
    within = (n / (n - 1) * np.maximum(m2 - m1**2, 0.0)).mean(axis=0)
    between = n * m1.var(axis=0, ddof=1)
    var_plus = (n - 1) / n * within + between / n
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(var_plus / within)
    out = np.where(within > 0, out, np.where(between > 0, np.inf, np.nan))
    return _finish(out, scalar)
