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
# # 4. Strong order: one Brownian path, many step sizes
#
# After this notebook you will be able to run a sampler at several step sizes on one and the same
# Brownian path, draw the paths on top of each other, measure the pathwise (strong) error
# against a fine reference, and read the strong order off a log-log slope with a bootstrap
# interval; and you will see why stochastic gradients drawn with replacement cost half an order.
#
# Reading time about 10 minutes; running time under a minute.
#
# **Weak vs strong.** Notebook 2 measured the *weak* error: the bias of stationary averages.
# The *strong* error compares paths: run the sampler and the exact dynamics on the same noise
# from the same start, and measure $\sqrt{\mathbb{E}|x_h(T) - x(T)|^2}$ at a fixed time $T$. It
# decays like $h^q$; $q$ is the strong order. UBU has $q = 2$ with full gradients; SMS-UBU keeps
# it at the ends of sweeps (the paper's main theorem); with replacement ($\text{iid}$) the
# gradient noise is a martingale and the order drops to $1/2$.

# %%
import matplotlib.pyplot as plt
import numpy as np

from integrators import GaussianTarget, RunSpec, sample
from theory_checks.orders import strong_order
from tour import check, question

target = GaussianTarget.one_d_example()
gamma, T = 1.0, 4.0
h_fine = 2.0**-7

# %% [markdown]
# ## One path, four step sizes
#
# `sample(..., path_refine=r)` runs the chain at step $h$ on the Brownian path drawn at $h / r$
# (coarsened exactly, as in notebook 1). Keeping $h / r$ fixed and the seed fixed, every step size
# sees the same path. `keep=n_steps` returns every state.

# %%
x0, v0 = np.array([[1.0]]), np.array([[0.0]])
paths = {}
for h in (2.0**-1, 2.0**-2, 2.0**-3, h_fine):
    n_steps = int(round(T / h))
    res = sample(target, "ubu", "full", h=h, gamma=gamma, n_chains=1, n_steps=n_steps, keep=n_steps,
                 seed=7, x0=x0, v0=v0, path_refine=int(round(h / h_fine)))
    paths[h] = np.concatenate([[x0[0, 0]], res.samples[0, :, 0]])

fig, ax = plt.subplots(figsize=(7, 3.5))
for h, xs in paths.items():
    t = h * np.arange(len(xs))
    ax.plot(t, xs, "o-" if h > h_fine else "-", ms=3, lw=1 if h > h_fine else 2,
            label=f"h = 1/{round(1 / h)}" + (" (reference)" if h == h_fine else ""))
ax.set_xlabel("time")
ax.set_ylabel("x")
ax.set_title("UBU on one Brownian path at four step sizes")
ax.legend(fontsize=8)
plt.show()
for h, xs in paths.items():
    print(f"h = 1/{round(1 / h):3d}: x(T) = {xs[-1]:+.6f}, |x(T) - reference| = {abs(xs[-1] - paths[h_fine][-1]):.2e}")

# %% [markdown]
# The coarse paths follow the reference more closely each time $h$ halves, by about $2^2$ for
# UBU. One path is anecdote; `theory_checks.orders.strong_order` averages over many chains (each
# its own path), uses UBU x full at $\min h / 2^3$ as the reference, and fits the slope with a
# percentile bootstrap interval over chains. The horizon is a whole number of sweeps of the plan.

# %%
hs = 2.0 ** -np.arange(2, 6)
fits = {}
for plan in ("full", "sms", "iid"):
    fits[plan] = strong_order(RunSpec.from_options(target, "ubu", plan, gamma=gamma,
                                                   batch_size=None if plan == "full" else 1, n_chains=400, seed=1), hs,
                              sweeps=4, n_boot=200)

fig, ax = plt.subplots(figsize=(6, 4))
for plan, fit in fits.items():
    ax.loglog(fit.hs, fit.errors, "o-", label=f"ubu x {plan}: slope {fit.slope:.2f} "
              f"[{fit.ci[0]:.2f}, {fit.ci[1]:.2f}]")
ax.loglog(hs, 0.5 * hs**2, "k--", lw=1, label="slope 2")
ax.loglog(hs, 0.5 * hs**0.5, "k:", lw=1, label="slope 1/2")
ax.set_xlabel("step size h")
ax.set_ylabel("L2 error at the end (strong)")
ax.legend(fontsize=8)
plt.show()
for plan, fit in fits.items():
    errors = ", ".join(f"{e:.1e}" for e in fit.errors)
    print(f"ubu x {plan:4s}: errors {errors}; local slopes {np.round(fit.local_slopes, 2)}, "
          f"fitted {fit.slope:.2f} (95% interval {fit.ci[0]:.2f} .. {fit.ci[1]:.2f})")

# %% [markdown]
# Why $1/2$ under `iid`: over a unit of time the $1/h$ kicks each carry an independent force
# error of size $O(1)$ times $h$; their sum is a random walk of size $h\sqrt{1/h} = \sqrt h$. The
# same error terms under `sms` sum to zero over each sweep and, the sweep being symmetric, their
# first-order effect on the path cancels too: at the ends of sweeps SMS-UBU tracks the exact
# dynamics to $O(h^2)$.
#
# ## Exercises

# %%
for ex in ("4.1", "4.2"):
    print(ex, question(ex))

# %%
# replace each answer by yours
check("4.1", 1);

# %%
check("4.2", 1);
