"""The samplers of :mod:`integrators` on tensors (CPU or CUDA, float32 or float64).

* chains mode (``integrators.sample(..., backend=Torch())``, adapter
  :func:`integrators.torch._chains.run_spec`): ``n_chains`` chains of an analytic target
  advance together as a tensor dimension, with the Numba kernel's streaming observers;
* module mode (:class:`ModuleSampler`): one posterior over an
  ``nn.Module``'s parameters in one flat buffer, with localization, bounces, a prior on chosen
  parameter groups, a control variate and the cyclical step-size schedule;
* ensembles (:class:`integrators.torch._ensemble.EnsembleSampler`): several chains of one network at
  once through ``torch.func.functional_call`` and ``vmap``.

Every scheme's update is its ``UPDATE`` (:mod:`integrators.schemes`), applied to tensors by
:mod:`integrators.torch.schemes` (the coefficients and constants come from the same scheme), the path
pair's law from :mod:`integrators._brownian`; what a
divergence is in each mode, and what it records or raises, in :mod:`integrators._divergence`
(:class:`SamplerDiverged`, also :class:`integrators.SamplerDiverged`).
"""

from integrators._divergence import SamplerDiverged
from integrators.torch._module import (
    CyclicalSchedule,
    FlatParameters,
    Localization,
    ModuleSampler,
    SamplerConfig,
    StepInfo,
    weights_prior,
)
from integrators.torch.schemes import TORCH_STEPS

__all__ = ["CyclicalSchedule", "FlatParameters", "Localization", "ModuleSampler", "SamplerConfig",
           "SamplerDiverged", "StepInfo", "TORCH_STEPS", "weights_prior"]
