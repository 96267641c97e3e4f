"""Persisted unit results: one JSON file per finished unit, written atomically.

``<out>/units/<figure id>/<unit key>.json`` holds ``{"key", "unit", "result", "meta", "checksum"}``;
the checksum (SHA-256 of the canonical JSON of key, unit, result and meta) detects a corrupt or
truncated file, which is then recomputed, never silently reused.  ``meta["fingerprint"]``
(:mod:`reports._runmeta`) says what the result depends on; :meth:`Store.load` given the wanted
fingerprint raises :class:`StaleUnit` when it differs.

A run holds ``<out>/.lock`` (an advisory ``flock``, released by the OS even when the run is
killed) for as long as it writes there; a second run into the same folder is refused
(:class:`Busy`), so it can neither interleave units nor delete the first run's temporary files.
The lock's descriptor is never handed to child processes (close-on-exec, and a forked child drops
its copy at once), so a worker left behind by a killed run cannot keep the folder locked; where
one still holds it, :class:`Busy` names the processes that do.  The lock is opened without following
links and must be a regular file with one name (:class:`UnsafeLock` otherwise): a ``.lock`` planted as
a link to a file outside the folder is refused, never written through.  So is every other path the
store reads or writes inside the folder (``units/``, a figure's folder, a unit file): a symbolic link
among them raises :class:`UnsafePath` naming it (:func:`own_path`), so no file outside the output
folder is ever written, replaced or deleted through one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import sys
from pathlib import Path

from integrators._files import NotRegularFile, open_regular, write_atomic
from integrators.seeds import derive
from reports._runmeta import differences, shortened
from reports.schema import ANY, INTEGER, SECONDS, MapOf, Omittable, Record, SchemaError

# what the store and the report read of a unit's metadata (the command line writes them all; a store written
# by hand may lack them): a forged value is a damaged unit, never a traceback or an infinity in metadata.json
META = Record(fingerprint=Omittable(MapOf(ANY)), wall_seconds=Omittable(SECONDS), run_seed=Omittable(INTEGER))


def _unit_key(unit: dict) -> str:
    """A stable file-name-safe key for a unit spec."""
    canon = json.dumps(unit, sort_keys=True, separators=(",", ":"))
    readable = "-".join(f"{v}" for _, v in sorted(unit.items()))
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in readable)[:60]
    return f"{safe}-{hashlib.sha256(canon.encode()).hexdigest()[:10]}"


def unit_seed(run_seed: int, figure_id: str, unit: dict) -> int:
    """Per-unit seed derived from the run seed and the unit alone (not from where or when it runs):
    :func:`integrators.seeds.derive` labelled by the figure and the unit's canonical JSON.

    Parameters
    ----------
    run_seed : int
        The run's seed.
    figure_id : str
        The figure's ``ID``.
    unit : dict
        The unit spec.

    Returns
    -------
    int
        The unit's seed.
    """
    return derive(run_seed, "reports", figure_id, json.dumps(unit, sort_keys=True))


def checksum(key, unit, result, meta) -> str:
    """SHA-256 of a stored unit's canonical JSON (what :meth:`Store.load` checks).

    Parameters
    ----------
    key, unit, result, meta
        The parts of a unit file.

    Returns
    -------
    str
        The hex digest.
    """
    canon = json.dumps([key, unit, result, meta], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def json_change(value) -> str | None:
    """Why ``value`` would not come back unchanged from strict JSON, or None where it would: a NaN or an
    infinity, a key that is not a string (``{1: "x"}`` comes back as ``{"1": "x"}``), a tuple (comes back a
    list), an object or an integer JSON cannot hold, nesting too deep.  A unit spec or a figure's metadata that
    changes so would never equal what the store or ``metadata.json`` holds (a checksum mismatch forever).

    Parameters
    ----------
    value
        A would-be JSON value.

    Returns
    -------
    str or None
        The reason, in a few words, or None.
    """
    try:
        same = json.loads(json.dumps(value, allow_nan=False)) == value
    except (TypeError, ValueError, RecursionError) as exc:
        return f"{exc.__class__.__name__}: {str(exc)[:200]}"
    return None if same else "it comes back from JSON changed (a tuple, or a key that is not a string)"


class CorruptUnit(Exception):
    """A unit file that cannot be read or whose checksum does not match."""


class StaleUnit(Exception):
    """A readable unit computed with another seed, preset or code version than the one wanted."""


class Busy(Exception):
    """Another run holds the output folder's lock."""


class UnsafePath(Exception):
    """A path inside the output folder that is a symbolic link, or not the kind of file the store keeps
    there (a directory in place of a unit file): refused by name, never followed."""


class UnsafeLock(UnsafePath):
    """The folder's ``.lock`` is not a regular file of its own (a link, a device): never opened through."""


def own_path(out: Path | str, path: Path | str) -> Path:
    """``path`` (``out`` or a path inside it) when none of its components below ``out`` is a symbolic link.

    Parameters
    ----------
    out : pathlib.Path or str
        The output folder (itself the user's choice, link or not).
    path : pathlib.Path or str
        A path inside ``out``; its components need not exist.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    UnsafePath
        Naming the first component that is a symbolic link (and where it points).
    """
    out, path = Path(out), Path(path)
    here = out
    for part in path.relative_to(out).parts:
        here = here / part
        try:
            is_link = stat.S_ISLNK(os.lstat(here).st_mode)
        except FileNotFoundError:
            break
        if is_link:
            raise UnsafePath(f"{here} is a symbolic link (to {os.readlink(here)}); sms-langevin writes inside --out "
                             f"{out} only, never through a link: remove the link or use another --out")
    return path


def read_regular(path: Path | str) -> str:
    """The text (UTF-8) of ``path``, a regular file inside the output folder, opened without blocking (a fifo
    planted there would hang an ordinary read) and checked on the open descriptor to be a regular file
    (:func:`integrators._files.open_regular`).

    Parameters
    ----------
    path : pathlib.Path or str
        The file to read.

    Returns
    -------
    str
        Its content.

    Raises
    ------
    UnsafePath
        When ``path`` is not a regular file (a fifo, a socket, a device, a folder), naming it and what it is.
    OSError, UnicodeDecodeError
        When it cannot be opened or read, or is not UTF-8.
    """
    try:
        with open_regular(path) as fh:
            data = fh.read()
    except NotRegularFile as exc:
        raise UnsafePath(f"{exc}; sms-langevin reads only regular files inside --out: remove it and rerun") from None
    return data.decode("utf-8")


_HELD_LOCKS: dict[int, tuple[int, int]] = {}  # descriptor -> (device, inode) of the folder locks held here


def _drop_locks_in_child() -> None:
    """In a forked child: let go of the parent's ``flock`` folder locks by pointing their descriptors at
    ``/dev/null`` (not closing them, never unlocking: that would release the parent's lock)."""
    for fd, file_id in list(_HELD_LOCKS.items()):
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != file_id:  # closed without __exit__, the number reused since
                continue
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, fd, inheritable=False)
            os.close(null)
        except OSError:
            pass
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_locks_in_child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _lock_holders(path: Path) -> list[int]:
    """The processes other than this one with ``path`` open (Linux, from ``/proc``; the processes of
    other users are not visible there): who holds a folder lock.  Empty where that cannot be read."""
    try:
        target = os.stat(path)
        procs = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return []
    holders = []
    for pid in procs:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                holders.append(int(pid))
                break
    return sorted(holders)


def own_tree(out: Path | str, folder: Path | str) -> Path:
    """``folder`` (inside ``out``) checked as :func:`own_path` does, and nothing inside it a symbolic link:
    for a folder whose files are written in place (the tour's pages).

    Parameters
    ----------
    out : pathlib.Path or str
        The output folder.
    folder : pathlib.Path or str
        A folder inside ``out`` (it need not exist).

    Returns
    -------
    pathlib.Path
        ``folder``.

    Raises
    ------
    UnsafePath
        Naming the first link found.
    """
    folder = own_path(out, folder)
    for parent, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            own_path(parent, Path(parent) / name)
    return folder


class FolderLock:
    """``with FolderLock(out):`` holds ``out/.lock`` (``out`` the output folder) exclusively or raises
    :class:`Busy` at once."""

    def __init__(self, out: Path | str):
        self.path = Path(out) / ".lock"
        self.fh = None

    def __enter__(self):
        self.fh = os.fdopen(self._open_own_file(), "r+")
        os.set_inheritable(self.fh.fileno(), False)
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "unknown"
            self.fh.close()
            raise Busy(self._busy_message(holder)) from None
        st = os.fstat(self.fh.fileno())
        _HELD_LOCKS[self.fh.fileno()] = (st.st_dev, st.st_ino)
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"{os.getpid()}\n")
        self.fh.flush()
        return self

    def _open_own_file(self) -> int:
        """A descriptor of the lock file, never through a link: ``O_NOFOLLOW`` refuses a symbolic link,
        and a file that is not a regular file of its own (a device, a fifo, a hard link to a file
        elsewhere) is refused too, so the PID written into the lock can only land in the lock."""
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_NONBLOCK", 0)  # a fifo planted there must not block the open
        try:
            fd = os.open(self.path, flags, 0o666)
        except OSError:
            if self.path.is_symlink():
                raise UnsafeLock(f"{self.path} is a symbolic link (to {os.readlink(self.path)}); the lock must be a "
                           f"regular file of the folder: remove the link or use another --out") from None
            if self.path.is_dir():  # EISDIR said as the OSError of a failed run, before any unit ran
                raise UnsafeLock(f"{self.path} is a folder, not the lock file sms-langevin keeps there; move it "
                                 f"away or use another --out") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            what = "not a regular file" if not stat.S_ISREG(st.st_mode) else f"a hard link ({st.st_nlink} names)"
            raise UnsafeLock(f"{self.path} is {what}; the lock must be a regular file of the folder alone: remove it "
                       f"or use another --out")
        os.set_blocking(fd, True)
        return fd

    def _busy_message(self, holder: str) -> str:
        folder = self.path.parent
        if not (holder.isdigit() and not _alive(int(holder))):
            return (f"another sms-langevin process (pid {holder}) is writing to {folder}; "
                    f"wait for it to finish or use another --out")
        pids = _lock_holders(self.path) if sys.platform.startswith("linux") else []
        if not pids:
            return (f"another sms-langevin process is writing to {folder} (the run of pid {holder} that took "
                    f"its lock is gone, but a process it left still holds {self.path}); end that process or "
                    f"use another --out")
        one = len(pids) == 1
        names = ", ".join(str(p) for p in pids)
        return (f"another sms-langevin process is writing to {folder}: the run of pid {holder} that took its "
                f"lock is gone, but {'pid' if one else 'pids'} {names} still {'holds' if one else 'hold'} "
                f"{self.path} (left over from it?); end {'it' if one else 'them'} "
                f"(kill {' '.join(map(str, pids))}) and rerun, or use another --out")

    def __exit__(self, *exc):
        _HELD_LOCKS.pop(self.fh.fileno(), None)
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
        self.fh.close()


# the name write_atomic's tempfile.mkstemp(prefix=".tmp-", suffix=".json") gives a unit file's temporary
_TEMPORARY = re.compile(r"\.tmp-[a-z0-9_]{8}\.json")


class Store:
    """The persisted units of a run: ``<out>/units/<figure id>/<unit key>.json``, each written
    atomically with its spec, result, metadata and a checksum.

    Parameters
    ----------
    out : pathlib.Path or str
        The output folder.
    """

    def __init__(self, out: Path | str):
        self.out = Path(out)
        self.root = self.out / "units"

    def _own_file(self, path: Path) -> Path:
        """``path``, a unit file or where one goes, checked (:func:`own_path`) to be no link and no folder."""
        own_path(self.out, path)
        if path.is_dir():
            raise UnsafePath(f"{path} is a folder where the unit file of that name belongs; remove it and rerun "
                             f"(with --resume)")
        return path

    def path(self, figure_id: str, unit: dict) -> Path:
        """Where a unit's file lives.

        Parameters
        ----------
        figure_id : str
            The figure's ``ID``.
        unit : dict
            The unit spec.

        Returns
        -------
        pathlib.Path
            The unit's file.
        """
        return self.root / figure_id / f"{_unit_key(unit)}.json"

    def save(self, figure_id: str, unit: dict, result, meta: dict) -> Path:
        """Write a unit's result and metadata atomically (``write_atomic``).

        Parameters
        ----------
        figure_id : str
            The figure's ``ID``.
        unit : dict
            The unit spec.
        result
            Its JSON-serializable result.
        meta : dict
            Its metadata (the fingerprint among them).

        Returns
        -------
        pathlib.Path
            The file written.
        """
        path = self._own_file(self.path(figure_id, unit))
        path.parent.mkdir(parents=True, exist_ok=True)
        key = _unit_key(unit)
        payload = {"key": key, "unit": unit, "result": result, "meta": meta,
                   "checksum": checksum(key, unit, result, meta)}
        write_atomic(path, json.dumps(payload, sort_keys=True))
        return path

    def _payload(self, figure_id: str, unit: dict) -> dict | None:
        path = self._own_file(self.path(figure_id, unit))
        if not path.exists():
            return None
        try:
            payload = json.loads(read_regular(path))
            ok = payload["checksum"] == checksum(payload["key"], payload["unit"], payload["result"],
                                                  payload["meta"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:  # (nested too deeply)
            raise CorruptUnit(f"{path}: unreadable ({exc.__class__.__name__})") from None
        except UnsafePath:  # a fifo or device in its place: damaged, replaced when recomputed
            raise CorruptUnit(f"{path}: unreadable (not a regular file)") from None
        if not ok:
            raise CorruptUnit(f"{path}: checksum mismatch")
        if payload["unit"] != unit:  # edited by hand, checksum and all: its result is not this unit's
            raise CorruptUnit(f"{path}: holds unit {shortened(payload['unit'])}, not {shortened(unit)}")
        try:
            META.check(payload["meta"], "meta")
        except SchemaError as exc:
            raise CorruptUnit(f"{path}: damaged ({exc})") from None
        return payload

    def load(self, figure_id: str, unit: dict, fingerprint: dict | None = None):
        """The stored result, ``None`` if absent; raises :class:`CorruptUnit` if unreadable and
        :class:`StaleUnit` if ``fingerprint`` is given and the stored one differs from it.

        Parameters
        ----------
        figure_id : str
            The figure's ``ID``.
        unit : dict
            The unit spec.
        fingerprint : dict, optional
            The fingerprint the unit must have been computed with.

        Returns
        -------
        object
            The stored result, or None.

        Raises
        ------
        CorruptUnit
            When the file is unreadable or its checksum does not match.
        StaleUnit
            When the stored fingerprint differs from ``fingerprint``.
        """
        payload = self._payload(figure_id, unit)
        if payload is None:
            return None
        if fingerprint is not None:
            diff = differences(payload["meta"].get("fingerprint"), fingerprint)
            if diff:
                raise StaleUnit(f"{self.path(figure_id, unit)} was computed with " + ", ".join(diff))
        return payload["result"]

    def remove_stale_temporaries(self, figure_ids) -> int:
        """Delete the temporary files of writes a killed run left behind: only the names ``write_atomic``
        gives a unit file's temporary (``.tmp-`` and mkstemp's 8 characters, ``.json``), only directly in the
        folders of ``figure_ids`` (a user's own ``.tmp-draft.tex``, or any file in a folder of no figure, is
        not the store's and is left alone).

        Parameters
        ----------
        figure_ids : iterable of str
            The figures whose unit folders are swept.

        Returns
        -------
        int
            How many were deleted.
        """
        own_path(self.out, self.root)
        stale = []
        for fid in figure_ids:
            folder = self.root / fid
            if folder.is_symlink() or not folder.is_dir():  # a link to a folder is not entered
                continue
            # a folder named like one is not the store's (it writes files only): left alone
            stale += [path for path in folder.iterdir()
                      if _TEMPORARY.fullmatch(path.name) and (path.is_symlink() or not path.is_dir())]
        for path in stale:
            path.unlink(missing_ok=True)  # a link is removed itself, never what it points to
        return len(stale)

    def meta(self, figure_id: str, unit: dict) -> dict:
        """A stored unit's metadata.

        Parameters
        ----------
        figure_id : str
            The figure's ``ID``.
        unit : dict
            The unit spec.

        Returns
        -------
        dict
            Its metadata, empty if the unit is absent.

        Raises
        ------
        CorruptUnit
            When the file is unreadable or its checksum does not match.
        """
        payload = self._payload(figure_id, unit)
        return {} if payload is None else payload["meta"]

__all__ = ["CorruptUnit", "StaleUnit", "Store", "UnsafePath", "checksum", "json_change", "own_path", "own_tree",
           "read_regular", "unit_seed"]
