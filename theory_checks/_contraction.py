"""Contraction of synchronously coupled SMS-UBU chains.

Claim checked (the paper's Theorems on SMS-UBU, from its Section 3): under ``h < 1/(2 gamma)``
and ``gamma >= sqrt(8 M)`` for an ``m``-strongly convex, ``M``-smooth potential, two SMS-UBU chains
driven by the same noise and the same batches contract in W2 at rate at least
``c(h) = m h / (8 gamma)`` per epoch (every ``N_m`` steps).

Measured: pairs of chains from two different initial points with the same seed (hence the same
Brownian path and the same batch orders), the Euclidean distance of ``(x, v)`` after a growing
number of epochs; the rate is minus the least-squares slope of the log mean distance against
epochs.  The conditions are evaluated on the target and reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from integrators import sample
from integrators._validation import batch_size_for, int_at_least, positive_float
from integrators.plans import n_batches
from integrators.targets import GaussianTarget
from theory_checks.orders import ladder


@dataclass
class ContractionCheck:
    h: float
    gamma: float
    m: float
    M: float
    conditions_hold: bool
    bound: float            # c(h) = m h / (8 gamma) per epoch
    measured_rate: float    # per epoch
    epochs: np.ndarray
    distances: np.ndarray

    @property
    def holds(self) -> bool:
        return self.measured_rate >= self.bound


def contraction_check(target: GaussianTarget, h: float, gamma: float | None = None, batch_size: int = 1,
                      epochs=(2, 4, 8, 16, 32), n_chains: int = 32, seed: int = 0) -> ContractionCheck:
    """Claim: rate ``>= m h / (8 gamma)`` per epoch under ``h < 1/(2 gamma)``, ``gamma >= sqrt(8M)``
    (the paper's main theorem).  Measured: log-distance slope of synchronously coupled pairs (see
    the module docstring).  ``gamma`` defaults to ``sqrt(8 M)``, the smallest allowed."""
    if not isinstance(target, GaussianTarget):
        raise ValueError(f"contraction_check needs a GaussianTarget (its m and M), got {type(target).__name__}")
    h = positive_float("h", h)
    batch_size = batch_size_for(target, batch_size)
    epochs = ladder("epochs", epochs, integer=True)[::-1].astype(int)
    n_chains = int_at_least("n_chains", n_chains, 1)
    eig = np.linalg.eigvalsh(target.precision)
    m, big_m = float(eig.min()), float(eig.max())
    gamma = float(np.sqrt(8.0 * big_m)) if gamma is None else positive_float("gamma", gamma)
    conditions = bool(h < 1.0 / (2.0 * gamma) and gamma >= np.sqrt(8.0 * big_m) * (1 - 1e-12))
    n_m = n_batches(target.n_data, batch_size)
    offset = np.ones(target.dim) / np.sqrt(target.dim)
    v0 = np.zeros((n_chains, target.dim))
    dists = []
    for k in epochs:
        runs = [sample(target, "ubu", "sms", h=h, gamma=gamma, n_chains=n_chains, n_steps=k * n_m,
                       batch_size=batch_size, seed=seed, x0=target.mean + s * offset, v0=v0)
                for s in (1.0, -1.0)]
        diff = np.hstack([runs[0].x - runs[1].x, runs[0].v - runs[1].v])
        dists.append(float(np.mean(np.linalg.norm(diff, axis=1))))
    epochs = np.asarray(epochs, dtype=float)
    dists = np.asarray(dists)
    rate = -float(np.polyfit(epochs, np.log(dists), 1)[0])
    return ContractionCheck(h, gamma, m, big_m, conditions, m * h / (8.0 * gamma), rate, epochs, dists)
