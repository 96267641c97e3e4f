"""bnn._diagnostics: Hessian power iteration against an explicit Hessian, R-hat of traces against ArviZ."""

import copy

import numpy as np
import pytest
import torch

from bnn import _diagnostics as diagnostics
from bnn import models

pytestmark = pytest.mark.torch


def _explicit_hessian(model, x, y):
    """Reverse-over-reverse (double backward), an AD mode independent of the forward-over-reverse
    products under test. (``torch.func.hessian``, vmapped forward-over-reverse, is not symmetric
    through training-mode BatchNorm on torch 2.13, so it cannot referee.)"""
    frozen = torch.func.replace_all_batch_norm_modules_(copy.deepcopy(model)).train()
    f, x0 = diagnostics.potential_fn(frozen, x, y)
    return torch.autograd.functional.hessian(f, x0, vectorize=True), f, x0


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only add synchronisation (badly so on a loaded machine)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_power_iteration_matches_the_explicit_hessian_of_a_tiny_cnn():
    # the paper's chest X-ray network at width 1/128 (126 parameters): conv, Softplus, pools, BatchNorm
    torch.manual_seed(0)
    net = models.build("chest_xray", width=1 / 128, in_shape=(1, 6, 6), n_classes=3).double()
    x, y = torch.rand(10, 1, 6, 6, dtype=torch.float64), torch.randint(0, 3, (10,))
    hess, f, x0 = _explicit_hessian(net, x, y)
    assert torch.allclose(hess, hess.T, atol=1e-9)
    u = torch.randn(x0.numel(), dtype=torch.float64)
    torch.testing.assert_close(torch.func.jvp(torch.func.grad(f), (x0,), (u,))[1], hess @ u, rtol=1e-10, atol=1e-10)
    exact = float(torch.linalg.eigvalsh(hess).abs().max())
    est = diagnostics.hessian_norm(net, x, y, n_iter=3000, tol=1e-13, seed=0)
    assert est.converged
    assert est.value == pytest.approx(exact, rel=1e-6)


def test_power_iteration_on_a_known_operator():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((30, 30)))
    eig = np.linspace(-2.0, 1.0, 30)
    eig[0] = -5.0  # the largest modulus is negative
    a = torch.tensor(q @ np.diag(eig) @ q.T)
    res = diagnostics.power_iteration(lambda u: a @ u, 30, n_iter=5000, tol=1e-14)
    assert res.value == pytest.approx(5.0, rel=1e-10)


@pytest.mark.slow
def test_hessian_norm_leaves_the_model_untouched():
    net = models.build("chest_xray", width=1 / 128, in_shape=(1, 6, 6), n_classes=3)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    diagnostics.hessian_norm(net, torch.rand(8, 1, 6, 6), torch.randint(0, 3, (8,)), n_iter=3)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


@pytest.mark.slow
def test_trace_rhat_agrees_with_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(5)
    traces = 1.0 + 0.1 * rng.standard_normal((4, 30)).cumsum(axis=1) / 5
    ours = diagnostics.trace_rhat(traces)
    ds = az.convert_to_dataset(traces)
    assert ours["rhat"] == pytest.approx(float(az.rhat(ds, method="identity")["x"]), rel=1e-10)
    assert ours["rank_split_rhat"] == pytest.approx(float(az.rhat(ds, method="rank")["x"]), rel=1e-10)


@pytest.mark.parametrize("kwargs,match", [({"dim": 0}, "dim"), ({"dim": 3, "n_iter": 0}, "n_iter"),
                                          ({"dim": 3, "tol": 0.0}, "tol")])
def test_power_iteration_validates(kwargs, match):
    with pytest.raises(ValueError, match=match):
        diagnostics.power_iteration(lambda u: u, **kwargs)


def test_trace_rhat_validates_shape():
    with pytest.raises(ValueError, match="traces"):
        diagnostics.trace_rhat(np.ones((1, 10)))
