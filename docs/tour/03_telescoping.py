# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3. Measuring bias without knowing the target
#
# After this notebook you will be able to run coupled chains at step sizes $h$ and $h/2$ on one
# Brownian path, explain why their difference is far less noisy than either chain, and estimate
# the bias of a sampler on a target with no closed form (Bayesian logistic regression on real
# data) with the telescoping sum, with standard errors.
#
# Reading time about 10 minutes; running time under a minute (most of it compiling the kernel).
#
# **The problem.** For a Gaussian target the oracle gives the exact bias (notebook 2). For a
# posterior such as logistic regression there is no exact answer to compare with. But the bias
# of a stationary average $E_h f$ is a telescoping sum of differences between *neighbouring* step
# sizes $h_l = h_0 2^{-l}$:
#
# $$E_{h_0} f - E_{h_{L+1}} f = \sum_{l=0}^{L} \left(E_{h_l} f - E_{h_{l+1}} f\right),$$
#
# and for a sampler of order $p$ the finest term, of order $h_{L+1}^p$, is small. Each difference
# is estimated from a pair of chains at $h_l$ and $h_l/2$ driven by the same Brownian path (the
# coarse chain reads the fine chain's path pairs composed exactly, notebook 1) and, for `rr`/`sms`,
# the same batch partitions. The two chains then stay close, and their *difference* has a much
# smaller variance than either average.

# %%
import matplotlib.pyplot as plt
import numpy as np

from bias import coupled_run, telescoping_bias
from experiments.logistic import digits_features, predictive_test_functions
from integrators import MultinomialLogisticTarget, RunSpec
from theory_checks.orders import local_slopes
from tour import check, question

# scikit-learn's digits (shipped inside the package): 8x8 images, 10 classes, reduced by PCA to 8
# features plus an intercept; 400 training points, a Gaussian prior of precision 50 (the paper's)
x_train, y_train, x_test, y_test = digits_features(n_components=8, n_train=400, seed=0)
x_test, y_test = x_test[:60], y_test[:60]
target = MultinomialLogisticTarget(x_train, y_train, prior_precision=50.0)
mode = target.mode()   # the L-BFGS minimizer: start point and control-variate reference
print(f"{target.n_data} data, dimension {target.dim}; test accuracy at the mode "
      f"{np.mean(target.predict_proba(mode, x_test).argmax(axis=1) == y_test):.2f}")

# %% [markdown]
# The statistic, as in the paper: the posterior predictive probability of each test point's
# true class. `experiments.logistic.predictive_test_functions` writes, for a parameter $x$, the mean
# over the test set of $p(y_i \mid x)$ followed by every class probability of every test point.
# The batch size is 100 (4 batches per epoch), with the control variate at the mode (the paper's
# SG1 force: gradients measured relative to the mode, so the minibatch noise vanishes there).

# %%
K = target.n_classes
n_tests = 1 + len(y_test) * K
true_cols = 1 + np.arange(len(y_test)) * K + y_test
common = dict(batch_size=100, test_functions=predictive_test_functions, n_test_functions=n_tests,
              test_data=(x_test, y_test), x0=mode, control_variate=True, x_ref=mode)

pair = coupled_run(RunSpec.from_options(target, "ubu", "sms", h=2.0**-5, n_chains=16, n_steps=1600, burn_in=160,
                                        seed=0, **common))
fine_se, diff_se = pair.se("fine")[true_cols], pair.difference_se[true_cols]
print(f"standard error of E_h/2 p_true, one chain alone: {np.mean(fine_se):.2e} (mean over test points)")
print(f"standard error of the difference E_h/2 - E_h:      {np.mean(diff_se):.2e}  "
      f"({np.mean(fine_se / diff_se):.0f}x smaller)")

# %% [markdown]
# The coupling works because the two chains contract towards each other under the same noise
# (the posterior is strongly log-concave). It needs steps small enough for that: at $h = 1/8$ on
# this posterior the coarse chain is near its stability limit and the gain is gone (try it).
#
# ## The telescoping sum
#
# `telescoping_bias` runs levels $l = 0 \ldots L$; each level is a coupled pair run for a number
# of epochs that doubles with $l$ (the finer pair needs more steps per unit of time), with a
# burn-in discarded and standard errors over chains and time chunks. `TelescopingResult.bias[l]`
# is the estimate of $E_{h_l} f - E_{h_{L+1}} f$. Below, SMS-UBU against SG-UBU (UBU with
# batches drawn with replacement), summarized as the paper does: the mean over test points of
# $|\text{bias}|$ of the probability of the true class.

# %%
runs = {}
for plan in ("sms", "iid"):
    runs[plan] = telescoping_bias(RunSpec.from_options(target, "ubu", plan, h=2.0**-4, n_chains=16, seed=1, **common),
                                  levels=2, base_epochs=60)

fig, ax = plt.subplots(figsize=(6, 4))
for plan, res in runs.items():
    bias = np.mean(np.abs(res.bias[:, true_cols]), axis=1)
    noise = np.mean(res.bias_se[:, true_cols], axis=1)
    ax.errorbar(res.hs, bias, yerr=noise, fmt="o-", capsize=3,
                label=f"ubu x {plan}: local slopes {np.round(local_slopes(res.hs, bias), 2)}")
    print(f"ubu x {plan}: h = {res.hs}, mean |bias| = {bias}, mean standard error = {noise}")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("step size h")
ax.set_ylabel("mean |bias| of p(true class)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Read the plot with its error bars: each point's bias is measured against the finest level,
# and the last level difference is the assumed floor (`res.floor`). With the control variate
# the minibatch noise is small near the mode, so SG-UBU and SMS-UBU are close at these step sizes
# and with this little compute (the paper's first-order gap of SG samplers needs more batches and
# smaller steps); the full experiment (`sms-langevin run logistic`) runs
# longer ladders on more data and reports where the ordering is, and is not, established. The telescoping estimator is
# checked against the exact oracle on Gaussian targets in the test suite (`tests/test_coupled.py`).
#
# The level differences also give the order directly: for a sampler of weak order $p$ the
# difference at $h$ is about $C h^p (1 - 2^{-p})$, so consecutive differences shrink by $2^p$.
# With a few thousand steps per level the ratios below scatter widely around that (compare each
# difference with its standard error, `res.difference_se`): reading an order off them takes
# longer runs, which is what the paper's experiment spends its compute on.

# %%
for plan, res in runs.items():
    d = np.mean(np.abs(res.differences[:, true_cols]), axis=1)
    print(f"ubu x {plan}: mean |level difference| {np.round(d, 6)}, ratios {np.round(d[:-1] / d[1:], 2)}")

# %% [markdown]
# ## Exercises

# %%
for ex in ("3.1", "3.2"):
    print(ex, question(ex))

# %%
# replace each answer by yours
check("3.1", -5.25e-3);

# %%
check("3.2", 2);
