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
# # 5. Figure 1 of the paper, rebuilt step by step
#
# After this notebook you will be able to compute the 1-D Wasserstein distance $W_1$ between a
# sampler's output and the exact target, explain its Monte Carlo error and noise floor, use a
# full-gradient control variate on the same Brownian path to remove most of that error, and
# rebuild the paper's Figure 1 (here for the three UBU samplers at a small preset).
#
# Reading time about 10 minutes; running time under a minute.
#
# The paper's Figure 1 plots $W_1(\text{law of the chain}, \pi)$ against $h = 2^{-k}$ for UBU,
# BAOAB and EM, each with the three plans, on the 1-D example, with $10^7 \cdot 2^k$ samples per
# point. The second-order samplers (UBU and BAOAB with `sms` or `rr`) show slope 2, the rest 1.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from bias import Normal, wasserstein_samples, wasserstein_to_distribution
from experiments.figure1 import PRESET_SETTINGS, local_slopes, run_points, target_law
from integrators import GaussianTarget
from tour import check, question

target = GaussianTarget.one_d_example()
law = target_law(target)
print("target law:", law, "; presets:", {k: v["samples_per_unit"] for k, v in PRESET_SETTINGS.items()})

# %% [markdown]
# ## $W_1$ in one dimension
#
# On the line, $W_1(\mu, \nu) = \int |F_\mu(x) - F_\nu(x)|\,dx$, the area between the two
# cumulative distribution functions. For samples against a known law it is exact to compute.
# Even exact draws of the target have $W_1 > 0$: the *noise floor*, which shrinks like
# $N^{-1/2}$. A bias below the floor of its sample size cannot be seen.

# %%
rng = np.random.default_rng(0)
for n in (10**3, 10**4, 10**5):
    exact_draws = rng.normal(law.mean, law.std, n)
    print(f"N = {n:6d}: W1 of exact draws to the target {wasserstein_to_distribution(exact_draws, law):.2e}"
          f"   (N^-1/2 = {n**-0.5:.1e})")
wider = Normal(law.mean, law.std * 1.05)
print("W1 between two samples of 10^5:",
      f"{wasserstein_samples(rng.normal(law.mean, law.std, 10**5), rng.normal(law.mean, law.std, 10**5)):.2e}")
w1_wider = wasserstein_to_distribution(rng.normal(wider.mean, wider.std, 10**5), law)
print(f"W1 of 10^5 draws of a 5% wider normal: {w1_wider:.2e}  (exactly 0.05 sigma sqrt(2/pi) = "
      f"{0.05 * law.std * math.sqrt(2 / math.pi):.2e}, plus noise)")

# %% [markdown]
# ## The control variate
#
# A second-order sampler's bias at $h = 1/32$ is about $10^{-4}$: to see it the plain estimate
# needs an enormous $N$. The trick (`bias._streaming_w1.w1_with_control`): run, on the *same*
# Brownian path and initial velocities, the same scheme with the *full* gradient. Its stationary
# law is exactly Gaussian, with the variance the oracle gives (notebook 1). Then
#
# $$\hat F = F_{\text{sampler}} - F_{\text{control}} + F_{\text{control, exact}}$$
#
# is an unbiased estimate of the sampler's cdf, and its noise is that of the *difference* of two
# chains that share their noise and stay close: far smaller than either chain's own noise. The
# plotted $W_1$ is $\int |\hat F - F_\pi|$.
#
# `run_point(scheme, plan, k, preset)` computes one point of the figure: a few repeats streamed
# into histograms (memory independent of $N$), both estimates, their Monte Carlo errors (spread
# of the repeats) and the noise floor; `run_points(scheme, plans, k, preset)` does several plans
# of one scheme at once, sharing their control.

# %%
points = []
for k in PRESET_SETTINGS["tiny"]["ks"]:   # the three plans at one h share the full-gradient control
    points += run_points("ubu", ("sms", "rr", "iid"), k, preset="tiny", seed=0)
print(f"{'sampler':10s} {'h':>7s} {'N':>8s} {'W1 (control)':>13s} {'+/-':>9s} {'W1 plain':>10s} {'+/-':>9s} "
      f"{'floor':>9s}")
for q in points:
    if q.diverged:
        print(f"{q.scheme} x {q.plan}  h = {q.h:g}: diverged at step {q.first_divergence_step}")
        continue
    print(f"{q.scheme + ' x ' + q.plan:10s} {q.h:7.4f} {q.n_samples:8d} {q.w1:13.3e} {q.mc_error:9.1e} "
          f"{q.w1_plain:10.3e} {q.mc_error_plain:9.1e} {q.noise_floor:9.1e}")

# %% [markdown]
# Compare the two Monte Carlo error columns: at small $h$ the control variate cuts the error of
# the second-order samplers by one to two orders of magnitude, while the plain estimate sits at
# its noise floor. The SG sampler gains less: with batches drawn with replacement its chain
# drifts away from the full-gradient control like $\sqrt h$ (notebook 4).
#
# ## The figure

# %%
slopes = local_slopes(points)
fig, ax = plt.subplots(figsize=(6.5, 4.5))
for plan, colour in (("sms", "C0"), ("rr", "C1"), ("iid", "C2")):
    pts = sorted((q for q in points if q.plan == plan and not q.diverged), key=lambda q: q.h)
    hs, w1 = np.array([q.h for q in pts]), np.array([q.w1 for q in pts])
    ax.errorbar(hs, w1, yerr=[q.mc_error for q in pts], fmt="o-", color=colour, capsize=3,
                label=f"ubu x {plan}: slope {slopes[('ubu', plan)]:.2f} (finest two)")
    ax.plot(hs, [q.noise_floor for q in pts], ":", color=colour, lw=1)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("step size h")
ax.set_ylabel("W1 to the exact target")
ax.set_title("Figure 1, UBU samplers, preset 'tiny' (dotted: plain noise floor)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The whole figure, nine samplers with their CSV and metadata, is one command:
# `sms-langevin run figure1 --preset quick`;
# the `full` preset is the paper's $10^7 \cdot 2^k$ samples per point.
#
# ## Exercises

# %%
for ex in ("5.1", "5.2", "5.3"):
    print(ex, question(ex))

# %%
# replace each answer by yours
check("5.1", 0.1);

# %%
check("5.2", 2);

# %%
check("5.3", 2);
