"""The public entry point: input validation, divergence reporting, reproducibility."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrators import GaussianTarget, LogisticTarget, sample

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
    import integrators.chains as chains

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
    import integrators.observers as observers

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
    from integrators.kernel import ALIGN_BYTES, aligned_zeros

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
