"""bnn.models: the supplement's networks, their exact parameter counts, the width multiplier."""

import pytest
import torch

from bnn import models

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("name", ["fashion_mnist", "celeba", "chest_xray"])
def test_parameter_counts_match_the_paper(name):
    net = models.build(name)
    assert models.n_parameters(net) == models.ARCHITECTURES[name].stated_parameters


def test_paper_table_counts_are_the_stated_numbers():
    stated = {n: a.stated_parameters for n, a in models.ARCHITECTURES.items()}
    assert stated["fashion_mnist"] == 1_265_258 and stated["celeba"] == 1_612_306
    assert stated["chest_xray"] == 870_882 and stated["cifar10_wide"] == 73_038_346


def test_cifar10_listing_is_2048_short_and_the_missing_batchnorm_restores_it():
    with torch.device("meta"):
        listing, stated = models.build("cifar10_wide_listing"), models.build("cifar10_wide")
    assert models.n_parameters(listing) == 73_036_298
    assert models.n_parameters(stated) == 73_038_346
    assert models.n_parameters(stated) - models.n_parameters(listing) == 2 * 1024


@pytest.mark.parametrize("name,shape", [("fashion_mnist", (1, 28, 28)), ("chest_xray", (1, 28, 28)),
                                        ("celeba", (3, 64, 64))])
def test_forward_shapes_and_batchnorm_uses_the_current_batch(name, shape):
    net = models.build(name, width=0.125, in_shape=shape)
    x = torch.rand(6, *shape)
    out = net(x)
    assert out.shape == (6, models.ARCHITECTURES[name].n_classes)
    assert all(m.momentum == 1.0 for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm))
    assert all(isinstance(m, torch.nn.Softplus) for m in net.modules()
               if isinstance(m, torch.nn.Softplus | torch.nn.ReLU | torch.nn.Tanh))


def test_width_multiplier_scales_channels_and_hidden_widths():
    full, quarter = models.build("chest_xray", in_shape=(1, 28, 28)), models.build("chest_xray", width=0.25,
                                                                                  in_shape=(1, 28, 28))
    widths = lambda net: [m.out_channels for m in net.modules() if isinstance(m, torch.nn.Conv2d)]  # noqa: E731
    assert widths(quarter) == [w // 4 for w in widths(full)]
    assert models.n_parameters(quarter) < models.n_parameters(full) / 8


def test_prior_covers_weights_not_biases():
    net = models.build("fashion_mnist", width=0.125)
    names = models.prior_mask_names(net)
    assert names and not any(n.endswith("bias") for n in names)
    assert {n for n, _ in net.named_parameters()} - set(names) == {n for n, _ in net.named_parameters()
                                                                   if n.endswith("bias")}


@pytest.mark.parametrize("kwargs,match", [({"name": "mnist"}, "unknown network"),
                                          ({"name": "celeba", "width": 0}, "width"),
                                          ({"name": "celeba", "width": float("nan")}, "width"),
                                          ({"name": "celeba", "in_shape": (3, 4)}, "in_shape"),
                                          ({"name": "celeba", "in_shape": (3, 4, 4)}, "too small"),
                                          ({"name": "celeba", "n_classes": 1}, "n_classes")])
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.build(**kwargs)
