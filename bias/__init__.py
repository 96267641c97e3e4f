"""Bias estimation: coupled h / h/2 chains, the telescoping estimator, 1-D Wasserstein
evaluators, and the paper's Figure 1 and logistic-regression experiments."""

from bias._coupled import CoupledResult, coupled_run
from bias._metrics import accuracy, ace_classwise, ace_top_label, all_metrics, brier, ece, nll, rps
from bias._streaming_w1 import StreamingW1, w1_with_control
from bias._telescoping import TelescopingResult, telescoping_bias
from bias._wasserstein import Normal, wasserstein_samples, wasserstein_to_distribution

__all__ = ["CoupledResult", "Normal", "StreamingW1", "TelescopingResult", "accuracy", "ace_classwise", "ace_top_label",
           "all_metrics", "brier", "coupled_run", "ece", "nll", "rps", "telescoping_bias", "w1_with_control",
           "wasserstein_samples", "wasserstein_to_distribution"]
