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
# # 7. Verify your own sampler
#
# After this notebook you will be able to write a kinetic Langevin scheme of your own against the
# toolkit's contract (one compiled step, its coefficients and its declared orders), run
# `theory_checks.verify` on it and read its report (which checks pass, the measured orders
# against the declared ones), and recognise in that report two classic mistakes: a wrong noise in
# the O step and a wrong temperature.
#
# Reading time about 15 minutes; running time under a minute (most of it Numba compiling).
#
# **The idea.** On a Gaussian target every step of every scheme in this toolkit is an affine map
# of $(x, v)$ plus Gaussian noise from the Brownian path (notebook 1). `verify` reads that map off
# *your compiled step* by probing it (zero noise and unit vectors), so the exact oracle gives the
# stationary law of your scheme under every minibatch plan with no Monte Carlo error, and the
# weak order is a slope on exact numbers. It then measures the strong order on a shared Brownian
# path and compares a Monte Carlo run with the oracle. Every check is named, and what your scheme
# *declares* (`WEAK_ORDER`, `STRONG_ORDER`) is what it is held to.

# %%
import math

import matplotlib.pyplot as plt
import numba as nb
import numpy as np

from integrators import Scheme, pair_covariance, reflect
from theory_checks import default_target, default_targets, verify
from theory_checks.oracle import stationary_moments
from tour import check, question

target = default_target()
for key, t, batch_size in default_targets():
    print(f"verify's default target{' @' + key if key else ''}: dimension {t.dim}, {t.n_data} Gaussian data "
          f"terms whose precisions do not commute (plus a prior), batch size {batch_size};\n"
          f"covariance\n{np.round(t.covariance, 4)}")

# %% [markdown]
# ## The contract of a scheme
#
# A scheme is a Numba function that advances a *block* of `n` chains in place by one step of size
# $h$:
#
# `step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)`
#
# * `x`, `v`, `g` have shape `(n, d)` (`g` receives the force);
# * `coef` is what your `coefficients(h, gamma)` returns (a 1-D float64 array, computed once per
#   step size, so no `exp` in the inner loop);
# * `dW`, `J` have shape `(2, d, n)`: the Brownian pair of notebook 1 over each *half* step
#   (`dW[0]` over the first half, `dW[1]` over the second; chains innermost);
# * `force(x, g, batch, n_batch, scale, tdata)` writes the minibatch force of the step into `g`
#   (the scheme never knows which plan picked the batch); call it once per step;
# * `reflect(x, v, box)` applies the elastic bounce when a box is set (a no-op otherwise): call it
#   after every change of `x`.
#
# **Your scheme: AOBOA.** A symmetric splitting we have not met yet:
# $A(h/2)\,O(h/2)\,B(h)\,O(h/2)\,A(h/2)$. The drift $A(t): x \leftarrow x + t v$; the O step over
# half a step is the velocity part of the exact OU flow, $v \leftarrow e^{-\gamma h/2} v +
# \sqrt{2\gamma}\,J$ with the $J$ of that half step; the kick $B(h): v \leftarrow v - h\,G(x)$ at
# the midpoint. One force per step. Symmetric splittings are second order in the weak sense; the
# position receives the noise only through $v$, so we expect strong order 1 (UBU gets 2 by
# integrating the noise into $x$ exactly). We declare exactly that.

# %%
@nb.njit(nogil=True)
def aoboa_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """AOBOA: A(h/2) O(h/2) B(h) O(h/2) A(h/2); each O reads the J of its half step."""
    h, eta, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]                # A(h/2)
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)         # the step's one force, at the midpoint
    for a in range(d):
        for c in range(n):
            w = eta * v[c, a] + noise * J[0, a, c]    # O(h/2), first half step's J
            w = w - h * g[c, a]                       # B(h)
            v[c, a] = eta * w + noise * J[1, a, c]    # O(h/2), second half step's J
            x[c, a] += 0.5 * h * v[c, a]              # A(h/2)
    reflect(x, v, box)


def aoboa_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h / 2), math.sqrt(2 * gamma)])


AOBOA = Scheme("aoboa", aoboa_step, aoboa_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)

# %% [markdown]
# ## The exact checks first
#
# `strong=False, monte_carlo=False` runs only the checks that need no Monte Carlo: the cheap
# level, a few seconds. We ask for three plans: full gradients, `iid` (with replacement) and
# `sms` (symmetric minibatch splitting).

# %%
report = verify(AOBOA, plans=["full", "iid", "sms"], strong=False, monte_carlo=False)
print(report)
print("ok:", report.ok, "| failed:", report.failed)

# %% [markdown]
# How to read it, row by row:
#
# * `probe_affine`: the compiled step is affine in $(x, v, g, dW, J)$ up to rounding. A step that
#   draws its own random numbers, or is not linear in the force, fails here and nothing else can
#   be trusted.
# * `declared_map` is skipped: a scheme may also declare its operations (`affine_ops`, as the
#   built-in ones do) and the check then compares them with the compiled step; ours does not.
# * `stationarity`: at the finest step of the ladder the exact stationary law is within 2% of the
#   target: the scheme samples the right thing as $h \to 0$.
# * `weak_order[plan]`: the slope of the exact error of the law against $h$, fitted on the finest
#   step sizes, against the *expected* order: the smaller of what the scheme declares and what
#   the plan allows. `iid` caps every scheme at first order (the gradient noise), so 1 is
#   expected and 1 is measured; `sms` keeps the scheme's 2.
# * the same rows again with `@3d` and `@7d`: the checks run on three targets, the 2-D one above at
#   batch size 1, a 3-D one whose data terms have unequal scales at batch size 2, and a 7-D one of
#   five such terms at batch size 2 (the exact checks only), each at its own friction (1.7, 0.6,
#   2.6: no coefficient degenerates there, as `/gamma` does at friction 1). A step whose indexing
#   is right only in 2-D (or 3-D), or a force that scales the batch mean instead of the sum (the
#   same at batch size 1), fails only there.
# * `box`: the step with an active box, where the bounce fires; `sweep[sms]`: the plan's declared
#   symmetric sweep, read from its declaration.
# * the verdicts: every claim ends pass, FAIL or INCONCLUSIVE (not checked, with the reason), and
#   `report.ok` is true only when every claim was checked and passed. The strong-order and Monte
#   Carlo rows are listed as skipped: we switched them off, so they are not claims of this run.
#
# Now the whole verification: the strong order against full-gradient UBU at a much finer step on
# the same Brownian path; the kernel's Monte Carlo moments against the oracle of the probed step
# (`monte_carlo`); coupled chains at $h$, $h/2$, $h/4$ extrapolated with the declared order against
# the target's own law (`target_law`: the scheme against the target, no probe); and, since a
# Gaussian target's force is affine, a third target that is not Gaussian, a tilted double well,
# where coupled $h / h/2$ chains measure the weak order with no exact law (`@well` rows). We make
# it cheaper than the default (64 chains, four step sizes for the strong ladder, two plans); most
# of the time is Numba compiling the kernels for our new scheme.

# %%
full = verify(AOBOA, plans=["full", "sms"], n_chains=64, strong_hs=2.0 ** -np.arange(3, 7))
print(full)

# %% [markdown]
# Every check passes: the strong slopes are about 1 (the check asks for at least the declared
# order minus 0.25, the margin for the Monte Carlo and pre-asymptotic error of 64 chains), the
# Monte Carlo moments sit within a few standard errors of the exact law and of the target, and on
# the double well AOBOA's bias is too small to fit at these steps: the weak-order rows pass with
# the bound they measured, as an exact law does on the Gaussian targets.
#
# The report keeps its ladders (`check.hs`, `check.errors`), so we can draw them; `report.plot(path)`
# and `report.write_csv(path)` save the same as a PNG and a CSV.

# %%
def draw_ladder(ax, chk, label, **style):
    hs, errors = np.asarray(chk.hs), np.asarray(chk.errors)
    keep = np.isfinite(errors) & (errors > 0)
    ax.loglog(hs[keep], errors[keep], "o-", ms=3, label=f"{label}: {chk.verdict}", **style)


fig, ax = plt.subplots(1, 2, figsize=(11, 4))
for plan in ("full", "iid", "sms"):
    draw_ladder(ax[0], report.check(f"weak_order[{plan}]"), f"aoboa x {plan}")
hs = np.asarray(report.check("weak_order[full]").hs)
ax[0].loglog(hs, 0.3 * hs**2, "k--", lw=0.8, label="slope 2")
ax[0].loglog(hs, 0.3 * hs, "k:", lw=0.8, label="slope 1")
ax[0].set_xlabel("step size h")
ax[0].set_ylabel("exact error of the stationary law")
ax[0].set_title("weak order (oracle, no Monte Carlo error)")
ax[0].legend(fontsize=7)
for plan in ("full", "sms"):
    draw_ladder(ax[1], full.check(f"strong_order[{plan}]"), f"aoboa x {plan}")
shs = np.asarray(full.check("strong_order[full]").hs)
ax[1].loglog(shs, 0.3 * shs, "k:", lw=0.8, label="slope 1")
ax[1].set_xlabel("step size h")
ax[1].set_ylabel("L2 error against fine UBU, same path")
ax[1].set_title("strong order (64 chains)")
ax[1].xaxis.set_minor_formatter(plt.NullFormatter())
ax[1].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Plant a mistake: the O step reads $dW$ instead of $J$
#
# An easy slip: both arrays hold "the noise of the half step", and $dW$ looks like the natural
# Brownian increment. But the exact OU velocity update needs
# $J = \int e^{-\gamma(t_{end} - s)} dW_s$, whose variance $(1 - e^{-2\gamma\tau})/(2\gamma)$ is a
# little *smaller* than $\mathrm{Var}\,dW = \tau$. The difference is of order $h$, so we expect the
# scheme to still converge to the target, but only at first order.

# %%
@nb.njit(nogil=True)
def aoboa_dw_step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box):
    """AOBOA whose O steps read dW instead of J (a planted mistake)."""
    h, eta, noise = coef[0], coef[1], coef[2]
    n, d = x.shape
    for a in range(d):
        for c in range(n):
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)
    force(x, g, batch, n_batch, scale, tdata)
    for a in range(d):
        for c in range(n):
            w = eta * v[c, a] + noise * dW[0, a, c]   # MISTAKE: dW where J belongs
            w = w - h * g[c, a]
            v[c, a] = eta * w + noise * dW[1, a, c]   # MISTAKE: dW where J belongs
            x[c, a] += 0.5 * h * v[c, a]
    reflect(x, v, box)


AOBOA_DW = Scheme("aoboa_dw", aoboa_dw_step, aoboa_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)
bad_noise = verify(AOBOA_DW, plans=["full", "sms"], strong=False, monte_carlo=False)
print(bad_noise)
tau, gamma = 0.01, 1.0
cov = pair_covariance(gamma, tau)   # covariance of (dW, J) over tau
print(f"over a half step tau = {tau}: Var dW = {cov[0, 0]:.6f}, Var J = {cov[1, 1]:.6f}")

# %% [markdown]
# `stationarity` still passes (at the finest $h$ the law is close to the target: the mistake
# vanishes as $h \to 0$), but both `weak_order` checks fail: measured slope 1, declared 2. A test
# that only compared a sampler's moments with the target at one small step would have let this
# through; the order is what gives it away.
#
# ## Plant another: the forgotten factor 2
#
# The fluctuation-dissipation balance of kinetic Langevin is $\sqrt{2\gamma}\,dW$ against the
# friction $\gamma$. Write $\sqrt{\gamma}$ instead (a coefficient, not the step, is wrong) and the
# chain samples a different law at every step size.

# %%
def forgot_two_coefficients(h, gamma):
    return np.array([h, math.exp(-gamma * h / 2), math.sqrt(gamma)])   # MISTAKE: sqrt(gamma)


AOBOA_COLD = Scheme("aoboa_cold", aoboa_step, forgot_two_coefficients, WEAK_ORDER=2.0, STRONG_ORDER=1.0)
cold = verify(AOBOA_COLD, plans=["full", "sms"], strong=False, monte_carlo=False)
print(cold)
law = stationary_moments(target, AOBOA_COLD, "full", 1e-3, 1.0)
print("stationary covariance / target covariance at h = 1e-3:\n",
      np.round(law.covariance / target.covariance, 4))

# %% [markdown]
# Now `stationarity` fails (the law is far from the target however small $h$ is) and the weak
# slopes are 0: the error does not shrink at all. The oracle shows what the chain samples
# instead: every entry of the covariance is halved. With noise $\sqrt{\gamma}$ the invariant law
# is $e^{-(f(x) + |v|^2/2)/T}$ at temperature $T = 1/2$: a *cold* posterior, the same shape,
# half the spread.
#
# The three ladders side by side:

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
for rep, label in ((report, "AOBOA"), (bad_noise, "O step with dW"), (cold, "noise sqrt(gamma)")):
    draw_ladder(ax, rep.check("weak_order[sms]"), f"{label} x sms")
ax.loglog(hs, 0.3 * hs**2, "k--", lw=0.8, label="slope 2")
ax.loglog(hs, 0.3 * hs, "k:", lw=0.8, label="slope 1")
ax.set_xlabel("step size h")
ax.set_ylabel("exact error of the stationary law")
ax.set_title("weak_order[sms]: a correct scheme and two planted mistakes")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# **In your own tests.** The same verification is one line in pytest,
# `theory_checks.testing.assert_verified(AOBOA)`, which fails with the report's table when a
# declared order or the law is wrong (see "Verifying a scheme of your own" in the README). And
# once `integrators.register_scheme(AOBOA)` has added it to the registry, `sample(target,
# scheme="aoboa", plan="sms", ...)`, the claims table and the weak-orders figure include it.
#
# ## Exercises

# %%
for ex in ("7.1", "7.2", "7.3"):
    print(ex, question(ex))

# %%
# replace each answer by yours
check("7.1", 1.0);

# %%
check("7.2", "weak_order");

# %%
check("7.3", 1.0);
