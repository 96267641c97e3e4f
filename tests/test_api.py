"""The public entry point: input validation, divergence reporting, reproducibility."""

import math
import os

import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bias._telescoping import telescoping_bias
from integrators import (
    SCHEMES,
    GaussianTarget,
    LogisticTarget,
    MultinomialLogisticTarget,
    RunSpec,
    sample,
    sample_together,
)
from integrators._backends import Numba, Torch, local_cores
from integrators._chain_summary import RHAT_WARN
from integrators.targets._base import DIVERGENCE_SDS

T1 = GaussianTarget.one_d_example()


@pytest.mark.parametrize("kwargs,name", [
    ({"h": 0.0}, "h"), ({"h": -1.0}, "h"), ({"h": float("nan")}, "h"), ({"h": "big"}, "h"),
    ({"gamma": 0.0}, "gamma"), ({"gamma": float("inf")}, "gamma"),
    ({"scheme": "rk4"}, "scheme"), ({"plan": "random"}, "plan"),
    ({"batch_size": 3}, "batch_size"), ({"batch_size": 0}, "batch_size"),
    ({"plan": "sms", "batch_size": None}, "batch_size"),
    ({"n_chains": 0}, "n_chains"), ({"n_steps": 0}, "n_steps"), ({"burn_in": 10}, "burn_in"),
    ({"x0": [1.0, 2.0]}, "x0"), ({"x0": [np.nan]}, "x0"), ({"v0": np.zeros((3, 1))}, "v0"),
    ({"seed": -1}, "seed"), ({"keep": -2}, "keep"), ({"path_refine": 3}, "path_refine"),
    ({"box_half_width": -1.0}, "box_half_width"), ({"box_half_width": 0.1, "x0": [0.5]}, "x0"),
    ({"threads": 0}, "threads"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"scheme": "ubu", "plan": "sms", "h": 0.1, "n_chains": 2, "n_steps": 10, "batch_size": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        sample(T1, **args)


def test_bad_targets():
    with pytest.raises(ValueError, match="precisions"):
        GaussianTarget(means=[[0.0]], precisions=[[[1.0, 2.0]]])
    with pytest.raises(ValueError, match="means"):
        GaussianTarget(means=[[np.inf]], precisions=[[[1.0]]])
    with pytest.raises(ValueError, match="labels"):
        LogisticTarget(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="features"):
        LogisticTarget(np.full((2, 2), np.nan), [0, 1])
    with pytest.raises(ValueError, match="target"):
        sample("not a target")


@pytest.mark.slow
@pytest.mark.parametrize("plan", ["full", "sms", "iid"])
def test_em_diverges_at_quarter_step_and_is_reported(plan):
    res = sample(T1, "em", plan, h=0.25, n_chains=8, n_steps=20_000, batch_size=1, seed=0)
    assert res.diverged and res.n_diverged == 8
    assert res.first_divergence_step is not None and 0 < res.first_divergence_step <= 20_000
    assert np.all(np.isfinite(res.chain_mean)) and np.all(np.isfinite(res.chain_second_moment))
    assert "DIVERGED" in res.summary()
    with pytest.raises(RuntimeError, match="diverged"):
        _ = res.mean


@pytest.mark.slow
def test_same_seed_same_output_and_threads_do_not_matter():
    kw = dict(scheme="ubu", plan="sms", h=0.2, n_chains=600, n_steps=300, batch_size=1, keep=5)
    a = sample(T1, seed=3, threads=1, **kw)
    b = sample(T1, seed=3, threads=2, **kw)
    c = sample(T1, seed=4, threads=2, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.chain_mean, b.chain_mean)
    assert not np.array_equal(a.x, c.x)


@pytest.mark.slow
@pytest.mark.parametrize("scheme,plan", [("ubu", "sms"), ("baoab", "iid"), ("em", "rr")])
def test_adding_chains_does_not_change_existing_chains(scheme, plan):
    small = sample(T1, scheme, plan, h=0.1, n_chains=3, n_steps=200, batch_size=1, seed=9)
    large = sample(T1, scheme, plan, h=0.1, n_chains=700, n_steps=200, batch_size=1, seed=9)
    np.testing.assert_array_equal(small.x, large.x[:3])
    np.testing.assert_array_equal(small.chain_mean, large.chain_mean[:3])


@pytest.mark.slow
@pytest.mark.parametrize("tile,lanes", [(1, 1), (7, 1), (7, 8), (64, 8), (1000, 8), (100, 3)])
def test_tiling_never_changes_results(monkeypatch, tile, lanes):
    """How chains are tiled in the kernel (padding lanes and tile widths that are no multiple of a
    vector included) changes no number: 257 chains with a box, FSAL BAOAB, iid batches, a histogram
    and thinned samples, against tiles of 256."""
    import integrators._chains as chains

    kw = dict(scheme="baoab", plan="iid", h=0.15, n_chains=257, n_steps=120, burn_in=20, batch_size=1,
              seed=5, keep=4, box_center=[-0.8], box_half_width=[1.5], x0=[-0.8], histogram=(-3.0, 2.0, 50))
    ref = sample(T1, **kw)
    monkeypatch.setattr(chains, "TILE_SIZE", tile)
    monkeypatch.setattr(chains, "TILE_LANES", lanes)
    other = sample(T1, **kw)
    for name in ("x", "v", "chain_mean", "chain_second_moment", "samples", "histogram", "histogram_tails"):
        np.testing.assert_array_equal(getattr(ref, name), getattr(other, name), err_msg=name)
    # padding lanes never reach the pooled histogram: every chain counted once per kept step
    assert ref.histogram.sum() + ref.histogram_tails[0] + ref.histogram_tails[2] == 257 * 100


@pytest.mark.slow
@given(seed=st.integers(0, 2**20), bound=st.floats(1.5, 4.0), h=st.floats(0.05, 0.4))
def test_histogram_counts_every_kept_state_of_every_live_chain_once(seed, bound, h):
    """The streamed histogram is the histogram of the states a run keeps at every step after
    burn-in (``keep = n_steps - burn_in``): chains that diverge (a tight divergence bound) count
    up to their divergence step and never after, padding lanes never; the out-of-range tails hold
    the exact counts and excesses of the other states."""
    lo, hi, n_bins = -2.0, 0.5, 37
    res = sample(T1, "baoab", "iid", h=h, n_chains=21, n_steps=60, burn_in=10, batch_size=1, seed=seed,
                 keep=50, divergence_bound=bound, histogram=(lo, hi, n_bins))
    kept = res.samples[..., 0]
    kept = kept[np.isfinite(kept)]  # a step not kept (after a divergence) stays NaN
    assert kept.size == sum(50 if at < 0 else max(0, at - 11) for at in res.diverged_at)
    inside = kept[(kept >= lo) & (kept < hi)]
    want = np.bincount(np.minimum(((inside - lo) * (n_bins / (hi - lo))).astype(np.int64), n_bins - 1),
                       minlength=n_bins)
    np.testing.assert_array_equal(res.histogram, want)
    below, above = kept[kept < lo], kept[kept >= hi]
    np.testing.assert_allclose(res.histogram_tails, [below.size, np.sum(lo - below), above.size,
                                                     np.sum(above - hi)], rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_histogram_counts_the_same_in_float64_where_int32_could_overflow(monkeypatch):
    """A run that could pass int32 in a bin counts in float64 (``COUNT_DTYPE_LIMIT``): the same
    histogram, tails and statistics as the int32 counts of a smaller run would give."""
    import integrators._observers as observers

    kw = dict(scheme="baoab", plan="iid", h=0.15, n_chains=40, n_steps=80, burn_in=20, batch_size=1,
              seed=3, x0=[-0.8], histogram=(-3.0, 2.0, 50))
    assert observers.histogram_counts(50, 40 * 60).dtype == np.int32
    ref = sample(T1, **kw)
    monkeypatch.setattr(observers, "COUNT_DTYPE_LIMIT", 40 * 60 - 1)
    assert observers.histogram_counts(50, 40 * 60).dtype == np.float64
    wide = sample(T1, **kw)
    for name in ("x", "chain_mean", "histogram", "histogram_tails"):
        np.testing.assert_array_equal(getattr(ref, name), getattr(wide, name), err_msg=name)
    assert wide.histogram.dtype == ref.histogram.dtype == np.float64


@pytest.mark.slow
def test_path_refine_drives_the_same_brownian_path():
    """Runs at h and 2h on the path of a fine reference run converge to it at UBU's strong
    order 2 (error ratio near 4), and a run on another seed's path does not."""
    kw = dict(scheme="ubu", plan="full", gamma=1.0, n_chains=200, seed=2, x0=[0.0], v0=np.zeros(1))
    h, horizon = 0.02, 1.0
    fine = sample(T1, h=h / 16, n_steps=int(16 * horizon / h), **kw)
    errs = []
    for factor in (1, 2):
        run = sample(T1, h=h * factor, n_steps=int(horizon / (h * factor)), path_refine=16 * factor, **kw)
        errs.append(np.sqrt(np.mean((run.x - fine.x) ** 2)))
    assert 2.8 < errs[1] / errs[0] < 5.6, errs
    other = sample(T1, h=h, n_steps=int(horizon / h), path_refine=16, **{**kw, "seed": 5})
    assert np.sqrt(np.mean((other.x - fine.x) ** 2)) > 100 * errs[1]


@pytest.mark.slow
def test_logistic_and_control_variate_run():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(60, 3))
    labels = (feats @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=60) > 0).astype(float)
    target = LogisticTarget(feats, labels, prior_precision=1.0)
    plain = sample(target, "ubu", "sms", h=0.05, n_chains=40, n_steps=1500, burn_in=300, batch_size=10)
    cv = sample(target, "ubu", "sms", h=0.05, n_chains=40, n_steps=1500, burn_in=300, batch_size=10,
                control_variate=True)
    full = sample(target, "ubu", "full", h=0.05, n_chains=40, n_steps=1500, burn_in=300)
    for res in (plain, cv):
        assert np.all(np.abs(res.mean - full.mean) < 4 * np.hypot(res.mean_se, full.mean_se) + 0.05)


@given(shape=st.lists(st.integers(0, 40), min_size=1, max_size=3),
       dtype=st.sampled_from([np.float64, np.int32, np.uint64, np.int64]))
def test_aligned_zeros_start_on_a_cache_line(shape, dtype):
    from integrators._kernel import ALIGN_BYTES, aligned_zeros

    a = aligned_zeros(tuple(shape), dtype)
    assert a.shape == tuple(shape) and a.dtype == dtype and a.flags.c_contiguous
    assert a.ctypes.data % ALIGN_BYTES == 0 and not a.any()


@pytest.mark.slow
def test_threads_meeting_a_new_kernel_signature_agree_with_one_thread():
    """Two threads whose first call needs a new compilation (a new test function on an already
    compiled kernel) compile it once between them and give one thread's numbers."""
    import numba as nb

    @nb.njit
    def cube_and_sine(x, out, data):
        out[0] = x[0] ** 3
        out[1] = np.sin(x[0])

    kw = dict(scheme="ubu", plan="sms", h=0.1, n_chains=600, n_steps=50, batch_size=1,
              test_functions=cube_and_sine, n_test_functions=2)
    two = sample(T1, threads=2, **kw)
    one = sample(T1, threads=1, **kw)
    np.testing.assert_array_equal(two.chain_tests, one.chain_tests)
    assert np.all(np.isfinite(two.chain_tests))


# -------------------------------------------------------------------------------------
# Input checks through the public entry points, end to end: a few refusals through ``sample``,
# ``sample_together`` and the torch chains' ``sample`` (each a ValueError naming the value, before
# anything compiles or allocates), valid but unusual options that run, and a divergence reported at
# the same step by every entry point.
#
# The refusals themselves are tables run against the validation layer and the run spec, which
# compile nothing: tests/test_validation.py (it also runs :data:`END_TO_END_REFUSALS` in a fresh
# interpreter and finds no kernel compiled).
ONE_D = GaussianTarget.one_d_example()
RUN = dict(h=0.1, n_chains=4, n_steps=50, burn_in=5, batch_size=1)
HUGE = 10**12
MEMORY = "GiB of arrays, more than this machine's"
LONE = "samplers must be a list of .scheme, plan. pairs"


def on_torch(target, scheme, plan, *, compile=False, **options):
    """``sample`` on the torch backend (CPU, float64)."""
    return sample(target, scheme, plan, backend=Torch(compile=compile), **options)


def refuse_end_to_end(entry, kwargs):
    if kwargs.get("backend") == "torch":  # built here: collecting the table needs no torch
        kwargs = {**kwargs, "backend": Torch()}
    if entry is sample_together:
        sample_together(ONE_D, **{"samplers": [("ubu", "sms")], "batch_size": 1, "h": 0.1, "n_chains": 2,
                                  "n_steps": 10, **kwargs})
    else:
        entry(ONE_D, "ubu", "sms", **{**RUN, **kwargs})


# (entry point, keywords, what the message says); the same checks on both backends and many more: the
# tables of tests/test_validation.py
END_TO_END_REFUSALS = [
    pytest.param(sample, {"seed": 2**64}, r"seed must be an integer in \[0, 2\*\*64\)",
                 id="sample-seed-beyond-64-bits"),
    pytest.param(sample, {"x_ref": [0.0]}, "x_ref is given but control_variate is false",
                 id="sample-x_ref-without-control-variate"),
    pytest.param(sample, {"path_refine": 2**21}, r"path_refine must be a power of two in \[1, 2\*\*20\]",
                 id="sample-path_refine-2**21"),
    pytest.param(sample, {"n_chains": HUGE}, f"n_chains={HUGE}.*{MEMORY}", id="sample-n_chains-beyond-memory"),
    pytest.param(on_torch, {"full_moments": "no"}, "full_moments must be True or False",
                 id="torch-full_moments-string", marks=pytest.mark.torch),
    pytest.param(on_torch, {"histogram": (-3.0, 3.0, HUGE)}, f"{HUGE} histogram bins.*{MEMORY}",
                 id="torch-histogram-beyond-memory", marks=pytest.mark.torch),
    pytest.param(on_torch, {"compile": "maybe"}, "compile='maybe' is not a torch.compile backend",
                 id="torch-compile-word", marks=pytest.mark.torch),
    pytest.param(sample_together, {"samplers": "ubu"}, LONE, id="together-a-lone-name"),
    pytest.param(sample_together, {"samplers": {"ubu": "sms"}}, LONE, id="together-a-mapping"),
]


@pytest.mark.parametrize("entry, kwargs, words", END_TO_END_REFUSALS)
def test_entry_points_refuse_bad_input_by_name(entry, kwargs, words):
    with pytest.raises(ValueError, match=words):
        refuse_end_to_end(entry, kwargs)


@pytest.mark.slow
@pytest.mark.torch  # it runs on both backends (on_torch)
def test_unusual_but_valid_options_run_end_to_end():
    """Options the checks once refused, run (their canonical values: tests/test_validation.py):
    integral float histogram bins on both backends, a path refinement of 8 (2**62 was accepted and
    never ended; the bound is 2**20), and a scalar x0 and x_ref for a one-dimensional target."""
    for run in (sample, on_torch):
        assert run(ONE_D, "ubu", "sms", **RUN, histogram=(-3, 3, 10.0)).histogram.sum() > 0
    assert not sample(ONE_D, "ubu", "sms", **RUN, path_refine=2**3).diverged
    res = sample(ONE_D, "ubu", "sms", **RUN, x0=0.5, control_variate=True, x_ref=-0.9)
    assert not res.diverged


@pytest.mark.slow
@pytest.mark.torch  # it runs on both backends (on_torch)
def test_every_entry_point_reports_the_divergence_the_target_bound_defines():
    """EM at h = 1 on the 1-D example leaves the target's scale within a few steps: sample, the
    torch backend and the coupled chains (hence the telescoping sum) all report it (the coupled
    chains and torch used a fixed bound of 1e8 and returned differences of 1e11 as numbers)."""
    numba_run = sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3)
    assert np.all(numba_run.diverged_at > 0)
    torch_default = on_torch(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3)
    torch_target = on_torch(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3,
                            divergence_bound=ONE_D.divergence_bound())
    torch_loose = on_torch(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3, divergence_bound=1e8)
    assert np.all(torch_default.diverged_at > 0)
    np.testing.assert_array_equal(torch_default.diverged_at, torch_target.diverged_at)
    assert np.all(torch_loose.diverged_at > torch_default.diverged_at)  # the bound matters here
    with pytest.raises(RuntimeError, match="diverged at h=1"):
        telescoping_bias(RunSpec.from_options(ONE_D, "em", "full", h=1.0, n_chains=4), levels=1, base_epochs=20)


# -------------------------------------------------------------------------------------
# Property: any valid combination of target, scheme, plan and options runs to a result whose
# statistics are finite, or is reported as diverged; never an exception from Numba internals.
def make_target(kind, rng, d, n):
    if kind == "gaussian":
        roots = rng.normal(size=(n, d, d))
        return GaussianTarget(rng.normal(size=(n, d)), roots @ np.swapaxes(roots, 1, 2) + 0.1 * np.eye(d),
                              prior_precision=0.2 * np.eye(d))
    feats = rng.normal(size=(n, d))
    if kind == "logistic":
        return LogisticTarget(feats, (rng.random(n) > 0.5).astype(float), prior_precision=1.0)
    return MultinomialLogisticTarget(feats, rng.integers(0, 3, size=n), n_classes=3, prior_precision=1.0)


@settings(max_examples=30)
@given(kind=st.sampled_from(["gaussian", "logistic", "multinomial"]), scheme=st.sampled_from(sorted(SCHEMES)),
       plan=st.sampled_from(["full", "iid", "rr", "sms"]), d=st.integers(1, 3), n=st.integers(1, 9),
       bs_frac=st.floats(0.0, 1.0), h=st.floats(1e-3, 2.0), gamma=st.floats(0.1, 10.0), cv=st.booleans(),
       box=st.booleans(), seed=st.integers(0, 1000))
@pytest.mark.slow
def test_any_valid_configuration_runs(kind, scheme, plan, d, n, bs_frac, h, gamma, cv, box, seed):
    rng = np.random.default_rng(seed)
    target = make_target(kind, rng, d, n)
    batch_size = max(1, int(round(bs_frac * n)))
    kwargs = {}
    if box:
        kwargs = {"box_center": np.zeros(target.dim), "box_half_width": np.full(target.dim, 3.0)}
    res = sample(target, scheme, plan, h=h, gamma=gamma, n_chains=3, n_steps=60, burn_in=10, seed=seed,
                 batch_size=None if plan == "full" else batch_size, control_variate=cv, keep=2, **kwargs)
    assert np.all(np.isfinite(res.chain_mean)) and np.all(np.isfinite(res.chain_second_moment))
    if res.n_diverged < 3:
        assert np.all(np.isfinite(res.mean)) and np.all(np.isfinite(res.variance))
    else:
        assert "DIVERGED" in res.summary()
    if box:
        ok = res.ok
        assert np.all(np.abs(res.samples[ok]) <= 3.0 + 1e-9)


@settings(max_examples=8)
@given(kind=st.sampled_from(["gaussian", "multinomial"]), scheme=st.sampled_from(sorted(SCHEMES)),
       plan=st.sampled_from(["full", "iid", "rr", "sms"]), coupling=st.sampled_from(["shared", "independent"]),
       d=st.integers(1, 3), n=st.integers(1, 7), h=st.floats(1e-3, 0.5), cv=st.booleans(),
       seed=st.integers(0, 1000))
@pytest.mark.slow
def test_any_valid_coupled_configuration_runs(kind, scheme, plan, coupling, d, n, h, cv, seed):
    from bias._coupled import coupled_run
    target = make_target(kind, np.random.default_rng(seed), d, n)
    res = coupled_run(RunSpec.from_options(target, scheme, plan, h=h, n_chains=2, n_steps=40, burn_in=4, seed=seed,
                                           batch_size=None if plan == "full" else max(1, n // 2), control_variate=cv),
                      coupling=coupling)
    if np.all(res.ok):
        assert np.all(np.isfinite(res.difference))


# -------------------------------------------------------------------------------------
# The library side of reliability: missing samples are NaN, divergence is judged on the target's own
# scale, disagreeing chains are flagged, and bad input is a ValueError naming it (never a Numba
# TypingError, a numpy error or a silent change).


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(keep=st.integers(41, 200), scheme=st.sampled_from(sorted(SCHEMES)))
def test_samples_never_taken_are_nan_not_zero(keep, scheme):
    res = sample(T1, scheme, "sms", h=0.1, batch_size=1, n_chains=2, n_steps=50, burn_in=10, keep=keep, seed=1)
    assert res.samples.shape == (2, keep, 1)
    assert np.all(np.isfinite(res.samples[:, :40])), "the 40 post-burn-in steps are all kept"
    assert np.all(np.isnan(res.samples[:, 40:])), "entries past the run must be NaN, never 0.0"


@pytest.mark.slow
def test_samples_of_a_diverged_chain_stop_at_its_divergence():
    res = sample(T1, "em", "full", h=0.25, n_chains=3, n_steps=4000, keep=4000, seed=0)
    assert res.n_diverged == 3
    for c, step in enumerate(res.diverged_at):
        assert np.all(np.isfinite(res.samples[c, : step - 1])) and np.all(np.isnan(res.samples[c, step - 1:]))


@pytest.mark.slow
def test_default_divergence_bound_is_the_targets_scale():
    centre, sd = abs(T1.mean[0]), math.sqrt(T1.covariance[0, 0])
    assert T1.divergence_bound() == pytest.approx(centre + DIVERGENCE_SDS * max(sd, 1.0))
    wide = GaussianTarget(means=[[3.0]], precisions=[[[1e-6]]])  # sd 1000: the bound grows with it
    assert wide.divergence_bound() == pytest.approx(3.0 + DIVERGENCE_SDS * 1000.0)
    rng = np.random.default_rng(0)
    feats, labels = rng.normal(size=(30, 3)), rng.integers(0, 2, 30)
    logit = LogisticTarget(feats, labels.astype(float), prior_precision=4.0)
    mode = logit.mode()
    radius, sd = logit.typical_scale()
    assert np.linalg.norm(mode) <= radius and sd == 0.5  # the mode lies within the bound's centre radius


@pytest.mark.slow
def test_chains_on_their_way_out_are_reported_diverged():
    """The issue's repro: EM x iid at h = 0.21 printed mean 1039, var 6.5e11 as an estimate."""
    res = sample(T1, "em", "iid", batch_size=1, h=0.21, n_chains=400, n_steps=3000, seed=5)
    assert res.n_diverged > 300
    assert "diverged" in res.summary() and "WARNING" in res.summary()
    frozen_friction = sample(T1, "em", "full", h=0.1, gamma=1e-8, n_chains=50, n_steps=3000, seed=5)
    assert frozen_friction.diverged  # EM without friction gains energy every step: flagged, not var 3.8e7
    ok = sample(T1, "ubu", "sms", h=0.1, batch_size=1, n_chains=200, n_steps=3000, burn_in=300, seed=5)
    assert not ok.diverged and ok.warnings == [] and "WARNING" not in ok.summary()


@pytest.mark.slow
def test_chains_that_disagree_beyond_their_errors_are_flagged():
    x0 = np.linspace(-30, 30, 40)[:, None]  # chains far apart that have no time to meet
    res = sample(T1, "ubu", "full", h=0.001, n_chains=40, n_steps=100, x0=x0, seed=2)
    assert not res.diverged
    assert res.rhat[0] > RHAT_WARN
    assert any("R-hat" in w for w in res.warnings) and "WARNING" in res.summary()
    long = sample(T1, "ubu", "full", h=0.1, n_chains=40, n_steps=4000, burn_in=400, x0=x0, seed=2)
    assert long.rhat[0] < RHAT_WARN and long.warnings == []


def test_friction_that_freezes_the_chains_is_refused():
    with pytest.raises(ValueError, match="gamma"):
        sample(T1, "ubu", "full", h=0.1, gamma=1e300, n_chains=2, n_steps=10)


@nb.njit
def _two_moments(x, out, test_data):
    out[0] = x[0]
    out[1] = x[0] * x[0]


@nb.njit
def _two_args(x, out):
    out[0] = x[0]


@nb.njit
def _bad_body(x, out, test_data):
    out[0] = test_data[0][0].nonexistent


@pytest.mark.slow
def test_test_functions_with_the_documented_signature_work():
    res = sample(T1, "ubu", "full", h=0.1, n_chains=20, n_steps=400, burn_in=40, seed=0,
                 test_functions=_two_moments, n_test_functions=2)
    assert np.allclose(res.test_means, [res.mean[0], res.second_moment[0]])


@pytest.mark.parametrize("kwargs,match", [
    ({"test_functions": _two_args, "n_test_functions": 1}, "three positional arguments"),
    ({"test_functions": _two_moments.py_func, "n_test_functions": 2}, "Numba function"),
    ({"test_functions": _two_moments, "n_test_functions": 2, "test_data": [np.zeros(2)]}, "tuple"),
    ({"test_functions": _two_moments, "n_test_functions": 2, "test_data": ("abc",)}, r"test_data\[0\]"),
    ({"test_functions": _two_moments, "n_test_functions": 0}, "n_test_functions"),
    ({"test_functions": _bad_body, "n_test_functions": 1, "test_data": (np.zeros(2),)}, "could not be compiled"),
])
@pytest.mark.slow
def test_bad_test_functions_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sample(T1, "ubu", "full", h=0.1, n_chains=2, n_steps=10, **kwargs)


@pytest.mark.parametrize("make,match", [
    (lambda: MultinomialLogisticTarget(np.zeros((0, 3)), np.zeros(0, int)), "at least one row"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array(["a", "b"])), "labels must be integers"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 1e18])), "n_classes"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 1]), n_classes=10**12), "weights"),
    (lambda: MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 1]), n_classes="3"), "n_classes"),
    (lambda: LogisticTarget(np.zeros((0, 2)), np.zeros(0)), "at least one row"),
    (lambda: LogisticTarget(np.ones((2, 2)), ["a", "b"]), "labels"),
    (lambda: LogisticTarget(np.ones((2, 2)), [0, 1], prior_precision="x"), "prior_precision"),
])
def test_bad_targets_raise_value_error_naming_the_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_explicit_n_classes_allows_unseen_classes():
    target = MultinomialLogisticTarget(np.ones((2, 3)), np.array([0, 9]), n_classes=10)
    assert target.dim == 30


@pytest.mark.parametrize("kwargs,match", [
    ({"scheme": ["ubu"]}, "scheme"), ({"plan": {"sms": 1}}, "plan"),
    ({"histogram": (0.0, 1.0, 2.7)}, "n_bins"), ({"histogram": (0.0, 1.0)}, "histogram"),
    ({"histogram": "abc"}, "histogram"),
])
def test_unhashable_or_inexact_options_raise_value_error(kwargs, match):
    args = {"scheme": "ubu", "plan": "sms", "h": 0.1, "n_chains": 2, "n_steps": 10, "batch_size": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        sample(T1, **args)


def test_numba_threads_are_an_argument_defaulting_to_the_cores_this_process_may_run_on(monkeypatch):
    """``threads`` is the only channel: the environment sets nothing, and the default follows the
    process's CPU affinity (what a ``taskset`` or a container grants), not the machine's core count."""
    monkeypatch.setenv("SMS_LANGEVIN_THREADS", "7")  # a thread count in the environment changes nothing
    assert Numba().resolved_threads() == local_cores()
    assert Numba(threads=3).resolved_threads() == 3
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4})
        assert local_cores() == Numba().resolved_threads() == 5


# ------------------------------------------------------------- user Numba code out of bounds
_USER_CODE_PRELUDE = """
import math
import numba as nb
import numpy as np
from integrators import PLANS, GaussianTarget, Plan, Scheme, sample
T1 = GaussianTarget.one_d_example()
"""
_USER_CODE_CASES = {
    # the scenarios: a write past out (the process aborted: heap corruption), a read past an
    # empty test_data array (garbage returned); threads=2 runs the kernel on worker threads
    "writes_past_out": """
@nb.njit
def writes_past_out(x, out, test_data):
    for i in range(200):
        out[i] = x[0]
sample(T1, n_chains=600, n_steps=20, batch_size=1, threads=2, test_functions=writes_past_out, n_test_functions=1)
""",
    "reads_past_test_data": """
@nb.njit
def reads_past_test_data(x, out, test_data):
    out[0] = test_data[0][0]
print(sample(T1, n_chains=4, n_steps=20, batch_size=1, test_functions=reads_past_test_data, n_test_functions=1,
             test_data=(np.zeros(0),)).chain_tests)
""",
    # a step that reads a second coordinate: within bounds on the registration check's 2-D block,
    # past the end of x on a 1-D target
    "step_reads_second_coordinate": """
@nb.njit
def step_reads_second_coordinate(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    force(x, g, batch, n_batch, scale, tdata)
    for c in range(x.shape[0]):
        v[c, 0] = coef[0] * v[c, 0] - coef[1] * g[c, 0] + dW[0, 0, c] + 0.0 * x[c, 1]
        x[c, 0] += coef[1] * v[c, 0]
scheme = Scheme("second_coordinate", step_reads_second_coordinate,
                lambda h, gamma: np.array([math.exp(-gamma * h), h]), WEAK_ORDER=1.0, STRONG_ORDER=0.5)
print(sample(T1, scheme, "full", n_chains=4, n_steps=20).chain_mean)
""",
    "rule_writes_past_out": """
@nb.njit
def rule_writes_past_out(plan_code, perm, position, batch_size, states, out, source, u):
    for i in range(out.shape[0] + 5):
        for c in range(out.shape[1]):
            out[i, c] = 0
    return 1
full = PLANS["full"]
plan = Plan("past_out", full.outcomes, full.force_scale, full.period, BATCH_RULE=rule_writes_past_out)
print(sample(T1, "ubu", plan, n_chains=4, n_steps=20, batch_size=1).chain_mean)
""",
    # a target class of one's own (no vectorized lane_grad: the kernel calls datum_grad_add per chain)
    "datum_grad_reads_past_means": """
from integrators.targets import Target
@nb.njit
def prior_grad_add(x, arrays, out):
    for a in range(out.shape[0]):
        out[a] += x[a]
@nb.njit
def datum_grad_reads_past_means(x, i, coef, arrays, out):
    for a in range(out.shape[0]):
        out[a] += coef * (x[a] - arrays[0][i + 5, a])
class Mine(Target):
    prior_grad_add = staticmethod(prior_grad_add)
    datum_grad_add = staticmethod(datum_grad_reads_past_means)
    def __init__(self):
        self.arrays, self.dim, self.n_data = (np.zeros((2, 1)),), 1, 2
print(sample(Mine(), "ubu", "sms", batch_size=1, n_chains=4, n_steps=20).chain_mean)
""",
    # the potential is read by SMS-GHMC's accept/reject and by mode() (the control variate's point)
    "potential_reads_past_means": """
from integrators import RunSpec, sms_ghmc
from integrators.targets import GaussianTarget as G
@nb.njit
def potential_reads_past_means(x, arrays):
    return 0.5 * (x[0] - arrays[0][10, 0]) ** 2
class Mine(G):
    potential = staticmethod(potential_reads_past_means)
target = G.one_d_example()
target.__class__ = Mine
print(sms_ghmc(RunSpec(target, plan="sms", h=0.1, n_steps=4, burn_in=1, n_chains=4, batch_size=1)).acceptance)
""",
    "mode_reads_past_means": """
from integrators.targets import GaussianTarget as G
@nb.njit
def mode_reads_past_means(x, arrays):
    return 0.5 * (x[0] - arrays[0][10, 0]) ** 2
class Mine(G):
    potential = staticmethod(mode_reads_past_means)
target = G.one_d_example()
target.__class__ = Mine
print(target.mode())
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_USER_CODE_CASES))
def test_user_numba_code_out_of_bounds_ends_in_a_python_error_naming_it(name):
    """User Numba code (test functions, a Scheme's step, a plan's BATCH_RULE, a target's gradient) indexing out of
    bounds: a Python exception naming the function and an exit status of 1, never a signal
    (the abort of heap corruption) and never a result printed from garbage."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", _USER_CODE_PRELUDE + _USER_CODE_CASES[name]],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr[-2000:])
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("integrators._user_code.UserCodeError") and f"__main__.{name}" in last, done.stderr[-2000:]
    assert "out of bounds" in last and not done.stdout, (done.stdout, last)


@nb.njit
def _writes_at_index_from_test_data(x, out, test_data):
    out[np.int64(test_data[0][0])] = x[0]


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(n_tests=st.integers(1, 4), index=st.integers(-8, 8))
def test_a_test_function_writing_out_of_bounds_raises_naming_it_and_in_bounds_runs(n_tests, index):
    """The property behind the subprocess tests, in process (a bounds check raises before the
    write): ``out[index]`` with ``out`` of ``n_tests`` values runs iff ``-n_tests <= index < n_tests``
    (Numba wraps negative indices as numpy does), else a UserCodeError naming the function."""
    from integrators._user_code import UserCodeError

    kw = dict(n_chains=3, n_steps=5, batch_size=1, test_functions=_writes_at_index_from_test_data,
              n_test_functions=n_tests, test_data=(np.array([float(index)]),))
    if -n_tests <= index < n_tests:
        res = sample(T1, **kw)
        assert np.all(np.isfinite(res.chain_tests[:, index])), res.chain_tests
    else:
        with pytest.raises(UserCodeError, match="test_functions '.*_writes_at_index_from_test_data'.*out of bounds"):
            sample(T1, **kw)


@nb.njit
def _reads_the_state(x, out, test_data):
    out[0] = x[0]
    out[1] = x[1]


@nb.njit
def _reads_then_writes_the_state(x, out, test_data):
    out[0] = x[0]
    out[1] = x[1]
    x[0] = 100.0  # a test function that writes: it must not move the chain
    x[1] = -x[1]


@pytest.mark.slow  # compiles two kernels (about 25 s each with a cold cache)
def test_a_test_function_that_writes_its_state_leaves_the_chains_unchanged():
    """A test function sees a copy of the state: writing into it changes neither the chains nor
    the values it records, bit for bit against a test function that only reads (same seed)."""
    target = GaussianTarget(means=[[0.5, -1.0], [1.0, 0.2], [-0.3, 0.4]],
                            precisions=[[[2.0, 0.3], [0.3, 1.0]], [[1.5, 0.0], [0.0, 0.7]], [[1.0, -0.2], [-0.2, 1.2]]])
    kw = dict(scheme="ubu", plan="sms", h=0.2, n_chains=6, n_steps=300, burn_in=50, batch_size=2, seed=5,
              keep=3, n_test_functions=2)
    pure = sample(target, test_functions=_reads_the_state, **kw)
    writes = sample(target, test_functions=_reads_then_writes_the_state, **kw)
    assert not np.any(writes.diverged_at >= 0), writes.diverged_at
    np.testing.assert_array_equal(writes.chain_mean, pure.chain_mean)
    np.testing.assert_array_equal(writes.samples, pure.samples)
    np.testing.assert_array_equal(writes.chain_tests, pure.chain_tests)
    np.testing.assert_array_equal(pure.chain_tests, pure.chain_mean)  # what it read was the state itself


@nb.njit(boundscheck=True)
def _checked_helper_writing_past(out, i):
    out[i] = 1.0


@nb.njit
def _calls_a_checked_helper(x, out, test_data):
    out[0] = x[0]
    _checked_helper_writing_past(out, out.shape[0] + 3)


@pytest.mark.slow  # compiles a kernel (about 25 s with a cold cache)
def test_a_helper_compiled_with_boundscheck_ends_in_the_error_naming_the_test_function():
    """The remedy the docs give for helpers (which are not recompiled bounds-checked): a helper
    compiled with ``boundscheck=True`` that writes out of bounds ends in one UserCodeError naming
    the test function that called it."""
    from integrators._user_code import UserCodeError

    with pytest.raises(UserCodeError, match="test_functions '.*_calls_a_checked_helper'.*out of bounds"):
        sample(T1, n_chains=3, n_steps=5, batch_size=1, test_functions=_calls_a_checked_helper, n_test_functions=1)


_NEVER_RETURNS = """
import numba as nb
import numpy as np
from integrators import GaussianTarget, sample

@nb.njit
def spins_when_asked(x, out, test_data):
    out[0] = x[0]
    while test_data[0][0] > 0.0 and out[0] < 1e300:  # never ends when asked: out[0] stops at 2**53
        out[0] = abs(out[0]) + 1.0

kw = dict(n_chains=2, n_steps=5, batch_size=1, test_functions=spins_when_asked, n_test_functions=1, threads=1)
sample(GaussianTarget.one_d_example(), test_data=(np.zeros(1),), **kw)  # compiles the kernel and returns
print("entering", flush=True)
sample(GaussianTarget.one_d_example(), test_data=(np.ones(1),), **kw)
print("returned", flush=True)
"""


@pytest.mark.slow  # compiles a kernel in a subprocess (about 40 s with a cold cache)
def test_user_code_that_never_returns_ignores_ctrl_c_and_ends_on_sigterm_as_documented():
    """What the sampling guide says of compiled user code that never returns: Ctrl-C (SIGINT) is
    not acted on while the kernel runs; SIGTERM ends the process."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    child = subprocess.Popen([sys.executable, "-c", _NEVER_RETURNS], cwd=Path(__file__).resolve().parents[1],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "entering\n", child.stderr.read()[-2000:]
        time.sleep(3)  # into the kernel (the second call compiles nothing)
        child.send_signal(signal.SIGINT)
        time.sleep(5)
        assert child.poll() is None, child.stderr.read()[-2000:]
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == -signal.SIGTERM
        assert child.stdout.read() == ""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@nb.njit
def _test_function_with_a_default(x, out, test_data, scale=2.0):
    out[0] = scale * x[0]


@pytest.mark.slow  # compiles a whole kernel around the user's function: about 12 s with a cold cache
def test_a_user_function_with_an_optional_argument_still_compiles():
    res = sample(T1, n_chains=3, n_steps=50, batch_size=1, test_functions=_test_function_with_a_default,
                 n_test_functions=1)
    np.testing.assert_allclose(res.chain_tests[:, 0], 2.0 * res.chain_mean[:, 0])


def test_only_user_numba_code_is_guarded():
    """The toolkit's own functions (built-in steps, rules, observers) are returned as they are:
    they keep full speed; a user function gets a wrapper, one per (function, role)."""
    from integrators._observers import no_test_functions
    from integrators._user_code import guarded
    from integrators.plans import next_batches

    for name in ("ubu", "baoab", "em", "obabo"):
        assert guarded(SCHEMES[name].step, "step") is SCHEMES[name].step
    assert guarded(next_batches, "rule") is next_batches and guarded(no_test_functions, "t") is no_test_functions
    assert guarded(np.sin, "t") is np.sin  # not a Numba function: left to the validation layer
    wrapped = guarded(_writes_at_index_from_test_data, "test_functions")
    assert wrapped is not _writes_at_index_from_test_data
    assert guarded(_writes_at_index_from_test_data, "test_functions") is wrapped
