"""The orders a sampler is expected to have, from what its scheme and its plan declare.

A scheme declares ``WEAK_ORDER`` and ``STRONG_ORDER`` for full gradients; a plan declares the
orders it allows (``iid``: 1 and 1/2 whatever the scheme; ``sms``: 2 and 2; ``full``: no cap;
``None``: no claim) and whether they are claims (``THEOREM``: ``rr``'s order 2 is observed on
the paper's 1-D example, not proved, so it is measured and asserts nothing, for every scheme).
The sampler's expected order is the smaller of the two.  Every table, figure and test reads its
expectations here (:func:`asserted` for ``verify`` and the claims table, :func:`plan_asserts` for
the adapters' conformance report); none retypes them, and a citation never turns a measurement
into a claim.
"""

from __future__ import annotations

import math

from integrators.plans import PLANS, resolve_plan
from integrators.schemes import SCHEMES, resolve_scheme

KINDS = ("weak", "strong")


def _check_kind(kind) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _expected(scheme_order: float, plan_order: float | None) -> float | None:
    if plan_order is None:
        return None
    return float(min(scheme_order, plan_order))


def expected_weak_order(scheme, plan) -> float | None:
    """``min(scheme.WEAK_ORDER, plan.WEAK_ORDER)``; ``None`` when the plan makes no claim."""
    return _expected(resolve_scheme(scheme).WEAK_ORDER, resolve_plan(plan).WEAK_ORDER)


def expected_strong_order(scheme, plan) -> float | None:
    """``min(scheme.STRONG_ORDER, plan.STRONG_ORDER)``; ``None`` when the plan makes no claim."""
    return _expected(resolve_scheme(scheme).STRONG_ORDER, resolve_plan(plan).STRONG_ORDER)


def limiting_source(scheme, plan, kind: str = "weak") -> str:
    """Which declaration sets the expected order: the plan's claim when it caps the scheme's."""
    _check_kind(kind)
    s, p = resolve_scheme(scheme), resolve_plan(plan)
    attr = "WEAK_ORDER" if kind == "weak" else "STRONG_ORDER"
    cap = getattr(p, attr)
    if cap is not None and math.isfinite(cap) and cap < getattr(s, attr):
        return getattr(p, "SOURCE", "declared by the plan")
    return f"{s.NAME}.{attr} = {getattr(s, attr):g} (declared)"


# The literature behind the built-in samplers' orders (the design's claims table): source text
# only; whether an order is a claim is the plan's declaration (:func:`plan_asserts`).
CITATIONS = {
    ("em", "full"): "classical", ("ubu", "full"): "Sanz-Serna-Zygalakis",
    ("baoab", "full"): "Leimkuhler-Matthews", ("ubu", "sms"): "paper, main theorem",
    ("baoab", "sms"): "paper, Fig. 1 (observed)", ("em", "sms"): "paper, Fig. 1", ("em", "rr"): "paper, Fig. 1",
    ("ubu", "rr"): "paper, Fig. 1 (observed, no theorem)", ("baoab", "rr"): "paper, Fig. 1 (observed, no theorem)",
}


def source(scheme, plan, kind: str = "weak") -> str:
    """The citation of a built-in claim, else the declaration that sets the expected order."""
    _check_kind(kind)
    key = (resolve_scheme(scheme).NAME, resolve_plan(plan).NAME)
    return CITATIONS.get(key, limiting_source(scheme, plan, kind))


def plan_asserts(plan) -> bool:
    """Whether a plan's declared orders are claims: its ``THEOREM`` (``True`` when it does not say;
    ``False`` for ``rr``).  The one source of truth, read by ``verify``, the claims table and the adapters."""
    return bool(getattr(resolve_plan(plan), "THEOREM", True))


def asserted(scheme, plan) -> bool:
    """Whether the expected orders of ``scheme x plan`` are a claim: the plan's declaration
    (:func:`plan_asserts`), the same for every scheme, built-in or not (``scheme`` is resolved,
    so an unknown one is refused)."""
    resolve_scheme(scheme)
    return plan_asserts(plan)


def registered_pairs() -> list[tuple[str, str]]:
    """Every registered scheme x plan, in registration order."""
    return [(s, p) for s in SCHEMES for p in PLANS]
