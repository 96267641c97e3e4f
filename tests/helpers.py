"""Plain-numpy references shared by the tests: single steps of every scheme (each built-in scheme's
``reference_step``), the oracle's affine step maps and exact stationary covariances (re-exported),
and a toy adapter in numpy."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np

from integrators.schemes import SCHEMES
from theory_checks.oracle import affine_step_map, stationary_covariance  # noqa: F401


def project_packages() -> tuple[str, ...]:
    """The project's top-level packages, read from pyproject.toml's package list (the one place they are typed)."""
    with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
        packages = tomllib.load(f)["tool"]["setuptools"]["packages"]
    return tuple(dict.fromkeys(p.split(".")[0] for p in packages))


def gaussian_batch_force(target, x, batch, scale, x_ref=None):
    """The design's minibatch force, with the control variate at ``x_ref`` when given."""
    mu, prec, p0, m0 = target.arrays
    g = p0 @ (x - m0)
    for i in batch:
        g = g + scale * prec[i] @ (x - mu[i])
    if x_ref is not None:
        g = g + sum(prec[i] @ (x_ref - mu[i]) for i in range(len(mu)))
        for i in batch:
            g = g - scale * prec[i] @ (x_ref - mu[i])
    return g


def reference_step(scheme, x, v, g, h, gamma, dW, J, grad):
    """One step of ``scheme`` (a registered name) written directly from its update rule: the
    ``reference_step`` it declares, in plain numpy; ``grad(x)`` is the step's force and
    ``g`` the cached force of first-same-as-last schemes.  Returns (x, v, g)."""
    declared = SCHEMES[scheme]
    if not callable(getattr(declared, "reference_step", None)):
        raise AssertionError(f"scheme {scheme!r} declares no reference_step(x, v, g, h, gamma, dW, J, grad): "
                             f"every built-in scheme gives its rule in plain numpy")
    return declared.reference_step(x.copy(), v.copy(), g, h, gamma, dW, J, grad)


def family_z(n_comparisons: int, alpha: float = 1e-5) -> float:
    """Two-sided z threshold for ``n_comparisons`` Monte Carlo checks made together (Bonferroni):
    the chance that a correct implementation fails any of them is at most ``alpha``.  Hypothesis
    draws different examples whenever the project's source constants change (its local-constant
    pool), so a test making many comparisons over many examples needs a family-wise level, not 4
    standard errors per comparison (about 6e-5 each: 5% over the oracle test's ~800)."""
    from scipy.stats import norm

    return float(norm.isf(alpha / (2 * n_comparisons)))


class ToyULA:
    """A toy adapter in numpy: the unadjusted Langevin algorithm (weak order 1), stacked chains."""

    NAME = "toy.ula"
    LIBRARY = "toy"
    SAMPLER = "ula"
    DYNAMICS = "overdamped"
    WEAK_ORDER = 1.0
    CLAIM_SOURCE = "this test"
    RULE_ORDER = 1.0
    RULE_SOURCE = "x' = x + h grad log p + sqrt(2h) xi"
    EXACT_GAUSSIAN_X = False
    CHAINS = "stacked"

    def build(self, problem, h, gamma):
        return problem, h

    def init(self, sampler, x0, seed):
        return np.array(x0, dtype=float), np.random.default_rng(seed)

    def step(self, sampler, state, batch):
        (problem, h), (x, rng) = sampler, state
        return x + h * problem.grad_log_density(x, batch) + np.sqrt(2 * h) * rng.standard_normal(x.shape), rng

    def positions(self, sampler, state):
        return state[0]


def draw_files(experiment, results: list, preset: str, out_dir) -> dict:
    """An experiment's drawing written as the command line writes it: ``{"files", "measured"}``."""
    from reports.drawing import write_drawing

    drawing = experiment.draw(results, preset)
    return {"files": write_drawing(drawing, out_dir), "measured": drawing.measured}


# what a command prints before it works (reports._start's line, run's listing and count): progress, not errors
STATUS_LINE = re.compile(r"^(sms-langevin \w+: starting |\w[\w-]*: (\d+ units to run; |listing the units ))")


def message_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` other than the progress lines of a command's start (:data:`STATUS_LINE`)."""
    return [line for line in stderr.strip().splitlines() if not STATUS_LINE.match(line)]
