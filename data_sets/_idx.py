"""The IDX format (Fashion-MNIST's files) and the error every loader raises for a missing or
corrupt file (:class:`DataError`, naming the file and what is wrong)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
             0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
FASHION_FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
                 "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}


class DataError(ValueError):
    """A data file is missing or corrupt."""


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (``.gz`` allowed)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    if len(raw) < 4:
        raise DataError(f"{path}: too short for an IDX header ({len(raw)} bytes)")
    zero, type_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or type_code not in IDX_TYPES or ndim == 0:
        raise DataError(f"{path}: not an IDX file (magic bytes {raw[:4].hex()})")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{path}: truncated header")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(IDX_TYPES[type_code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise DataError(f"{path}: header says shape {shape} ({expected} bytes of data) but the file "
                        f"holds {len(raw) - header} bytes")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)


def find_idx_file(folder: str | Path, stem: str) -> Path:
    """The IDX file ``stem`` in ``folder``, as it is or gzipped (``stem.gz``); :class:`DataError`
    naming the file when neither exists.  Fashion-MNIST is distributed both ways."""
    folder = Path(folder)
    for name in (stem, stem + ".gz"):
        if (folder / name).exists():
            return folder / name
    raise DataError(f"{folder / stem}: file not found (also looked for {stem}.gz)")
