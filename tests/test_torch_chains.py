"""Chains mode: stationary moments agree with the exact oracle within Monte Carlo error for every
scheme x plan; a chain's numbers depend only on the seed and its index; the counter-based stream
is the SplitMix64 function, its normals pass moment, Kolmogorov-Smirnov and independence tests
(across chains, counters and the two halves of a Box-Muller pair), and the fused step draws
exactly that stream; the compiled step equals the eager one and is not recompiled for a new step
size; float32 runs and says so; bad input and divergence are reported; Figure 1 dispatches to the
tensor backend."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import family_z

torch = pytest.importorskip("torch")

from integrators import PLANS, SCHEMES, GaussianTarget  # noqa: E402
from integrators.plans import period  # noqa: E402
from integrators.torch._chains import sample_given as sample  # noqa: E402  (given noise, batches, device)
from integrators.torch._rng import (  # noqa: E402
    CounterNormals,
    counters_per_normals,
    mantissa_uniform,
    mix64,
    mix64_reference,
)
from theory_checks.oracle import stationary_moments  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("one_torch_thread")]  # tests/conftest.py


def small_target() -> GaussianTarget:
    means = np.array([[1.0, -0.5], [-1.0, 0.3], [0.2, 1.0]])
    precs = np.array([[[2.0, 0.6], [0.6, 1.0]], [[0.5, -0.2], [-0.2, 1.5]], [[1.0, 0.0], [0.0, 0.4]]])
    return GaussianTarget(means, precs, prior_precision=0.2 * np.eye(2))


@pytest.mark.slow
@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_torch_stationary_moments_match_the_oracle(scheme, plan):
    target, gamma, bs = small_target(), 1.5, 2  # three data, batches of 2 and 1: uneven
    h = 0.12 if scheme != "em" else 0.04
    exact = stationary_moments(target, scheme, plan, h, gamma, batch_size=bs)
    per = period(plan, target.n_data, bs)
    burn = per * math.ceil(12.0 / h / per)
    steps = burn + per * math.ceil(600 / per)
    res = sample(target, scheme, plan, h=h, gamma=gamma, n_chains=512, n_steps=steps, burn_in=burn, batch_size=bs,
                 seed=7, full_moments=True, x0=target.mean)
    z = family_z(len(SCHEMES) * len(PLANS) * 5)
    assert np.all(np.abs(res.mean - exact.mean) < z * res.mean_se), (res.mean, exact.mean, res.mean_se)
    outer = res.chain_outer
    se = outer.std(axis=0, ddof=1) / math.sqrt(outer.shape[0])
    iu = np.triu_indices(2)
    assert np.all(np.abs(outer.mean(axis=0) - exact.second_moment)[iu] < z * se[iu])


def test_a_chain_does_not_depend_on_its_neighbours():
    target = small_target()
    runs = [sample(target, "ubu", "sms", h=0.1, n_chains=n, n_steps=40, batch_size=2, seed=3, keep=40)
            for n in (3, 8)]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples[:3])
    other = sample(target, "ubu", "sms", h=0.1, n_chains=3, n_steps=40, batch_size=2, seed=4, keep=40)
    assert not np.allclose(other.samples, runs[0].samples)


def test_counter_stream_is_splitmix64_and_normal():
    rng = np.random.default_rng(0)
    ints = [int(i) for i in rng.integers(-2**63, 2**63 - 1, 64, dtype=np.int64)] + [0, -1, 2**63 - 1, -2**63]
    got = mix64(torch.tensor(ints, dtype=torch.int64)).tolist()
    assert [g & (2**64 - 1) for g in got] == [mix64_reference(i) for i in ints]
    z = CounterNormals(5, 0, torch.arange(4000), torch.float64).normals(50)
    assert abs(float(z.mean())) < 5 / math.sqrt(z.numel())
    assert abs(float(z.var()) - 1) < 5 * math.sqrt(2 / z.numel())
    assert abs(float((z**4).mean()) - 3) < 5 * math.sqrt(96 / z.numel())


def test_bit_cast_uniforms_are_the_open_interval_grid():
    for n_bits in (32, 52):
        k = torch.tensor([0, 1, 2**n_bits - 2, 2**n_bits - 1])
        expected = [(float(i) + 0.5) * 2.0**-n_bits for i in k.tolist()]
        assert mantissa_uniform(k, n_bits, torch.float64).tolist() == expected
    u32 = mantissa_uniform(torch.tensor([0, 2**32 - 1]), 32, torch.float32)
    assert u32.dtype == torch.float32 and u32.tolist() == [2.0**-24, 1 - 2.0**-24]


def test_quadrant_polynomial_cos_sin_are_within_an_ulp_or_two():
    import mpmath

    from integrators.torch._rng import cos_sin_turns

    quarter = 2**30  # the quadrant edges of the 32-bit angle grid, and random points
    k = [0, 1, 2**32 - 1] + [j * quarter + e for j in (1, 2, 3) for e in (-1, 0, 1)]
    k += [(2 * j + 1) * 2**29 + e for j in range(4) for e in (-1, 0)]  # octant middles: |x| = pi/4
    k += np.random.default_rng(0).integers(0, 2**32, 300).tolist()
    u = (torch.tensor(k, dtype=torch.float64) + 0.5) * 2.0**-32
    cos, sin = cos_sin_turns(u)
    with mpmath.workprec(100):  # (local: mpmath's global precision is shared by every test in the process)
        for ui, c, s in zip(u.tolist(), cos.tolist(), sin.tolist(), strict=True):
            angle = 2 * mpmath.pi * mpmath.mpf(ui)
            assert abs(c - float(mpmath.cos(angle))) <= 2.3e-16 and abs(s - float(mpmath.sin(angle))) <= 2.3e-16, ui
    cos32, sin32 = cos_sin_turns(u.float())
    assert cos32.dtype == torch.float32 and float((cos32.double() - cos).abs().max()) < 4e-7


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_counter_normals_pass_moments_and_kolmogorov_smirnov(dtype):
    from scipy.stats import kstest

    z = CounterNormals(11, 0, torch.arange(2000), dtype).normals(40).double()  # 80,000 normals
    n = z.numel()
    zc = family_z(4, alpha=1e-4)
    assert abs(float(z.mean())) < zc / math.sqrt(n)
    assert abs(float(z.var()) - 1) < zc * math.sqrt(2 / n)
    assert abs(float((z**4).mean()) - 3) < zc * math.sqrt(96 / n)
    assert kstest(z.flatten().numpy(), "norm").pvalue > 1e-4  # level 1e-4


def test_counter_normals_are_independent_across_chains_counters_and_pair_halves():
    n_chains, m = 4000, 16
    z = CounterNormals(3, 0, torch.arange(n_chains), torch.float64).normals(m)  # rows: 8 cos parts, 8 sin parts
    half = m // 2

    def corr(a, b):
        a, b = a.flatten() - a.mean(), b.flatten() - b.mean()
        return float((a * b).sum() / (a.norm() * b.norm())), a.numel()

    later = CounterNormals(3, 0, torch.arange(n_chains), torch.float64)
    later.counter = 10 * counters_per_normals(m)
    pairs = {"neighbouring chains": (z[:, :-1], z[:, 1:]), "consecutive rows": (z[:-1], z[1:]),
             "squares of consecutive rows": (z[:-1] ** 2, z[1:] ** 2),
             "cos and sin of a pair": (z[:half], z[half:]), "their squares": (z[:half] ** 2, z[half:] ** 2),
             "a later counter window": (z, later.normals(m))}
    zc = family_z(len(pairs))
    for what, (a, b) in pairs.items():
        r, n = corr(a, b)
        assert abs(r) < zc / math.sqrt(n), (what, r)


def test_fused_step_draws_the_documented_stream():
    """The step's path noise is ``CounterNormals(seed, PATH_STREAM).normals(4 d)`` per step, the
    initial velocity ``normals(d)`` of the velocity stream: fed back as explicit noise, the same run."""
    from integrators._brownian import pair_cholesky
    from integrators.torch._chains import PATH_STREAM, VELOCITY_STREAM

    target, n, d, steps, h, gamma, seed = small_target(), 5, 2, 30, 0.1, 1.3, 4
    free = sample(target, "ubu", "full", h=h, gamma=gamma, n_chains=n, n_steps=steps, seed=seed, keep=steps)
    path = CounterNormals(seed, PATH_STREAM, torch.arange(n), torch.float64)
    z = torch.stack([path.normals(4 * d).view(4, d, n) for _ in range(steps)]).numpy()  # (steps, 4, d, n)
    l11, l21, l22 = pair_cholesky(gamma, h / 2)
    dW = l11 * z[:, [0, 2]]
    J = l21 * z[:, [0, 2]] + l22 * z[:, [1, 3]]
    v0 = CounterNormals(seed, VELOCITY_STREAM, torch.arange(n), torch.float64).normals(d).T.numpy()
    given = sample(target, "ubu", "full", h=h, gamma=gamma, n_chains=n, n_steps=steps, seed=seed, keep=steps,
                   v0=v0, noise=(dW, J))
    np.testing.assert_allclose(given.samples, free.samples, rtol=1e-13, atol=1e-13)
    assert path.counter == steps * counters_per_normals(4 * d)


@pytest.mark.slow
def test_compiled_step_equals_eager_and_is_not_recompiled_for_a_new_step_size():
    from torch._dynamo.utils import counters

    target = GaussianTarget.one_d_example()
    kwargs = {"n_chains": 16, "n_steps": 24, "burn_in": 8, "batch_size": 1, "seed": 2, "histogram": (-6.0, 5.0, 64)}
    graphs = []
    for h in (0.1, 0.05, 0.025):
        eager = sample(target, "baoab", "sms", h=h, **kwargs)
        traced = sample(target, "baoab", "sms", h=h, compile="eager", **kwargs)  # dynamo's graphs, run eagerly
        graphs.append(counters["stats"]["unique_graphs"])
        np.testing.assert_array_equal(traced.histogram, eager.histogram)
        np.testing.assert_allclose(traced.chain_mean, eager.chain_mean, rtol=1e-12)
        assert traced.meta["compiled"] == "eager"
    assert graphs[1] == graphs[2] == graphs[0]  # the second and third step size reuse the first's graphs
    with pytest.raises(ValueError, match="compile"):
        sample(target, "ubu", "sms", h=0.1, compile=3, **kwargs)


def test_float32_runs_and_records_device_and_dtype():
    target = GaussianTarget.one_d_example()
    res = sample(target, "ubu", "sms", h=0.1, n_chains=256, n_steps=400, burn_in=100, batch_size=1, seed=1,
                 dtype="float32")
    assert res.meta["dtype"] == "float32" and res.meta["device"] == "cpu" and res.meta["backend"] == "torch"
    assert abs(res.mean[0] - target.mean[0]) < 6 * res.mean_se[0]


def test_divergent_chains_are_marked_with_their_step_not_returned_as_numbers():
    target = GaussianTarget.one_d_example()
    res = sample(target, "em", "full", h=0.7, n_chains=8, n_steps=200, batch_size=2, seed=0, divergence_bound=100.0)
    assert res.n_diverged == 8 and res.first_divergence_step > 1
    assert np.all(np.isnan(res.x)) and np.all(np.isfinite(res.chain_mean))
    assert "DIVERGED" in res.summary()


@pytest.mark.parametrize("kwargs,word", [({"h": 0.0}, "h"), ({"gamma": -1.0}, "gamma"),
                                         ({"batch_size": 3}, "batch_size"), ({"device": "tpu9"}, "device"),
                                         ({"dtype": "float16"}, "dtype"), ({"scheme": "rk4"}, "scheme")])
def test_chains_input_validation(kwargs, word):
    args = {"scheme": "ubu", "plan": "sms", "h": 0.1, "n_chains": 2, "n_steps": 3, "batch_size": 1} | kwargs
    with pytest.raises(ValueError, match=word):
        sample(GaussianTarget.one_d_example(), **args)


def test_figure1_point_on_the_torch_backend(monkeypatch):
    from experiments.figure1 import _compute as figure1

    monkeypatch.setitem(figure1.PRESETS, "tiny", {**figure1.PRESETS["tiny"], "samples_per_unit": 2000})
    point = figure1.run_point("ubu", "sms", 2, "tiny", seed=1, backend="torch", device="cpu", control_variate=False)
    assert not point.diverged and 0 < point.w1 < 0.1 and point.n_samples >= 8000
    with pytest.raises(ValueError, match="backend"):
        figure1.run_point("ubu", "sms", 2, "tiny", backend="jax")
    with pytest.raises(ValueError, match="device"):
        figure1.sampler_for("numba", "cuda")


def test_cli_backend_flags(tmp_path):
    from reports._cli import main

    assert main(["run", "claims", "--backend", "torch", "--out", str(tmp_path / "a")]) == 2
    assert main(["run", "figure1", "--device", "cuda", "--out", str(tmp_path / "b")]) == 2


@pytest.mark.parametrize(("cuda_build", "why"), [(None, "CPU-only build"), ("12.8", "no CUDA device or driver")])
def test_cuda_where_it_is_not_available_says_why_and_to_use_the_cpu(monkeypatch, capsys, tmp_path, cuda_build, why):
    from integrators.torch._chains import resolve_device
    from reports._cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", cuda_build)
    with pytest.raises(ValueError, match=f"CUDA is not available here .*{why}.*: use the cpu device") as caught:
        resolve_device("cuda")
    assert "\n" not in str(caught.value) and "--device cpu" in str(caught.value)
    assert main(["run", "figure1", "--backend", "torch", "--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "use the cpu device (--device cpu" in capsys.readouterr().err


@pytest.mark.parametrize("n_data", [2, 3, 12])
def test_plan_shuffles_are_uniform_permutations(n_data):
    from integrators.torch._plans import ChainPlan

    n = 6000
    plan = ChainPlan("rr", n_data, 1, CounterNormals(2, 1, torch.arange(n), torch.float64).uniforms, n, "cpu")
    perm = plan.shuffle(plan.uniforms(n_data))
    assert torch.equal(perm.sort(dim=1).values, torch.arange(n_data).repeat(n, 1))
    first = torch.bincount(perm[:, 0], minlength=n_data).double() / n  # each datum first w.p. 1/N
    p = 1.0 / n_data
    assert torch.all((first - p).abs() < 5 * math.sqrt(p * (1 - p) / n))


@pytest.mark.slow
def test_samples_never_taken_are_nan_on_both_backends():
    """``keep`` beyond the post-burn-in steps: the samples a chain never took are NaN on the torch
    backend as on the Numba one (never zeros that would read as data)."""
    from integrators import sample as numba_sample

    target = GaussianTarget.one_d_example()
    kw = dict(h=0.1, n_chains=3, n_steps=50, burn_in=5, keep=100, batch_size=1, seed=2)
    for res in (sample(target, "ubu", "sms", **kw), numba_sample(target, "ubu", "sms", **kw)):
        taken = ~np.isnan(res.samples[:, :, 0])
        assert taken[:, :45].all() and not taken[:, 45:].any(), res.meta
