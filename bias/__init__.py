"""Bias estimation: coupled h / h/2 chains, the telescoping estimator, 1-D Wasserstein
evaluators, and the paper's Figure 1 and logistic-regression experiments."""
