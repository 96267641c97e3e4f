"""Module mode, ensembles and the BNN pipeline refuse bad input by name before stepping: requests
whose buffers cannot fit in memory, non-finite starting values, step and friction whose ratio
underflows, a model that is no nn.Module, a prior callable that does not give one number, dropout
inside an ensemble's vmap; a prior mapping may name frozen parameters (as x_star mappings may); a
localized run whose samples sit on the box's wall or at chance accuracy is flagged, not reported
as an estimate; a divergence names the first non-finite step (integrators.divergence), however
rarely the sampler checks."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from bnn import pipeline  # noqa: E402
from integrators.divergence import NOT_DIVERGED  # noqa: E402
from integrators.torch import Localization, ModuleSampler, SamplerConfig, SamplerDiverged  # noqa: E402
from integrators.torch.ensemble import EnsembleSampler  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("one_torch_thread")]  # tests/conftest.py

N_PARAMS = 3 * 4 + 4 + 4 * 2 + 2


def mlp(seed=0, *layers):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), *layers, nn.Linear(4, 2)).double()


def data(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(12, 3, generator=gen, dtype=torch.float64), torch.randint(0, 2, (12,), generator=gen)


def loss_fn(seed=0):
    X, Y = data(seed)
    return lambda m, idx: F.cross_entropy(m(X[idx]), Y[idx], reduction="sum")


def config(**kw):
    return SamplerConfig(**({"h": 0.1, "gamma": 1.0, "n_data": 12, "batch_size": 4} | kw))


# ------------------------------------------------------------------------------------------ memory

def test_memory_sized_requests_are_refused_by_name_before_allocation():
    with pytest.raises(ValueError, match=r"n_chains=10000000000 .*GiB"):
        EnsembleSampler(mlp(), config(), 10**10)
    with pytest.raises(ValueError, match=r"ModuleSampler .*n_data=10000000000000.*GiB"):
        ModuleSampler(mlp(), config(n_data=10**13, batch_size=100))  # every epoch a permutation of n_data
    with pytest.raises(ValueError, match=r"width=1000 .*GiB"):
        pipeline.RunConfig("digits", "fashion_mnist", width=1000)
    with pytest.raises(ValueError, match=r"width=1e\+300 \(more parameters than torch can size\)"):
        pipeline.RunConfig("digits", "fashion_mnist", width=1e300)
    EnsembleSampler(mlp(), config(), 3)  # ordinary requests pass


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
        ModuleSampler(mlp(), config(), v0=torch.full((N_PARAMS,), float("nan")))
    net = mlp()
    with torch.no_grad():
        net[2].bias[1] = float("inf")
    with pytest.raises(ValueError, match=r"parameter '2\.bias'"):
        ModuleSampler(net, config())
    with pytest.raises(ValueError, match=r"parameter '2\.bias'"):
        EnsembleSampler(net, config(), 2)
    x0 = torch.zeros(2, N_PARAMS, dtype=torch.float64)
    x0[1, 5] = float("nan")
    with pytest.raises(ValueError, match=r"x0 contains non-finite values .*\(1, 5\)"):
        EnsembleSampler(mlp(), config(), 2, x0=x0)
    bad_star = torch.zeros(N_PARAMS, dtype=torch.float64)
    bad_star[0] = float("nan")
    with pytest.raises(ValueError, match="x_star"):
        ModuleSampler(mlp(), config(localization=Localization(rho=1.0, rho_max=1e9, x_star=bad_star)))
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
    sampler = ModuleSampler(mlp(), cfg) if kind == "module" else EnsembleSampler(mlp(), cfg, 2)
    loss = nan_at_call(3)
    with pytest.raises(SamplerDiverged, match=f"diverged at step {true_step}:") as err:
        for _ in range(8):
            sampler.step(loss)
    assert err.value.step == true_step
    assert sampler.k == max(true_step, check_every)  # noticed at the first check after it
    if kind == "ensemble":  # under vmap the NaN reaches both chains at once
        assert err.value.diverged_at == (true_step, true_step)
    else:
        assert err.value.diverged_at is None


def test_an_ensemble_records_each_chain_and_stops_at_the_first_divergence():
    """Chain 1 starts where the loss is NaN (an output beyond 1e6); chain 0 stays finite.  The
    ensemble stops at its check (step 3) naming chain 1 and step 1, and records chain 0 as not
    diverged (it was stopped)."""
    X, Y = data()

    def loss(m, idx):
        out = m(X[idx])
        return F.cross_entropy(out, Y[idx], reduction="sum") * torch.where(out.abs().amax() > 1e6, float("nan"), 1.0)

    x0 = torch.nn.utils.parameters_to_vector(mlp().parameters()).detach().repeat(2, 1)
    x0[1, -1] = 1e7  # the last layer's bias: a finite start (not bad input) whose loss is NaN
    ens = EnsembleSampler(mlp(), config(scheme="ubu", check_every=3), 2, x0=x0)
    with pytest.raises(SamplerDiverged, match="step 1: chain 1's state or force") as err:
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
            ModuleSampler(mlp(), config(prior=bad))
    sampler = ModuleSampler(mlp(), config(prior=lambda name, p: torch.tensor(2.0)))  # a 0-d tensor is a number
    assert float(sampler.prior[0]) == 2.0


def test_prior_mapping_may_name_a_frozen_parameter_which_does_not_move():
    net = mlp()
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
        ModuleSampler(mlp(), config(prior={"nope": 1.0}))


def test_dropout_in_an_ensemble_is_refused_by_name_or_runs_in_eval_mode():
    with pytest.raises(ValueError, match=r"dropout in training mode \('2' \(Dropout\)\)"):
        EnsembleSampler(mlp(0, nn.Dropout(0.5)), config(), 2)
    net = mlp(0, nn.Dropout(0.5))
    net[2].eval()
    EnsembleSampler(net, config(), 2).step(loss_fn())  # evaluation mode: no random numbers
    X, Y = data()
    ens = EnsembleSampler(mlp(), config(), 2)
    with pytest.raises(ValueError, match="random numbers"):  # drawn by the loss itself
        ens.step(lambda m, idx: F.cross_entropy(F.dropout(m(X[idx]), 0.5), Y[idx], reduction="sum"))


# ------------------------------------------------------------------- estimates that are no estimates

def test_absurd_localized_step_puts_the_parameters_on_the_box_not_in_the_posterior():
    loss = loss_fn()
    fractions = {}
    for h in (0.05, 1e6):
        sampler = ModuleSampler(mlp(), config(h=h, localization=Localization(rho=0.5), seed=1))
        for _ in range(20):
            sampler.step(loss)
        assert bool(torch.isfinite(sampler.x).all())  # the bounces keep it finite: no divergence
        fractions[h] = sampler.boundary_fraction()
    assert fractions[0.05] < pipeline.BOUNDARY_WARN < fractions[1e6]
    assert ModuleSampler(mlp(), config()).boundary_fraction() is None  # no box


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
