"""The paper's Figure 1: Wasserstein bias against the exact target on the 1-D example.

Nine samplers (UBU, BAOAB, EM each x sms, iid, rr), ``gamma = 1``, ``h = 2^-k`` for k = 2..5 and
``N = samples_per_unit * 2^k`` post-burn-in samples per point (the paper: ``10^7 * 2^k``).  The
statistic is ``W_1`` between the law of the chains and the exact target, streamed through a
histogram (:class:`bias._streaming_w1.StreamingW1`: memory independent of ``N``).

Two estimates per point, both in the CSV:

* ``w1`` (the plotted one, ``estimator = "control_variate"``): each repeat also runs the same
  scheme with the full gradient on the same Brownian path and initial velocities; its stationary
  law is exactly Gaussian (variance from the oracle's Lyapunov solution), so
  ``F_sampler - F_control + F_control_exact`` estimates the sampler's cdf without bias and with the
  noise of the two chains' small pathwise difference (:func:`bias._streaming_w1.w1_with_control`).
  Where the full-gradient scheme is unstable (EM at ``h = 1/4``) the point falls back to the
  plain estimate and says so.
* ``w1_plain``: the empirical ``W_1`` of the ``N`` samples alone, as in the paper.  At ``N = 10^7
  2^k`` its Monte Carlo error at ``h = 1/32`` is 15-30% of the bias, enough to move the local slope
  by 0.3 from one realization to the next; the control-variate estimate's is below 1%.

Each point reports its Monte Carlo error (the spread of ``R`` independent repeats, divided by
``sqrt(R)``; for both estimates) and its noise floor: the exact expectation of the plain statistic
for ``N`` exact draws of the target on the same histogram (:func:`noise_floor`, one number per
``N``, shared by the nine samplers; no draws).

Cost: the kernel's chain-steps (about 7.3e9 at ``full``) and nothing else of that order.  The
three plans of a scheme at one ``h`` and their shared control are one group of runs (one W1
evaluation).  Every run of a repeat at one ``h`` has the same seed (repeat ``r`` at ``h = 2^-k``:
``integrators.seeds.derive(seed, "figure1", k, r)``), hence the same Brownian path (and initial
state), so a repeat's runs go in one call of :func:`integrators.sample_together`: the path, most
of a step's cost on this example, is drawn once for the four (a scheme's three plans
and its control; the three schemes together would share it among twelve, but their twelve
histograms then miss the caches enough to make the figure slower), and each run's numbers are
those of its own ``sample()`` call.  A group is one unit of the executor
(:mod:`reports._executor`, persisted and resumed as every experiment's units): its calls go to a
pool of up to ``threads`` workers (the kernel releases the GIL), the threads split among them.
:func:`compute` runs the units in this process, the finest ``h`` first.  F and the integrated cdf on
the histogram's grid are computed once per layout.
Every histogram has ``n_bins`` bins of width ``2 W1_BOUND`` over +-12 sd (in :func:`run_facts`): the plotted estimate's
binning bound is ``1.5`` bin widths, the plain one's half a bin width; ``benchmarks/bench_figure1.py``
prints the former as a fraction of the smallest plotted W1.
A sampler that diverges is marked diverged at that ``h`` (with the first divergent step), never
plotted as a number.

Backends: the Numba kernel (default) or ``backend="torch"`` on ``device`` (``cpu`` or ``cuda``),
:mod:`experiments.figure1._torch_backend` (the same schemes and plans on tensors; its chain count per
repeat is its own, so that a GPU has enough chains to fill it; its runs go one at a time).

Conventions: the design's 1-D potential ``sum (x - x_i)^2 / (2 sigma_i^2)``; BAOAB with the
standard ``exp(-gamma h)`` O step (``baoab_paper_friction=True`` runs the paper's listing, which
is BAOAB at friction ``gamma / 2``).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

# the figure's module: the experiment's __init__, the tests and the benchmarks read these here too
from experiments.figure1._output import plot, resolution_metadata, run_facts, table  # noqa: F401
from experiments.figure1._schedule import Group
from experiments.figure1._setup import (
    BACKENDS,  # noqa: F401
    DIVERGENCE_BOUND,  # noqa: F401
    PRESETS,
    SAMPLERS,
    Point,
    histogram_layout,  # noqa: F401
    noise_floor,  # noqa: F401
    plans_of,
    point_config,
    resolve_threads,
    sampler_for,
    scheme_step_groups,
    target_law,  # noqa: F401
)
from integrators import GaussianTarget
from integrators._validation import preset_settings
from theory_checks.oracle import UnstableStepError, stationary_full


def chain_steps(preset: str, *, gamma: float = 1.0, control_variate: bool = True) -> dict:
    """Chain-steps (burn-in included) the figure runs per ``(scheme, plan)``."""
    target = GaussianTarget.one_d_example()
    out: dict = {}
    for s, k in scheme_step_groups(preset):
        h, reps, chains, per_chain, burn = point_config(k, preset)
        each = reps * chains * (burn + per_chain)
        plans = list(plans_of(s))
        if control_variate:
            try:
                stationary_full(s, target, h, gamma)
                plans.append("full")
            except UnstableStepError:
                pass
        for p in plans:
            out[(s, p)] = out.get((s, p), 0) + each
    return out


def run_point(scheme: str, plan: str, k: int, preset: str = "quick", seed: int = 0,
              gamma: float = 1.0, baoab_paper_friction: bool = False,
              control_variate: bool = True, *, threads: int | None = None, backend: str = "numba",
              device=None) -> Point:
    """One (sampler, step size) point: ``R`` repeats streamed into histograms."""
    return run_points(scheme, (plan,), k, preset, seed, gamma=gamma,
                      baoab_paper_friction=baoab_paper_friction, control_variate=control_variate,
                      threads=threads, backend=backend, device=device)[0]


def run_points(scheme: str, plans, k: int, preset: str = "quick", seed: int = 0, *, gamma: float = 1.0,
               baoab_paper_friction: bool = False, control_variate: bool = True,
               threads: int | None = None, backend: str = "numba", device=None) -> list[Point]:
    """The points of one scheme at one step size for several plans.

    All their runs (and the shared control's) are scheduled together so that every core stays
    busy (``backend="torch"``: one run at a time on ``device``).

    Parameters
    ----------
    scheme : str
        The scheme (``ubu``, ``baoab`` or ``em``).
    plans : iterable of str
        The gradient plans (``sms``, ``iid``, ``rr``).
    k : int
        The step size is ``h = 2^-k``.
    preset : str
        The preset (``tiny``, ``quick`` or ``full``).
    seed : int
        The figure's seed.
    gamma : float
        The friction.
    baoab_paper_friction : bool
        Run BAOAB as the paper's listing, at friction ``gamma / 2``.
    control_variate : bool
        Also run the full-gradient control and report the control-variate estimate.
    threads : int or None
        Cores (default: all).
    backend : {"numba", "torch"}
        The backend: the Numba kernel, or the tensor one of :mod:`experiments.figure1._torch_backend`.
    device : str or torch.device or None
        The tensor backend's device (``cpu`` or ``cuda``); None or ``cpu`` for the Numba one.

    Returns
    -------
    list of Point
        One point per plan, in the order of ``plans``.

    Raises
    ------
    ValueError
        If the preset, a sampler, ``threads`` or the backend and device are not known or valid.
    """
    threads = resolve_threads(threads)
    sampler_for(backend, device)  # validates the pair
    group = Group.make(scheme, tuple(plans), k, preset, seed, gamma, baoab_paper_friction, control_variate,
                        (backend, device))
    runs = group.runs()
    workers = max(1, min(threads, len(runs))) if backend == "numba" else 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return group.finish(group.submit(pool, max(1, threads // workers)))


def units(preset: str = "quick"):
    """The independent units of work: one per scheme and step size."""
    return list(scheme_step_groups(preset))


def run_group(scheme: str, k: int, preset: str, seed: int, *, threads: int | None = None,
              baoab_paper_friction: bool = False, control_variate: bool = True, backend: str = "numba",
              device=None) -> dict:
    """One unit: the points of ``scheme``'s three plans at ``h = 2^-k``, JSON-ready."""
    points = run_points(scheme, plans_of(scheme), k, preset, seed, baoab_paper_friction=baoab_paper_friction,
                        control_variate=control_variate, threads=threads, backend=backend, device=device)
    return {"points": [asdict(q) for q in points]}


def local_slopes(points: list[Point], field: str = "w1") -> dict:
    """Local slope of a W1 estimate between the two finest step sizes, per sampler.

    ``log(W1(h_coarse) / W1(h_fine)) / log(h_coarse / h_fine)`` for the two smallest ``h``.

    Parameters
    ----------
    points : list of Point
        The figure's points.
    field : str
        ``w1``, or ``w1_plain`` for the plain estimate.

    Returns
    -------
    dict
        ``{(scheme, plan): slope}`` (nan if either point diverged or is missing).
    """
    out = {}
    for s, p in SAMPLERS:
        pts = sorted((q for q in points if q.scheme == s and q.plan == p), key=lambda q: q.h)
        if len(pts) >= 2 and not (pts[0].diverged or pts[1].diverged):
            coarse, fine = getattr(pts[1], field), getattr(pts[0], field)
            out[(s, p)] = math.log(coarse / fine) / math.log(pts[1].h / pts[0].h)
        else:
            out[(s, p)] = float("nan")
    return out


def compute(preset: str = "quick", seed: int = 0, *, progress=None, baoab_paper_friction: bool = False,
            control_variate: bool = True, threads: int | None = None, backend: str = "numba",
            device=None) -> list[Point]:
    """Every point of the figure in one process, returned."""
    from reports._executor import execute

    preset_settings(PRESETS, preset)
    threads = resolve_threads(threads)
    sampler_for(backend, device)  # validates the pair
    options = {"baoab_paper_friction": baoab_paper_friction, "control_variate": control_variate,
               "backend": backend, "device": None if device is None else str(device)}
    # the executor in this process: one unit per group, the costliest (finest h) first, each with
    # the seed ``seed`` itself (the command line's units have their own, ``reports.store.unit_seed``)
    tasks = [(__package__, {"scheme": s, "k": k, **options}, preset, seed)
             for s, k in sorted(units(preset), key=lambda sk: -sk[1])]
    n_points = sum(len(plans_of(s)) for s, _ in units(preset))
    by_group: dict = {}
    for (_, unit, _, _), result, _ in execute(tasks, threads=threads):
        by_group[unit["scheme"], unit["k"]] = [Point(**q) for q in result["points"]]
        for q in by_group[unit["scheme"], unit["k"]]:
            if progress:
                progress(f"[{sum(map(len, by_group.values()))}/{n_points}] {q.scheme} x {q.plan}, "
                         f"h = 2^-{unit['k']}: {'DIVERGED' if q.diverged else f'W1 {q.w1:.3e}'}")
    return [q for key in units(preset) for q in by_group[key]]
