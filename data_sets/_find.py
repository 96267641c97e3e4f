"""Where data files are found: an explicit path or data directory, the environment variable
:data:`DATA_DIR_ENV`, the ``medmnist`` package's download folder, and last the development setup's
data folder beside the repository (:data:`DEV_DATA`). Only paths are checked here (no file is read),
so asking whether a data set is present costs a few ``stat`` calls.  A data directory given, or the
environment variable when set, must be a folder that exists: anything else (a file, a missing
folder, a link loop, a path with NUL) raises :class:`DataError` naming the setting, never a quiet
fall back to the next place."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from data_sets._idx import DataError
from data_sets._layout import MEDMNIST
from integrators._validation import file_path

DATA_DIR_ENV = "SMS_LANGEVIN_DATA_DIR"
# the development setup's data folder beside the repository: the last place searched (the tests' data)
DEV_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SHARED_XRAY = DEV_DATA / "pneumoniamnist-subset.npz"
# ``medmnist`` saves ``<name>.npz`` (28 x 28) in ``~/.medmnist`` (its ``DEFAULT_ROOT``, the home folder
# from ``os.path.expanduser``; the package reads no environment variable to move it)
MEDMNIST_HOME = (".medmnist",)
# MedMNIST's 28 x 28 files on Zenodo (the record the medmnist package downloads from), and the MD5 of
# those whose checksum the package lists and this project has checked
MEDMNIST_URL = "https://zenodo.org/records/10519652/files/{name}.npz?download=1"
MEDMNIST_MD5 = {"pneumoniamnist": "28209eda62fecd6e6a2d98b1501bb15f"}
# how a message names the ways to give a data folder (the command line's option, the argument, the variable)
GIVE_FOLDER = f"pass that folder (the command line's --data-dir, or data_dir=) or set {DATA_DIR_ENV} to it"
# how to obtain each data set read from a folder of local files (nothing is downloaded), by the folder's name
# (the name the BNN presets give find_data): the official page, the files, and what the folder holds
SOURCES = {
    "fashion-mnist": "download train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz "
                     "and t10k-labels-idx1-ubyte.gz (linked from https://github.com/zalandoresearch/fashion-mnist) "
                     "into a folder named fashion-mnist",
    "cifar-10-batches-py": "download cifar-10-python.tar.gz (CIFAR-10, python version) from "
                           "https://www.cs.toronto.edu/~kriz/cifar.html and unpack it: it makes the folder "
                           "cifar-10-batches-py (data_batch_1 to data_batch_5, test_batch)",
    "celeba": "download img_align_celeba.zip, list_attr_celeba.txt and list_eval_partition.txt (linked from "
              "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html) into a folder named celeba and unzip the images "
              "there (celeba/img_align_celeba/)",
}


def how_to_get(name: str) -> str:
    """How to obtain the data set of the folder ``name`` (a key of :data:`SOURCES`), in one sentence."""
    return f"To get it: {SOURCES[name]}; put that folder in a data folder and {GIVE_FOLDER.replace('that', 'the data')}"


def _search_dirs(data_dir, *, medmnist: bool) -> list[tuple[Path | None, str]]:
    """The folders searched, in order, each with how a message names it (never the developer's path;
    None for an unset environment variable, named in the message all the same)."""
    dirs = []
    if data_dir is not None:
        dirs.append((_folder(data_dir, "data_dir"), f"the data directory given ({data_dir})"))
    env = os.environ.get(DATA_DIR_ENV)
    dirs.append((_folder(env, f"${DATA_DIR_ENV}"), f"${DATA_DIR_ENV} ({env})") if env
                else (None, f"${DATA_DIR_ENV} (not set)"))
    if medmnist:
        dirs.append((Path.home().joinpath(*MEDMNIST_HOME),
                     "~/.medmnist (where the medmnist package saves its downloads)"))
    dirs.append((DEV_DATA, "the development setup's data folder beside the repository"))
    return dirs


def _folder(value, setting: str) -> Path:
    """``value`` as a folder that exists, else :class:`DataError` naming ``setting`` and why."""
    try:
        mode = os.stat(value).st_mode
    except ValueError:  # os.stat's refusal of a NUL character
        why = "the path contains a NUL character"
    except OSError as exc:
        why = exc.strerror or exc.__class__.__name__
    else:
        if stat.S_ISDIR(mode):
            return Path(value)
        why = "not a folder"
    shown = repr(os.fspath(value))
    shown = shown if len(shown) <= 200 else f"{shown[:100]}...{shown[-60:]} ({len(shown)} characters)"
    raise DataError(f"{setting} = {shown} is not a usable data folder ({why}); point it at the folder holding "
                    f"the data files{'' if setting == 'data_dir' else ', or unset it'}")


def _looked(dirs: list[tuple[Path | None, str]]) -> str:
    return "; ".join(label for _, label in dirs)


def _data_dir(data_dir) -> str | Path | None:
    return file_path("data_dir", data_dir, none=True)


def find_medmnist(name: str = "pneumoniamnist", *, data_dir: str | os.PathLike | None = None) -> Path:
    """The ``.npz`` file of the MedMNIST set ``name``, searched in order in: ``data_dir`` (a file is
    taken as it is; a folder is searched), the folder named by the environment variable
    :data:`DATA_DIR_ENV` (``SMS_LANGEVIN_DATA_DIR``), ``~/.medmnist`` (where
    ``medmnist.<Set>(split=..., download=True)`` saves ``<name>.npz``), and last the development
    setup's data folder beside the repository. In each folder ``<name>.npz`` is looked for, then
    ``<name>-subset.npz``.

    Parameters
    ----------
    name : str
        A key of ``data_sets._layout.MEDMNIST`` (``"pneumoniamnist"``, ``"bloodmnist"``, ...).
    data_dir : str, path-like or None
        A ``.npz`` file, or a folder searched first.

    Returns
    -------
    pathlib.Path
        The first file found.

    Raises
    ------
    ValueError
        If ``name`` is not a MedMNIST set this package reads, or ``data_dir`` is not a path.
    DataError
        If no file is found (or ``data_dir`` names a ``.npz`` file that does not exist): the message
        says where it looked and how to obtain the data; or if ``data_dir`` (not a ``.npz`` file)
        or ``SMS_LANGEVIN_DATA_DIR`` (when set) is not a folder that exists, naming which.
    """
    if not isinstance(name, str) or name.lower() not in MEDMNIST:
        raise ValueError(f"name must be one of {', '.join(MEDMNIST)}, got {name!r}")
    name = name.lower()
    data_dir = _data_dir(data_dir)
    if data_dir is not None and Path(data_dir).suffix.lower() == ".npz":
        if Path(data_dir).exists():  # (a fifo or folder in its place is refused by name when read)
            return Path(data_dir)
        raise DataError(f"{data_dir}: file not found")
    dirs = _search_dirs(data_dir, medmnist=True)
    for folder, _ in dirs:
        for file in () if folder is None else (f"{name}.npz", f"{name}-subset.npz"):
            if (folder / file).exists():  # not skipped when it is no regular file: the reader refuses it by name
                return folder / file
    cls, md5 = MEDMNIST[name].name, MEDMNIST_MD5.get(name)
    raise DataError(f"{name}.npz not found; looked in {_looked(dirs)}. To get it: download "
                    f"{MEDMNIST_URL.format(name=name)}{f' (MD5 {md5})' if md5 else ''} as {name}.npz into a folder "
                    f"and {GIVE_FOLDER}; or, with the medmnist package (pip install medmnist, which also installs "
                    f"torch, torchvision, pandas and scikit-image), python -c \"import medmnist; medmnist.{cls}("
                    f"split='train', download=True)\" saves ~/.medmnist/{name}.npz, found there")


def find_data(name: str | os.PathLike, *, data_dir: str | os.PathLike | None = None) -> Path:
    """A data set's file or folder.  A path (absolute, or starting with ``./`` or ``../``) is taken as
    it is; a bare name (``"fashion-mnist"``) is looked for inside ``data_dir``, the folder of
    :data:`DATA_DIR_ENV` (``SMS_LANGEVIN_DATA_DIR``), the development setup's data folder beside the
    repository, and last the working folder (so a configured folder wins over a stray copy there).

    Parameters
    ----------
    name : str or path-like
        The file or folder (``"fashion-mnist"``, ``"cifar-10-batches-py"``, a full path).
    data_dir : str, path-like or None
        A folder searched first.

    Returns
    -------
    pathlib.Path
        The first match.

    Raises
    ------
    ValueError
        If ``name`` or ``data_dir`` is not a path.
    DataError
        If it is found nowhere: the message says where it looked and how to point to the data; or if
        ``data_dir`` or ``SMS_LANGEVIN_DATA_DIR`` (when set) is not a folder that exists, naming which.
    """
    file_path("name", name)
    data_dir = _data_dir(data_dir)
    if data_dir is not None:
        _folder(data_dir, "data_dir")  # given, so checked even where the name is a path of its own
    path = Path(name)
    explicit = path.is_absolute() or os.fspath(name).startswith(("./", "../"))
    dirs = [] if explicit else _search_dirs(data_dir, medmnist=False)
    for folder in [folder for folder, _ in dirs if folder is not None] + [Path.cwd()] * (not explicit):
        if (folder / path).exists():
            return folder / path
    if explicit and path.exists():
        return path
    where = f"; also looked in {_looked(dirs)}" if dirs else ""
    if path.name in SOURCES:
        raise DataError(f"{path}: not found{where}. {how_to_get(path.name)} (or pass its full path); nothing is "
                        f"downloaded")
    raise DataError(f"{path}: not found{where}. Put it in a folder and {GIVE_FOLDER} (or pass its full path); "
                    f"nothing is downloaded")
