"""Bayesian neural networks of the paper's Section 5 (Algorithm 4): data, models, metrics,
diagnostics and the Adam -> SWA -> localized SMS-UBU pipeline."""
