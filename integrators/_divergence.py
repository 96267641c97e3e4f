"""What a divergence is, what is recorded and what raises: one policy for every sampler.

A sampler *diverges* when a step produces a state it cannot continue from.  Steps are counted
from 1 (step ``k`` takes the state after ``k - 1`` steps to the state after ``k``), and the step
recorded is always the **first** step whose result (the state after it, or the force it leaves
for the next step) is non-finite or, where a bound applies, beyond the bound: not the step at
which the divergence happened to be noticed, and never a step made up when the true one is
unknown.  One detector per backend applies the rule: :func:`integrators._kernel.mark_diverged` on
the Numba kernel (chains mode, the coupled chains, GHMC) and
:func:`integrators.torch._divergence.mark_divergence` on tensors (chains mode, module mode, the
ensembles, the BNN chains' batch losses).  Results pool the chains that did not diverge by one
rule, :class:`integrators._chain_summary.ChainSummary`.

**Chains mode** (:func:`integrators.sample` on the Numba kernel, ``backend=Torch()``
on tensors) and the **coupled chains** (:func:`bias._coupled.coupled_run`).  A chain diverges at the
first step after which a coordinate of its position ``x`` or velocity ``v`` is not finite or exceeds
``divergence_bound`` in absolute value (default ``target.divergence_bound()``, the same on both
backends: :func:`integrators._validation.divergence_bound_for`).  That step is stored in
``diverged_at[c]`` (``-1``: never).  Nothing raises: the chain is parked (state and cached force set
to zero), adds nothing to any statistic from that step on, its later thinned samples are NaN and
its final ``x``, ``v`` are reported as NaN; the other chains go on.  Pooled statistics read only
the chains that did not diverge, and a result whose chains all diverged raises ``RuntimeError``
naming the first step when a statistic is asked of it, instead of returning NaN as an estimate.
A coupled pair (the fine chain at ``h/2`` and the coarse chain at ``h`` on one Brownian path)
diverges when either chain does; the step recorded is the coarse step (two fine steps each), and
both chains are parked.  The Metropolized sampler (:mod:`integrators._ghmc`) follows the same rule
with its iterations in place of steps.

**Module mode** (:class:`integrators.torch.ModuleSampler`).  One posterior, no bound: with
localization the bounces keep the parameters in their box, without it nothing sets a scale.  The
sampler diverges at the first step after which a parameter or the force is not finite.  Every step
records that step on the device (no value is read back to the host); every
``SamplerConfig.check_every`` steps the record is read and :class:`SamplerDiverged` raised with
``step`` the recorded step, so a check every epoch still names the step within the epoch.
``what`` says what was found non-finite when the check ran.  A non-finite starting value (a
parameter, ``v0``, ``x_star``) is bad input, refused with ``ValueError`` by name before the first
step; it is not a divergence.  A non-finite force at the starting point (first-same-as-last
schemes evaluate it before step 1) makes step 1 diverge.

**Ensembles** (:class:`integrators.torch._ensemble.EnsembleSampler`).  The module-mode rule per
chain, recorded per chain; at a check, if any chain has diverged, the whole ensemble stops with
:class:`SamplerDiverged`: ``step`` the earliest recorded step, ``what`` naming the first chain that
diverged then, and ``diverged_at`` every chain's recorded step (``-1`` for the chains that were
still finite when the ensemble stopped: they did not diverge, they were stopped).

**Experiments** (the BNN pipeline :mod:`experiments.bnn._pipeline`, Figure 1 :mod:`experiments.figure1._compute`, the
telescoping sums, the logistic-regression comparisons).  A diverged run is recorded as diverged
with the true step the sampler reported (``diverged_at``, ``first_divergence_step``,
:attr:`SamplerDiverged.step`; over several chains or repeats the earliest); an experiment never
invents a step (the end of an epoch, of a run or of a sweep) where it does not know one.  A
diverged run gives no number: it is not averaged into a predictive or an estimate, and no figure
plots NaN for it; a figure marks it (Figure 1: a cross at its step size, labelled with the step)
and a table says "diverged at step k".
"""

from __future__ import annotations

NOT_DIVERGED = -1  # the value of ``diverged_at`` for a chain that has not diverged


class SamplerDiverged(RuntimeError):
    """Module mode or an ensemble diverged (see the module docstring for the policy).

    Raised at a finiteness check (every ``SamplerConfig.check_every`` steps), naming the step the
    device recorded, not the step at which the check ran.  A ``RuntimeError``: bad input is
    refused with ``ValueError`` instead, before the first step.

    Parameters
    ----------
    step : int
        The first step (counted from 1) whose result was not finite.
    what : str
        What was found non-finite when the divergence was detected (for an ensemble, the first
        chain that diverged then).
    diverged_at : tuple of int or None, default None
        For an ensemble, every chain's first non-finite step (:data:`NOT_DIVERGED` for the
        chains still finite when the ensemble stopped), else None.
    """

    def __init__(self, step: int, what: str, diverged_at: tuple[int, ...] | None = None):
        super().__init__(f"the sampler diverged at step {step}: {what} is not finite")
        self.step = step
        self.what = what
        self.diverged_at = diverged_at

    def __reduce__(self):  # (the default would call the class with the message alone)
        return type(self), (self.step, self.what, self.diverged_at)
