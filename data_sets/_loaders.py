"""The loaders: each data set read from its standard public format in a local folder (or shipped
inside a package), checked by :func:`data_sets._layout.check_layout`."""

from __future__ import annotations

import errno
import numbers
import os
import pickle
import re
import tokenize
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path, PurePosixPath, PureWindowsPath

import numpy as np

from data_sets._find import find_medmnist, how_to_get
from data_sets._idx import FASHION_FILES, MAX_IDX_BYTES, DataError, find_idx_file, read_idx
from data_sets._layout import (
    FASHION_MNIST,
    MEDMNIST,
    MEDMNIST_DEFAULT,
    DataSpec,
    Field,
    ImageData,
    Part,
    check_layout,
    scaled_pixels,
)
from integrators._files import NotRegularFile, open_regular
from integrators._validation import boolean, file_path, int_at_least

CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"
CELEBA_ATTRS = "list_attr_celeba.txt"
MAX_IMAGE_SIDE = 2048  # the largest side the image loaders resize to (size**2 bytes a channel per image)


def image_side(size) -> int:
    """``size``, the side images are resized to: an integer from 1 to :data:`MAX_IMAGE_SIDE`."""
    size = int_at_least("size", size, 1)
    if size > MAX_IMAGE_SIDE:
        raise ValueError(f"size must be at most {MAX_IMAGE_SIDE} (the side of the resized images), got {size}")
    return size


XRAY_CLASSES = ("NORMAL", "PNEUMONIA")
IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")


CIFAR10 = DataSpec("CIFAR-10", 10, 3, "first", (32, 32))


def load_fashion_mnist(folder: str | Path) -> ImageData:
    """Fashion-MNIST from its four IDX files in ``folder`` (gzip or not): 1 x 28 x 28, 10 classes.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder of the four files.

    Returns
    -------
    ImageData
        The training and test splits.

    Raises
    ------
    ValueError
        If ``folder`` is not a file or folder path (``None``, a number).
    DataError
        Naming the file, if a file is missing, unreadable or not of the declared layout (a
        ``ValueError``).
    """
    folder = Path(file_path("folder", folder))
    fields = {}
    for key, stem in FASHION_FILES.items():
        try:
            path = find_idx_file(folder, stem)
        except DataError as exc:
            raise DataError(f"{exc}. {how_to_get('fashion-mnist')}") from None
        fields[key] = Field(read_idx(path), str(path), key)
    out = check_layout(FASHION_MNIST, [Part(s, fields[f"{s}_images"], fields[f"{s}_labels"], s)
                                       for s in ("train", "test")])
    return ImageData(scaled_pixels(out["train"][0]), out["train"][1], scaled_pixels(out["test"][0]), out["test"][1],
                     FASHION_MNIST.n_classes, f"Fashion-MNIST IDX files in {folder}")


try:
    from numpy._core import multiarray as _multiarray
    from numpy._core import numeric as _numeric
except ImportError:  # numpy 1
    from numpy.core import multiarray as _multiarray
    from numpy.core import numeric as _numeric


def _latin1(text: str, encoding: str = "utf-8") -> bytes:
    """``_codecs.encode`` as a protocol 2 pickle written by Python 3 uses it (bytes as latin-1 text)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode({type(text).__name__}, {encoding!r}) is not a bytes literal")
    return text.encode("latin-1")


def _empty_bytes(*args) -> bytes:
    """``bytes()`` as a protocol 2 pickle writes an empty bytes value (an empty array's buffer), and nothing
    else: ``bytes(n)`` of a planted file would allocate ``n`` bytes, so any argument is refused."""
    if args:
        raise pickle.UnpicklingError(f"bytes{args!r:.60} is not the empty bytes literal of protocol 2")
    return b""


# every global a CIFAR-10 python batch needs: numpy's array reconstruction (numpy 1 and 2 module
# names, protocols 2 to 5), its dtypes and scalars, and the bytes literals of protocol 2 (empty ones too)
_CIFAR_GLOBALS = {
    **{(m, "_reconstruct"): _multiarray._reconstruct for m in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(m, "scalar"): _multiarray.scalar for m in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(m, "_frombuffer"): _numeric._frombuffer for m in ("numpy.core.numeric", "numpy._core.numeric")},
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1,
    **{(m, "bytes"): _empty_bytes for m in ("__builtin__", "builtins")},  # an empty batch's data, in protocol 2
}


class _CifarUnpickler(pickle.Unpickler):
    """An unpickler that builds only what the CIFAR-10 python batches hold (dicts, lists, bytes,
    numbers and numpy arrays): any other global (a function, a class) is refused before it is
    looked up, so a planted file cannot run code."""

    def __init__(self, fh, path: Path):
        super().__init__(fh, encoding="bytes")
        self.path = path

    def find_class(self, module: str, name: str):
        try:
            return _CIFAR_GLOBALS[(module, name)]
        except KeyError:
            raise DataError(f"{self.path}: refused to unpickle the global {module}.{name} (a CIFAR-10 python "
                            f"batch holds only dicts, lists, bytes, numbers and numpy arrays)") from None


def unpickle_batch(path: Path) -> dict:
    """One CIFAR-10 python batch as a dict, or :class:`DataError` naming the file."""
    if not path.exists():
        raise _not_found(path)
    try:
        with open_regular(path) as fh:
            batch = _CifarUnpickler(fh, path).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            OSError, MemoryError, RecursionError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: not a CIFAR-10 python batch ({exc.__class__.__name__}: {str(exc)[:200]})") from None
    if not isinstance(batch, dict):
        raise DataError(f"{path}: not a CIFAR-10 python batch (a {type(batch).__name__}, not a dict)")
    # a key that is not UTF-8 is no key a batch holds: shown with replacement characters, never a traceback
    names = [k.decode("utf-8", "replace") if isinstance(k, bytes) else k for k in batch]
    for key in ("data", "labels"):  # both spellings: which one is the batch's cannot be told
        if names.count(key) > 1:
            raise DataError(f"{path}: the batch holds both {key!r} and {key.encode()!r}; a CIFAR-10 batch has one "
                            f"{key} key")
    batch = dict(zip(names, batch.values(), strict=True))
    if "data" not in batch or "labels" not in batch:
        keys = sorted(map(str, batch))
        shown = ", ".join(repr(k[:40]) for k in keys[:10]) + (f", ... ({len(keys)} keys)" if len(keys) > 10 else "")
        raise DataError(f"{path}: CIFAR-10 batch without 'data' and 'labels' (keys: {shown})")
    try:
        data = np.asarray(batch["data"])
    except (ValueError, TypeError, RecursionError) as exc:  # ragged rows, objects
        raise DataError(f"{path}: 'data' must be uint8 (n, 3072), got rows numpy cannot stack "
                        f"({exc.__class__.__name__})") from None
    if data.ndim != 2 or data.shape[1] != 3072 or data.dtype != np.uint8:
        raise DataError(f"{path}: 'data' must be uint8 (n, 3072), got {data.dtype} {data.shape}")
    boolean = _first_boolean(batch["labels"])
    if boolean is not None:  # the layout check reads True and False as classes 1 and 0 (of two-class sets)
        raise DataError(f"{path} [labels]: labels must be integers (class indices of CIFAR-10's 10 classes), got "
                        f"the boolean {bool(boolean)}")
    return {"data": data, "labels": batch["labels"]}


def _first_boolean(labels):
    """The first boolean among ``labels`` (a list, tuple or array, nested or not), else None."""
    try:
        flat = np.asarray(labels, dtype=object).ravel()
    except (ValueError, TypeError, RecursionError):  # ragged: the layout check names it
        return None
    return next((v for v in flat if isinstance(v, bool | np.bool_)), None)


def load_cifar10(folder: str | Path) -> ImageData:
    """CIFAR-10 from the python batches in ``folder`` (``cifar-10-batches-py``): 3 x 32 x 32, 10 classes.

    The batches are pickled dicts, a format that can carry code; they are read with a restricted
    unpickler that builds only dicts, lists, bytes, numbers and numpy arrays, and a file that asks
    for anything else (a function, another class) is refused with a :class:`DataError` naming the
    file and the global, before anything of it runs.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder of the batches.

    Returns
    -------
    ImageData
        The training and test splits.

    Raises
    ------
    ValueError
        If ``folder`` is not a file or folder path (``None``, a number).
    DataError
        Naming the file, if a file is missing, unreadable or not of the declared layout (a
        ``ValueError``).
    """
    folder = Path(file_path("folder", folder))
    absent = [name for name in (*CIFAR_TRAIN, CIFAR_TEST) if not (folder / name).exists()]
    if absent:
        raise DataError(f"{folder / absent[0]}: file not found. {how_to_get('cifar-10-batches-py')}")
    parts = []
    for split, names in (("train", CIFAR_TRAIN), ("test", (CIFAR_TEST,))):
        for name in names:
            batch = unpickle_batch(folder / name)
            parts.append(Part(name, Field(batch["data"].reshape(-1, 3, 32, 32), str(folder / name), "data"),
                              Field(batch["labels"], str(folder / name), "labels"), split))
    out = check_layout(CIFAR10, parts)
    return ImageData(scaled_pixels(out["train"][0]), out["train"][1], scaled_pixels(out["test"][0]), out["test"][1],
                     CIFAR10.n_classes, f"CIFAR-10 python batches in {folder}")


def eight_bit(path: Path, img):
    """``img`` with 16-bit grayscale (PIL modes ``I;16*`` and ``I``, 0 to 65535) scaled to 8 bits by 65535:
    Pillow's convert clips them at 255 instead, a silently white image.  Other wide modes (``F``, an ``I``
    image beyond 16 bits) are refused, naming the file and its mode."""
    from PIL import Image

    if img.mode.startswith("I;16") or img.mode == "I":
        pixels = np.asarray(img).astype(np.int64)
        if pixels.size and (pixels.min() < 0 or pixels.max() > 65535):
            raise DataError(f"{path}: image mode {img.mode!r} with values from {pixels.min()} to {pixels.max()}, "
                            f"beyond 16 bits; save it as 8- or 16-bit grayscale")
        return Image.fromarray(np.round(pixels * (255 / 65535)).astype(np.uint8), "L")
    if img.mode == "F" or img.mode.startswith(("F;", "I;")):
        raise DataError(f"{path}: image mode {img.mode!r} is not read (8-bit, or 16-bit grayscale, images are)")
    return img


def _read_image(path: Path, size: int, mode: str, center_crop: bool = False) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError
    from PIL.Image import DecompressionBombError  # more pixels than Pillow's limit: refused, never decoded

    try:
        with open_regular(path) as fh, Image.open(fh) as img:
            img = eight_bit(path, img).convert(mode)
            if center_crop:
                side = min(img.size)
                left, top = (img.size[0] - side) // 2, (img.size[1] - side) // 2
                img = img.crop((left, top, left + side, top + side))
            img = img.resize((size, size), Image.BILINEAR)
            return np.asarray(img, dtype=np.uint8)
    except (UnidentifiedImageError, DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        raise DataError(f"{path}: cannot read the image ({exc.__class__.__name__}: {exc})") from None


def _read_list(path: Path) -> list[str]:
    """The lines of a Celeb-A list file, or :class:`DataError` naming it when it is not a readable UTF-8 text
    file (a folder in its place, bytes that are not UTF-8)."""
    try:
        with open_regular(path) as fh:
            return fh.read().decode("utf-8").splitlines()
    except NotRegularFile as exc:  # (a fifo would have blocked the read)
        raise DataError(f"{path}: cannot read the list ({exc}); it must be a UTF-8 text file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the list ({exc.__class__.__name__}); it must be a UTF-8 text file") \
            from None


def _split(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    n_test = max(1, int(round(test_fraction * n))) if n > 1 else 0
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def load_celeba(folder: str | Path, *, size: int = 64, test_fraction: float = 0.1, seed: int = 0,
                max_images: int | None = None) -> ImageData:
    """Celeb-A, blond (label 0) against brown hair (label 1), images center-cropped and resized to
    ``size``. ``folder`` holds ``list_attr_celeba.txt`` and ``img_align_celeba/`` (the images);
    images with both or neither attribute are left out. ``list_eval_partition.txt`` (0 train, 1 val,
    2 test) gives the split when present (val joins train), else a seeded random split; ``max_images``
    keeps that many (with a partition: the first of each split, about ``test_fraction`` of them test).

    Parameters
    ----------
    folder : str or pathlib.Path
        The Celeb-A folder.
    size : int, default 64
        The side of the resized images.
    test_fraction : float, default 0.1
        The fraction of images in the test split without a partition file, in ``(0, 1)``.
    seed : int, default 0
        The seed of the random split.
    max_images : int or None, default None
        Keep that many images (None: all).

    Returns
    -------
    ImageData
        The training and test splits, 3 channels.

    Raises
    ------
    ValueError
        If ``folder`` is not a path, ``size``, ``seed`` or ``max_images`` is not an integer in range, or
        ``test_fraction`` not in ``(0, 1)``.
    DataError
        Naming the file, if a file is missing, unreadable or not of the declared layout (a
        ``ValueError``).
    """
    size = image_side(size)
    seed = int_at_least("seed", seed, 0)
    if max_images is not None:
        max_images = int_at_least("max_images", max_images, 1)
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, numbers.Real) or not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be a number in (0, 1), got {test_fraction!r}")
    folder = Path(file_path("folder", folder))
    attr_path = folder / CELEBA_ATTRS
    if not attr_path.exists():
        raise DataError(f"{attr_path}: file not found. {how_to_get('celeba')}")
    lines = _read_list(attr_path)
    if len(lines) < 2:
        raise DataError(f"{attr_path}: truncated (needs a count line and a header line)")
    names = lines[1].split()
    missing = [a for a in ("Blond_Hair", "Brown_Hair") if a not in names]
    if missing:
        raise DataError(f"{attr_path}: header lacks {', '.join(missing)}")
    blond, brown = names.index("Blond_Hair"), names.index("Brown_Hair")
    files, labels, listed = [], [], 0
    for lineno, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if not parts:
            continue
        listed += 1
        if len(parts) != len(names) + 1:
            raise DataError(f"{attr_path}: line {lineno} has {len(parts) - 1} values after the file name; the header "
                            f"names {len(names)} attributes, one value (1 or -1) each")
        bad = next((i for i, v in enumerate(parts[1:]) if v not in ("1", "-1")), None)
        if bad is not None:
            raise DataError(f"{attr_path}: line {lineno}: the value of {names[bad]} must be 1 or -1, got "
                            f"{parts[1 + bad]!r}")
        name = PurePosixPath(parts[0].replace("\\", "/"))
        if name.is_absolute() or ".." in name.parts or PureWindowsPath(parts[0]).drive:
            # the image is opened at img_align_celeba/<name>: a name must not lead out of that folder
            raise DataError(f"{attr_path}: line {lineno}: the file name {parts[0]!r} leaves img_align_celeba/ "
                            f"(an image's name is a path inside it)")
        is_blond, is_brown = parts[1 + blond] == "1", parts[1 + brown] == "1"
        if is_blond != is_brown:
            files.append(parts[0])
            labels.append(0 if is_blond else 1)
    try:
        declared = int(lines[0].split()[0])
    except (ValueError, IndexError):
        raise DataError(f"{attr_path}: first line must be the number of images, got {lines[0]!r}") from None
    if declared != listed:  # blank lines are no images: counted neither here nor in the message
        raise DataError(f"{attr_path}: its first line says {declared} images but it lists {listed} (one line per "
                        f"image after the header{'; truncated?' if listed < declared else ''})")
    if not files:
        raise DataError(f"{attr_path}: no image has exactly one of Blond_Hair and Brown_Hair")
    partition = folder / "list_eval_partition.txt"
    if partition.exists():
        part = {}
        for lineno, line in enumerate(_read_list(partition), start=1):
            if line.split():
                if len(line.split()) < 2:
                    raise DataError(f"{partition}: line {lineno} is not '<file> <0, 1 or 2>'")
                part[line.split()[0]] = line.split()[1]
        is_test = np.array([part.get(f) == "2" for f in files])
        if max_images:  # per split: the official partition lists its test images last
            n_test = min(int(is_test.sum()), max(1, round(max_images * test_fraction)))
            keep = np.sort(np.concatenate([np.flatnonzero(~is_test)[:max_images - n_test],
                                           np.flatnonzero(is_test)[:n_test]]))
            files, labels, is_test = [files[i] for i in keep], [labels[i] for i in keep], is_test[keep]
        train, test = np.flatnonzero(~is_test), np.flatnonzero(is_test)
        split_by = partition
    else:
        if max_images:
            files, labels = files[:max_images], labels[:max_images]
        train, test = _split(len(files), test_fraction, seed)
        split_by = attr_path
    image_dir = folder / "img_align_celeba"
    images = np.stack([_read_image(image_dir / f, size, "RGB", center_crop=True) for f in files])
    labels = np.array(labels, dtype=np.int64)
    spec = DataSpec("Celeb-A blond vs brown hair", 2, 3, "last", (size, size))
    out = check_layout(spec, [Part(s, Field(images[idx], str(split_by), f"{s} split"),
                                   Field(labels[idx], str(attr_path), f"{s} labels"), s)
                              for s, idx in (("train", train), ("test", test))])
    return ImageData(scaled_pixels(out["train"][0]), out["train"][1], scaled_pixels(out["test"][0]), out["test"][1],
                     spec.n_classes, f"Celeb-A blond vs brown hair in {folder} ({size}x{size})")


def load_chest_xray(folder: str | Path, *, size: int = 180) -> ImageData:
    """The chest X-ray folder layout ``folder/{train,test}/{NORMAL,PNEUMONIA}/*.jpeg`` (Kermany et
    al.), grayscale, resized to ``size`` x ``size``; NORMAL is 0, PNEUMONIA 1.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder of the ``train`` and ``test`` folders.
    size : int, default 180
        The side of the resized images.

    Returns
    -------
    ImageData
        The training and test splits, one channel.

    Raises
    ------
    ValueError
        If ``folder`` is not a path or ``size`` is not an integer from 1 to :data:`MAX_IMAGE_SIDE`.
    DataError
        Naming the file, if a file is missing, unreadable or not of the declared layout (a
        ``ValueError``).
    """
    size = image_side(size)
    folder = Path(file_path("folder", folder))
    parts = []
    for split in ("train", "test"):
        xs, ys = [], []
        for label, cls in enumerate(XRAY_CLASSES):
            d = folder / split / cls
            if not d.is_dir():
                raise DataError(f"{d}: folder not found (expected {folder}/{{train,test}}/{{NORMAL,PNEUMONIA}})")
            paths = sorted(p for p in d.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            xs += [_read_image(p, size, "L") for p in paths]
            ys += [label] * len(paths)
        images = np.stack(xs) if xs else np.zeros((0, size, size), np.uint8)
        where = str(folder / split)
        parts.append(Part(split, Field(images, where, f"images ({', '.join(IMAGE_SUFFIXES)})"),
                          Field(np.array(ys, dtype=np.int64), where, "labels"), split))
    spec = DataSpec("chest X-ray", len(XRAY_CLASSES), 1, "last", (size, size))
    out = check_layout(spec, parts)
    return ImageData(scaled_pixels(out["train"][0]), out["train"][1], scaled_pixels(out["test"][0]), out["test"][1],
                     spec.n_classes, f"chest X-ray folders in {folder} ({size}x{size})")


def medmnist_set(path: str | Path) -> str:
    """The MedMNIST set a file's name declares (``pneumoniamnist.npz``, ``bloodmnist_64.npz``,
    ``pneumoniamnist-subset.npz``: a key of :data:`MEDMNIST`), or :data:`MEDMNIST_DEFAULT` when the
    name names none; :class:`DataError` for a MedMNIST set this loader cannot read."""
    name = Path(path).name.lower()
    for key in MEDMNIST:
        if re.match(rf"{key}(?![a-z0-9])", name):
            return key
    other = re.match(r"(chestmnist|[a-z]+mnist3d)(?![a-z0-9])", name)
    if other:
        raise DataError(f"{path}: {other.group(1)} is not a single-label 2D MedMNIST set (this loader reads "
                        f"{', '.join(MEDMNIST)}); pass dataset= if the name misleads")
    return MEDMNIST_DEFAULT


def _not_found(path: Path) -> DataError:
    """The error for a path ``exists()`` denies: a symbolic link loop or a dangling link said as such
    (``Path.exists`` reads both as absent, and "file not found" would send the user looking elsewhere)."""
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return DataError(f"{path}: a symbolic link loop (the link leads back to itself)")
        return DataError(f"{path}: a symbolic link to {os.readlink(path)!r}, which does not exist")
    return DataError(f"{path}: file not found")


def _read_npz(path: Path) -> dict:
    if not path.exists():
        raise _not_found(path)
    try:
        fh = open_regular(path)
    except OSError as exc:  # (a fifo in its place would hang np.load)
        raise DataError(f"{path}: not a readable .npz ({exc.__class__.__name__}: {exc})") from None
    with fh:
        return _read_npz_file(fh, path)


def _read_npz_file(fh, path: Path) -> dict:
    try:
        npz = np.load(fh, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{path}: not a readable .npz ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise DataError(f"{path}: not an .npz archive (a single .npy array of shape {np.shape(npz)} renamed?)")
    with npz:
        for member in npz.zip.infolist():  # the declared inflated size, checked before anything is inflated
            if member.file_size > MAX_IDX_BYTES:
                raise DataError(f"{path}: member {member.filename} would inflate to {member.file_size} bytes, more "
                                f"than the {MAX_IDX_BYTES} a data file may hold")
        arrays = {}
        for key in npz.files:
            try:
                arrays[key] = npz[key]
            # numpy parses a member's .npy header with tokenize and ast.literal_eval: a malformed one raises
            # TokenError, SyntaxError, TypeError, RecursionError as well as ValueError
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, MemoryError, tokenize.TokenError,
                    SyntaxError, TypeError, RecursionError) as exc:
                first = (str(exc).splitlines() or [""])[0][:200]
                raise DataError(f"{path}: member {key} is not a readable array ({exc.__class__.__name__}: "
                                f"{first})") from None
        return arrays


def load_medmnist(path: str | Path | None = None, *, dataset: str | None = None, n_classes: int | None = None,
                  include_val: bool = True) -> ImageData:
    """A MedMNIST ``.npz`` (``train_images``, ``train_labels``, ``val_*``, ``test_*``; images uint8
    ``(n, H, W)`` or ``(n, H, W, C)``, labels ``(n, 1)``); with ``include_val`` the validation split
    joins the training set. ``path``: the file, or a folder searched first, or None: the file is
    found by :func:`data_sets.find_medmnist` (``SMS_LANGEVIN_DATA_DIR``, ``~/.medmnist``, ...).
    ``dataset``: the set the file holds, a key of :data:`MEDMNIST` (its classes and channels); None:
    the set the file name declares (:func:`medmnist_set`), PneumoniaMNIST if it names none.
    ``n_classes``: None (the set's) or an integer >= 2 (a relabelled file). The whole layout is
    checked (:func:`check_layout`), the validation split included even when left out. The
    validation split is optional: absent, or present with no images and no labels, it adds nothing;
    the training and test splits must hold images, the training set (with the validation split
    when it joins) at least two classes.

    Parameters
    ----------
    path : str or pathlib.Path or None, optional
        The file, or a folder searched first, or None (found by :func:`data_sets.find_medmnist`).
    dataset : str or None, optional
        The set the file holds, a key of :data:`MEDMNIST`; None: the set the file name declares.
    n_classes : int or None, optional
        None (the set's) or an integer >= 2 (a relabelled file).
    include_val : bool, default True
        Whether the validation split joins the training set.

    Returns
    -------
    ImageData
        The training and test splits.

    Raises
    ------
    ValueError
        If ``dataset`` is not a known set, ``n_classes`` is below 2, or ``path`` is not a path or None.
    DataError
        Naming the file, if a file is missing, unreadable or not of the declared layout (a
        ``ValueError``).
    """
    if n_classes is not None:
        int_at_least("n_classes", n_classes, 2)
    include_val = boolean("include_val", include_val)
    if dataset is not None and (not isinstance(dataset, str) or dataset.lower() not in MEDMNIST):
        raise ValueError(f"dataset must be None or one of {', '.join(MEDMNIST)}, got {dataset!r}")
    path = file_path("path", path, none=True)
    if path is None or Path(path).is_dir():
        path = find_medmnist(dataset.lower() if dataset else MEDMNIST_DEFAULT, data_dir=path)
    path = Path(path)
    arrays = _read_npz(path)
    key = dataset.lower() if dataset is not None else medmnist_set(path)
    guessed = dataset is None and not re.match(rf"{key}(?![a-z0-9])", path.name.lower())
    spec = MEDMNIST[key]
    if n_classes is not None:
        spec = replace(spec, n_classes=n_classes)
        if guessed and np.ndim(arrays.get("train_images")) == 4:  # a relabelled file of another set: its channels
            spec = replace(spec, name="a MedMNIST-format set", channels=int(np.shape(arrays["train_images"])[-1]))
    need = ["train_images", "train_labels", "test_images", "test_labels"]
    missing = [k for k in need if k not in arrays]
    if missing:
        raise DataError(f"{path}: missing arrays {', '.join(missing)} (has {', '.join(sorted(arrays)) or 'none'})")
    if ("val_images" in arrays) != ("val_labels" in arrays):
        have, lack = ("val_images", "val_labels") if "val_images" in arrays else ("val_labels", "val_images")
        raise DataError(f"{path}: {have} without {lack} (a split needs both)")
    if "val_images" in arrays and np.shape(arrays["val_images"])[:1] == np.shape(arrays["val_labels"])[:1] == (0,):
        del arrays["val_images"], arrays["val_labels"]  # an empty validation split: as if absent
    splits = {"train": "train", "val": "train" if include_val else None, "test": "test"}
    try:
        out = check_layout(spec, [Part(s, Field(arrays[f"{s}_images"], str(path), f"{s}_images"),
                                       Field(arrays[f"{s}_labels"], str(path), f"{s}_labels"), split)
                                  for s, split in splits.items() if f"{s}_images" in arrays])
    except DataError as exc:
        if not guessed:
            raise
        raise DataError(f"{exc} (the file name names no MedMNIST set, so it was read as {spec.name}; pass "
                        f"dataset= for another set, or n_classes= for a relabelled file)") from None
    return ImageData(scaled_pixels(out["train"][0]), out["train"][1], scaled_pixels(out["test"][0]), out["test"][1],
                     spec.n_classes, f"MedMNIST npz {path.name}")


def embedded_digits(*, seed: int = 0, n_train: int = 1200) -> ImageData:
    """scikit-learn's digits (1 x 8 x 8, 10 classes, shipped inside the package), scaled to [0, 1],
    with a fixed random train/test split: the data of the ``tiny`` preset. ``n_train`` is from 1 to
    the number of images less one (a test set remains).

    Parameters
    ----------
    seed : int, default 0
        The seed of the split.
    n_train : int, default 1200
        The number of training images.

    Returns
    -------
    ImageData
        The training and test splits.

    Raises
    ------
    ValueError
        If ``seed`` is not an integer >= 0, or ``n_train`` not from 1 to the number of images less one.
    """
    from sklearn.datasets import load_digits

    seed = int_at_least("seed", seed, 0)
    n_train = int_at_least("n_train", n_train, 1)
    data = load_digits()
    if n_train > len(data.target) - 1:
        raise ValueError(f"n_train must be <= {len(data.target) - 1} (digits has {len(data.target)} images and "
                         f"the test set keeps at least one), got {n_train}")
    x = (data.images / 16.0).astype(np.float32)[:, None]
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    return ImageData(x[:n_train], y[:n_train], x[n_train:], y[n_train:], 10, "scikit-learn digits (8x8)")


def synthetic(in_shape: tuple[int, int, int], n_classes: int, *, n_train: int, n_test: int, seed: int = 0) -> ImageData:
    """Random images of a given shape whose labels depend on them (the class whose fixed random
    template correlates most with the image): data of the right shape where real files are absent
    (the GPU benchmark). Not a data set to report accuracies on.

    Parameters
    ----------
    in_shape : tuple of (int, int, int)
        The shape ``(C, H, W)`` of an image.
    n_classes : int
        The number of classes, at least 2.
    n_train, n_test : int
        The number of images of each split, at least 1.
    seed : int, default 0
        The seed of the images and templates.

    Returns
    -------
    ImageData
        The training and test splits.

    Raises
    ------
    ValueError
        If ``in_shape`` is not three integers >= 1, or a count is out of range.
    """
    if not isinstance(in_shape, tuple | list | np.ndarray) or len(in_shape) != 3:
        raise ValueError(f"in_shape must be (channels, height, width), got {in_shape!r}")
    for size in in_shape:
        int_at_least("in_shape", size, 1)
    n_classes = int_at_least("n_classes", n_classes, 2)
    n_train = int_at_least("n_train", n_train, 1)
    n_test = int_at_least("n_test", n_test, 1)
    seed = int_at_least("seed", seed, 0)
    in_shape = tuple(int(v) for v in in_shape)
    rng = np.random.default_rng(seed)
    templates = rng.standard_normal((n_classes, int(np.prod(in_shape)))).astype(np.float32)
    x = rng.random((n_train + n_test, *in_shape), dtype=np.float32)
    y = np.argmax((x.reshape(len(x), -1) - 0.5) @ templates.T, axis=1).astype(np.int64)
    return ImageData(x[:n_train], y[:n_train], x[n_train:], y[n_train:], n_classes,
                     f"synthetic {in_shape} images, {n_classes} classes (template labels)")


LOADERS = {"fashion_mnist": load_fashion_mnist, "cifar10": load_cifar10, "celeba": load_celeba,
           "chest_xray": load_chest_xray, "medmnist": load_medmnist, "digits": embedded_digits, "synthetic": synthetic}
