"""The IDX format (Fashion-MNIST's files) and the error every loader raises for a missing or
corrupt file (:class:`DataError`, naming the file and what is wrong)."""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from integrators._files import open_regular
from integrators._validation import printable

IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
             0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
FASHION_FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
                 "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}


class DataError(ValueError):
    """A data file is missing or corrupt; the message names the file, its non-printable characters escaped
    (:func:`integrators._validation.printable`: a file name is the user's input, echoed).

    Parameters
    ----------
    message : str
        What is wrong, naming the file.
    """

    def __init__(self, message):
        super().__init__(printable(message))


MAX_IDX_BYTES = 2**31  # the most data one IDX file may hold, decompressed (Fashion-MNIST's largest: 47 MB)
MAX_IDX_DIMENSIONS = 32  # the most an array of numpy 1 may have (numpy 2: 64); Fashion-MNIST's files have 1 or 3


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (``.gz`` allowed).  The data's size is computed from the header in Python
    integers and refused above :data:`MAX_IDX_BYTES` before anything more is read; a gzipped file is
    decompressed only as far as its header says (plus one byte to see a longer file), so a small file
    that expands to gigabytes is refused, not unpacked."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    try:
        with open_regular(path) as raw, (gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw) as fh:
            return _read_idx_stream(fh, path)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def _read_idx_stream(fh, path: Path) -> np.ndarray:
    head = fh.read(4)
    if len(head) < 4:
        raise DataError(f"{path}: too short for an IDX header ({len(head)} bytes)")
    zero, type_code, ndim = struct.unpack(">HBB", head)
    if zero != 0 or type_code not in IDX_TYPES or ndim == 0:
        raise DataError(f"{path}: not an IDX file (magic bytes {head.hex()})")
    if ndim > MAX_IDX_DIMENSIONS:  # numpy's reshape would refuse it without naming the file
        raise DataError(f"{path}: header says {ndim} dimensions, more than the {MAX_IDX_DIMENSIONS} an array may have")
    dims = fh.read(4 * ndim)
    if len(dims) < 4 * ndim:
        raise DataError(f"{path}: truncated header")
    shape = struct.unpack(f">{ndim}I", dims)
    dtype = np.dtype(IDX_TYPES[type_code])
    expected = math.prod(shape) * dtype.itemsize  # Python integers: no overflow
    if expected > MAX_IDX_BYTES:
        raise DataError(f"{path}: header says shape {shape} ({expected} bytes of data), more than the "
                        f"{MAX_IDX_BYTES} bytes an IDX file of this reader may hold")
    data = fh.read(expected + 1)
    if len(data) != expected:
        held = f"{len(data)} bytes" if len(data) <= expected else "more"
        raise DataError(f"{path}: header says shape {shape} ({expected} bytes of data) but the file "
                        f"holds {held}")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def find_idx_file(folder: str | Path, stem: str) -> Path:
    """The IDX file ``stem`` in ``folder``, as it is or gzipped (``stem.gz``); :class:`DataError`
    naming the file when neither exists.  Fashion-MNIST is distributed both ways."""
    folder = Path(folder)
    for name in (stem, stem + ".gz"):
        if (folder / name).exists():
            return folder / name
    raise DataError(f"{folder / stem}: file not found (also looked for {stem}.gz)")
