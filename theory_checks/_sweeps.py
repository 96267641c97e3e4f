"""A plan checked by what it declares, and measured with a scheme that can see it.

* ``sweep[plan]``: a partition plan that visits each partition over two sweeps and declares
  second order (``KIND = "partition"``, ``SWEEPS = 2``, a weak or strong order of 2 or more)
  declares a symmetric sweep ``w_1 ... w_m, w_m ... w_1``, the palindrome that cancels the
  sweep's first-order error (the only mechanism that does).  Its ``batch_index`` is read for
  ``m = 1 ... 6`` batches and its oracle outcomes at the target's data and batch size: each
  period a palindrome whose first half is a partition.  No Monte Carlo, no scheme: an off-by-one
  backward sweep is caught whatever scheme is verified.
* ``plan_strong_order[plan]``: a plan's strong order is seen only through a scheme whose own
  strong order reaches it (UBU's 2 sees the sweep; BAOAB's 1 hides it).  When the scheme under
  test cannot, the plan's declared strong order is measured with :data:`REFERENCE` (UBU) on the
  same target, so a plan bug is caught whatever scheme is verified.
"""

from __future__ import annotations

from integrators import RunSpec
from integrators.plans import n_batches
from integrators.schemes import resolve_scheme
from theory_checks._checks import Check
from theory_checks._declared import expected_strong_order, plan_asserts

REFERENCE = "ubu"       # a scheme of strong order 2: its strong order sees every declared plan order
SWEEP_MS = range(1, 7)  # batch counts at which a declared batch_index is read


def declares_symmetric_sweep(plan) -> bool:
    """A partition plan over two sweeps that declares second order (see the module)."""
    orders = [o for o in (getattr(plan, "WEAK_ORDER", None), getattr(plan, "STRONG_ORDER", None)) if o is not None]
    return (getattr(plan, "KIND", None) == "partition" and getattr(plan, "SWEEPS", None) == 2
            and getattr(plan, "batch_index", None) is not None and any(o >= 2 for o in orders))


def _palindrome(m: int) -> list[int]:
    return list(range(m)) + list(range(m - 1, -1, -1))


def sweep_check(plan, n_data: int, batch_size: int) -> Check | None:
    """``sweep[plan]`` (see the module), or ``None`` for a plan that declares no symmetric sweep."""
    if not declares_symmetric_sweep(plan):
        return None
    name, expected = f"sweep[{plan.NAME}]", "w_1 ... w_m, w_m ... w_1 (declared: two sweeps, second order)"
    rule = getattr(plan.batch_index, "py_func", plan.batch_index)
    for m in SWEEP_MS:
        got = [int(rule(p, m)) for p in range(2 * m)]
        if got != _palindrome(m):
            return Check(name, False, expected, f"batch_index visits {' '.join(str(j + 1) for j in got)} "
                         f"over m={m} batches: not a palindrome", claim=True)
    m = n_batches(n_data, batch_size)
    outcomes = plan.outcomes(n_data, batch_size)
    for _, batches in outcomes:
        seq = [tuple(sorted(b)) for b in batches]
        half = sorted(i for b in seq[:len(seq) // 2] for i in b)
        if seq != seq[::-1] or half != list(range(n_data)):
            return Check(name, False, expected, f"an outcome of the oracle is not a palindrome of a partition at "
                         f"{n_data} data terms, batch size {batch_size}: {seq}", claim=True)
    return Check(name, True, expected, f"palindrome for m = 1 ... {SWEEP_MS[-1]}, and in all {len(outcomes)} "
                 f"outcomes at m={m}", claim=True)


def reference_order_check(module, plan, target, batch_size, gamma, strong_hs, n_chains, seed,
                          reason: str = "") -> Check | None:
    """``plan_strong_order[plan]``: UBU x ``plan``'s strong slope against the order it allows, when
    ``module``'s own strong order cannot see the plan's (``None`` otherwise, and for ``full`` or a
    plan whose orders are not claims)."""
    from theory_checks._verify import STRONG_SLACK
    from theory_checks.orders import strong_order

    ref = resolve_scheme(REFERENCE)
    if plan.NAME == "full" or not plan_asserts(plan) or getattr(plan, "STRONG_ORDER", None) is None:
        return None
    expected, own = expected_strong_order(ref, plan), expected_strong_order(module, plan)
    if expected is None or (own is not None and own >= expected):
        return None  # the scheme's own strong_order sees the plan
    name, exp_txt = f"plan_strong_order[{plan.NAME}]", f">= {expected - STRONG_SLACK:g} ({REFERENCE} x {plan.NAME})"
    if reason:
        return Check(name, None, exp_txt, "-", skipped=reason, claim=True)
    fit = strong_order(RunSpec.from_options(target, ref, plan, gamma=gamma, batch_size=batch_size,
                                            n_chains=n_chains, seed=seed), strong_hs, sweeps=4, n_boot=100)
    return Check(name, bool(fit.slope >= expected - STRONG_SLACK), exp_txt,
                 f"slope {fit.slope:.3f} (95% CI [{fit.ci[0]:.2f}, {fit.ci[1]:.2f}])", list(fit.hs), list(fit.errors),
                 claim=True)
