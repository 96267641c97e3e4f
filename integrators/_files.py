"""Opening a file that must be a regular file, without ever blocking on one that is not: a fifo (named
pipe) planted in a data folder or an output folder would hang an ordinary ``open`` until a writer came.
The one opener of the data readers (:mod:`data_sets`), of the store's reads (``reports.store.read_regular``) and
of the source hashes (:func:`source_bytes`); and the one writer of every file put under an output folder
(:func:`write_atomic`: the store, the report, the tour), here below every package that writes."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a fifo"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class NotRegularFile(OSError):
    """A path that is not a regular file (a fifo, a socket, a device, a folder); the message names it and
    what it is."""


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened for binary reading, where it is a regular file: opened without blocking, checked on the
    open descriptor (so nothing can be swapped in between), then set back to blocking reads.

    Parameters
    ----------
    path : pathlib.Path or str
        The file.

    Returns
    -------
    BinaryIO
        The open file (the caller closes it).

    Raises
    ------
    NotRegularFile
        When ``path`` is not a regular file, naming it and what it is.
    OSError
        When it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(f"{path} is {kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: the mode a file written in place would have had


def write_atomic(path: Path | str, data: str | bytes, *, sync: bool = True) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through a temporary file in the same folder
    and a rename: a reader (or a run killed mid-write, or a full disk) sees the old file or the whole
    new one, and whatever ``path`` was (a hard link to a file elsewhere) is replaced, never written
    through.  The one writer of every file sms-langevin puts under ``--out``.

    Parameters
    ----------
    path : pathlib.Path or str
        The file to write; its folder must exist.
    data : str or bytes
        Its whole content.
    sync : bool
        Flush the content to disk before the rename (off for bulk copies that are redone when missing).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide the report from other readers
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def source_bytes(path: Path) -> bytes | None:
    """The bytes of source file ``path``, or None where it is not a regular file: Python's import skips a
    fifo named ``x.py`` (it is no module), so the hashes of the sources skip it too instead of blocking on it
    (:func:`integrators._disk_cache.toolkit_hash`, :func:`reports._runmeta.code_version`).

    Parameters
    ----------
    path : pathlib.Path
        A ``.py`` file found in a package folder.

    Returns
    -------
    bytes or None
        Its content, or None when it is a fifo, a socket, a device or a folder.
    """
    try:
        with open_regular(path) as fh:
            return fh.read()
    except NotRegularFile:
        return None
