"""Run metadata: what every figure, table and unit records beside its numbers (seed, preset,
versions, git commit, time), and the check that an output folder is writable.  One module owns
it; experiments, reports and the command line import it from here."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys
import time
from pathlib import Path


def git_commit() -> str:
    """The commit of the working tree this package runs from, or ``"unknown"``."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# the libraries whose versions every output records (scikit-learn: the embedded data; torch: the
# BNN figure and the tensor backend)
LIBRARIES = ("numpy", "numba", "scipy", "matplotlib", "scikit-learn", "torch")
_MODULE_NAMES = {"scikit-learn": "sklearn"}


def library_version(name: str) -> str:
    """The version of ``name`` as loaded, else as installed (nothing is imported), else ``"absent"``."""
    module = sys.modules.get(_MODULE_NAMES.get(name, name))
    if module is not None and hasattr(module, "__version__"):
        return str(module.__version__)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def metadata(seed: int, preset: str) -> dict:
    """Seed, preset, git commit, interpreter, platform, library versions and creation time."""
    return {"seed": seed, "preset": preset, "git_commit": git_commit(), "python": sys.version.split()[0],
            "platform": platform.platform(), **{name: library_version(name) for name in LIBRARIES},
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def unwritable(out: Path) -> str | None:
    """``None`` if ``out`` can be created and written, else the reason."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
