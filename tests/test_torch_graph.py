"""Module mode and the ensembles replayed from static buffers (``SamplerConfig.graph``): off CUDA the
replay is a plain call, so these tests check the graph step's arithmetic and draws against the eager
step's, bit for bit (the same operations on the same values in the same order); and the rule that
picks the number of chains from the memory estimate."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
F = torch.nn.functional

from integrators.plans import PLANS, plan_rule  # noqa: E402
from integrators.torch import CyclicalSchedule, Localization, ModuleSampler, SamplerConfig  # noqa: E402
from integrators.torch._config import AUTO_CHAINS_CPU, chains_that_fit  # noqa: E402
from integrators.torch._ensemble import EnsembleSampler  # noqa: E402
from integrators.torch._graph import StepReplay  # noqa: E402
from integrators.torch.schemes import TORCH_STEPS  # noqa: E402


def _runs_on_torch(plan) -> bool:
    try:
        plan_rule(plan)
    except ValueError:
        return False
    return True


SCHEMES = sorted(TORCH_STEPS)
TORCH_PLANS = sorted(p for p in PLANS if _runs_on_torch(p))
N_DATA = 23  # batches of 5: the last one shorter (two batch shapes, two captured steps)
X = torch.randn(N_DATA, 3, generator=torch.Generator().manual_seed(0))
Y = torch.arange(N_DATA) % 3


def loss_fn(net, idx):
    return F.cross_entropy(net(X[idx]), Y[idx], reduction="sum")


def _net(batch_norm=False):
    torch.manual_seed(1)
    layers = [torch.nn.Linear(3, 4), torch.nn.Tanh()]
    layers += [torch.nn.BatchNorm1d(4, momentum=1.0)] if batch_norm else []
    return torch.nn.Sequential(*layers, torch.nn.Linear(4, 3))


def _config(scheme, plan, graph, **kw):
    return SamplerConfig(h=0.2, gamma=1.5, n_data=N_DATA, batch_size=None if plan_rule(plan).kind == "full" else 5,
                         scheme=scheme, plan=plan, localization=Localization(rho=0.3), graph=graph, seed=7, **kw)


def _module_run(scheme, plan, graph, n_steps=9, **kw):
    sampler = ModuleSampler(_net(), _config(scheme, plan, graph), **kw)
    losses = [sampler.step(loss_fn).loss.clone() for _ in range(n_steps)]
    return sampler, torch.stack(losses)


@pytest.mark.parametrize("plan", TORCH_PLANS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_module_graph_step_gives_the_eager_trajectory_bit_for_bit(scheme, plan):
    eager, eager_losses = _module_run(scheme, plan, False)
    replayed, replayed_losses = _module_run(scheme, plan, True)
    assert eager._replay is None and replayed._replay is not None
    assert torch.equal(eager.x, replayed.x) and torch.equal(eager.v, replayed.v)
    assert torch.equal(eager_losses, replayed_losses)
    assert torch.equal(eager.g, replayed.g)


def test_module_graph_step_takes_explicit_noise_as_the_eager_step_does():
    gen = torch.Generator().manual_seed(3)
    n = sum(p.numel() for p in _net().parameters())
    noise = [(0.1 * torch.randn(2, n, generator=gen), 0.1 * torch.randn(2, n, generator=gen)) for _ in range(6)]
    eager, _ = _module_run("ubu", "sms", False, n_steps=6, noise=noise)
    replayed, _ = _module_run("ubu", "sms", True, n_steps=6, noise=noise)
    assert torch.equal(eager.x, replayed.x) and torch.equal(eager.v, replayed.v)


def test_module_graph_step_records_a_divergence_at_its_step():
    sampler = ModuleSampler(_net(), SamplerConfig(h=0.2, gamma=1.5, n_data=N_DATA, batch_size=5, graph=True,
                                                  check_every=100))
    for _ in range(3):
        sampler.step(loss_fn)
    with torch.no_grad():
        sampler.x[0] = float("nan")
    sampler.step(loss_fn)
    assert int(sampler.diverged_at) == 4


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ensemble_graph_step_gives_the_eager_trajectory_bit_for_bit(scheme):
    runs = []
    for graph in (False, True):
        sampler = EnsembleSampler(_net(batch_norm=True), _config(scheme, "sms", graph), 3)
        losses = []
        for _ in range(7):
            sampler.step(loss_fn)
            losses.append(sampler.last_loss)
        runs.append((sampler.x, sampler.v, torch.stack(losses)))
    for eager, replayed in zip(*runs, strict=True):
        assert torch.equal(eager, replayed)


def test_graph_option_is_validated_and_refused_where_it_cannot_hold():
    with pytest.raises(ValueError, match="graph must be one of"):
        SamplerConfig(h=0.1, gamma=1.0, n_data=10, batch_size=2, graph="yes")
    with pytest.raises(ValueError, match="constant step size"):
        SamplerConfig(h=0.1, gamma=1.0, n_data=10, batch_size=2, graph=True, schedule=CyclicalSchedule(10, 2))
    with pytest.raises(ValueError, match="control variate"):
        SamplerConfig(h=0.1, gamma=1.0, n_data=10, batch_size=2, graph=True, control_variate=True,
                      localization=Localization(rho=0.3))
    # "auto" is off on the CPU and with a schedule
    assert ModuleSampler(_net(), SamplerConfig(h=0.1, gamma=1.0, n_data=10, batch_size=2))._replay is None


def test_step_replay_off_cuda_is_a_plain_call_every_time():
    calls = []
    replay = StepReplay(torch.device("cpu"))
    for _ in range(3):
        replay("key", lambda: calls.append(1))
    assert len(calls) == 3 and replay.captures == 0


@settings(max_examples=200, deadline=None)
@given(free=st.floats(0, 1e12), per_chain=st.floats(1.0, 1e10), cap=st.integers(1, 64),
       share=st.floats(0.05, 1.0))
def test_chains_that_fit_is_the_largest_count_within_the_share_and_the_cap(free, per_chain, cap, share):
    k = chains_that_fit(free, per_chain, cap=cap, share=share)
    assert 1 <= k <= cap
    assert k == 1 or k * per_chain <= share * free
    assert k == cap or (k + 1) * per_chain > share * free * (1 + 1e-12)


def test_chains_that_fit_without_a_memory_figure_takes_the_cap():
    assert chains_that_fit(None, 1e6, cap=5) == 5


def test_ensemble_auto_chains_off_cuda_is_the_stated_default():
    sampler = EnsembleSampler(_net(), _config("ubu", "sms", False), "auto")
    assert sampler.n_chains == AUTO_CHAINS_CPU == sampler.x.shape[0]
    with pytest.raises(ValueError, match="n_chains"):
        EnsembleSampler(_net(), _config("ubu", "sms", False), "many")
