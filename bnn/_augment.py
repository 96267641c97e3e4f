"""The chest X-ray augmentation of the supplement (rotations, shifts, crops, brightness), applied on
the fly to a batch."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass


@dataclass(frozen=True)
class Augmentation:
    """Random rotations (degrees), shifts (fraction of the side), crops (kept fraction of the side,
    in ``(0, 1]``) and brightness factors ``1 +- brightness``, each drawn uniformly per image: the
    supplement's chest X-ray setting.  ``ValueError`` when a field is not a finite number in its range."""

    max_rotation: float = 10.0
    max_shift: float = 0.1
    min_crop: float = 0.9
    brightness: float = 0.2

    def __post_init__(self):
        for name, ok, wanted in (("max_rotation", lambda v: v >= 0, "a finite number >= 0"),
                                 ("max_shift", lambda v: v >= 0, "a finite number >= 0"),
                                 ("min_crop", lambda v: 0 < v <= 1, "a number in (0, 1]"),
                                 ("brightness", lambda v: 0 <= v <= 1, "a number in [0, 1]")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value)
                                                                                       and ok(value)):
                raise ValueError(f"{name} must be {wanted}, got {value!r}")


def augment(images, generator, aug: Augmentation = Augmentation()):
    """Apply :class:`Augmentation` to a torch batch ``(n, C, H, W)`` in ``[0, 1]``: one affine
    resampling (rotation, shift, crop-and-resize) and a brightness factor, clipped to [0, 1]; same shape."""
    import torch
    import torch.nn.functional as F

    if not isinstance(images, torch.Tensor) or images.ndim != 4:
        raise ValueError(f"images must be a torch tensor (n, C, H, W), got "
                         f"{tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__}")
    if not images.is_floating_point():
        raise ValueError(f"images must be a floating-point tensor with values in [0, 1], got dtype {images.dtype}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if not isinstance(aug, Augmentation):
        raise ValueError(f"aug must be an Augmentation, got {type(aug).__name__}")
    n = images.shape[0]
    kw = {"generator": generator, "device": images.device, "dtype": images.dtype}
    u = lambda: 2 * torch.rand(n, **kw) - 1  # noqa: E731
    angle = u() * math.radians(aug.max_rotation)
    scale = aug.min_crop + (1 - aug.min_crop) * torch.rand(n, **kw)
    shift_x, shift_y = u() * 2 * aug.max_shift, u() * 2 * aug.max_shift
    cos, sin = torch.cos(angle) * scale, torch.sin(angle) * scale
    theta = torch.stack([torch.stack([cos, -sin, shift_x], 1), torch.stack([sin, cos, shift_y], 1)], 1)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    out = F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)
    factor = 1 + aug.brightness * u()
    return (out * factor.view(n, 1, 1, 1)).clamp_(0.0, 1.0)
