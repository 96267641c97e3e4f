"""Module mode and ensembles: a step over an nn.Module's flat parameters is the chains-mode step on
the flattened parameters; the localized force is autograd's gradient of the localized potential;
the prior falls on the chosen groups only; positions stay in the box; bad input and divergence
are reported; an ensemble's chain is the single-chain sampler's."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from integrators import SCHEMES, MultinomialLogisticTarget, batch_sequence  # noqa: E402
from integrators._brownian import draw_pairs  # noqa: E402
from integrators.torch import (  # noqa: E402
    CyclicalSchedule,
    Localization,
    ModuleSampler,
    SamplerConfig,
    SamplerDiverged,
)
from integrators.torch._chains import sample_given as torch_sample  # noqa: E402  (given noise and batches)
from integrators.torch._ensemble import EnsembleSampler, chain_seed  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("one_torch_thread")]  # tests/conftest.py

N_DATA, N_FEAT, N_CLASS = 9, 2, 3


class Softmax(nn.Module):
    """Multinomial logistic regression with weights laid out as MultinomialLogisticTarget's."""

    def __init__(self, w):
        super().__init__()
        self.weight = nn.Parameter(torch.as_tensor(w, dtype=torch.float64).clone())

    def forward(self, inp):
        return inp @ self.weight


def data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N_DATA, N_FEAT)), rng.integers(0, N_CLASS, N_DATA)


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@settings(max_examples=2)
@given(h=st.floats(0.01, 0.2), gamma=st.floats(0.5, 2.0), bs=st.integers(1, N_DATA), seed=st.integers(0, 999))
def test_module_step_equals_chains_step_on_flat_parameters(scheme, h, gamma, bs, seed):
    feats, labels = data(seed)
    target = MultinomialLogisticTarget(feats, labels, n_classes=N_CLASS, prior_precision=0.7)
    rng = np.random.default_rng(seed)
    x0, v0 = 0.3 * rng.normal(size=(1, target.dim)), rng.normal(size=(1, target.dim))
    n_steps = 12
    dW, J = draw_pairs(rng, gamma, h / 2, (n_steps, 2, target.dim, 1))
    batches = batch_sequence("sms", N_DATA, bs, n_steps + 1, seed=seed)
    batches = batches if SCHEMES[scheme].FSAL else batches[:n_steps]
    chains = torch_sample(target, scheme, "sms", h=h, gamma=gamma, n_chains=1, n_steps=n_steps, batch_size=bs,
                          x0=x0, v0=v0, noise=(dW, J), batches=batches, keep=n_steps)
    X, Y = torch.as_tensor(feats), torch.as_tensor(labels)
    net = Softmax(x0.reshape(N_FEAT, N_CLASS))
    cfg = SamplerConfig(h=h, gamma=gamma, n_data=N_DATA, batch_size=bs, scheme=scheme, plan="sms",
                        prior={"weight": 0.7})
    noise = [(dW[k, :, :, 0], J[k, :, :, 0]) for k in range(n_steps)]
    sampler = ModuleSampler(net, cfg, batches=[torch.as_tensor(b) for b in batches], noise=noise, v0=v0)
    for k in range(n_steps):
        sampler.step(lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum"))
        np.testing.assert_allclose(sampler.x.numpy(), chains.samples[0, k], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(net.weight.detach().numpy().ravel(), chains.x[0], rtol=1e-12, atol=1e-12)


def classification(seed=0, n=12):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g, dtype=torch.float64)
    return X, torch.randint(0, 2, (n,), generator=g)


def test_localized_force_equals_autograd_of_the_localized_potential():
    X, Y = classification()
    net = mlp()
    x_star = torch.cat([p.detach().reshape(-1) for p in net.parameters()]) + 0.05
    rho = 0.4
    cfg = SamplerConfig(h=0.01, gamma=2.5, n_data=12, batch_size=5, plan="rr", prior=1.3,
                        localization=Localization(rho=rho, x_star=x_star))
    sampler = ModuleSampler(net, cfg)
    batch = torch.tensor([0, 3, 7, 8, 11])
    g = sampler.force(lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum"), batch)

    names = [n for n, _ in net.named_parameters()]
    flat = sampler.x.detach().clone().requires_grad_(True)
    shapes = [p.shape for p in net.parameters()]
    parts = torch.split(flat, [math.prod(s) for s in shapes])
    params = {n: t.view(s) for n, t, s in zip(names, parts, shapes, strict=True)}
    out = torch.func.functional_call(net, params, (X[batch],))
    n_m = math.ceil(12 / 5)
    prior = sum(0.5 * 1.3 * (params[n] ** 2).sum() for n in names if n.endswith("weight"))
    potential = n_m * F.cross_entropy(out, Y[batch], reduction="sum") + prior \
        + ((flat - x_star) ** 2).sum() / (2 * rho**2)
    (expected,) = torch.autograd.grad(potential, flat)
    np.testing.assert_allclose(g.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_prior_applies_to_chosen_groups_only():
    net = mlp()
    zero_loss = lambda m, idx: sum((p * 0.0).sum() for p in m.parameters())  # noqa: E731
    for prior, expected in [(2.0, {"0.weight": 2.0, "2.weight": 2.0}), ({"2.bias": 0.5}, {"2.bias": 0.5})]:
        sampler = ModuleSampler(net, SamplerConfig(h=0.1, gamma=1.0, n_data=4, batch_size=2, prior=prior))
        g = sampler.force(zero_loss, torch.tensor([0, 1]))
        for (name, p), off, size in zip(net.named_parameters(), sampler.params.offsets, sampler.params.sizes,
                                        strict=True):
            want = expected.get(name, 0.0) * p.detach().reshape(-1)
            np.testing.assert_allclose(g[off:off + size].numpy(), want.numpy(), rtol=1e-14, atol=0)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_positions_stay_in_the_box(scheme):
    X, Y = classification(1)
    net = mlp(1)
    x_star = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    with pytest.warns(UserWarning, match="rho_max = 0.05 is less than rho = 10"):  # a small box on purpose
        loc = Localization(rho=10.0, rho_max=0.05)
    cfg = SamplerConfig(h=0.5, gamma=0.2, n_data=12, batch_size=4, scheme=scheme, plan="sms",
                        localization=loc, seed=3)
    sampler = ModuleSampler(net, cfg)
    bounced = False
    for _ in range(30):
        v_before = sampler.v.clone()
        sampler.step(lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum"))
        assert float((sampler.x - x_star).abs().max()) <= 0.05
        bounced |= bool((torch.sign(sampler.v) != torch.sign(v_before)).any())
    assert bounced


def test_module_input_validation():
    net = mlp()
    for kwargs, word in [({"h": 0.0}, "h"), ({"h": -1.0}, "h"), ({"gamma": 0.0}, "gamma"),
                         ({"batch_size": 13}, "batch_size"), ({"scheme": "rk4"}, "scheme"),
                         ({"plan": "cyclic"}, "plan"), ({"batch_size": None}, "batch_size")]:
        args = {"h": 0.1, "gamma": 1.0, "n_data": 12, "batch_size": 4} | kwargs
        with pytest.raises(ValueError, match=word):
            SamplerConfig(**args)
    with pytest.raises(ValueError, match="rho"):
        Localization(rho=0.0)
    for rho_max in (-1.0, 0.0, -1e-300, math.inf, math.nan):
        with pytest.raises(ValueError, match="^rho_max must be None or a finite real number > 0"):
            Localization(rho=1.0, rho_max=rho_max)
    mixed = mlp()
    mixed[2].bias = nn.Parameter(torch.zeros(2, dtype=torch.float64, device="meta"))
    with pytest.raises(ValueError, match="mixed devices"):
        ModuleSampler(mixed, SamplerConfig(h=0.1, gamma=1.0, n_data=12, batch_size=4))
    with pytest.raises(ValueError, match="unknown parameters"):
        ModuleSampler(net, SamplerConfig(h=0.1, gamma=1.0, n_data=12, batch_size=4, prior={"nope": 1.0}))


def test_a_box_narrower_than_rho_is_allowed_with_a_warning_naming_both():
    # allowed (the bounces then confine the chain, as test_positions_stay_in_the_box wants), but not the paper's
    # localized posterior (rho_max = 6 rho), so said
    for rho_max in (0.5, 1e-9):
        with pytest.warns(UserWarning, match=f"^Localization: rho_max = {rho_max:g} is less than rho = 1, so the box"):
            assert Localization(rho=1.0, rho_max=rho_max).half_width == rho_max
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rho_max in (None, 1.0, 6.0):  # the default box 6 rho, and one as wide as rho, say nothing
            Localization(rho=1.0, rho_max=rho_max)


def test_non_finite_force_stops_the_sampler_naming_the_step():
    X, Y = classification()
    net = mlp()
    sampler = ModuleSampler(net, SamplerConfig(h=0.1, gamma=1.0, n_data=12, batch_size=4, scheme="ubu"))
    calls = []

    def loss(m, idx):
        calls.append(1)
        value = F.cross_entropy(m(X[idx]), Y[idx], reduction="sum")
        return value * float("nan") if len(calls) == 3 else value

    with pytest.raises(SamplerDiverged, match="step 3") as err:
        for _ in range(5):
            sampler.step(loss)
    assert err.value.step == 3


def test_cyclical_schedule_restarts_each_cycle():
    sched = CyclicalSchedule(n_steps=100, n_cycles=4)
    assert sched.factor(1) == 1.0 and sched.factor(26) == 1.0
    assert sched.factor(13) == pytest.approx(0.5 * (math.cos(math.pi * 12 / 25) + 1))
    X, Y = classification()
    sampler = ModuleSampler(mlp(), SamplerConfig(h=0.1, gamma=1.0, n_data=12, batch_size=4, scheme="em",
                                                 plan="iid", schedule=sched))
    hs = [sampler.step(lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum")).h for _ in range(27)]
    assert hs[0] == 0.1 and hs[25] == 0.1 and all(b < a for a, b in zip(hs[:25], hs[1:25], strict=False))


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["ubu", "baoab"])
def test_ensemble_chain_equals_single_chain_sampler_and_ignores_its_neighbours(scheme):
    X, Y = classification(2)
    loss = lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum")  # noqa: E731
    cfg = SamplerConfig(h=0.05, gamma=1.0, n_data=12, batch_size=5, scheme=scheme, plan="sms", seed=4,
                        localization=Localization(rho=1.0))
    runs = {}
    for k_chains in (2, 3):
        ens = EnsembleSampler(mlp(2), cfg, k_chains)
        for _ in range(6):
            ens.step(loss)
        runs[k_chains] = ens.x.clone()
    np.testing.assert_array_equal(runs[2].numpy(), runs[3][:2].numpy())
    single_net = mlp(2)
    single = ModuleSampler(single_net, SamplerConfig(**{**cfg.__dict__, "seed": chain_seed(4, 1)}))
    for _ in range(6):
        single.step(loss)
    np.testing.assert_allclose(runs[3][1].numpy(), single.x.numpy(), rtol=1e-12, atol=1e-12)
    meta = single.metadata()
    assert meta["device"] == "cpu" and meta["dtype"] == "float64" and meta["scheme"] == scheme


def test_control_variate_force_equals_the_plain_force_on_the_whole_data():
    """With one batch holding every datum, the control-variate force
    P x + (x - x*)/rho^2 + sum_i grad f_i(x*) + (grad L(x) - grad L(x*)) is the plain force
    P x + (x - x*)/rho^2 + grad L(x), away from x* too (the batch term must not vanish)."""
    torch.manual_seed(0)
    x, y = torch.randn(40, 3, dtype=torch.float64), torch.randint(0, 2, (40,))
    net = torch.nn.Linear(3, 2).double()
    x_star = torch.nn.utils.parameters_to_vector(net.parameters()).detach().clone()
    shift = 0.3 * torch.randn(x_star.shape, dtype=torch.float64)

    def force(cv):
        model = torch.nn.Linear(3, 2).double()
        model.load_state_dict(net.state_dict())
        sampler = ModuleSampler(model, SamplerConfig(
            h=1e-3, gamma=1.0, n_data=40, batch_size=40, plan="sms", prior=1.0, control_variate=cv,
            localization=Localization(rho=10.0, rho_max=60.0, x_star=x_star)))
        with torch.no_grad():
            sampler.x.add_(shift)
        return sampler.force(lambda m, idx: F.cross_entropy(m(x[idx]), y[idx], reduction="sum"), torch.arange(40))

    plain, cv = force(False), force(True)
    assert plain.abs().max() > 1.0
    # float64 sums of 40 terms of order 1: rounding near 1e-14; a vanished batch term differs by O(1)
    torch.testing.assert_close(cv, plain, rtol=0.0, atol=1e-11)


# -------------------------------------------------------------------------------------
# Module mode, ensembles and the BNN pipeline refuse bad input by name before stepping: requests
# whose buffers cannot fit in memory, non-finite starting values, step and friction whose ratio
# underflows, a model that is no nn.Module, a prior callable that does not give one number, dropout
# inside an ensemble's vmap; a prior mapping may name frozen parameters (as x_star mappings may); a
# localized run whose samples sit on the box's wall or at chance accuracy is flagged, not reported
# as an estimate; a divergence names the first non-finite step (integrators._divergence), however
# rarely the sampler checks.

from experiments.bnn import _pipeline as pipeline  # noqa: E402
from integrators._divergence import NOT_DIVERGED  # noqa: E402

N_PARAMS = 3 * 4 + 4 + 4 * 2 + 2


def net_with(seed=0, *layers):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), *layers, nn.Linear(4, 2)).double()


def toy_batch(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(12, 3, generator=gen, dtype=torch.float64), torch.randint(0, 2, (12,), generator=gen)


def loss_fn(seed=0):
    X, Y = toy_batch(seed)
    return lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum")


def config(**kw):
    return SamplerConfig(**({"h": 0.1, "gamma": 1.0, "n_data": 12, "batch_size": 4} | kw))


# ------------------------------------------------------------------------------------------ memory

def test_memory_sized_requests_are_refused_by_name_before_allocation():
    with pytest.raises(ValueError, match=r"n_chains=10000000000 .*GiB"):
        EnsembleSampler(net_with(), config(), 10**10)
    with pytest.raises(ValueError, match=r"ModuleSampler .*n_data=10000000000000.*GiB"):
        ModuleSampler(net_with(), config(n_data=10**13, batch_size=100))  # every epoch a permutation of n_data
    with pytest.raises(ValueError, match=r"width=1000 .*GiB"):
        pipeline.RunConfig("digits", "fashion_mnist", width=1000)
    with pytest.raises(ValueError, match=r"width=1e\+300 \(more parameters than torch can size\)"):
        pipeline.RunConfig("digits", "fashion_mnist", width=1e300)
    EnsembleSampler(net_with(), config(), 3)  # ordinary requests pass


def test_run_refuses_buffers_beyond_the_device_memory_before_loading_data(monkeypatch):
    cfg = pipeline.RunConfig("digits", "fashion_mnist", width=0.125, chains=4)

    def load(cfg):
        raise AssertionError("data loaded before the memory was checked")

    monkeypatch.setattr(pipeline, "load", load)
    monkeypatch.setattr(pipeline, "device_memory_bytes", lambda device: 2.0**20, raising=False)  # a 1 MiB device
    with pytest.raises(ValueError, match=r"width=0\.125 .*chains=4 .*on cpu needs about"):
        pipeline.run(cfg, 0)
    n = pipeline.network_parameters("fashion_mnist", 0.125, (1, 8, 8), 10)
    assert n == sum(p.numel() for p in pipeline.models.build("fashion_mnist", width=0.125, in_shape=(1, 8, 8),
                                                              n_classes=10).parameters())
    assert pipeline.run_bytes(cfg, n) > 4 * 20 * 4 * n  # every chain at once holds its sampler's buffers


# -------------------------------------------------------------------------------- non-finite input

def test_non_finite_starting_values_are_bad_input_not_divergence():
    with pytest.raises(ValueError, match="v0"):
        ModuleSampler(net_with(), config(), v0=torch.full((N_PARAMS,), float("nan")))
    net = net_with()
    with torch.no_grad():
        net[2].bias[1] = float("inf")
    with pytest.raises(ValueError, match=r"parameter '2\.bias'"):
        ModuleSampler(net, config())
    with pytest.raises(ValueError, match=r"parameter '2\.bias'"):
        EnsembleSampler(net, config(), 2)
    x0 = torch.zeros(2, N_PARAMS, dtype=torch.float64)
    x0[1, 5] = float("nan")
    with pytest.raises(ValueError, match=r"x0 contains non-finite values .*\(1, 5\)"):
        EnsembleSampler(net_with(), config(), 2, x0=x0)
    bad_star = torch.zeros(N_PARAMS, dtype=torch.float64)
    bad_star[0] = float("nan")
    with pytest.raises(ValueError, match="x_star"):
        ModuleSampler(net_with(), config(localization=Localization(rho=1.0, rho_max=1e9, x_star=bad_star)))
    # x0 given: the model's own (non-finite) values are not used
    EnsembleSampler(net, config(), 2, x0=torch.zeros(2, N_PARAMS, dtype=torch.float64))


@pytest.mark.parametrize("h,gamma", [(1e-300, 1e300), (1e-20, 1e-7)])
def test_step_and_friction_refused_as_the_numba_backend_refuses_them(h, gamma):
    from integrators import GaussianTarget, sample

    with pytest.raises(ValueError, match="gamma=.* is too large for h="):
        sample(GaussianTarget.one_d_example(), scheme="ubu", plan="sms", h=h, gamma=gamma, n_chains=1, n_steps=2,
               burn_in=0, batch_size=1)
    with pytest.raises(ValueError, match="gamma=.* is too large for h="):
        config(h=h, gamma=gamma)
    config(h=1e-12, gamma=1.0)  # the smallest ratio both accept


# ------------------------------------------------------------------------------------- divergence

def nan_at_call(bad_call):
    """A loss whose ``bad_call``-th evaluation (1-based; a force evaluation each) is NaN."""
    calls, loss = [], loss_fn()

    def loss_with_nan(m, idx):
        calls.append(1)
        value = loss(m, idx)
        return value * float("nan") if len(calls) == bad_call else value

    return loss_with_nan


@pytest.mark.slow
@pytest.mark.parametrize("check_every", [1, 4])
@pytest.mark.parametrize("scheme", ["ubu", "baoab"])
@pytest.mark.parametrize("kind", ["module", "ensemble"])
def test_divergence_names_the_true_one_based_step_however_rarely_checked(kind, scheme, check_every):
    """The force's 3rd evaluation is NaN.  UBU evaluates it once inside each step, so step 3's
    result is the first non-finite one; BAOAB (first-same-as-last) evaluates it once before step 1
    and then at the end of each step, so step 2's.  The sampler notices at its next check (step
    ``check_every`` or later) and names that first step, not the step of the check."""
    true_step = 3 if scheme == "ubu" else 2
    cfg = config(scheme=scheme, check_every=check_every)
    sampler = ModuleSampler(net_with(), cfg) if kind == "module" else EnsembleSampler(net_with(), cfg, 2)
    loss = nan_at_call(3)
    with pytest.raises(SamplerDiverged, match=f"diverged at step {true_step}:") as err:
        for _ in range(8):
            sampler.step(loss)
    assert err.value.step == true_step
    if kind == "ensemble":  # under vmap the NaN reaches both chains at once
        assert sampler.k == max(true_step, check_every)  # noticed at the first check after it
        assert err.value.diverged_at == (true_step, true_step)
    else:  # module mode puts the state back at the last passed check: before the diverged step, or the start
        assert sampler.k == (true_step - 1 if check_every == 1 else 0)
        assert bool(torch.isfinite(sampler.x).all()) and bool(torch.isfinite(sampler.v).all())
        assert err.value.diverged_at is None


@pytest.mark.parametrize("kind", ["module", "ensemble"])
def test_an_infinite_loss_with_a_finite_gradient_is_a_divergence_as_a_nan_loss_is(kind):
    """``loss + inf``: the force stays finite, so only the loss itself tells the step went wrong."""
    good = loss_fn()
    cfg = config(scheme="ubu", check_every=1)
    sampler = ModuleSampler(net_with(), cfg) if kind == "module" else EnsembleSampler(net_with(), cfg, 2)
    sampler.step(good)
    with pytest.raises(SamplerDiverged, match="diverged at step 2:"):
        sampler.step(lambda m, idx: good(m, idx) + float("inf"))


# ------------------------------------------------------------------------ a step is a transaction

def raising_at_call(bad_call):
    """A loss whose ``bad_call``-th evaluation raises a RuntimeError."""
    calls, loss = [], loss_fn()

    def loss_that_raises(m, idx):
        calls.append(1)
        if len(calls) == bad_call:
            raise RuntimeError("user loss failed")
        return loss(m, idx)

    return loss_that_raises


def model_state(net, sampler):
    return ([p.detach().clone() for p in net.parameters()], sampler.v.clone(),
            None if sampler.g is None else sampler.g.clone(), sampler.k)


def same_state(a, b):
    params_a, v_a, g_a, k_a = a
    params_b, v_b, g_b, k_b = b
    assert k_a == k_b
    assert all(torch.equal(x, y) for x, y in zip(params_a, params_b, strict=True)) and torch.equal(v_a, v_b)
    assert (g_a is None and g_b is None) or torch.equal(g_a, g_b)


@pytest.mark.parametrize("scheme", ["ubu", "baoab", "obabo"])
@pytest.mark.parametrize("bad_call", [1, 3])
@pytest.mark.parametrize("control_variate", [False, True])
def test_a_raising_loss_leaves_the_parameters_and_velocities_as_before_the_step(scheme, bad_call,
                                                                                control_variate):
    net = net_with()
    extra = {"control_variate": True, "localization": Localization(rho=1.0)} if control_variate else {}
    sampler = ModuleSampler(net, config(scheme=scheme, **extra))
    loss = raising_at_call(bad_call if not control_variate else bad_call + 3)
    before = model_state(net, sampler)
    for _ in range(4):
        before = model_state(net, sampler)
        try:
            sampler.step(loss)
        except RuntimeError as exc:
            assert "user loss failed" in str(exc)
            break
    else:
        raise AssertionError("the loss never raised")
    same_state(before, model_state(net, sampler))
    sampler.step(loss_fn())  # usable afterwards: it steps on from there
    assert sampler.k == before[3] + 1


@pytest.mark.parametrize("scheme", ["ubu", "baoab"])
@pytest.mark.parametrize("check_every", [1, 3])
def test_a_nan_loss_puts_back_the_last_checked_state_and_a_new_sampler_accepts_the_model(scheme, check_every):
    net = net_with()
    sampler = ModuleSampler(net, config(scheme=scheme, check_every=check_every))
    good = loss_fn()
    for _ in range(check_every):
        sampler.step(good)
    checked = model_state(net, sampler)
    with pytest.raises(SamplerDiverged):
        for _ in range(2 * check_every):
            sampler.step(lambda m, idx: good(m, idx) * float("nan"))
    same_state(checked, model_state(net, sampler))
    sampler.step(good)
    assert sampler.k == checked[3] + 1
    ModuleSampler(net, config(scheme=scheme)).step(good)  # the model's parameters are finite: accepted


def test_an_ensemble_records_each_chain_and_stops_at_the_first_divergence():
    """Chain 1 starts where the loss is NaN (an output beyond 1e6); chain 0 stays finite.  The
    ensemble stops at its check (step 3) naming chain 1 and step 1, and records chain 0 as not
    diverged (it was stopped)."""
    X, Y = toy_batch()

    def loss(m, idx):
        out = m(X[idx])
        return F.cross_entropy(out, Y[idx], reduction="sum") * torch.where(out.abs().amax() > 1e6, float("nan"), 1.0)

    x0 = torch.nn.utils.parameters_to_vector(net_with().parameters()).detach().repeat(2, 1)
    x0[1, -1] = 1e7  # the last layer's bias: a finite start (not bad input) whose loss is NaN
    ens = EnsembleSampler(net_with(), config(scheme="ubu", check_every=3), 2, x0=x0)
    with pytest.raises(SamplerDiverged, match="step 1: chain 1's state, force or loss") as err:
        for _ in range(5):
            ens.step(loss)
    assert err.value.diverged_at == (NOT_DIVERGED, 1) and ens.k == 3


# -------------------------------------------------------------------------- model, prior, dropout

def test_model_must_be_a_module():
    for sampler in (lambda m: ModuleSampler(m, config()), lambda m: EnsembleSampler(m, config(), 2)):
        with pytest.raises(ValueError, match="model must be a torch.nn.Module, got NoneType"):
            sampler(None)


def test_prior_callable_must_give_one_number_per_parameter():
    for bad in (lambda name, p: torch.ones(3), lambda name, p: p, lambda name, p: [1.0], lambda name, p: "1"):
        with pytest.raises(ValueError, match=r"prior .*prior\('0\.weight', param\) returned"):
            ModuleSampler(net_with(), config(prior=bad))
    sampler = ModuleSampler(net_with(), config(prior=lambda name, p: torch.tensor(2.0)))  # a 0-d tensor is a number
    assert float(sampler.prior[0]) == 2.0


@pytest.mark.parametrize("prior", [-math.inf, math.inf, math.nan, -1.0, True, "1.0", None, {"0.weight": -2.0},
                                   {"0.weight": math.inf}, {0: 1.0}])
def test_a_bad_prior_is_refused_naming_prior_when_the_config_is_made(prior):
    # not later, when ModuleSampler is built: SamplerConfig is where a precision is checked
    with pytest.raises(ValueError, match="^prior must be a finite real number >= 0 or a dict"):
        config(prior=prior)


def test_a_numeric_prior_is_kept_as_its_number():
    for prior in (0, 2.0, np.float32(0.5), torch.tensor(1.5, dtype=torch.float64)):
        cfg = config(prior=prior)
        assert type(cfg.prior) is float and cfg.prior == float(prior)
        ModuleSampler(net_with(), cfg)  # a 0-d tensor reads as its number, as for every other field


def test_prior_mapping_may_name_a_frozen_parameter_which_does_not_move():
    net = net_with()
    net[0].bias.requires_grad_(False)
    frozen = net[0].bias.detach().clone()
    # as an x_star mapping may (a state_dict names every parameter)
    loc = Localization(rho=1.0, x_star={n: p.detach().clone() for n, p in net.state_dict().items()})
    for sampler in (ModuleSampler(net, config(prior={"0.bias": 3.0, "0.weight": 1.0}, localization=loc)),
                    EnsembleSampler(net, config(prior={"0.bias": 3.0, "0.weight": 1.0}), 2)):
        for _ in range(3):
            sampler.step(loss_fn())
    assert torch.equal(net[0].bias, frozen)
    with pytest.raises(ValueError, match="unknown parameters"):
        ModuleSampler(net_with(), config(prior={"nope": 1.0}))


def test_dropout_in_an_ensemble_is_refused_by_name_or_runs_in_eval_mode():
    with pytest.raises(ValueError, match=r"dropout in training mode \('2' \(Dropout\)\)"):
        EnsembleSampler(net_with(0, nn.Dropout(0.5)), config(), 2)
    net = net_with(0, nn.Dropout(0.5))
    net[2].eval()
    EnsembleSampler(net, config(), 2).step(loss_fn())  # evaluation mode: no random numbers
    X, Y = toy_batch()
    ens = EnsembleSampler(net_with(), config(), 2)
    with pytest.raises(ValueError, match="random numbers"):  # drawn by the loss itself
        ens.step(lambda m, idx: F.cross_entropy(F.dropout(m(X[idx]), 0.5), Y[idx], reduction="sum"))


# ------------------------------------------------------------------- estimates that are no estimates

def test_absurd_localized_step_puts_the_parameters_on_the_box_not_in_the_posterior():
    loss = loss_fn()
    fractions = {}
    for h in (0.05, 1e6):
        sampler = ModuleSampler(net_with(), config(h=h, localization=Localization(rho=0.5), seed=1))
        for _ in range(20):
            sampler.step(loss)
        assert bool(torch.isfinite(sampler.x).all())  # the bounces keep it finite: no divergence
        fractions[h] = sampler.boundary_fraction()
    assert fractions[0.05] < pipeline.BOUNDARY_WARN < fractions[1e6]
    assert ModuleSampler(net_with(), config()).boundary_fraction() is None  # no box


def test_sample_warnings_flag_the_box_and_chance_accuracy():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 400)
    right = np.eye(4)[labels] * 0.9 + 0.025
    chance = rng.dirichlet(np.ones(4), size=400)
    assert pipeline.sample_warnings(right, labels, 0.0) == []
    assert pipeline.sample_warnings(right, labels, None) == []
    (box,) = pipeline.sample_warnings(right, labels, 0.17)
    assert "17.0% of the coordinates sit on the localization box" in box
    (at_chance,) = pipeline.sample_warnings(chance, labels, None)
    assert "at chance level 1/4" in at_chance


def test_pipeline_flags_a_localized_run_at_an_absurd_step():
    cfg = pipeline.RunConfig("digits", "fashion_mnist", width=0.125, n_train=300, n_test=120, batch_size=100,
                             epochs_train=1, epochs_swa=1, epochs_burn=0, epochs_sample=1, h=50.0,
                             samplers=("SMS-UBU",), n_eval_batches=1)
    res = pipeline.run(cfg, 0)
    m = res["methods"]["SMS-UBU"]
    assert m["diverged"] is None and m["boundary_fraction"] > pipeline.BOUNDARY_WARN
    assert any("sit on the localization box" in w for w in m["warnings"])
    assert any(w.startswith("SMS-UBU: ") and "localization box" in w for w in res["warnings"])


def test_a_meta_device_model_and_an_x0_that_requires_grad_are_refused_by_name():
    from integrators import GaussianTarget, sample
    with torch.device("meta"):
        net = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="'meta' device"):
        ModuleSampler(net, config())
    target = GaussianTarget(np.zeros((4, 2)), np.stack([np.eye(2)] * 4))
    with pytest.raises(ValueError, match=r"x0 is a tensor that requires grad; pass its values, x0.detach\(\)"):
        sample(target, "ubu", "sms", h=0.1, gamma=1.0, n_chains=2, n_steps=4, batch_size=2,
               x0=torch.zeros(2, requires_grad=True), seed=0)


def test_a_loss_no_parameter_receives_a_gradient_from_is_refused_naming_the_loss():
    def constant_loss(m, idx):
        return torch.tensor(1.0, dtype=torch.float64, requires_grad=True) * 2
    sampler = ModuleSampler(net_with(), config())
    with pytest.raises(ValueError, match="'constant_loss' returned a loss from which no parameter received a gradient"):
        sampler.step(constant_loss)
    sampler.step(loss_fn())  # a real loss is accepted afterwards


def test_a_complex_loss_is_refused_naming_its_dtype():
    sampler = ModuleSampler(net_with(), config())
    good = loss_fn()
    with pytest.raises(ValueError, match="dtype torch.complex128"):
        sampler.step(lambda m, idx: good(m, idx) * (1 + 1j))


@pytest.mark.parametrize("change, words", [
    (lambda net: setattr(net[0], "weight", nn.Parameter(torch.zeros(4, 3, dtype=torch.float64))),
     r"parameter '0.weight' was replaced after the sampler was built"),
    (lambda net: net.float(), r"parameter '0.weight' is now torch.float32 on cpu, no longer the sampler's "
                              r"torch.float64 buffer"),
    (lambda net: setattr(net[2], "extra", nn.Parameter(torch.zeros(2, dtype=torch.float64))), r"'2.extra' added"),
])
def test_a_model_changed_after_the_sampler_was_built_is_refused_naming_the_parameter(change, words):
    net = net_with()
    sampler = ModuleSampler(net, config())
    sampler.step(loss_fn())
    change(net)
    with pytest.raises(ValueError, match=words):
        sampler.step(loss_fn())


def test_a_loss_raising_at_the_reference_point_leaves_the_parameters_where_they_were():
    """The control variate's gradient visits ``x*``: a loss that raises there puts the parameters back."""
    X, Y = classification()
    net = mlp()
    x_star = torch.cat([p.detach().reshape(-1) for p in net.parameters()]) + 0.05
    cfg = SamplerConfig(h=0.01, gamma=1.0, n_data=12, batch_size=5, control_variate=True,
                        localization=Localization(rho=0.5, x_star=x_star))
    sampler = ModuleSampler(net, cfg)
    calls = []

    def flaky(m, idx):  # the first call is at the current parameters, the second at x*
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("flaky loss")
        return F.cross_entropy(m(X[idx]), Y[idx], reduction="sum")

    before = sampler.x.detach().clone()
    with pytest.raises(RuntimeError, match="flaky loss"):
        sampler.force(flaky, torch.tensor([0, 3, 7, 8, 11]))
    assert torch.equal(sampler.x.detach(), before)


def test_a_loss_fn_that_is_not_a_function_of_model_and_indices_is_refused_naming_loss_fn():
    def one_argument(m):
        return m.weight.sum()
    sampler = ModuleSampler(net_with(), config())
    before = model_state(sampler.model, sampler)
    for bad, words in [(5, "loss_fn must be a function loss_fn\\(model, indices\\).*got 5"),
                       (None, "loss_fn must be a function"),
                       (one_argument, "loss_fn must take 2 positional arguments.*one_argument\\(m\\)"),
                       (lambda m, idx, extra: 0.0, "loss_fn must take 2 positional arguments")]:
        with pytest.raises(ValueError, match=words):
            sampler.step(bad)
        same_state(before, model_state(sampler.model, sampler))  # refused before anything moved
    sampler.step(loss_fn())  # a real loss is accepted afterwards
    ensemble = EnsembleSampler(net_with(), config(), 2)
    with pytest.raises(ValueError, match="loss_fn must be a function"):
        ensemble.step(5)
    with pytest.raises(ValueError, match="loss_fn must take 2 positional arguments"):
        ensemble.step(one_argument)


@pytest.mark.parametrize(("batch", "words"), [
    ([0, -1], r"the explicit batch at step 1 holds the index -1, outside \[0, n_data=12\)"),
    ([0, 12], r"the explicit batch at step 1 holds the index 12, outside \[0, n_data=12\)"),
    ([], r"the explicit batch at step 1 must be one dimension of 1 to batch_size=4 indices, got shape \(0,\)"),
    (list(range(5)), r"the explicit batch at step 1 must be one dimension of 1 to batch_size=4 indices, got shape"),
    ([0.5, 1.0], r"the explicit batch at step 1 must hold integer data indices, got dtype torch.float"),
])
def test_explicit_batches_that_are_not_batches_of_the_data_are_refused_naming_the_step(batch, words):
    """A negative index picked from the end, an empty or longer batch scaled the force wrongly: all silently."""
    batch = torch.tensor(batch, dtype=torch.int64 if all(isinstance(i, int) for i in batch) else None)
    # obabo is first-same-as-last: step 1 reads the priming batch, then its own
    sampler = ModuleSampler(net_with(), config(scheme="obabo"), batches=[torch.tensor([0, 1, 2, 3]), batch])
    with pytest.raises(ValueError, match=words):
        sampler.step(loss_fn())


@pytest.mark.parametrize(("bad", "words"), [
    (lambda good: lambda m, idx: 1.5, "got float"),
    (lambda good: lambda m, idx: good(m, idx).reshape(1).expand(3), r"got a tensor of shape \(3,\)"),
    (lambda good: lambda m, idx: torch.tensor(3), "got a tensor of dtype torch.int64"),
])
def test_the_ensemble_sampler_applies_the_module_samplers_loss_contract(bad, words):
    """A float, a vector or an integer loss gave raw torch.func errors in EnsembleSampler; now ModuleSampler's."""
    loss = bad(loss_fn())
    contract = r"loss_fn\(model, indices\) must return a one-element tensor computed from the model's parameters"
    with pytest.raises(ValueError, match=f"{contract}.*{words}"):
        ModuleSampler(net_with(), config()).step(loss)
    with pytest.raises(ValueError, match=f"{contract}.*{words}"):
        EnsembleSampler(net_with(), config(), 2).step(loss)


def test_a_loss_calling_item_is_refused_by_the_ensemble_sampler_naming_the_contract():
    good = loss_fn()
    with pytest.raises(ValueError, match=r"must return a one-element tensor .* without \.item\(\)"):
        EnsembleSampler(net_with(), config(), 2).step(lambda m, idx: good(m, idx) * float(good(m, idx).item() > 0))


def test_a_nan_loss_at_finite_parameters_is_named_as_the_loss_not_a_parameter():
    """The NaN loss made the parameters NaN in the same step, and the divergence read "a parameter"."""
    good = loss_fn()
    sampler = ModuleSampler(net_with(), config(scheme="ubu"))
    sampler.step(good)
    with pytest.raises(SamplerDiverged, match=r"at step 2: the loss \(nan, at finite parameters\) is not finite"):
        sampler.step(lambda m, idx: good(m, idx) * float("nan"))
