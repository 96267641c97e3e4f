"""What a verification reports: named checks (:class:`Check`) and the report that holds them
(:class:`VerifyReport`: its verdict, a markdown table, a CSV and a plot of the error ladders).
:func:`theory_checks._verify.verify` and the adapters' measurement return these."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PASSED, FAILED, INCONCLUSIVE, NO_CLAIM = "passed", "failed", "inconclusive", "no claim"


def markdown_row(cells) -> str:
    """One row of a Markdown table: each cell as text, its pipes escaped (``\\|``), so that a value
    such as ``|x - c|/w`` stays one cell and reads as written (every Markdown table here is built so)."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


@dataclass
class Check:
    """One named check and its outcome.  ``claim`` True: it ends :data:`PASSED`, :data:`FAILED` or
    (``passed`` None) :data:`INCONCLUSIVE`, ``skipped`` saying why; False: a measurement asserting
    nothing (:data:`NO_CLAIM`); None (the adapters' checks): ``passed=None`` asserts nothing."""

    name: str
    passed: bool | None
    expected: str
    measured: str
    hs: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    skipped: str = ""
    claim: bool | None = None

    @property
    def status(self) -> str:
        """:data:`PASSED`, :data:`FAILED`, :data:`INCONCLUSIVE` (a claim with no verdict) or
        :data:`NO_CLAIM`."""
        if self.passed is not None:
            return PASSED if self.passed else FAILED
        return INCONCLUSIVE if self.claim else NO_CLAIM

    @property
    def verdict(self) -> str:
        """The outcome in words, with the reason where there is one."""
        status = self.status
        if status == INCONCLUSIVE:
            return f"INCONCLUSIVE ({self.skipped or 'no verdict'})"
        if self.skipped:
            return f"skipped ({self.skipped})"
        return {PASSED: "pass", FAILED: "FAIL", NO_CLAIM: "measured (no claim)"}[status]


@dataclass
class VerifyReport:
    """What :func:`theory_checks.verify` found: its checks in order and the verdict.

    ``print(report)`` shows :meth:`table`.

    Parameters
    ----------
    scheme : str
        The scheme's name (``" (torch step)"`` appended when its tensor step was checked).
    target : str
        The target, described (name, dimension, number of data terms).
    checks : list of Check
        The checks, in the order they ran; each has a ``name``, ``passed`` (``True``, ``False``,
        or ``None``: no verdict), ``claim`` (whether it asserts something; a claim without a
        verdict is inconclusive, ``skipped`` saying why), ``expected`` and ``measured`` text, and
        its ladder ``hs`` and ``errors``.
    seconds : float
        How long the verification took.
    """

    scheme: str
    target: str
    checks: list
    seconds: float

    @property
    def ok(self) -> bool:
        """Whether every claim was checked and passed: no check failed, none is inconclusive
        (measurements that assert nothing do not count) and at least one passed (a report that
        checked nothing claims nothing)."""
        return not self.failed and not self.inconclusive and any(c.status == PASSED for c in self.checks)

    @property
    def failed(self) -> list[str]:
        """The names of the checks that failed."""
        return [c.name for c in self.checks if c.status == FAILED]

    @property
    def inconclusive(self) -> list[str]:
        """The names of the claims left without a verdict (not checked, or not enough evidence)."""
        return [c.name for c in self.checks if c.status == INCONCLUSIVE]

    def verdict_line(self) -> str:
        """The verdict in one line.

        Returns
        -------
        str
            ``OK``, or ``FAILED: <names>`` and/or ``INCONCLUSIVE: <names>`` joined by ``"; "``, or
            ``NO CLAIM CHECKED``.
        """
        if self.ok:
            return "OK"
        parts = ([f"FAILED: {', '.join(self.failed)}"] if self.failed else []) + \
            ([f"INCONCLUSIVE: {', '.join(self.inconclusive)}"] if self.inconclusive else [])
        return "; ".join(parts) or "NO CLAIM CHECKED"

    def check(self, name: str) -> Check:
        """One check by its name.

        Parameters
        ----------
        name : str
            E.g. ``"stationarity"`` or ``"weak_order[sms]"``.

        Returns
        -------
        Check
            The check.

        Raises
        ------
        KeyError
            If no check has that name (the message lists the names).
        """
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check named {name!r}; checks: {[c.name for c in self.checks]}")

    def table(self) -> str:
        """The report as markdown: a verdict line, then one row per check.

        Returns
        -------
        str
            ``| check | expected | measured | verdict |`` rows under the line
            ``verify('<scheme>') on <target>: OK`` (or ``FAILED:`` / ``INCONCLUSIVE:`` with the
            names of the failed / inconclusive claims).
        """
        lines = [f"verify({self.scheme!r}) on {self.target}: {self.verdict_line()} ({self.seconds:.0f} s)", "",
                 "| check | expected | measured | verdict |", "|---|---|---|---|"]
        lines += [markdown_row([c.name, c.expected, c.measured, c.verdict]) for c in self.checks]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def write_csv(self, path) -> Path:
        """Write the checks with their ladders as CSV, one row per check.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.

        Returns
        -------
        pathlib.Path
            The path written; columns ``check, expected, measured, verdict, hs, errors`` (the
            ladders space-separated).
        """
        path = Path(path)
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["check", "expected", "measured", "verdict", "hs", "errors"])
            for c in self.checks:
                writer.writerow([c.name, c.expected, c.measured, c.verdict, " ".join(f"{h:.6g}" for h in c.hs),
                                 " ".join(f"{e:.6g}" for e in c.errors)])
        return path

    def plot(self, path) -> Path:
        """Plot the weak and strong error ladders against ``h``, one line per plan.

        Parameters
        ----------
        path : str or os.PathLike
            The PNG file to write.

        Returns
        -------
        pathlib.Path
            The path written: two log-log panels (weak, strong).
        """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        path = Path(path)
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, kind in zip(axes, ("weak_order", "strong_order"), strict=True):
            for c in self.checks:
                if not c.name.startswith(kind) or not c.hs:
                    continue
                pts = [(h, e) for h, e in zip(c.hs, c.errors, strict=True) if np.isfinite(e) and e > 0]
                if pts:
                    ax.plot(*zip(*pts, strict=True), marker="o", label=f"{c.name}: {c.measured} ({c.verdict})")
            ax.set(xscale="log", yscale="log", xlabel="h", title=f"{self.scheme}: {kind.replace('_', ' ')}")
            if ax.lines:
                ax.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path
