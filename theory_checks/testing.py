"""Test helpers for anyone's scheme: hypothesis strategies and a one-call assertion.

A user's whole test of a scheme (see the README's worked example), or of another library's
sampler behind an adapter (:mod:`theory_checks.adapters`), is three lines:

    from theory_checks.testing import assert_verified

    def test_my_scheme():
        assert_verified(MY_SCHEME)          # or assert_verified(MyAdapter()), or "posteriors.sgld"

:func:`assert_verified` runs :func:`theory_checks._verify.verify` (a scheme) or
:func:`theory_checks.adapters.measure_adapter` (an adapter) and fails with the report's table when
a check fails or a claim is inconclusive (unless allowed by name: ``allow_inconclusive``).
The strategies draw what a property test of a sampler needs: step sizes and frictions
(log-uniform), Gaussian targets whose data terms do not commute (random rotations of random
spectra, with a prior), and partitions ``(n_data, batch_size)`` including uneven last batches.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from integrators.targets import GaussianTarget
from theory_checks._checks import VerifyReport
from theory_checks._verify import verify

_ADAPTER_MARKS = ("LIBRARY", "build", "init", "positions")  # what only an adapter declares (a scheme has step too)


def _is_adapter(obj) -> bool:
    """Whether ``obj`` is meant as an adapter."""
    if isinstance(obj, str):
        from theory_checks.adapters import ADAPTERS
        return obj in ADAPTERS
    return any(hasattr(obj, mark) for mark in _ADAPTER_MARKS)


def assert_verified(scheme, *, budget: float | None = None, allow_inconclusive=(), **options) -> VerifyReport:
    """Run :func:`verify` on a scheme, or :func:`theory_checks.adapters.measure_adapter` on an
    adapter, and raise ``AssertionError`` (with the table) if a check fails or a claim is
    inconclusive; return the report otherwise.

    Parameters
    ----------
    scheme : str or Scheme or adapter
        What to check: a scheme (as :func:`verify` takes it) or an adapter (a registered
        adapter's name or an object, ``_is_adapter``).
    budget : float or None, default None
        A wall-clock cap (``None``: none).  For a scheme, :func:`verify`'s ``max_seconds``; for an
        adapter, seconds split evenly over its plans (:func:`theory_checks.adapters.measure_adapter`'s
        ``budget``).  The work is set in chains and steps either way (an adapter's chains follow
        from its detectable effect), so a cap can only leave claims inconclusive.
    allow_inconclusive : sequence of str, default ()
        Names of claims that may end inconclusive without failing the assertion: a check's full
        name (``"strong_order[sms]@3d"``) or a family (``"strong_order"`` allows every
        ``strong_order[...]``, ``"monte_carlo[iid]"`` allows it on every target).
    **options
        Passed through (``plans``, ``target``, ``max_seconds``, ``n_chains``, ``seed``, ``level``...).

    Returns
    -------
    VerifyReport
        The report, every claim checked and passed (or allowed inconclusive).

    Raises
    ------
    AssertionError
        If a check failed, or a claim not allowed by name is inconclusive.
    ValueError
        If ``allow_inconclusive`` is a string (write a list), or as :func:`verify` raises.
    """
    if isinstance(allow_inconclusive, str):  # a lone name would be read letter by letter
        raise ValueError(f"allow_inconclusive must be a list of check names, got the string {allow_inconclusive!r} "
                         f"(write [{allow_inconclusive!r}])")
    allowed = tuple(allow_inconclusive)
    if _is_adapter(scheme):
        from integrators.plans import PLANS
        from theory_checks.adapters import measure_adapter
        plans = options.get("plans")
        per_plan = None if budget is None else \
            budget / max(len(PLANS) if plans is None or isinstance(plans, str) else len(plans), 1)
        report = measure_adapter(scheme, budget=per_plan, **options)
        kind = "sampler"
    else:
        report = verify(scheme, budget=budget, **options)
        kind = "scheme"
    if report.failed:
        raise AssertionError(f"{kind} {report.scheme!r} fails {', '.join(report.failed)}:\n{report.table()}")
    left = [name for name in report.inconclusive if not is_allowed(name, allowed)]
    if left:
        raise AssertionError(f"{kind} {report.scheme!r}: claims left inconclusive (not checked or not enough "
                             f"evidence; allow them by name with allow_inconclusive=[...]): {', '.join(left)}:\n"
                             f"{report.table()}")
    return report


def is_allowed(name: str, allowed) -> bool:
    """Whether the check ``name`` (e.g. ``"strong_order[sms]@3d"``) is matched by an entry of ``allowed``:
    equal to it, or ``name`` is the entry followed by ``[...]`` or ``@...`` (a family, or the same check
    on every target)."""
    return any(name == a or name.startswith(a + "[") or name.startswith(a + "@") for a in allowed)


def _log_uniform(low: float, high: float):
    """A hypothesis strategy of floats spread evenly in ``log`` between ``low`` and ``high``."""
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high, got {low!r}, {high!r}")
    return st.floats(math.log(low), math.log(high)).map(math.exp)


def step_sizes(low: float = 1e-3, high: float = 0.5):
    """A hypothesis strategy of step sizes, log-uniform in ``[low, high]`` (``_log_uniform``).

    Parameters
    ----------
    low : float, default 1e-3
        The smallest step size.
    high : float, default 0.5
        The largest step size.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        The step sizes.
    """
    return _log_uniform(low, high)


def frictions(low: float = 0.05, high: float = 20.0):
    """A hypothesis strategy of frictions, log-uniform in ``[low, high]`` (``_log_uniform``).

    Parameters
    ----------
    low : float, default 0.05
        The smallest friction.
    high : float, default 20.0
        The largest friction.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        The frictions.
    """
    return _log_uniform(low, high)


@st.composite
def partitions(draw, max_data: int = 8):
    """A hypothesis strategy of ``(n_data, batch_size)`` with ``1 <= batch_size <= n_data``.

    Uneven last batches included.

    Parameters
    ----------
    max_data : int, default 8
        The largest ``n_data``.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        The pairs.
    """
    n_data = draw(st.integers(1, max_data))
    return n_data, draw(st.integers(1, n_data))


@st.composite
def gaussian_targets(draw, max_dim: int = 3, max_data: int = 4, prior: bool = True):
    """A hypothesis strategy of Gaussian targets whose data terms do not commute.

    Data terms ``(x - mu_i)^T A_i (x - mu_i) / 2`` with random means and precisions
    ``A_i = Q_i diag(lambda_i) Q_i^T`` (independent random rotations), spectra in ``[0.2, 5]``.

    Parameters
    ----------
    max_dim : int, default 3
        The largest dimension.
    max_data : int, default 4
        The largest number of data terms.
    prior : bool, default True
        Whether the target has a prior of precision ``0.3 * I``.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        The :class:`~integrators.GaussianTarget` objects.
    """
    d, n = draw(st.integers(1, max_dim)), draw(st.integers(1, max_data))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    precs = []
    for _ in range(n):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        precs.append(q @ np.diag(np.exp(rng.uniform(math.log(0.2), math.log(5.0), size=d))) @ q.T)
    return GaussianTarget(rng.normal(size=(n, d)), np.array(precs),
                          prior_precision=0.3 * np.eye(d) if prior else None)

__all__ = ["assert_verified", "frictions", "gaussian_targets", "partitions", "step_sizes"]
