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
# # 1. Kinetic Langevin and its splittings
#
# After this notebook you will be able to write one step of Euler-Maruyama (EM), BAOAB and UBU
# from the exact Ornstein-Uhlenbeck (OU) flow and a kick, drive all three with one Brownian path,
# and use the exact oracle to predict the stationary variance of each scheme at any step size
# (and see why BAOAB's position marginal is exact on Gaussian targets).
#
# Reading time about 10 minutes; running time well under a minute.
#
# **The dynamics.** With potential $f$, friction $\gamma$ and unit mass,
#
# $$dX = V\,dt, \qquad dV = -\nabla f(X)\,dt - \gamma V\,dt + \sqrt{2\gamma}\,dW .$$
#
# Its stationary law has density proportional to $e^{-f(x) - |v|^2/2}$: the $x$-marginal is the
# target $\pi \propto e^{-f}$. We use the paper's one-dimensional example: two data terms
# $f(x) = \sum_i (x - x_i)^2 / (2\sigma_i^2)$ with $x_i = \mp 1$, $\sigma_i = 0.5, 2$, so the
# target is Gaussian and every number below can be checked exactly.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from integrators import SCHEMES, BrownianPath, GaussianTarget, coarsen, pair_covariance, sample
from integrators.schemes import ubu as ubu_module
from theory_checks.oracle import UnstableStepError, stationary_moments
from tour import check, question

target = GaussianTarget.one_d_example()
mean, var = float(target.mean[0]), float(target.covariance[0, 0])
gamma = 1.0
print(f"target: N({mean:.4f}, {var:.4f}); schemes in the toolkit: {sorted(SCHEMES)}")


def grad_f(x):
    """The full gradient of the 1-D example: (x - mean) / var."""
    return (x - mean) / var


# %% [markdown]
# ## The exact OU flow and the Brownian pair $(dW, J)$
#
# Without the force, the dynamics is linear and can be solved exactly over any interval $\tau$.
# All the noise it needs is the pair $dW = \int dW_s$ and $J = \int e^{-\gamma(t_{end} - s)} dW_s$:
#
# $$v' = e^{-\gamma\tau} v + \sqrt{2\gamma}\,J, \qquad
#   x' = x + \frac{1 - e^{-\gamma\tau}}{\gamma} v + \frac{\sqrt{2\gamma}}{\gamma}(dW - J).$$
#
# Two consecutive intervals compose exactly: $dW = dW_1 + dW_2$, $J = e^{-\gamma\tau}J_1 + J_2$
# (`coarsen`). So one path drawn finely can drive any coarser step *exactly*: below, the OU flow
# over 64 fine intervals, and the same flow taken in 8 coarse steps on the coarsened pairs. The
# coarse steps land on the fine path, up to rounding.

# %%
def ou_flow(x, v, dW, J, tau):
    decay = math.exp(-gamma * tau)
    x_new = x + (-math.expm1(-gamma * tau) / gamma) * v + math.sqrt(2 * gamma) / gamma * (dW - J)
    return x_new, decay * v + math.sqrt(2 * gamma) * J


tau, n_fine, levels = 1 / 16, 64, 3
path = BrownianPath(gamma, tau, n_fine, shape=(), seed=3)
fine = [(0.0, 1.0)]
for dW, J in zip(*path.pairs(0), strict=True):
    fine.append(ou_flow(*fine[-1], dW, J, tau))
coarse = [(0.0, 1.0)]
for dW, J in zip(*path.pairs(levels), strict=True):
    coarse.append(ou_flow(*coarse[-1], dW, J, tau * 2**levels))
fine, coarse = np.array(fine), np.array(coarse)
print("largest gap between coarse steps and the fine path:",
      np.abs(coarse - fine[:: 2**levels]).max())

fig, ax = plt.subplots(1, 2, figsize=(9, 3))
t_fine, t_coarse = tau * np.arange(n_fine + 1), tau * 2**levels * np.arange(len(coarse))
for k, name in enumerate(("position x", "velocity v")):
    ax[k].plot(t_fine, fine[:, k], lw=1, label="64 fine steps")
    ax[k].plot(t_coarse, coarse[:, k], "o", label="8 coarse steps, same path")
    ax[k].set_xlabel("time")
    ax[k].set_title(name)
ax[0].legend()
plt.tight_layout()
plt.show()
print("covariance of (dW, J) over tau = 1/2:\n", pair_covariance(gamma, 0.5))

# %% [markdown]
# ## Three schemes from two pieces
#
# A scheme alternates the exact OU flow (or a cruder stand-in for it) with the kick
# $B(t): v \leftarrow v - t\,\nabla f(x)$ and the drift $A(t): x \leftarrow x + t v$.
#
# | scheme | one step of size $h$ | path data it uses |
# | --- | --- | --- |
# | EM | $x' = x + hv$, $v' = v - h\nabla f(x) - h\gamma v + \sqrt{2\gamma}\,dW$ | $dW$ over the step |
# | BAOAB | $B(h/2)\,A(h/2)\,O(h)\,A(h/2)\,B(h/2)$, O the velocity part of the OU flow | $J$ over the step |
# | UBU | $U(h/2)\,B(h)\,U(h/2)$, U the exact OU flow | $(dW, J)$ of each half step |
#
# Here they are in a few lines of numpy, vectorized over chains and driven by the *same* pairs
# (each step draws the two half-step pairs; EM and BAOAB read the coarsened pair). The toolkit's
# versions live in `integrators/schemes/` (one module each, declaring its `SCHEME`) and say the
# same in their docstrings:

# %%
print(ubu_module.__doc__.strip().splitlines()[0])
print("declared orders (weak, strong):",
      {name: (s.WEAK_ORDER, s.STRONG_ORDER) for name, s in SCHEMES.items()})


def em_step(x, v, h, halves):
    (dW1, _), (dW2, _) = halves
    return x + h * v, v - h * grad_f(x) - h * gamma * v + math.sqrt(2 * gamma) * (dW1 + dW2)


def baoab_step(x, v, h, halves):
    (dW1, J1), (dW2, J2) = halves
    _, J = coarsen(np.stack([dW1, dW2], -1), np.stack([J1, J2], -1), gamma, h / 2)
    v = v - h / 2 * grad_f(x)
    x = x + h / 2 * v
    v = math.exp(-gamma * h) * v + math.sqrt(2 * gamma) * J[..., 0]
    x = x + h / 2 * v
    return x, v - h / 2 * grad_f(x)


def ubu_step(x, v, h, halves):
    (dW1, J1), (dW2, J2) = halves
    x, v = ou_flow(x, v, dW1, J1, h / 2)
    v = v - h * grad_f(x)
    return ou_flow(x, v, dW2, J2, h / 2)


STEPS = {"em": em_step, "baoab": baoab_step, "ubu": ubu_step}


def run_chains(step, h, n_chains=4000, time_span=60.0, burn_time=10.0, seed=0):
    """Per-chain time averages of x and x^2 after burn-in (numpy, one path per chain)."""
    n_steps, burn = round(time_span / h), round(burn_time / h)
    path = BrownianPath(gamma, h / 2, 2 * n_steps, shape=(n_chains,), seed=seed)
    rng = np.random.default_rng(seed + 1)
    x, v = np.full(n_chains, mean), rng.standard_normal(n_chains)
    s1 = s2 = 0.0
    for k in range(n_steps):
        halves = [(path.dW[:, 2 * k + j], path.J[:, 2 * k + j]) for j in (0, 1)]
        x, v = step(x, v, h, halves)
        if k >= burn:
            s1, s2 = s1 + x, s2 + x * x
    m1, m2 = s1 / (n_steps - burn), s2 / (n_steps - burn)
    return m1, m2


# %% [markdown]
# ## The oracle: every step is an affine map plus Gaussian noise
#
# On a Gaussian target each step is $z' = A z + a + C\xi$ for $z = (x, v)$ and path noise $\xi$,
# so the stationary mean and variance of the *chain* (not of the target!) solve a linear
# (Lyapunov) equation: `theory_checks.oracle.stationary_moments`. It reads each scheme's step off
# its declared operations, so it referees the very code that runs. Below, our numpy chains at
# $h = 1/4$ against the oracle, with the standard error over chains.

# %%
h = 0.25
print(f"target variance {var:.5f}")
for name, step in STEPS.items():
    try:
        exact = stationary_moments(target, name, "full", h, gamma).variance[0]
    except UnstableStepError as exc:
        print(f"{name:5s}: the oracle says {exc}")
        continue
    m1, m2 = run_chains(step, h)
    per_chain_var = m2 - mean * (2 * m1 - mean)   # E(x - mean)^2 with the exact mean
    est, se = per_chain_var.mean(), per_chain_var.std(ddof=1) / math.sqrt(len(m1))
    print(f"{name:5s}: chains {est:.5f} +/- {se:.5f}   oracle {exact:.5f}   "
          f"({(est - exact) / se:+.1f} standard errors)")

# %% [markdown]
# EM has no stationary law at $h = 1/4$ on this example: its chains blow up. Now the variance
# of the chain's stationary law against $h$ for the three schemes, from the oracle alone (no
# Monte Carlo error at all):

# %%
hs = 2.0 ** -np.arange(0, 6, 0.25)
fig, ax = plt.subplots(figsize=(6, 3.5))
for name in STEPS:
    rows = []
    for hh in hs:
        try:
            rows.append((hh, stationary_moments(target, name, "full", hh, gamma).variance[0]))
        except UnstableStepError:
            pass
    rows = np.array(rows)
    ax.plot(rows[:, 0], rows[:, 1], "o-", ms=3, label=name)
ax.axhline(var, color="k", lw=0.8, ls="--", label="target")
ax.set_xscale("log", base=2)
ax.set_xlabel("step size h")
ax.set_ylabel("stationary variance of x")
ax.legend()
plt.show()

# %% [markdown]
# ## Why BAOAB's position marginal is exact on Gaussians
#
# Look at BAOAB from the middle of its step, around the O step: the chain there is
# $\ldots O\,A(h/2)\,B(h/2)\,|\,B(h/2)\,A(h/2)\,O \ldots$ Suppose that just before O,
# $x \sim N(\mu, \sigma^2 - h^2/4)$ and $v \sim N(0, 1)$, independent ($\sigma^2$ the target
# variance, $\kappa = 1/\sigma^2$). Then:
#
# * O mixes $v$ with fresh noise and keeps $v \sim N(0, 1)$ independent of $x$;
# * $A(h/2)$: $x' = x + \tfrac h2 v$ has variance $\sigma^2 - h^2/4 + h^2/4 = \sigma^2$:
#   **exactly the target**, and $\mathrm{Cov}(x', v) = h/2$;
# * $B(h)$: $v'' = v - h\kappa(x' - \mu)$ has variance $1 - h^2\kappa + h^2\kappa = 1$ and
#   $\mathrm{Cov}(x', v'') = h/2 - h = -h/2$;
# * $A(h/2)$: $x'' = x' + \tfrac h2 v''$ has variance $\sigma^2 + h^2/4 - h^2/2 = \sigma^2 - h^2/4$
#   and $\mathrm{Cov}(x'', v'') = -h/2 + h/2 = 0$: back where we started.
#
# So that law is invariant for every $h < 2\sigma$ (where $\sigma^2 - h^2/4 > 0$, the stability
# limit), and at the ends of BAOAB's steps the position is exactly $N(\mu, \sigma^2)$. Only the
# velocity pays: at the step's end its variance is $1 - h^2\kappa/4$. The same computation with
# matrices covers any Gaussian target. The oracle (which observes the velocity mid-step, where
# its transition map starts) agrees:

# %%
for hh in (0.25, 0.5, 0.75, 0.9):
    m = stationary_moments(target, "baoab", "full", hh, gamma)
    print(f"h = {hh:4}: x-variance {m.variance[0]:.6f} (target {var:.6f}); v-variance mid-step "
          f"{m.v_second_moment[0, 0]:.4f}, at the step's end 1 - h^2 kappa / 4 = {1 - hh**2 / (4 * var):.4f}")

# %% [markdown]
# ## The toolkit's sampler does the same, fast
#
# `integrators.sample` runs many chains of any scheme x minibatch plan in a compiled kernel,
# with divergence reported (never a NaN in a plot). BAOAB with the full gradient at a large step:

# %%
res = sample(target, scheme="baoab", plan="full", h=0.75, gamma=gamma, n_chains=512, n_steps=4000,
             burn_in=400, seed=0)
print(res.summary())
print(f"target variance {var:.4f}: BAOAB's x-variance at h = 0.75 is off by "
      f"{(res.variance[0] - var) / res.variance_se[0]:+.1f} standard errors")

# %% [markdown]
# ## Exercises
#
# Answer with `check(exercise_id, answer)`: it says whether you are right, with a hint if not.

# %%
for ex in ("1.1", "1.2", "1.3"):
    print(ex, question(ex))

# %%
# replace each answer by yours
check("1.1", 1.0);

# %%
check("1.2", "ubu");

# %%
check("1.3", 1.0);
