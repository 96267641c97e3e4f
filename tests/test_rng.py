"""The kernels' random streams: ziggurat tables against high-precision arithmetic, the block-wide
draws identical to the one-stream algorithm lane by lane, the normal law within standard errors."""

import math

import mpmath
import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from integrators._rng import (
    ZIG_F,
    ZIG_K,
    ZIG_W,
    ZIGGURAT_R,
    ZIGGURAT_V,
    chain_states,
    fill_normals,
    fill_uniforms,
    lane_normal_matrix,
    lane_uniforms,
)


@mpmath.workdps(30)  # (local: mpmath's global precision is shared by every test in the process)
def test_ziggurat_layers_have_equal_area():
    """Every layer i = 1..255 has area v (``x_i (f(x_{i-1}) - f(x_i))``), the base strip plus the
    tail also has area v (mpmath), and the thresholds are the layers' core fractions."""
    edges = ZIG_W * 2.0**52  # x_1 < ... < x_255 = r
    assert edges[255] == ZIGGURAT_R
    for i in range(1, 256):
        area = edges[i] * (ZIG_F[i - 1] - ZIG_F[i])
        assert abs(area - ZIGGURAT_V) < 1e-6 * ZIGGURAT_V, i  # the top layer closes the recursion
        if i >= 2:
            assert abs(area - ZIGGURAT_V) < 1e-12 * ZIGGURAT_V, i
            assert ZIG_K[i] == int(edges[i - 1] / edges[i] * 2.0**52)
    r = mpmath.mpf(ZIGGURAT_R)
    base = r * mpmath.exp(-r * r / 2) + mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc(r / mpmath.sqrt(2))
    assert abs(float(base) - ZIGGURAT_V) < 1e-11 * ZIGGURAT_V


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(n_lanes=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
def test_block_draws_equal_one_stream_per_lane(n_lanes, seed):
    """The block-wide normals (fast pass for all lanes, then the slow path lane by lane) are the
    one-stream ziggurat's numbers in each lane, bit for bit, whatever the number of lanes."""
    rows = chain_states(seed, 3, 0, n_lanes)
    lanes = lane_normal_matrix(rows.T.copy(), 400)  # lane c: its first 400 normals
    for c in range(0, n_lanes, max(1, n_lanes // 7)):
        one = np.empty(400)
        row = rows[c].copy()
        fill_normals(row, one)
        np.testing.assert_array_equal(lanes[c], one)


@pytest.mark.slow
def test_block_draws_cover_the_slow_paths():
    """Enough draws that the wedge and the tail (|z| > r) both occur, still lane-for-lane equal."""
    rows = chain_states(7, 0, 0, 256)
    lanes = lane_normal_matrix(rows.T.copy(), 2000)
    assert np.sum(np.abs(lanes) > ZIGGURAT_R) > 20  # ~2.6e-4 of 512,000 draws lie in the tails
    for c in (0, 1, 255):
        one = np.empty(2000)
        fill_normals(rows[c].copy(), one)
        np.testing.assert_array_equal(lanes[c], one)


@pytest.mark.slow
def test_normal_law_within_standard_errors():
    """4e6 normals: mean, variance and kurtosis, and the probabilities of |z| beyond 1, 2, 3, r
    and 4, each within 4 standard errors of the exact values; Kolmogorov-Smirnov on 1e6."""
    n = 4_000_000
    z = np.empty(n)
    fill_normals(chain_states(11, 0, 0, 1)[0], z)
    assert abs(z.mean()) < 4 / math.sqrt(n)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / n)
    assert abs(np.mean(z**4) - 3) < 4 * math.sqrt(96 / n)  # Var z^4 = 105 - 9
    for t in (1.0, 2.0, 3.0, ZIGGURAT_R, 4.0):
        p = 2 * stats.norm.sf(t)
        assert abs(np.mean(np.abs(z) > t) - p) < 4 * math.sqrt(p * (1 - p) / n), t
    assert stats.kstest(z[:1_000_000], "norm").pvalue > 1e-4


@nb.njit
def _lane_uniform_draws(states, n_draws):
    n = states.shape[1]
    out = np.empty((n, n_draws))
    u = np.empty(n)
    for q in range(n_draws):
        lane_uniforms(states, u)
        out[:, q] = u
    return out


@pytest.mark.slow
def test_uniforms_lane_by_lane_and_uniform():
    rows = chain_states(5, 1, 0, 9)
    lanes = _lane_uniform_draws(rows.T.copy(), 1000)
    for c in range(9):
        one = np.empty(1000)
        fill_uniforms(rows[c].copy(), one)
        np.testing.assert_array_equal(lanes[c], one)
    u = np.empty(1_000_000)
    fill_uniforms(chain_states(5, 1, 0, 1)[0], u)
    assert 0.0 <= u.min() and u.max() < 1.0
    counts = np.histogram(u, bins=100, range=(0, 1))[0]
    assert stats.chisquare(counts).pvalue > 1e-4


def test_chain_states_depend_only_on_seed_kind_and_index():
    a, b = chain_states(3, 1, 0, 40), chain_states(3, 1, 0, 5)
    np.testing.assert_array_equal(a[:5], b)
    np.testing.assert_array_equal(a[17:23], chain_states(3, 1, 17, 6))  # any window of chains
    assert len({tuple(r) for r in a}) == 40
    assert not np.array_equal(chain_states(3, 0, 0, 5), b)  # another kind
    assert not np.array_equal(chain_states(4, 1, 0, 5), b)  # another seed


def test_splitmix64_reference_values():
    """Vigna's splitmix64.c from seed 1234567 (the stream seeding's generator)."""
    from integrators._rng import splitmix64_fill

    out = np.empty(3, dtype=np.uint64)
    splitmix64_fill(np.uint64(1234567), 0, out)
    assert [int(v) for v in out] == [6457827717110365317, 3203168211198807973, 9817491932198370423]
