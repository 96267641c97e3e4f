"""The time-left estimate of a run (reports._progress.TimeLeft): once shown, it stays within a factor 2 of
the run's true length, on a run whose figures' units differ by orders of magnitude and whose first unit
of each figure also compiles (the run of issue 50 showed ~1426 s, then ~241 s)."""

from __future__ import annotations

import io

import pytest

from reports._progress import Progress, TimeLeft, interleave

# (figure, unit seconds, units, compile seconds of its first unit): fast figures first, slow ones last
RUN = [("demo", 0.7, 8, 20.0), ("weak_orders", 0.2, 13, 0.0), ("figure1", 1.5, 10, 25.0),
       ("logistic", 6.0, 9, 25.0), ("ghmc", 15.0, 5, 20.0), ("conformance", 30.0, 7, 0.0), ("claims", 5.0, 6, 45.0)]


def _units():
    kinds, seconds = [], []
    for kind, each, n, compiling in RUN:
        for i in range(n):
            growth = 1.0 + 0.5 * i / n  # later units of a figure a little slower (smaller step sizes)
            kinds.append(kind)
            seconds.append(each * growth + (compiling if i == 0 else 0.0))
    return kinds, seconds


def _shown_totals(kinds, seconds, order, estimator):
    """Run the units in ``order`` on a fake clock; the projected length (elapsed + left) at every line shown."""
    now = [0.0]
    progress = Progress(len(kinds), "tiny", stream=io.StringIO(), every=0.0, clock=lambda: now[0],
                        kinds=[kinds[i] for i in order] if estimator else None)
    totals = []
    for i in order:
        now[0] += seconds[i]
        progress.advance(kinds[i], kind=kinds[i], seconds=seconds[i])
        left = progress._left(now[0])
        if left is not None and progress.done < progress.total:
            totals.append(now[0] + left)
    return totals


def test_once_shown_the_estimate_stays_within_a_factor_2_of_the_runs_length():
    kinds, seconds = _units()
    totals = _shown_totals(kinds, seconds, interleave(kinds), estimator=True)
    true = sum(seconds)
    assert len(totals) >= len(kinds) // 2, "shown for at least half the run"
    assert all(true / 2 <= t <= 2 * true for t in totals), (true, [round(t) for t in totals])


def test_the_count_of_units_alone_misjudges_the_same_run_by_more():
    # the estimate the run printed before: units done against units left, in the figures' order
    kinds, seconds = _units()
    totals = _shown_totals(kinds, seconds, list(range(len(kinds))), estimator=False)
    true = sum(seconds)
    assert min(totals) < true / 2, (true, [round(t) for t in totals])


def test_no_estimate_until_every_figure_left_has_two_finished_units():
    estimator = TimeLeft(["a", "a", "a", "b", "b"])
    estimator.record("a", 10.0)
    estimator.record("a", 1.0)
    assert estimator.estimate(11.0) is None and estimator.untimed() == ["b"]
    estimator.record("b", 2.0)
    estimator.record("b", 2.0)  # b done; a has one unit left at 1 s (its first, compiling, left out)
    assert estimator.estimate(15.0) == pytest.approx(1.0 * 15.0 / 15.0)


def test_interleave_runs_two_units_of_each_figure_first_in_order():
    assert interleave(["a", "a", "a", "b", "b", "b", "c"]) == [0, 1, 3, 4, 6, 2, 5]
