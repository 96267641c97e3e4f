"""Bayesian neural networks of the paper's Section 5 (Algorithm 4): the CNNs, training, the
localized SMS-UBU chains, calibration metrics and diagnostics (the experiments built on them are
in :mod:`experiments.bnn`).

The package imports without torch: :func:`run_chains`, which needs it, is imported when first used."""

import importlib

from bnn._config import SAMPLERS, RunConfig
from bnn._metrics import evaluate

_NEED_TORCH = {"run_chains": "bnn._chains"}  # name -> the module defining it


def __getattr__(name):
    if name in _NEED_TORCH:
        return getattr(importlib.import_module(_NEED_TORCH[name]), name)
    raise AttributeError(f"module 'bnn' has no attribute {name!r}")


__all__ = ["RunConfig", "SAMPLERS", "evaluate", "run_chains"]
