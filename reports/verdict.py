"""A figure's verdict on its claim, judged from its own numbers.

Each experiment declares ``verdict(results, preset) -> Verdict`` beside its ``draw`` (the same
``(unit, result)`` pairs).  The command line calls it once per figure; the figure's section, the
report's contents and the claims section's table of figure verdicts all print that one object.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from integrators._validation import check_parameters, instance_of, one_of

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
NOT_TESTABLE = "not testable at this preset"
OUTCOMES = (HOLDS, DOES_NOT_HOLD, NOT_TESTABLE)


@dataclass(frozen=True)
class Verdict:
    """The claim of one figure judged at one preset.

    Parameters
    ----------
    outcome : str
        One of :data:`OUTCOMES`: ``holds``, ``does not hold``, ``not testable at this preset``.
    reason : str
        Why, in one sentence (the rule applied).
    numbers : str
        The measured numbers the verdict rests on.

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each field (:mod:`integrators._validation`), checked when it is made.

    Raises
    ------
    ValueError
        When a field breaks its constraint (``outcome`` not one of :data:`OUTCOMES`, ``reason`` or
        ``numbers`` not a string), naming it, or ``reason`` is empty.
    """

    outcome: str
    reason: str
    numbers: str = ""

    CONSTRAINTS = {"outcome": one_of(OUTCOMES), "reason": instance_of(str, "a string (one sentence)"),
                   "numbers": instance_of(str, "a string (the measured numbers)")}
    VALID_EXAMPLE = {"outcome": HOLDS, "reason": "the slope is within its tolerance"}

    def __post_init__(self):
        checked(self)

    def text(self) -> str:
        """The verdict in one line.

        Returns
        -------
        str
            ``"<outcome>: <reason> (<numbers>)"`` (without the parentheses where there are no numbers).
        """
        return f"{self.outcome}: {self.reason}" + (f" ({self.numbers})" if self.numbers else "")

    def as_dict(self) -> dict:
        """The verdict as data, for a figure's ``metadata.json``.

        Returns
        -------
        dict
            ``{"outcome", "reason", "numbers"}``, JSON-serializable.
        """
        return asdict(self)


def checked(verdict: Verdict) -> Verdict:
    """``verdict``, its fields held to :attr:`Verdict.CONSTRAINTS` (when it is made, and again where a figure's
    ``verdict`` returns one: a subclass may skip the check).

    Parameters
    ----------
    verdict : Verdict
        The verdict to check.

    Returns
    -------
    Verdict
        ``verdict``.

    Raises
    ------
    ValueError
        Naming the first field that breaks its constraint, or an empty ``reason``.
    """
    check_parameters({f.name: getattr(verdict, f.name) for f in fields(Verdict)}, Verdict.CONSTRAINTS)
    if not verdict.reason.strip():
        raise ValueError("reason must not be empty: a verdict says why")
    return verdict


def worst(verdicts) -> str:
    """The outcome of several sub-claims taken together.

    Parameters
    ----------
    verdicts : iterable of Verdict or str
        The sub-claims' verdicts, or their outcomes.

    Returns
    -------
    str
        ``does not hold`` if any does not, else ``not testable at this preset`` if any is not testable (or
        there is none), else ``holds``.
    """
    outcomes = [v if isinstance(v, str) else v.outcome for v in verdicts]
    if not outcomes:
        return NOT_TESTABLE
    for outcome in (DOES_NOT_HOLD, NOT_TESTABLE):
        if outcome in outcomes:
            return outcome
    return HOLDS


__all__ = ["DOES_NOT_HOLD", "HOLDS", "NOT_TESTABLE", "OUTCOMES", "Verdict", "checked", "worst"]
