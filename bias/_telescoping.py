"""The telescoping (multilevel) bias estimator over ``h_l = h_0 2^-l``.

Claim it serves: the bias of a stationary average at ``h_0`` is the sum of the level differences
``E_{h_l} f - E_{h_{l+1}} f`` for ``l = 0 .. L`` plus the finest level's own bias.  Each
difference comes from a coupled (``h_l``, ``h_l / 2``) pair (:func:`bias._coupled.coupled_run`),
run for a number of epochs that doubles with ``l`` (the finer pair needs more steps per unit of
time), with a burn-in fraction discarded and the standard error taken over chains and equal time
chunks (the paper uses 4).  The finest difference is reported as the assumed floor: the finest
step's own bias is taken to be no larger than it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bias._coupled import COUPLED_CONSTRAINTS, coupled_run
from integrators._spec import RunSpec
from integrators._validation import Interval, at_least, check_parameters, declares, one_of
from integrators.plans import n_batches
from integrators.seeds import derive


@dataclass
class TelescopingResult:
    """The level differences of a telescoping run and the biases they add up to.

    Attributes
    ----------
    hs : numpy.ndarray
        ``h_0 .. h_L``, the coarse step of each level.
    differences, difference_se : numpy.ndarray
        ``(L+1, n_tests)``: ``E_{h_l/2} f - E_{h_l} f`` and its standard error.
    coarse_means : numpy.ndarray
        ``(L+1, n_tests)``: ``E_{h_l} f`` from each level's coarse chain.
    diverged : dict
        ``{level: first divergent coarse step}`` for the levels that diverged.
    replicates : list
        Per level, the ``(n_replicates, n_tests)`` differences (chain x chunk); None if diverged.
    """

    hs: np.ndarray            # h_0 .. h_L (coarse step of each level)
    differences: np.ndarray   # (L+1, n_tests): E_{h_l/2} f - E_{h_l} f
    difference_se: np.ndarray
    coarse_means: np.ndarray  # (L+1, n_tests): E_{h_l} f from each level's coarse chain
    diverged: dict = None     # {level: first divergent coarse step} for levels that diverged
    replicates: list = None   # per level, (n_replicates, n_tests) differences (chain x chunk); None if diverged

    @property
    def bias(self) -> np.ndarray:
        """(L+1, n_tests): estimate of ``E_{h_l} f - E_{h_{L+1}} f`` for every level ``l``."""
        return -np.cumsum(self.differences[::-1], axis=0)[::-1]

    @property
    def bias_se(self) -> np.ndarray:
        """(L+1, n_tests): standard error of :attr:`bias` (independent levels, errors in quadrature)."""
        return np.sqrt(np.cumsum(self.difference_se[::-1] ** 2, axis=0)[::-1])

    def bootstrap_biases(self, statistic, n_boot: int = 400, seed: int = 0) -> np.ndarray:
        """``(n_boot, L+1)``: ``statistic(bias vector of level l)`` recomputed with each level's
        replicates resampled with replacement (levels are independent runs), for the standard
        error of a nonlinear summary of the biases such as the mean |bias| over test points.

        Parameters
        ----------
        statistic : callable
            Maps one level's bias vector ``(n_tests,)`` to a number.
        n_boot : int
            Number of bootstrap resamples.
        seed : int
            Seed of the resampling.

        Returns
        -------
        numpy.ndarray
            ``(n_boot, L+1)``; NaN for levels that diverged.
        """
        rng = np.random.default_rng(seed)
        n_levels = len(self.hs)
        out = np.full((n_boot, n_levels), np.nan)
        for b in range(n_boot):
            diffs = np.array([r[rng.integers(0, len(r), len(r))].mean(axis=0) if r is not None
                              else np.full(self.differences.shape[1], np.nan) for r in self.replicates])
            biases = -np.cumsum(diffs[::-1], axis=0)[::-1]
            out[b] = [statistic(biases[level]) for level in range(n_levels)]
        return out

    @property
    def floor(self) -> np.ndarray:
        """The finest level's difference: the assumed bound on the finest step's own bias."""
        return np.abs(self.differences[-1])


MAX_LEVELS = 20
SEEDS = 2**64  # seeds lie in [0, 2**64), the user's and every level's


def level_seed(seed: int, level: int) -> int:
    """The seed of level ``level``'s coupled pair: ``derive(seed, "telescoping", level)``, in
    ``[0, 2**64)``, independent of every other part's stream."""
    return derive(seed, "telescoping", level)


TELESCOPING_CONSTRAINTS = {
    **{k: COUPLED_CONSTRAINTS[k] for k in ("spec", "coupling", "test_every", "n_chunks")},
    "levels": Interval(int, 0, MAX_LEVELS, closed="both"),  # each level doubles the steps: 2^levels times level 0
    "base_epochs": at_least(1), "burn_fraction": Interval(float, 0, 1, closed="left"),
    "on_diverge": one_of(("raise", "skip")),
}


@declares(TELESCOPING_CONSTRAINTS)
def telescoping_bias(spec: RunSpec, *, levels: int = 3, base_epochs: int = 2000, burn_fraction: float = 0.1,
                     coupling: str = "shared", test_every: int = 1, n_chunks: int = 4,
                     on_diverge: str = "raise") -> TelescopingResult:
    """Run levels ``l = 0 .. levels`` and return the level differences; see the module docstring.

    Level ``l`` is the coupled run (:func:`bias._coupled.coupled_run`) of ``spec`` with the coarse
    step ``spec.h 2^-l``, ``base_epochs 2^l`` epochs of coarse steps (the spec's ``n_steps`` and
    ``burn_in`` are replaced by these), ``burn_fraction`` of them burn-in, and the seed
    :func:`level_seed` ``(spec.seed, l)``.

    Parameters
    ----------
    spec : RunSpec
        The coupled runs' description; ``spec.h`` is level 0's coarse step ``h_0``.
    levels : int, default 3
        The finest level ``L`` (at most :data:`MAX_LEVELS`).
    base_epochs : int, default 2000
        Epochs of level 0; level ``l`` runs ``base_epochs 2^l`` epochs.
    burn_fraction : float, default 0.1
        Fraction of each level's steps discarded, in ``[0, 1)``.
    coupling, test_every, n_chunks
        Passed to :func:`bias._coupled.coupled_run`.
    on_diverge : {"raise", "skip"}, default "raise"
        A level whose chains diverge raises ``RuntimeError`` (``"raise"``) or, with ``"skip"``,
        gets NaN differences (so only the biases of that level and coarser ones are NaN) and is
        listed in ``diverged``.

    Returns
    -------
    TelescopingResult
        The level differences, their standard errors and the coarse means.

    Raises
    ------
    ValueError
        On a bad ``on_diverge``, ``levels``, ``base_epochs`` or ``burn_fraction``, or what
        :func:`bias._coupled.coupled_run` refuses.
    RuntimeError
        When a level diverges and ``on_diverge="raise"``.

    Examples
    --------
    >>> from integrators import GaussianTarget, RunSpec
    >>> spec = RunSpec.from_options(GaussianTarget.one_d_example(), "ubu", "sms", h=0.25, n_chains=4,
    ...                             batch_size=1)
    >>> telescoping_bias(spec, levels=1, base_epochs=20).hs.tolist()
    [0.25, 0.125]
    """
    values = check_parameters(locals(), TELESCOPING_CONSTRAINTS)
    levels, base_epochs, burn_fraction = values["levels"], values["base_epochs"], values["burn_fraction"]
    epoch = n_batches(spec.target.n_data, spec.batch_size)
    scheme, plan, h0 = spec.scheme_module.NAME, spec.plan_module.NAME, spec.h
    steps0 = int(base_epochs * epoch)  # level 0 observes the fewest steps: if its chunks fit, every level's do
    observed0 = (steps0 - int(burn_fraction * steps0)) // values["test_every"]
    if 1 <= observed0 < values["n_chunks"]:  # (none observed: coupled_run names test_every)
        raise ValueError(f"n_chunks must be at most the steps level 0 observes ({observed0}: base_epochs={base_epochs} "
                         f"epochs of {epoch} steps, less burn_fraction, every test_every), got {values['n_chunks']}")
    hs, diffs, ses, coarse, diverged, replicates = [], [], [], [], {}, []
    for level in range(levels + 1):
        h = h0 * 2.0**-level
        steps = int(base_epochs * 2**level * epoch)
        res = coupled_run(spec.replace(h=h, n_steps=steps, burn_in=int(burn_fraction * steps),
                                       seed=level_seed(spec.seed, level)),
                          coupling=coupling, test_every=test_every, n_chunks=n_chunks)
        hs.append(h)
        if not np.all(res.ok):  # a level with any diverged pair is not used
            first = int(res.diverged_at[res.diverged_at >= 0].min())
            if on_diverge == "raise":
                raise RuntimeError(f"{scheme} x {plan} diverged at h={h:g} (first at coarse step {first})")
            diverged[level] = first
            nan = np.full(res.fine.shape[-1], np.nan)
            diffs.append(nan)
            ses.append(nan)
            coarse.append(nan)
            replicates.append(None)
            continue
        diffs.append(res.difference)
        ses.append(res.difference_se)
        coarse.append(res.mean("coarse"))
        replicates.append(res.replicates(res.fine - res.coarse))
    return TelescopingResult(np.array(hs), np.array(diffs), np.array(ses), np.array(coarse), diverged,
                             replicates)


def variance_reduction(spec: RunSpec, **options) -> dict:
    """Variance of one replicate's level difference for the coupled pair (shared and independent
    batches) and for independent chains, with the ratios that say what the coupling buys."""
    out = {}
    variants = (("shared", {"coupling": "shared"}), ("independent_batches", {"coupling": "independent"}),
                ("independent_chains", {"independent_paths": True}))
    for name, extra in variants:
        res = coupled_run(spec, **options, **extra)
        out[name] = res.difference_variance
    out["reduction_vs_independent_chains"] = out["independent_chains"] / np.maximum(out["shared"], 1e-300)
    out["shared_vs_independent_batches"] = out["independent_batches"] / np.maximum(out["shared"], 1e-300)
    return out
