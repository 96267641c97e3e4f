"""One Figure-1 point on tensors: the ``sample`` that :func:`bias.figure1.run_point` calls with
``backend="torch"``, bound to a device.

The statistics are the Numba backend's (a histogram of the first coordinate after burn-in for the
streaming W1, divergence with its step); what changes is the number of chains per repeat: a GPU
needs about a million chains in flight to be busy, so the repeats' samples are spread over
:data:`CHAINS_PER_REPEAT` chains (fewer steps per chain; the burn-in in time units is the same).
"""

from __future__ import annotations

import functools

import torch

from integrators.torch.chains import resolve_device
from integrators.torch.chains import sample as torch_sample

# chains per repeat by device type and preset (the Numba presets' counts suit a CPU)
CHAINS_PER_REPEAT = {"cuda": {"tiny": 2**14, "quick": 2**18, "full": 2**20},
                     "cpu": {"tiny": 16, "quick": 128, "full": 2048}}


class Figure1Sampler:
    """``integrators.torch.chains.sample`` on one device in float64, with the figure's chain count."""

    def __init__(self, device):
        self.device = resolve_device(device)

    def __call__(self, target, scheme, plan, **kwargs):
        return torch_sample(target, scheme, plan, device=self.device, dtype="float64", **kwargs)

    def chains_per_repeat(self, preset: str) -> int:
        return CHAINS_PER_REPEAT["cuda" if self.device.type == "cuda" else "cpu"][preset]

    def describe(self) -> dict:
        """Run metadata: backend, device (with the GPU's name) and versions."""
        name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        return {"backend": "torch", "device": str(self.device), "device_name": name, "dtype": "float64",
                "torch": torch.__version__}


@functools.lru_cache(maxsize=4)
def figure1_sampler(device) -> Figure1Sampler:
    return Figure1Sampler("cpu" if device is None else device)
