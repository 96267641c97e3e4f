"""The statistics every result type shares: :class:`ChainSummary`, independent chains' averages
pooled by one rule.

A run of ``n`` independent chains leaves, per chain, time averages after burn-in (of ``x`` and
``x**2``, or of test functions, possibly per time chunk) and the step at which it diverged (-1:
never; :mod:`integrators._divergence`).  **The pooling rule**: the replicates are the rows of the
chains that did not diverge, every index but the last one of a per-chain array counting as a
replicate (a chain's time chunks are replicates too); a statistic is their mean, its standard
error ``std(ddof=1) / sqrt(n_replicates)`` (the replicates are independent); with no chain left
it raises ``RuntimeError`` naming the first divergence, never NaN as an estimate.  The variance
of ``x`` is ``mean(x**2) - mean(x)**2``, its standard error by the delta method (the replicate
``x**2 - 2 mean(x) x``).  R-hat is :func:`integrators._diagnostics.rhat_from_moments` over the
chains that did not diverge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from integrators._diagnostics import rhat_from_moments

RHAT_WARN = 1.1  # chains that disagree beyond this (R-hat of the first moments) are said not converged


def format_values(values) -> str:
    """Numbers (flattened) as ``[a, b, ...]`` with 4 significant digits."""
    return "[" + ", ".join(f"{val:.4g}" for val in np.ravel(values)) + "]"


@dataclass(frozen=True)
class ChainSummary:
    """Pooled statistics of independent chains (the rule in the module docstring).
    ``diverged_at`` per chain (-1: never); ``chain_mean``/``chain_second_moment`` ``(n_chains, d)`` or None;
    ``n_draws`` None: no R-hat; ``member``, ``unit``, ``run`` are words for messages."""

    diverged_at: np.ndarray
    chain_mean: np.ndarray | None = None
    chain_second_moment: np.ndarray | None = None
    n_draws: int | None = None
    member: str = "chain"
    unit: str = "step"
    run: str = ""

    @property
    def ok(self) -> np.ndarray:
        """Per chain, whether it never diverged (boolean, shape ``(n_chains,)``)."""
        return self.diverged_at < 0

    @property
    def n_diverged(self) -> int:
        """The number of chains that diverged."""
        return int(np.sum(~self.ok))

    @property
    def first_divergence_step(self) -> int | None:
        """The earliest step at which a chain diverged (None: none did)."""
        steps = self.diverged_at[~self.ok]
        return int(steps.min()) if steps.size else None

    def replicates(self, values) -> np.ndarray:
        """Rows ``(n_replicates, k)`` of the chains that did not diverge, every index but the last a
        replicate; raises ``RuntimeError`` when every chain diverged."""
        if not np.any(self.ok):
            raise RuntimeError(f"every {self.member} diverged{self.run} (first at {self.unit} "
                               f"{self.first_divergence_step}): no estimate")
        v = values[self.ok]
        return v.reshape(-1, v.shape[-1])

    def pooled_mean(self, values) -> np.ndarray:
        """The mean ``(k,)`` of :meth:`replicates` (per-chain values, chains first)."""
        return self.replicates(values).mean(axis=0)

    def pooled_se(self, values) -> np.ndarray:
        """The standard error ``std(ddof=1) / sqrt(n_replicates)`` of :meth:`pooled_mean`, shape ``(k,)``."""
        r = self.replicates(values)
        return r.std(axis=0, ddof=1) / math.sqrt(r.shape[0])

    @property
    def mean(self) -> np.ndarray:
        """The pooled mean of ``x``, shape ``(d,)``."""
        return self.pooled_mean(self.chain_mean)

    @property
    def second_moment(self) -> np.ndarray:
        """The pooled mean of ``x**2`` per coordinate, shape ``(d,)``."""
        return self.pooled_mean(self.chain_second_moment)

    @property
    def variance(self) -> np.ndarray:
        """:attr:`second_moment` minus :attr:`mean` squared."""
        return self.second_moment - self.mean**2

    @property
    def mean_se(self) -> np.ndarray:
        """The standard error of :attr:`mean`."""
        return self.pooled_se(self.chain_mean)

    @property
    def variance_se(self) -> np.ndarray:
        """The standard error of :attr:`variance` (delta method: the replicates ``x**2 - 2 mean x``)."""
        m1 = self.replicates(self.chain_mean)
        m2 = self.replicates(self.chain_second_moment)
        lin = m2 - 2.0 * self.mean * m1
        return lin.std(axis=0, ddof=1) / math.sqrt(m1.shape[0])

    @property
    def rhat(self) -> np.ndarray | None:
        """Classic R-hat per coordinate over the chains that did not diverge, from their averages
        of ``x`` and ``x**2`` over :attr:`n_draws` draws; None with fewer than 2 such chains, fewer
        than 2 draws, or no moments."""
        if (self.chain_second_moment is None or self.n_draws is None or self.n_draws < 2
                or int(np.sum(self.ok)) < 2):
            return None
        return rhat_from_moments(self.chain_mean[self.ok], self.chain_second_moment[self.ok], self.n_draws)

    @property
    def warnings(self) -> list[str]:
        """Why the pooled statistics should not be read as estimates: divergence, chains that did
        not move, R-hat above :data:`RHAT_WARN` (empty when nothing is wrong)."""
        out = []
        if self.n_diverged:
            out.append(f"{self.n_diverged} of {len(self.ok)} {self.member}s diverged (first at {self.unit} "
                       f"{self.first_divergence_step}); statistics pool the others")
        rhat = self.rhat
        if rhat is not None:
            worst = float(np.nanmax(rhat)) if np.any(~np.isnan(rhat)) else math.nan
            if math.isnan(worst):
                out.append("the chains did not move (no spread within or between them): no estimate")
            elif worst > RHAT_WARN:
                out.append(f"chains disagree far beyond their standard errors (R-hat {worst:.3g} > "
                           f"{RHAT_WARN}): not converged, the numbers are not an estimate")
        return out

    def summary(self, name: str, *, settings: str = "", lead: str = "", warnings=None) -> str:
        """One line: ``name settings: lead``, mean and variance with standard errors, R-hat and the
        warnings (default :attr:`warnings`); ``DIVERGED`` with the first step when every chain diverged."""
        if not np.any(self.ok):
            return f"{name}: DIVERGED (all {self.member}s; first at {self.unit} {self.first_divergence_step})"
        msg = (f"{name}{settings}: {lead}mean={format_values(self.mean)} +/- {format_values(self.mean_se)}, "
               f"var={format_values(self.variance)} +/- {format_values(self.variance_se)}")
        rhat = self.rhat
        if rhat is not None:
            msg += f", R-hat={format_values(rhat)}"
        for warning in self.warnings if warnings is None else warnings:
            msg += f"; WARNING: {warning}"
        return msg
