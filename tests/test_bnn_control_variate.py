"""The BNN chains' control variate with batch norm: the correction averages to zero over the
batches the sampler draws (bnn._control_variate)."""

import pytest
import torch
import torch.nn.functional as F

from bnn._control_variate import BlockReferenceSampler, block_length
from integrators.torch import Localization, ModuleSampler, SamplerConfig

N, B = 48, 12  # 4 batches per partition


@pytest.fixture
def problem():
    """A batch-norm network at x* and a point x away from it, with its data."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, 5, generator=gen, dtype=torch.float64)
    y = torch.randint(3, (N,), generator=gen)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.BatchNorm1d(8, momentum=1.0), torch.nn.Softplus(),
                              torch.nn.Linear(8, 3)).double()

    def loss_fn(model, idx):
        return F.cross_entropy(model(x[idx]), y[idx], reduction="sum")

    return net, loss_fn


def _sampler(cls, net, *, control_variate, plan="sms"):
    import copy

    model = copy.deepcopy(net)
    cfg = SamplerConfig(h=1e-3, gamma=1.0, n_data=N, batch_size=B, scheme="ubu", plan=plan, seed=3,
                        localization=Localization(rho=0.5), control_variate=control_variate)
    s = cls(model, cfg)
    with torch.no_grad():  # x away from x* (inside the box of 3)
        s.x.add_(0.3 * torch.sin(torch.arange(len(s.x), dtype=s.x.dtype)))
    return s


def _sweep_offsets(cv, plain, loss_fn, n_blocks):
    """Per block: the largest |mean CV force - mean plain force| over the block's batches, and the
    force's scale; both samplers at the same x, over the CV sampler's batches."""
    out = []
    for _ in range(n_blocks):
        batches = [cv.next_batch() for _ in range(block_length(cv.config.plan, N, B))]
        mean_cv = torch.stack([cv.force(loss_fn, b) for b in batches]).mean(0)
        mean_plain = torch.stack([plain.force(loss_fn, b) for b in batches]).mean(0)
        out.append((float((mean_cv - mean_plain).abs().max()), float(mean_plain.abs().max())))
    return out


@pytest.mark.parametrize("plan", ["sms", "rr", "iid"])
def test_correction_averages_to_zero_over_each_block_with_batch_norm(problem, plan):
    net, loss_fn = problem
    cv = _sampler(BlockReferenceSampler, net, control_variate=True, plan=plan)
    plain = _sampler(ModuleSampler, net, control_variate=False, plan=plan)
    offsets = _sweep_offsets(cv, plain, loss_fn, n_blocks=2)
    for offset, scale in offsets:  # two blocks: two partitions for sms and rr
        assert offset <= 1e-12 * scale, (offset, scale)


def test_partitions_of_one_sweep_differ_and_so_do_their_reference_gradients(problem):
    # the construction is needed: with batch norm the sum of batch gradients at x* depends on the partition
    net, loss_fn = problem
    cv = _sampler(BlockReferenceSampler, net, control_variate=True)
    refs = []
    for _ in range(2):
        b = cv.next_batch()
        cv.force(loss_fn, b)
        refs.append(cv.ref_full.clone())
        for _ in range(block_length("sms", N, B) - 1):
            cv.next_batch()
    assert float((refs[0] - refs[1]).abs().max()) > 1e-3 * float(refs[0].abs().max())


def test_contiguous_reference_gradient_of_module_sampler_leaves_an_offset_with_batch_norm(problem):
    # the check above has power: ModuleSampler's reference (contiguous batches, computed once) fails it
    net, loss_fn = problem
    old = _sampler(ModuleSampler, net, control_variate=True)
    plain = _sampler(ModuleSampler, net, control_variate=False)
    for offset, scale in _sweep_offsets(old, plain, loss_fn, n_blocks=2):
        assert offset > 1e-3 * scale, (offset, scale)


def test_without_batch_norm_the_reference_is_the_full_gradient(problem):
    _, loss_fn = problem
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Softplus(), torch.nn.Linear(8, 3)).double()
    cv = _sampler(BlockReferenceSampler, net, control_variate=True)
    old = _sampler(ModuleSampler, net, control_variate=True)
    b = cv.next_batch()
    cv.force(loss_fn, b)
    old.force(loss_fn, b)
    assert torch.allclose(cv.ref_full, old.ref_full, rtol=1e-12, atol=1e-12)


def test_block_sampler_refuses_a_config_without_the_control_variate(problem):
    net, _ = problem
    with pytest.raises(ValueError, match="control_variate must be True"):
        _sampler(BlockReferenceSampler, net, control_variate=False)


def test_bnn_chains_run_the_control_variate_with_the_block_reference(problem):
    from bnn._chains import module_sampler

    net, _ = problem
    cfg = SamplerConfig(h=1e-3, gamma=1.0, n_data=N, batch_size=B, scheme="ubu", plan="sms",
                        localization=Localization(rho=0.5), control_variate=True)
    assert type(module_sampler(net, cfg)) is BlockReferenceSampler
    plain = SamplerConfig(h=1e-3, gamma=1.0, n_data=N, batch_size=B, scheme="ubu", plan="sms")
    assert type(module_sampler(net, plain)) is ModuleSampler
