"""Module mode, ensembles and the BNN pipeline refuse bad input by name before stepping: requests
whose buffers cannot fit in memory, non-finite starting values, step and friction whose ratio
underflows, a model that is no nn.Module, a prior callable that does not give one number, dropout
inside an ensemble's vmap; a prior mapping may name frozen parameters (as x_star mappings may); a
localized run whose samples sit on the box's wall or at chance accuracy is flagged, not reported
as an estimate."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from bnn import pipeline  # noqa: E402
from integrators.torch import Localization, ModuleSampler, SamplerConfig  # noqa: E402
from integrators.torch.ensemble import EnsembleSampler  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

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
