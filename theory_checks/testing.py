"""Test helpers for anyone's scheme: hypothesis strategies and a one-call assertion.

A user's whole test of a scheme (see the README's worked example), or of another library's
sampler behind an adapter (:mod:`theory_checks.adapters`), is three lines:

    from theory_checks.testing import assert_verified

    def test_my_scheme():
        assert_verified(MY_SCHEME)          # or assert_verified(MyAdapter()), or "posteriors.sgld"

:func:`assert_verified` runs :func:`theory_checks.verify.verify` (a scheme) or
:func:`theory_checks.adapters.measure_adapter` (an adapter) within a time budget and fails with
the report's table when a check fails.  The strategies draw what a property test of a
sampler needs: step sizes and frictions (log-uniform), Gaussian targets whose data terms do not
commute (random rotations of random spectra, with a prior), and partitions ``(n_data,
batch_size)`` including uneven last batches.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from integrators.targets import GaussianTarget
from theory_checks.checks import VerifyReport
from theory_checks.verify import verify

DEFAULT_BUDGET = 40.0  # seconds: the exact checks take a few, Monte Carlo ones fill the rest


ADAPTER_MARKS = ("LIBRARY", "build", "init", "positions")  # what only an adapter declares (a scheme has step too)


def is_adapter(obj) -> bool:
    """Whether ``obj`` is meant as an adapter: a registered adapter's name, or an object with any
    of :data:`ADAPTER_MARKS` (it is then checked in full, and refused by the name of what it lacks)."""
    if isinstance(obj, str):
        from theory_checks.adapters import ADAPTERS
        return obj in ADAPTERS
    return any(hasattr(obj, mark) for mark in ADAPTER_MARKS)


def assert_verified(scheme, *, budget: float = DEFAULT_BUDGET, **options) -> VerifyReport:
    """Run :func:`verify` on a scheme, or :func:`theory_checks.adapters.measure_adapter` on an
    adapter (``budget`` seconds split evenly over its plans; ``options`` such as ``plans``,
    ``target``, ``level``, ``n_chains``, ``seed`` pass through), and raise ``AssertionError``
    (with the table) if any check fails; return the report otherwise."""
    if is_adapter(scheme):
        from integrators.plans import PLANS
        from theory_checks.adapters import measure_adapter
        plans = options.get("plans")
        per_plan = budget / max(len(PLANS) if plans is None or isinstance(plans, str) else len(plans), 1)
        report = measure_adapter(scheme, budget=per_plan, **options)
        kind = "sampler"
    else:
        report = verify(scheme, budget=budget, **options)
        kind = "scheme"
    if not report.ok:
        raise AssertionError(f"{kind} {report.scheme!r} fails {', '.join(report.failed)}:\n{report.table()}")
    return report


def log_uniform(low: float, high: float):
    """Floats spread evenly in ``log`` between ``low`` and ``high``."""
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high, got {low!r}, {high!r}")
    return st.floats(math.log(low), math.log(high)).map(math.exp)


def step_sizes(low: float = 1e-3, high: float = 0.5):
    return log_uniform(low, high)


def frictions(low: float = 0.05, high: float = 20.0):
    return log_uniform(low, high)


@st.composite
def partitions(draw, max_data: int = 8):
    """``(n_data, batch_size)`` with ``1 <= batch_size <= n_data``; uneven last batches included."""
    n_data = draw(st.integers(1, max_data))
    return n_data, draw(st.integers(1, n_data))


@st.composite
def gaussian_targets(draw, max_dim: int = 3, max_data: int = 4, prior: bool = True):
    """Gaussian data terms ``(x - mu_i)^T A_i (x - mu_i) / 2`` with random means and precisions
    ``A_i = Q_i diag(lambda_i) Q_i^T`` (independent random rotations: the terms do not commute),
    spectra in ``[0.2, 5]``, and a prior of precision 0.3 when ``prior``."""
    d, n = draw(st.integers(1, max_dim)), draw(st.integers(1, max_data))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    precs = []
    for _ in range(n):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        precs.append(q @ np.diag(np.exp(rng.uniform(math.log(0.2), math.log(5.0), size=d))) @ q.T)
    return GaussianTarget(rng.normal(size=(n, d)), np.array(precs),
                          prior_precision=0.3 * np.eye(d) if prior else None)
