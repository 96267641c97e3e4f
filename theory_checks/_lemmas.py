"""The without-replacement variance lemma (the paper's supplement, constant 5/2).

Claim: for batches ``w_1 .. w_Nm`` of a uniformly random partition (sampling without replacement)
and points ``x_1 .. x_Nm`` independent of the partition,

    E || sum_i (G(x_i, w_i) - grad f(x_i)) ||^2  <=  5/2 * sum_i E || G(x_i, w_i) - grad f(x_i) ||^2,

with ``G(x, w) = N_m sum_{j in w} grad f_j(x)``.  Measured: random data sets of affine per-datum
gradients ``grad f_j(x) = A_j x + b_j``, Gaussian points ``x_i``, Monte Carlo over partitions and
points; the ratio of the two sides with its standard error (delta method), maximized over data sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from integrators._validation import int_at_least


@dataclass
class LemmaCheck:
    max_ratio: float
    max_ratio_se: float
    ratios: np.ndarray
    constant: float = 2.5

    @property
    def holds(self) -> bool:
        return self.max_ratio <= self.constant


def variance_lemma_check(n_datasets: int = 20, n_mc: int = 4000, seed: int = 0) -> LemmaCheck:
    """Claim: the supplement's without-replacement lemma, constant 5/2.  Measured: Monte Carlo
    ratio of its two sides on ``n_datasets`` random data sets (see the module docstring)."""
    n_datasets = int_at_least("n_datasets", n_datasets, 1)
    n_mc = int_at_least("n_mc", n_mc, 2)  # a standard error needs two draws
    rng = np.random.default_rng(seed)
    ratios, ses = [], []
    for _ in range(n_datasets):
        n_b = int(rng.integers(1, 4))
        n_m = int(rng.integers(2, 6))
        n_data, d = n_b * n_m, int(rng.integers(1, 4))
        a = rng.normal(size=(n_data, d, d)) * rng.uniform(0.1, 3.0)
        b = rng.normal(size=(n_data, d)) * rng.uniform(0.1, 3.0)
        lhs, rhs = np.empty(n_mc), np.empty(n_mc)
        for t in range(n_mc):
            perm = rng.permutation(n_data).reshape(n_m, n_b)
            xs = rng.normal(size=(n_m, d)) * rng.uniform(0.5, 2.0)
            total, squares = np.zeros(d), 0.0
            for i in range(n_m):
                grads = np.einsum("jab,b->ja", a, xs[i]) + b
                dev = n_m * grads[perm[i]].sum(axis=0) - grads.sum(axis=0)
                total += dev
                squares += dev @ dev
            lhs[t], rhs[t] = total @ total, squares
        ratio = lhs.mean() / rhs.mean()
        # delta-method standard error of a ratio of means
        cov = np.cov(lhs, rhs) / n_mc
        grad = np.array([1.0 / rhs.mean(), -lhs.mean() / rhs.mean() ** 2])
        ratios.append(ratio)
        ses.append(float(np.sqrt(grad @ cov @ grad)))
    k = int(np.argmax(ratios))
    return LemmaCheck(float(ratios[k]), ses[k], np.array(ratios))
