"""The networks of the supplement's listings (Section "Pytorch code for networks").

Every network is ``conv_layer -> fc_layer -> last_layer`` built from one layer specification per
architecture (:data:`ARCHITECTURES`, the single source of truth), with

* Softplus(beta=1) activations, BatchNorm with ``momentum=1.0`` (the statistics of the current
  batch only, so the loss is a well-defined function of the weights and the batch);
* the low-rank MLP: ``BatchNorm1d(flat) -> Linear(flat, r) -> BatchNorm1d(r) -> Linear(r, width)``;
* a width multiplier ``width`` that scales every channel count and hidden width (including the
  low rank), never the input channels or the classes; ``width=1`` is the paper's network.

Parameter counts at the paper's input sizes (a test checks them exactly): Fashion-MNIST 1,265,258
(1 x 28 x 28, 10 classes); Celeb-A 1,612,306 (3 x 64 x 64, 2 classes); chest X-ray 870,882
(1 x 180 x 180, 2 classes, max-pooling with padding 1, so the flattened size is 256 x 7 x 7 =
12,544).

The listing for Fashion-MNIST keeps the header of the Celeb-A listing (``in_channels = 3``,
``num_classes = 2``, ``flattened_size = 16384``); only 1 channel, 10 classes and a flattened size
of 256 x 3 x 3 = 2,304 give the stated 1,265,258, so that is what is built.

The wide CIFAR-10 listing (``cifar10_wide_listing``) gives 73,036,298 parameters, 2,048 short of
the 73,038,346 stated. Its first two convolutional blocks end with ``MaxPool -> BatchNorm2d``; the
third ends at the ``MaxPool``. The missing 2,048 = 2 x 1024 are the affine parameters of a
``BatchNorm2d(1024)`` after the last max-pooling (the pattern of the other blocks), which
``cifar10_wide`` adds. (That listing's final ``BatchNorm1d(1024)`` also lacks ``momentum=1.0``;
both variants here use 1.0 throughout, as the text says every batch normalization did.)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch
from torch import nn

from integrators._validation import int_at_least, positive_float

# Layer codes: ("conv", c) 3x3 convolution, padding 1 | ("act",) Softplus | ("bn",) BatchNorm of the
# current width | ("pool", p) 2x2 max-pooling, stride 2, padding p | ("flat",) | ("lin", n) Linear
# | ("lowrank", r) Linear to the low rank r (scaled like any width).
_FASHION_CONV = (("conv", 32), ("act",), ("bn",), ("conv", 64), ("act",), ("pool", 0), ("bn",),
                 ("conv", 64), ("act",), ("bn",), ("conv", 128), ("act",), ("bn",), ("conv", 128), ("pool", 0),
                 ("bn",), ("conv", 256), ("act",), ("bn",), ("conv", 256), ("act",), ("pool", 0))
_CELEBA_CONV = (("conv", 32), ("act",), ("bn",), ("conv", 64), ("act",), ("pool", 0), ("bn",),
                ("conv", 128), ("act",), ("bn",), ("conv", 128), ("act",), ("pool", 0), ("bn",),
                ("conv", 256), ("act",), ("bn",), ("conv", 256), ("act",), ("pool", 0))
_XRAY_CONV = (("conv", 32), ("act",), ("pool", 1), ("bn",), ("conv", 64), ("act",), ("pool", 1),
              ("bn",), ("conv", 64), ("act",), ("pool", 1), ("bn",), ("conv", 128), ("act",), ("pool", 1),
              ("bn",), ("conv", 256), ("act",), ("pool", 1))


def _wide_block(c: int) -> tuple:
    return (("conv", c), ("act",), ("bn",), ("conv", c), ("act",), ("bn",), ("conv", c), ("act",), ("bn",),
            ("conv", c), ("act",), ("pool", 0))


_CIFAR_LISTING_CONV = (_wide_block(512) + (("bn",),) + _wide_block(768) + (("bn",),)
                       + _wide_block(1024))


@dataclass(frozen=True)
class Architecture:
    """One network of the supplement: its layers, input shape, classes and stated size.

    Attributes
    ----------
    name : str
        The key in :data:`ARCHITECTURES`.
    in_shape : tuple of int
        ``(channels, height, width)`` of the paper's data.
    n_classes : int
        The paper's number of classes.
    conv, fc : tuple
        The layers of ``conv_layer`` and ``fc_layer``, as ``(kind, size)`` tuples.
    stated_parameters : int
        The parameter count the paper states.
    note : str
        How this network relates to the listing, where it differs.
    """

    name: str
    in_shape: tuple[int, int, int]  # (channels, height, width) of the paper's data
    n_classes: int
    conv: tuple
    fc: tuple
    stated_parameters: int
    note: str = ""


ARCHITECTURES = {a.name: a for a in (
    Architecture("fashion_mnist", (1, 28, 28), 10, _FASHION_CONV,
                 (("flat",), ("bn",), ("lowrank", 32), ("bn",), ("lin", 512), ("act",), ("bn",)), 1_265_258),
    Architecture("celeba", (3, 64, 64), 2, _CELEBA_CONV,
                 (("flat",), ("bn",), ("lowrank", 16), ("bn",), ("lin", 4096), ("act",), ("bn",),
                  ("lowrank", 16), ("bn",), ("lin", 1024), ("act",), ("bn",), ("lowrank", 16), ("bn",),
                  ("lin", 512), ("act",), ("bn",)), 1_612_306),
    Architecture("chest_xray", (1, 180, 180), 2, _XRAY_CONV,
                 (("flat",), ("bn",), ("lowrank", 32), ("bn",), ("lin", 512), ("act",), ("bn",)), 870_882),
    Architecture("cifar10_wide", (3, 32, 32), 10, _CIFAR_LISTING_CONV + (("bn",),),
                 (("flat",), ("bn",), ("lowrank", 512), ("bn",), ("lin", 2048), ("act",), ("bn",),
                  ("lowrank", 512), ("act",), ("bn",), ("lin", 1024), ("act",), ("bn",)), 73_038_346,
                 "the listing plus BatchNorm2d(1024) after the last max-pooling: the stated count"),
    Architecture("cifar10_wide_listing", (3, 32, 32), 10, _CIFAR_LISTING_CONV,
                 (("flat",), ("bn",), ("lowrank", 512), ("bn",), ("lin", 2048), ("act",), ("bn",),
                  ("lowrank", 512), ("act",), ("bn",), ("lin", 1024), ("act",), ("bn",)), 73_036_298,
                 "the listing as printed: 2,048 short of the stated 73,038,346"),
)}


def _scaled(n: int, width: float) -> int:
    return max(1, int(round(n * width)))


class PaperCNN(nn.Module):
    """``conv_layer -> fc_layer -> last_layer`` of one :class:`Architecture` at a width multiplier.

    Parameters
    ----------
    arch : Architecture
        The network.
    width : float
        Multiplier of every layer's width (positive).
    in_shape : tuple of int, optional
        ``(channels, height, width)`` of the inputs (default: the paper's).
    n_classes : int, optional
        Number of classes, >= 2 (default: the paper's).

    Raises
    ------
    ValueError
        When ``arch`` is not an :class:`Architecture`, an argument is out of range, or the input
        is too small for the network's poolings.
    """

    def __init__(self, arch: Architecture, *, width: float = 1.0, in_shape: tuple[int, int, int] | None = None,
                 n_classes: int | None = None):
        super().__init__()
        if not isinstance(arch, Architecture):
            raise ValueError(f"arch must be an Architecture (see ARCHITECTURES), got {type(arch).__name__}")
        width, in_shape, n_classes = _checked(width, in_shape, n_classes)
        self.arch, self.width = arch, float(width)
        c, h, w = in_shape or arch.in_shape
        self.in_shape = (c, h, w)
        self.n_classes = n_classes or arch.n_classes
        conv, width_now = [], c
        for op in arch.conv:
            if op[0] == "conv":
                out = _scaled(op[1], width)
                conv.append(nn.Conv2d(width_now, out, kernel_size=3, padding=1))
                width_now = out
            elif op[0] == "act":
                conv.append(nn.Softplus(beta=1.0))
            elif op[0] == "bn":
                conv.append(nn.BatchNorm2d(width_now, momentum=1.0))
            elif op[0] == "pool":
                conv.append(nn.MaxPool2d(kernel_size=2, stride=2, padding=op[1]))
                h, w = (h + 2 * op[1] - 2) // 2 + 1, (w + 2 * op[1] - 2) // 2 + 1
            if h < 1 or w < 1:
                raise ValueError(f"input shape {self.in_shape} is too small for {arch.name}")
        self.flattened_size = width_now * h * w
        fc, width_now = [], self.flattened_size
        for op in arch.fc:
            if op[0] == "flat":
                fc.append(nn.Flatten())
            elif op[0] == "act":
                fc.append(nn.Softplus(beta=1.0))
            elif op[0] == "bn":
                fc.append(nn.BatchNorm1d(width_now, momentum=1.0))
            else:  # "lin" / "lowrank"
                out = _scaled(op[1], width)
                fc.append(nn.Linear(width_now, out))
                width_now = out
        self.conv_layer = nn.Sequential(*conv)
        self.fc_layer = nn.Sequential(*fc)
        self.last_layer = nn.Sequential(nn.Linear(width_now, self.n_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits of a batch.

        Parameters
        ----------
        x : torch.Tensor
            ``(n, *in_shape)`` images.

        Returns
        -------
        torch.Tensor
            ``(n, n_classes)`` logits.
        """
        return self.last_layer(self.fc_layer(self.conv_layer(x)))


def _checked(width, in_shape, n_classes):
    """``width`` a positive finite number, ``in_shape`` None or three integers >= 1, ``n_classes``
    None or an integer >= 2; else ``ValueError`` naming the argument."""
    positive_float("width", width)
    if in_shape is not None:
        if not isinstance(in_shape, tuple | list | torch.Size) and not hasattr(in_shape, "__array__") \
                or len(in_shape) != 3:
            raise ValueError(f"in_shape must be (channels, height, width) of positive sizes, got {in_shape!r}")
        for size in in_shape:
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
                raise ValueError(f"in_shape must be (channels, height, width) of positive integers, got {in_shape!r}")
        in_shape = tuple(int(v) for v in in_shape)
    if n_classes is not None:
        n_classes = int_at_least("n_classes", n_classes, 2)
    return width, in_shape, n_classes


def build(name: str, *, width: float = 1.0, in_shape: tuple[int, int, int] | None = None,
          n_classes: int | None = None) -> PaperCNN:
    """The network ``name`` (a key of :data:`ARCHITECTURES`) at width multiplier ``width``, for
    inputs of ``in_shape`` (default: the paper's) and ``n_classes`` (default: the paper's).

    Parameters
    ----------
    name : str
        A key of :data:`ARCHITECTURES`.
    width : float
        Width multiplier (positive).
    in_shape : tuple of int, optional
        ``(channels, height, width)``.
    n_classes : int, optional
        Number of classes (>= 2).

    Returns
    -------
    PaperCNN
        The network.

    Raises
    ------
    ValueError
        On an unknown ``name`` or an argument out of range.
    """
    if not isinstance(name, str) or name not in ARCHITECTURES:
        raise ValueError(f"unknown network {name!r}; choose from {', '.join(ARCHITECTURES)}")
    _checked(width, in_shape, n_classes)
    return PaperCNN(ARCHITECTURES[name], width=width, in_shape=in_shape, n_classes=n_classes)


def n_parameters(model: nn.Module) -> int:
    """The number of parameters of ``model``.

    Parameters
    ----------
    model : torch.nn.Module
        The network.

    Returns
    -------
    int
        The total count of its parameters' entries.
    """
    return sum(p.numel() for p in model.parameters())


def prior_mask_names(model: nn.Module) -> list[str]:
    """Names of the parameters under the Gaussian prior (precision 1): every weight, no bias, i.e. every name
    not ending in ``bias`` (BatchNorm scales are weights here, as in ``'bias' not in name``)."""
    return [name for name, _ in model.named_parameters() if not name.endswith("bias")]


__all__ = ["ARCHITECTURES", "Architecture", "PaperCNN", "build", "n_parameters"]
