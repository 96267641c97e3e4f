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
# # 2. Stochastic gradients: with replacement, without, and the symmetric sweep
#
# After this notebook you will be able to build the minibatch force of the three plans
# (`iid`, `rr`, `sms`), measure the bias of any scheme x plan against the step size $h$ with the
# exact oracle, read its order off a log-log slope, and predict the first-order bias of
# with-replacement gradients from the variance of the gradient noise.
#
# Reading time about 10 minutes; running time a few seconds (no Monte Carlo: everything here is
# exact linear algebra).
#
# **The minibatch force.** The potential is a sum over data, $f = f_0 + \sum_{i=1}^{N_D} f_i$.
# A step uses a batch $w$ of $N_b$ indices from a partition into $N_m = \lceil N_D / N_b \rceil$
# batches, and the force
#
# $$G(x, w) = \nabla f_0(x) + N_m \sum_{i \in w} \nabla f_i(x),$$
#
# which averages to the full gradient $\nabla f$ over one sweep through the partition.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from integrators import PLANS, GaussianTarget, batch_sequence
from theory_checks.oracle import stationary_moments
from theory_checks.orders import local_slopes, weak_order
from tour import check, question

print("plans:", ", ".join(PLANS))
for plan in ("iid", "rr", "sms"):
    seq = batch_sequence(plan, 6, 2, 9, seed=1)
    print(f"{plan:4s}", " ".join("{" + ",".join(str(i) for i in b) + "}" for b in seq))

# %% [markdown]
# * `iid` (stochastic gradients with replacement, SG): every step draws a fresh batch;
# * `rr` (random reshuffling, without replacement): a fresh random partition each epoch, visited
#   in order, so every datum is used exactly once per epoch;
# * `sms` (symmetric minibatch splitting): a fresh partition every *two* epochs, visited forward
#   and then backward, $w_1 \ldots w_{N_m}\, w_{N_m} \ldots w_1$.
#
# A scheme crossed with a plan is a sampler: SMS-UBU is `ubu x sms`, SG-HMC is `em x iid`.
#
# ## Bias against $h$ from the exact oracle
#
# On the paper's 1-D example ($N_D = 2$ data terms, batch size 1) the oracle gives the exact
# stationary variance of every sampler, averaged over the plan's random batch orders. The bias of
# the variance against $h$ on log-log axes, with its slope:

# %%
target = GaussianTarget.one_d_example()
var = float(target.covariance[0, 0])
hs = 2.0 ** -np.arange(2, 9)
samplers = [("ubu", "full"), ("ubu", "iid"), ("ubu", "rr"), ("ubu", "sms"),
            ("baoab", "iid"), ("baoab", "sms"), ("em", "iid"), ("em", "sms")]
fits = {}
for scheme, plan in samplers:
    fits[(scheme, plan)] = weak_order(target, scheme, plan, hs, batch_size=None if plan == "full" else 1)

fig, ax = plt.subplots(figsize=(7, 4.5))
for (scheme, plan), fit in fits.items():
    ok = np.isfinite(fit.errors)
    ax.loglog(fit.hs[ok], fit.errors[ok], "o-", ms=3,
              label=f"{scheme} x {plan}: slope {fit.local_slopes[-1]:.2f}")
ax.loglog(hs, 0.3 * hs, "k:", lw=1, label="slope 1")
ax.loglog(hs, 0.1 * hs**2, "k--", lw=1, label="slope 2")
ax.set_xlabel("step size h")
ax.set_ylabel("|bias of the variance| (exact)")
ax.legend(fontsize=7)
plt.show()

print(f"{'sampler':13s} local slopes from h = 1/4 down to 1/256")
for (scheme, plan), fit in fits.items():
    slopes = " ".join(f"{s:5.2f}" if np.isfinite(s) else "    -" for s in fit.local_slopes)
    unstable = f"   (no stationary law at h = {fit.unstable})" if fit.unstable else ""
    print(f"{scheme + ' x ' + plan:13s} {slopes}{unstable}")

# %% [markdown]
# BAOAB x full is missing on purpose: its position variance has no bias at all (notebook 1), and
# its slope would be meaningless. The `iid` samplers have slope 1 whatever the scheme; the `sms`
# samplers keep the scheme's own order (2 for UBU and BAOAB); EM has order 1 anyway. At large
# $h$ the local slopes wander (the samplers are not yet asymptotic): read the order at small $h$.
#
# ## Where first order comes from
#
# With replacement, the force error $\varepsilon_k = G(x, w_k) - \nabla f(x)$ is fresh, mean-zero
# noise at every step. The kick $v \leftarrow v - h G$ then adds velocity variance
# $h^2 \mathbb{E}\varepsilon^2$ per step, i.e. $h\,\mathbb{E}\varepsilon^2$ per unit of time, on
# top of the $2\gamma$ per unit of time that the thermostat injects. The chain runs hotter by a
# factor $1 + h\,\mathbb{E}\varepsilon^2 / (2\gamma)$, and the position variance with it:
#
# $$\text{bias of the variance} \approx \sigma^2\, \frac{h\, \mathbb{E}_\pi \varepsilon^2}{2\gamma}.$$
#
# On the 1-D example with batch size 1, $N_m = 2$ and $\varepsilon = \pm(\nabla f_1 - \nabla f_2)$,
# so $\mathbb{E}_\pi\varepsilon^2 = \mathbb{E}_\pi (\nabla f_1(x) - \nabla f_2(x))^2$ in closed form:

# %%
a = np.array([4.0, 0.25])      # 1 / sigma_i^2 of the two data terms
centers = np.array([-1.0, 1.0])
mu = float(target.mean[0])
# grad f_1 - grad f_2 = (a1 - a2) x - (a1 c1 - a2 c2): a linear function of x ~ N(mu, var)
slope_x, offset = a[0] - a[1], a[0] * centers[0] - a[1] * centers[1]
e_eps2 = slope_x**2 * var + (slope_x * mu - offset) ** 2
predicted = var * e_eps2 / 2.0
for h in (2.0**-8, 2.0**-10, 2.0**-12):
    exact = stationary_moments(target, "ubu", "iid", h, 1.0, batch_size=1).variance[0] - var
    print(f"h = 2^{math.log2(h):.0f}: oracle bias / h = {exact / h:.5f}, predicted {predicted:.5f}")

# %% [markdown]
# Without replacement the errors of one epoch sum to zero exactly: $\sum_{k} \varepsilon_k = 0$
# over a sweep, so they do not accumulate like a random walk. The symmetric sweep goes further:
# the composition $\Phi_{w_1} \cdots \Phi_{w_m} \Phi_{w_m} \cdots \Phi_{w_1}$ is palindromic, and,
# exactly as Strang splitting beats Lie splitting, the first-order term of its error expansion
# cancels. What is left is $O(h^2)$: SMS-UBU keeps UBU's second order (the paper's main theorem,
# with a $W_2$ bias of order $h^2\sqrt d$). Random reshuffling without the symmetry has no such
# theorem; on this small example it is close to second order too, which is what the paper's
# Figure 1 shows.
#
# The sms period is two epochs; the oracle enumerates every equally likely order of the batches
# over one period. The force really is unbiased over a sweep:

# %%
grads = lambda x: a * (x - centers)  # noqa: E731  (grad f_1, grad f_2 at x)
x = 0.3
seq = batch_sequence("sms", 2, 1, 4, seed=5)
forces = [2 * grads(x)[b].sum() for b in seq]   # N_m = 2, batch size 1
print("batches", [int(b[0]) for b in seq], "forces", np.round(forces, 3),
      "sweep average", np.mean(forces), "full gradient", grads(x).sum())
print("local slopes of SMS-UBU's bias, recomputed:", np.round(local_slopes(hs, fits[("ubu", "sms")].errors), 2))

# %% [markdown]
# ## Exercises
#
# Answer with `check(exercise_id, answer)`.

# %%
for ex in ("2.1", "2.2", "2.3"):
    print(ex, question(ex))

# %%
# replace each answer by yours
check("2.1", 2.0);

# %%
check("2.2", 1.0);

# %%
check("2.3", 2);
