"""What a run observed: :class:`SampleResult`, the one result type of every backend's chains mode."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from integrators._chain_summary import ChainSummary, format_values


@dataclass
class SampleResult:
    """What a run observed: the one result type of every backend's chains mode.

    Statistics pool the chains that did not diverge; when every chain diverged they raise
    ``RuntimeError`` naming the first divergence instead of returning NaN as an estimate.
    :attr:`rhat` compares the chains with each other; :attr:`warnings` lists what makes the pooled
    numbers untrustworthy as estimates (and :meth:`summary` prints it).

    Parameters
    ----------
    scheme, plan : str
        The sampler's names.
    h, gamma : float
        Step size and friction.
    n_steps, burn_in, seed : int
        As the run was asked.
    chain_mean, chain_second_moment : numpy.ndarray
        Per-chain time averages of ``x`` and ``x**2`` (the diagonal) after burn-in, shape
        ``(n_chains, d)``.
    chain_outer : numpy.ndarray or None
        Per-chain averages of ``x x^T``, shape ``(n_chains, d, d)``, when ``full_moments`` was
        asked for.
    chain_tests : numpy.ndarray or None
        Per-chain averages of the test functions, shape ``(n_chains, n_test_functions)``.
    samples : numpy.ndarray or None
        Thinned samples, shape ``(n_chains, keep, d)``, NaN where a chain had no sample to give
        (``keep`` above the number of post-burn-in steps, or after its divergence).
    diverged_at : numpy.ndarray
        Per chain, the first step at which its state left the divergence bound or was not finite
        (-1: never).
    x, v : numpy.ndarray
        Final states, shape ``(n_chains, d)`` (NaN for diverged chains).
    histogram : numpy.ndarray or None, default None
        Counts of the first coordinate after burn-in in the ``histogram=(lo, hi, n_bins)`` bins.
    histogram_tails : numpy.ndarray or None, default None
        Counts below ``lo`` and above ``hi``.
    meta : dict, default {}
        Run metadata (batch size, number of chains, control variate, path refinement, target name).
    """

    scheme: str
    plan: str
    h: float
    gamma: float
    n_steps: int
    burn_in: int
    seed: int
    chain_mean: np.ndarray
    chain_second_moment: np.ndarray
    chain_outer: np.ndarray | None
    chain_tests: np.ndarray | None
    samples: np.ndarray | None
    diverged_at: np.ndarray
    x: np.ndarray
    v: np.ndarray
    histogram: np.ndarray | None = None
    histogram_tails: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    @property
    def stats(self) -> ChainSummary:
        """The pooled statistics of the chains (:class:`integrators._chain_summary.ChainSummary`),
        which every statistic below reads."""
        return ChainSummary(self.diverged_at, self.chain_mean, self.chain_second_moment, self.n_steps - self.burn_in,
                            run=f" in {self.scheme} x {self.plan} at h={self.h:g}")

    @property
    def ok(self) -> np.ndarray:
        """Per chain, whether it never diverged (boolean, shape ``(n_chains,)``)."""
        return self.stats.ok

    @property
    def n_diverged(self) -> int:
        """The number of chains that diverged."""
        return self.stats.n_diverged

    @property
    def diverged(self) -> bool:
        """Whether any chain diverged."""
        return self.n_diverged > 0

    @property
    def first_divergence_step(self) -> int | None:
        """The earliest step at which a chain diverged (``None``: none did)."""
        return self.stats.first_divergence_step

    @property
    def mean(self) -> np.ndarray:
        """The mean of ``x`` over the chains that did not diverge, shape ``(d,)``."""
        return self.stats.mean

    @property
    def second_moment(self) -> np.ndarray:
        """The mean of ``x**2`` (per coordinate) over the chains that did not diverge, shape ``(d,)``."""
        return self.stats.second_moment

    @property
    def variance(self) -> np.ndarray:
        """The variance of each coordinate, :attr:`second_moment` minus :attr:`mean` squared."""
        return self.stats.variance

    @property
    def mean_se(self) -> np.ndarray:
        """Standard error of :attr:`mean` from the spread of independent chains."""
        return self.stats.mean_se

    @property
    def variance_se(self) -> np.ndarray:
        """Standard error of :attr:`variance` (delta method over independent chains)."""
        return self.stats.variance_se

    @property
    def test_means(self) -> np.ndarray:
        """The test functions' means over the chains that did not diverge."""
        return self.stats.pooled_mean(self.chain_tests)

    @property
    def rhat(self) -> np.ndarray | None:
        """Classic R-hat per coordinate over the chains that did not diverge, from their time
        averages of ``x`` and ``x^2`` (:func:`integrators._diagnostics.rhat_from_moments`); about 1
        when the chains agree within their own spread, large when they disagree far beyond their
        standard errors (chains still on their way somewhere).  ``None`` with fewer than 2 chains
        or 2 post-burn-in steps."""
        return self.stats.rhat

    @property
    def warnings(self) -> list[str]:
        """Why the pooled statistics should not be read as estimates (empty when nothing is wrong):
        divergence, chains that did not move, R-hat above
        :data:`integrators._chain_summary.RHAT_WARN`, test functions whose means are not finite."""
        out = self.stats.warnings
        if self.chain_tests is not None and np.any(self.ok):
            means = self.test_means
            if not np.all(np.isfinite(means)):  # the test function wrote NaN or inf into out
                name = self.meta.get("test_functions", "test_functions")
                out.append(f"test function {name!r} gave non-finite means {format_values(means)} (at indices "
                           f"{np.flatnonzero(~np.isfinite(means)).tolist()} of out): it wrote NaN or inf")
        return out

    def summary(self) -> str:
        """One line: the sampler, mean and variance with their standard errors, R-hat per
        coordinate (where :attr:`rhat` has one: at least 2 chains that did not diverge), and any
        warnings.

        Returns
        -------
        str
            The line (``DIVERGED`` with the first step when every chain diverged).
        """
        return self.stats.summary(f"{self.scheme} x {self.plan}, h={self.h:g}", settings=f", gamma={self.gamma:g}",
                                  warnings=self.warnings)
