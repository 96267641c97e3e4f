"""Run metadata: what every figure, table and unit records beside its numbers (seed, preset,
versions, the git commit or the installed package's version, time), and the check that an output
folder is writable.  One module owns it; experiments, reports and the command line import it from
here."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[1]  # the repository root when run from a clone


def git_commit() -> str:
    """The commit of the git checkout this package runs from, or ``"not a git checkout"``
    (:func:`code_source` says which)."""
    try:
        top, head = subprocess.run(["git", "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True,
                                   cwd=_CHECKOUT, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError, ValueError):
        return "not a git checkout"
    # a package installed into a virtual environment inside some repository is not that repository's code
    return head if Path(top).resolve() == _CHECKOUT else "not a git checkout"


def package_version() -> str:
    """The installed version of the ``sms-langevin`` distribution, or ``"not installed"``."""
    try:
        return importlib.metadata.version("sms-langevin")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def code_source() -> str:
    """Where the running code came from: ``"git checkout"``, ``"installed package"`` (non-editable) or
    ``"source folder, not a git checkout"``."""
    if not (_CHECKOUT / "pyproject.toml").is_file():
        return "installed package"
    return "git checkout" if git_commit() != "not a git checkout" else "source folder, not a git checkout"


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


def code_metadata() -> dict:
    """The code and the machine: git commit, this package's version and where its code came from,
    interpreter, platform and library versions (every output records these)."""
    return {"git_commit": git_commit(), "sms_langevin": package_version(), "code": code_source(),
            "python": sys.version.split()[0], "platform": platform.platform(),
            **{name: library_version(name) for name in LIBRARIES}}


def metadata(seed: int, preset: str) -> dict:
    """Seed, preset, :func:`code_metadata` and creation time."""
    return {"seed": seed, "preset": preset, **code_metadata(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def unwritable(out: Path) -> str | None:
    """``None`` if ``out`` can be created and written, else the reason.  The probe is a new file of a fresh
    name (created exclusively, so a link planted in the folder is never written through or removed)."""
    if out.exists() and not out.is_dir():
        return "it is a file, not a folder"
    for part in (out, *out.parents):  # else mkdir says only 'File exists'
        if part.is_symlink() and not part.exists():
            shown = "it" if part == out else str(part)
            return (f"{shown} is a symbolic link to {os.readlink(part)}, a folder that does not exist; create that "
                    f"folder or give another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
