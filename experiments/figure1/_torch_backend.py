"""One Figure-1 point on tensors: the ``sample`` that :func:`experiments.figure1._compute.run_point` calls with
``backend="torch"``, bound to a device.

The statistics are the Numba backend's (a histogram of the first coordinate after burn-in for the
streaming W1, divergence with its step); what changes is the number of chains per repeat
(:data:`CHAINS_PER_REPEAT`).  A repeat costs ``C (B + N / (R C))`` chain-steps for ``C`` chains,
``B = 30 / h`` burn-in steps, ``N`` samples and ``R`` repeats, and each step has a fixed cost (a
call into the compiled step, its launches); so ``C`` is as small as keeps the device busy: at
``full`` on a GPU ``2^18`` chains make the burn-in 75% of a point's chain-steps at ``h = 1/32``
(``2^20`` made it 93%), on a CPU ``2^10 .. 2^14`` chains make a step's fixed cost (tens of small
tensor operations) small next to its arithmetic.

On CUDA the runs of one unit (a scheme at one step size: every repeat of its three plans and of its
full-gradient control) go in one launch of the fused Triton kernel (:mod:`integrators.torch._fused`),
compiled once per scheme (the step size, the plan's kind, the seeds and the counts are arguments); where
it cannot run, the compiled tensor step (:func:`integrators.torch._chains.compiled_step`, one graph per
scheme and plan kind).  On a CPU the
tensor step runs eagerly by default: compiling the figure's graphs costs about as much as running its
small presets.
"""

from __future__ import annotations

import functools

from integrators._api import sample
from integrators._backends import Torch
from integrators._spec import RunSpec
from integrators.torch._chains import resolve_device

# chains per repeat by device type and preset (the Numba presets' counts suit a CPU)
CHAINS_PER_REPEAT = {"cuda": {"tiny": 2**14, "quick": 2**16, "full": 2**18},
                     "cpu": {"tiny": 2**10, "quick": 2**12, "full": 2**14}}


class Figure1Sampler:
    """:func:`integrators.sample` on the torch backend, one device in float64, with the figure's chain
    count; ``compile`` (default: on CUDA only) runs the compiled step."""

    def __init__(self, device, *, compile: bool | None = None):
        self.device = resolve_device(device)
        self.compile = self.device.type == "cuda" if compile is None else bool(compile)

    def __call__(self, target, scheme, plan, **kwargs):
        return sample(target, scheme, plan, backend=Torch(self.device, "float64", self.compile), **kwargs)

    def run_all(self, target, runs) -> list:
        """``sample(target, scheme, plan, **options)`` for each ``(scheme, plan, options)`` of ``runs`` on
        this device, as one :meth:`integrators._backends.Torch.run` (one launch of the fused kernel on cuda)."""
        backend = Torch(self.device, "float64", self.compile)
        return backend.run([RunSpec.from_options(target, scheme, plan, batch_size=None if plan == "full" else 1,
                                                 backend=backend, **options) for scheme, plan, options in runs])

    def chains_per_repeat(self, preset: str) -> int:
        """The chains of one repeat at ``preset`` on this device type (:data:`CHAINS_PER_REPEAT`)."""
        return CHAINS_PER_REPEAT["cuda" if self.device.type == "cuda" else "cpu"][preset]


@functools.lru_cache(maxsize=4)
def figure1_sampler(device) -> Figure1Sampler:
    """The (cached) :class:`Figure1Sampler` of ``device``."""
    return Figure1Sampler("cpu" if device is None else device)
