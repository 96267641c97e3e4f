"""1-D Wasserstein evaluators against scipy and against each other."""

import numpy as np
import pytest
import scipy.integrate
from hypothesis import given, settings
from hypothesis import strategies as st

from bias._noise_floor import EXACT_BELOW, expected_binned_w1
from bias._streaming_w1 import StreamingW1, w1_with_control
from bias._wasserstein import Normal, scipy_w1, wasserstein_samples, wasserstein_to_distribution
from integrators._observers import histogram_add as kernel_histogram_add


class GenericNormal(Normal):
    """Same law, but not recognised by the closed form: exercises the quadrature path."""


@given(n=st.integers(1, 300), m=st.integers(1, 300), seed=st.integers(0, 2**31), shift=st.floats(-2, 2))
def test_samples_form_matches_scipy(n, m, seed, shift):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n), rng.standard_t(3, size=m) + shift
    assert wasserstein_samples(x, y) == pytest.approx(scipy_w1(x, y), rel=1e-9, abs=1e-12)


@given(n=st.integers(1, 200), seed=st.integers(0, 2**31), p=st.sampled_from([1.0, 2.0, 3.0]))
def test_equal_sizes_sorted_formula(n, seed, p):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n), rng.normal(size=n) * 2
    want = np.mean(np.abs(np.sort(x) - np.sort(y)) ** p) ** (1 / p)
    assert wasserstein_samples(x, y, p) == pytest.approx(want, rel=1e-12)


@pytest.mark.slow
@given(n=st.integers(1, 400), seed=st.integers(0, 2**31), mu=st.floats(-3, 3), sd=st.floats(0.1, 5))
def test_exact_quantile_form_matches_closed_form_and_scipy(n, seed, mu, sd):
    rng = np.random.default_rng(seed)
    x = rng.normal(mu + 0.3, sd * 1.2, size=n)
    closed = wasserstein_to_distribution(x, Normal(mu, sd))
    quad = wasserstein_to_distribution(x, GenericNormal(mu, sd), nodes=16)
    assert closed == pytest.approx(quad, rel=2e-4, abs=1e-6)
    big = Normal(mu, sd).sample(np.random.default_rng(seed + 1), 400_000)
    assert closed == pytest.approx(scipy_w1(x, big), abs=8e-3 * sd + 1e-3)


def test_w2_to_distribution_known_value():
    """W2 between N(0,1) samples placed at exact quantile midpoints and N(1,1) is ~1."""
    x = Normal(0, 1).quantile((np.arange(20_000) + 0.5) / 20_000)
    assert wasserstein_to_distribution(x, GenericNormal(1.0, 1.0), p=2) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.slow
def test_streaming_w1_matches_exact_on_1e7_samples_within_bound():
    law = Normal(-0.88, 0.485)
    rng = np.random.default_rng(0)
    stream = StreamingW1.for_normal(law, bound=1e-5)
    exact_parts = []
    for _ in range(10):  # 10^7 samples in chunks: memory of the stream does not grow
        chunk = law.sample(rng, 1_000_000) * 1.02 + 0.01
        stream.add(chunk)
        exact_parts.append(chunk)
    exact = wasserstein_to_distribution(np.concatenate(exact_parts), law)
    assert stream.count == 10**7
    assert abs(stream.value() - exact) <= stream.bound
    assert stream.bound < 1.1e-5


def test_streaming_tails_are_accounted():
    law = Normal(0.0, 1.0)
    stream = StreamingW1(law, -1.0, 1.0, n_bins=1000)
    x = np.array([-5.0, 0.2, 3.0, 0.5])
    stream.add(x)
    assert stream.tails.tolist() == [1.0, 4.0, 1.0, 2.0]
    assert abs(stream.value() - wasserstein_to_distribution(x, law)) <= stream.bound


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 300), n_bins=st.integers(1, 400),
       lo=st.floats(-3, 0), span=st.floats(0.01, 4), split=st.floats(0, 1))
def test_kernel_histogram_add_counts_every_live_value_once_and_its_tails_exactly(seed, n, n_bins, lo, span, split):
    """The kernel's histogram loop against a plain reference: each live value (``parked < 0``) in
    its bin ``floor((v - lo) n_bins / (hi - lo))``, each one outside ``[lo, hi)`` in the tails with
    its exact excess summed in order; parked values nowhere; and two calls over the halves give the
    very same arrays as one call (the kernel adds a tile's chains step by step)."""
    rng = np.random.default_rng(seed)
    hi = lo + span
    values = rng.normal(lo + span / 2, span, n)
    values[rng.random(n) < 0.1] = lo  # the left edge belongs to the first bin
    values[rng.random(n) < 0.1] = hi  # the right edge to the upper tail
    parked = np.where(rng.random(n) < 0.2, rng.integers(0, 50, n), -1)
    inv_width = n_bins / span
    counts, tails = np.zeros(n_bins), np.zeros(4)
    kernel_histogram_add(values, lo, inv_width, counts, tails, parked)
    live = values[parked < 0]
    top = lo + n_bins / inv_width
    inside = live[(live >= lo) & (live < top)]
    want = np.bincount(np.minimum(((inside - lo) * inv_width).astype(np.int64), n_bins - 1), minlength=n_bins)
    want_tails = [0.0, 0.0, 0.0, 0.0]
    for v in live:
        if v < lo:
            want_tails[0] += 1.0
            want_tails[1] += lo - v
        elif v >= top:
            want_tails[2] += 1.0
            want_tails[3] += v - top
    np.testing.assert_array_equal(counts, want)
    assert tails.tolist() == want_tails
    cut = int(split * n)
    counts2, tails2 = np.zeros(n_bins), np.zeros(4)
    kernel_histogram_add(values[:cut], lo, inv_width, counts2, tails2, parked[:cut])
    kernel_histogram_add(values[cut:], lo, inv_width, counts2, tails2, parked[cut:])
    np.testing.assert_array_equal(counts2, counts)
    np.testing.assert_array_equal(tails2, tails)


def test_bad_inputs():
    with pytest.raises(ValueError, match="non-finite"):
        wasserstein_samples([0.0, np.nan], [1.0])
    with pytest.raises(ValueError, match="p must"):
        wasserstein_samples([0.0], [1.0], p=0.5)
    with pytest.raises(ValueError, match="empty"):
        wasserstein_to_distribution([], Normal(0, 1))
    with pytest.raises(ValueError, match="lo < hi"):
        StreamingW1(Normal(0, 1), 1.0, 0.0)
    with pytest.raises(ValueError, match="non-finite"):
        StreamingW1(Normal(0, 1), -1, 1).add([np.inf])


def exact_w1_normals(a: Normal, b: Normal) -> float:
    """``int |F_a - F_b|`` by adaptive quadrature (reference for the control-variate tests)."""
    lo = min(a.mean - 14 * a.std, b.mean - 14 * b.std)
    hi = max(a.mean + 14 * a.std, b.mean + 14 * b.std)
    return scipy.integrate.quad(lambda t: abs(a.cdf(t) - b.cdf(t)), lo, hi, limit=400, epsabs=1e-12)[0]


@given(mean=st.floats(-1, 1), std=st.floats(0.3, 2.0), seed=st.integers(0, 2**31))
def test_control_identical_to_sampler_gives_the_exact_w1_of_the_control_law(mean, std, seed):
    # F_cv = F_s - F_c + G = G when the two chains are one: no sampling noise is left
    law, control_law = Normal(0.0, 1.0), Normal(mean, std)
    x = control_law.sample(np.random.default_rng(seed), 50)
    sampler = StreamingW1.for_normal(law, bound=1e-4)
    control = StreamingW1.for_normal(law, bound=1e-4)
    sampler.add(x)
    control.add(x)
    value, bound = w1_with_control(sampler, control, control_law)
    assert abs(value - exact_w1_normals(control_law, law)) <= bound + 1e-8


def test_control_variate_is_unbiased_and_removes_most_of_the_noise():
    # the "sampler" stays pathwise close to a control of known law: X = 1.02 (Y - 0.1) + 0.11 + 0.02 Z
    law, control_law = Normal(0.0, 1.0), Normal(0.1, 1.2)
    sampler_law = Normal(0.11, float(np.hypot(1.02 * 1.2, 0.02)))
    exact = exact_w1_normals(sampler_law, law)
    rng = np.random.default_rng(7)
    cv, plain = [], []
    for _ in range(12):
        y = control_law.sample(rng, 20_000)
        x = 1.02 * (y - 0.1) + 0.11 + 0.02 * rng.standard_normal(y.size)
        sampler = StreamingW1.for_normal(law, bound=1e-4)
        control = StreamingW1.for_normal(law, bound=1e-4)
        sampler.add(x)
        control.add(y)
        value, bound = w1_with_control(sampler, control, control_law)
        cv.append(value)
        plain.append(sampler.value())
    se = np.std(cv, ddof=1) / np.sqrt(len(cv))
    assert abs(np.mean(cv) - exact) <= 4 * se + bound
    assert np.std(cv, ddof=1) < 0.1 * np.std(plain, ddof=1)


def test_control_variate_rejects_mismatched_histograms():
    law = Normal(0.0, 1.0)
    a, b = StreamingW1(law, -1, 1, 100), StreamingW1(law, -1, 1, 101)
    a.add([0.0])
    b.add([0.0])
    with pytest.raises(ValueError, match="share lo, hi and n_bins"):
        w1_with_control(a, b, law)
    c = StreamingW1(law, -1, 1, 100)
    c.add([0.0, 0.5])
    with pytest.raises(ValueError, match="same positive sample count"):
        w1_with_control(a, c, law)


@pytest.mark.parametrize(("n", "n_bins", "half_range", "exact_below"), [
    (1, 40, 3.0, EXACT_BELOW),   # one draw, coarse bins, mass outside the range
    (4, 300, 4.0, EXACT_BELOW),
    (30, 60, 2.5, EXACT_BELOW),
    (250, 500, 6.0, EXACT_BELOW),
    (2_000, 120, 3.5, EXACT_BELOW),
    (2_000, 120, 3.5, 20),       # the normal limit on most segments
])
@pytest.mark.slow
def test_noise_floor_matches_simulated_floors_within_their_standard_error(n, n_bins, half_range, exact_below):
    # the exact expectation of the binned plain statistic for n exact draws against the mean of
    # many simulated ones; coarse bins make the binning part of the floor visible
    law = Normal(-0.3, 0.7)
    lo, hi = law.mean - half_range * law.std, law.mean + half_range * law.std
    rng = np.random.default_rng(n * 7919 + n_bins)
    values = []
    for _ in range(2_500):
        stream = StreamingW1(law, lo, hi, n_bins)
        stream.add(law.sample(rng, n))
        values.append(stream.value())
    se = np.std(values, ddof=1) / np.sqrt(len(values))
    exact = expected_binned_w1(law, n, lo, hi, n_bins, exact_below=exact_below)
    assert abs(np.mean(values) - exact) <= 4 * se, (np.mean(values), exact, se)


def test_noise_floor_binning_part_is_resolved_by_the_simulation():
    # the floor with coarse bins differs from the floor with fine bins by many standard errors of
    # the simulation above: a floor that ignored binning would fail that test
    law = Normal(-0.3, 0.7)
    lo, hi = law.mean - 3.5 * law.std, law.mean + 3.5 * law.std
    coarse = expected_binned_w1(law, 2_000, lo, hi, 120)
    fine = expected_binned_w1(law, 2_000, lo, hi, 120_000)
    assert coarse - fine > 0.02 * fine


@settings(max_examples=12, deadline=None)
@given(log_n=st.floats(3.0, 5.3), n_bins=st.integers(20, 3_000), half_range=st.floats(2.0, 12.0),
       std=st.floats(0.2, 3.0))
@pytest.mark.slow
def test_noise_floor_normal_limit_agrees_with_the_exact_binomial_sum(log_n, n_bins, half_range, std):
    # where the normal limit replaces the binomial (n p (1 - p) >= exact_below) it changes the
    # floor by a relative amount of order 1 / exact_below
    law = Normal(0.4, std)
    n = int(10**log_n)
    lo, hi = law.mean - half_range * std, law.mean + half_range * std
    exact = expected_binned_w1(law, n, lo, hi, n_bins, exact_below=float("inf"))
    limit = expected_binned_w1(law, n, lo, hi, n_bins, exact_below=100)
    assert limit == pytest.approx(exact, rel=2e-3)


@pytest.mark.slow
def test_noise_floor_of_one_draw_is_the_closed_form_and_decays_like_one_over_sqrt_n():
    law = Normal(1.0, 2.0)
    lo, hi = law.mean - 12 * law.std, law.mean + 12 * law.std
    # one draw, fine bins: int 2 F (1 - F) dt = 2 std / sqrt(pi)
    assert expected_binned_w1(law, 1, lo, hi, 200_000) == pytest.approx(2 * law.std / np.sqrt(np.pi), rel=1e-6)
    # large n, fine bins: sqrt(2 / (pi n)) int sqrt(F (1 - F)) dt
    t = np.linspace(lo, hi, 400_001)
    cdf = law.cdf(t)
    limit = np.sqrt(2 / (np.pi * 10**8)) * np.trapezoid(np.sqrt(cdf * (1 - cdf)), t)
    assert expected_binned_w1(law, 10**8, lo, hi, 2_000_000) == pytest.approx(limit, rel=2e-3)
    with pytest.raises(ValueError, match="n must be an integer"):
        expected_binned_w1(law, 0, lo, hi, 10)
    with pytest.raises(ValueError, match="lo < hi"):
        expected_binned_w1(law, 5, hi, lo, 10)
