"""Figure 1's set-up: the samplers and presets, the W1 numbers of one point (:class:`Point`),
the histogram every W1 is read from and its noise floor, and each point's step size, repeats,
chains and burn-in (:func:`point_config`) on the Numba or the tensor backend (:func:`sampler_for`).
:mod:`experiments.figure1._compute` describes the figure."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from bias._noise_floor import expected_binned_w1
from bias._streaming_w1 import StreamingW1
from bias._wasserstein import Normal
from integrators import GaussianTarget, sample
from integrators._backends import local_cores
from integrators._validation import preset_settings
from integrators.seeds import derive

SAMPLERS = [(s, p) for s in ("ubu", "baoab", "em") for p in ("sms", "iid", "rr")]


PRESETS = {
    "tiny": {"samples_per_unit": 2 * 10**4, "repeats": 2, "n_chains": 16, "ks": (2, 3, 4, 5)},
    "quick": {"samples_per_unit": 10**5, "repeats": 4, "n_chains": 128, "ks": (2, 3, 4, 5)},
    "full": {"samples_per_unit": 10**7, "repeats": 4, "n_chains": 2048, "ks": (2, 3, 4, 5)},
}


BURN_IN_TIME = 30.0  # in units of time; the 1-D example relaxes in a few units at gamma = 1


# histogram resolution: half a bin width.  The figure needs the plotted estimate's binning bound
# (1.5 bin widths) well below the smallest W1 it plots (second-order samplers at h = 1/32, about
# 4.4e-4: the bound is 0.14 of it) and the plain statistic's (half a bin) below its noise floor
# at the largest N (3.6e-5 at full); finer bins slow the kernel's histogram (291,043 bins at this bound).
W1_BOUND = 2e-5


DIVERGENCE_BOUND = 100.0  # about 200 target standard deviations: no stable chain gets there


@dataclass
class Point:
    """The W1 numbers of one (sampler, step size) point of the figure."""

    scheme: str
    plan: str
    h: float
    n_samples: int
    w1: float            # nan when diverged
    mc_error: float
    noise_floor: float
    bound: float
    diverged: bool
    first_divergence_step: int
    seconds: float  # kernel seconds of the point's runs (its share of its group's calls, control included)
    estimator: str = "plain"          # how w1 and mc_error were estimated
    w1_plain: float = float("nan")    # the empirical W1 of the samples alone
    mc_error_plain: float = float("nan")
    control_noise: float = float("nan")  # W1 of the control's samples to its exact law: bounds |w1 - w1_plain|


def target_law(target: GaussianTarget) -> Normal:
    """The exact law of the first coordinate of a Gaussian target.

    Parameters
    ----------
    target : GaussianTarget
        The target.

    Returns
    -------
    bias._wasserstein.Normal
        Its first coordinate's mean and standard deviation.
    """
    return Normal(float(target.mean[0]), float(math.sqrt(target.covariance[0, 0])))


def repeat_seeds(seed: int, k: int, reps: int) -> list[int]:
    """The seeds of the repeats at one step size."""
    # shared by all nine samplers at one h (common random numbers) and by their controls
    return [derive(seed, "figure1", k, r) for r in range(reps)]


def histogram_layout(law: Normal) -> tuple[float, float, int]:
    """The layout of every histogram of the figure: +-12 sd with half-width ``W1_BOUND``."""
    grid = StreamingW1.for_normal(law, bound=W1_BOUND)
    return grid.lo, grid.hi, grid.n_bins


@functools.lru_cache(maxsize=16)
def noise_floor(law: Normal, n_samples: int) -> float:
    """The expected plain statistic for ``n_samples`` exact draws of ``law`` on the figure's histogram."""
    return expected_binned_w1(law, n_samples, *histogram_layout(law))


BACKENDS = ("numba", "torch")


def sampler_for(backend: str, device=None):
    """The ``sample`` function of a backend (the tensor one bound to ``device``)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {list(BACKENDS)}")
    if backend == "numba":
        if device not in (None, "cpu"):
            raise ValueError(f"the numba backend runs on the CPU; device={device!r} needs backend='torch'")
        return sample
    from experiments.figure1._torch_backend import figure1_sampler
    return figure1_sampler(device)


def point_config(k: int, preset: str, backend=("numba", None)) -> tuple[float, int, int, int, int]:
    """The step size, repeats, chains, samples per chain and burn-in of a point at ``h = 2^-k``."""
    cfg = preset_settings(PRESETS, preset)
    h = 2.0**-k
    reps, chains = cfg["repeats"], cfg["n_chains"]
    if backend[0] != "numba":
        chains = sampler_for(*backend).chains_per_repeat(preset)
    per_chain = max(1, math.ceil(cfg["samples_per_unit"] * 2**k / (reps * chains)))
    return h, reps, chains, per_chain, int(math.ceil(BURN_IN_TIME / h))


def resolve_threads(threads) -> int:
    """The number of threads a run uses."""
    if threads is None:
        threads = local_cores()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    return threads


def scheme_step_groups(preset: str) -> list[tuple[str, int]]:
    """The ``(scheme, k)`` groups of a preset: each scheme at each of its step sizes ``h = 2**-k``."""
    return [(s, k) for s in dict.fromkeys(s for s, _ in SAMPLERS) for k in preset_settings(PRESETS, preset)["ks"]]


def plans_of(scheme: str) -> tuple[str, ...]:
    """The plans the figure runs with a scheme."""
    return tuple(p for s, p in SAMPLERS if s == scheme)
