"""Data for the logistic-regression experiment, read locally (no downloads).

* :func:`embedded_digits`: scikit-learn's digits, shipped inside the package (the default).
* :func:`load_fashion_mnist`: Fashion-MNIST from the standard IDX files in a local folder
  (``train-images-idx3-ubyte`` etc., optionally ``.gz``); missing or corrupt files give an error
  naming the file and what is wrong.
"""

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
    """Read one IDX file (``.gz`` allowed); raise :class:`DataError` naming the file otherwise."""
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


def load_fashion_mnist(folder: str | Path):
    """``(x_train, y_train, x_test, y_test)`` with pixels scaled to [0, 1] and flattened."""
    folder = Path(folder)
    arrays = {key: read_idx(find_idx_file(folder, stem)) for key, stem in FASHION_FILES.items()}
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
            raise DataError(f"{folder}: {split} images {images.shape} and labels {labels.shape} do not match")
        if labels.max() > 9:
            raise DataError(f"{folder}: {split} labels outside 0..9")
    flat = {k: v.reshape(v.shape[0], -1).astype(float) / 255.0 for k, v in arrays.items() if "images" in k}
    return (flat["train_images"], arrays["train_labels"].astype(np.int64),
            flat["test_images"], arrays["test_labels"].astype(np.int64))


def embedded_digits(n_components: int | None = 16, n_train: int = 1200, seed: int = 0):
    """scikit-learn's digits (8x8, 10 classes), standardized, optionally reduced by PCA, with a
    constant feature for the intercept; a fixed random train/test split."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x, y = data.data.astype(float), data.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    x, y = x[order], y[order]
    x_train, x_test = x[:n_train], x[n_train:]
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    if n_components:
        _, _, vt = np.linalg.svd(x_train, full_matrices=False)
        basis = vt[:n_components].T
        scale = np.sqrt(np.mean((x_train @ basis) ** 2, axis=0))
        x_train, x_test = x_train @ basis / scale, x_test @ basis / scale
    add_one = lambda a: np.hstack([a, np.ones((a.shape[0], 1))])  # noqa: E731
    return add_one(x_train), y[:n_train], add_one(x_test), y[n_train:]
