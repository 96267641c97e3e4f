"""The ``sms-langevin`` entry point, kept free of heavy imports: it says what the command is doing
before Python imports numba, scipy and the experiments (seconds on a loaded machine), then runs it
(:func:`reports._cli.main`)."""

from __future__ import annotations

import sys

QUIET = ("-h", "--help")  # the help text is the whole answer: no line before it


def first_line(argv) -> str | None:
    """The line a command prints at once (standard error), or None for help and no command."""
    # a name with control characters is no command (argparse refuses it, escaped): not echoed raw here
    if not argv or argv[0].startswith("-") or not argv[0].isprintable() or any(a in QUIET for a in argv):
        return None
    # what every command does first; whether kernels compile is said later, by the commands that run
    # units, once their arguments have passed (a listing, a report or a refused argument compiles nothing)
    return f"sms-langevin {argv[0]}: starting (importing numba and the experiments)"


def entry() -> None:
    """The ``sms-langevin`` command (and ``python -m reports``): the first line, then :func:`reports._cli.entry`."""
    line = first_line(sys.argv[1:])
    if line:
        print(line, file=sys.stderr, flush=True)
    from reports._cli import entry as run

    run()
