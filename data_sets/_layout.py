"""What every image data set is checked against: its declared layout (:class:`DataSpec`: classes,
channels and their axis, image size), the fields a loader read (:class:`Field`, :class:`Part`), and
the checked result (:class:`ImageData`, float32 images in [0, 1] and int64 labels)."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from data_sets._idx import DataError
from integrators._validation import int_at_least, integer_labels


@dataclass(frozen=True)
class ImageData:
    """Train and test images ``(n, C, H, W)`` float32 in [0, 1], labels int64, and a description.

    Parameters
    ----------
    x_train, x_test : numpy.ndarray
        The images of each split, float32 ``(n, C, H, W)`` in [0, 1].
    y_train, y_test : numpy.ndarray
        Their labels, int64 ``(n,)`` in ``[0, n_classes)``.
    n_classes : int
        The number of classes.
    source : str
        Where the images came from, for messages and reports.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    source: str

    @property
    def in_shape(self) -> tuple[int, int, int]:
        """The shape ``(C, H, W)`` of one image."""
        return tuple(int(s) for s in self.x_train.shape[1:])

    def subset(self, n_train: int | None = None, n_test: int | None = None) -> ImageData:
        """The first images of each split.

        Parameters
        ----------
        n_train, n_test : int or None, optional
            How many of the split's images to keep, from 1 to the number it has (None: all).

        Returns
        -------
        ImageData
            The subset, its source saying so.

        Raises
        ------
        ValueError
            If a count is not an integer from 1 to the number of images of its split.
        """
        for name, value, have in (("n_train", n_train, len(self.y_train)), ("n_test", n_test, len(self.y_test))):
            if value is not None and int_at_least(name, value, 1) > have:
                raise ValueError(f"{name} must be <= {have} (the images of {self.source}), got {value!r}")
        return ImageData(self.x_train[:n_train], self.y_train[:n_train], self.x_test[:n_test],
                         self.y_test[:n_test], self.n_classes, self.source + (
                             f" (first {n_train} train, {n_test} test)" if n_train or n_test else ""))

    def stratified(self, test_fraction: float, *, seed: int = 0) -> ImageData:
        """Both splits pooled and split again with the class ratio of the pool in each: class ``c``
        with ``n_c`` pooled images puts ``round(test_fraction * n_c)`` of them (a random choice,
        ``numpy.random.default_rng(seed)``) in the test split and the rest in the training split,
        so the two splits' class ratios differ by the rounding of one image per class at most.
        Both splits come in a random order (their first images, :meth:`subset`, are a random
        choice).

        Parameters
        ----------
        test_fraction : float
            The fraction of each class put in the test split, in ``(0, 1)``.
        seed : int, default 0
            The seed of the choice and the orders.

        Returns
        -------
        ImageData
            The splits, the source saying how they were made.

        Raises
        ------
        ValueError
            If ``test_fraction`` is not in ``(0, 1)``, ``seed`` is not an integer >= 0, or a class
            would have no image in one split.
        """
        if isinstance(test_fraction, bool) or not isinstance(test_fraction, numbers.Real) \
                or not 0 < test_fraction < 1:
            raise ValueError(f"test_fraction must be a number in (0, 1), got {test_fraction!r}")
        seed = int_at_least("seed", seed, 0)
        x = np.concatenate([self.x_train, self.x_test])
        y = np.concatenate([self.y_train, self.y_test])
        rng = np.random.default_rng(seed)
        test = []
        for c in range(self.n_classes):
            idx = np.flatnonzero(y == c)
            k = int(round(test_fraction * len(idx)))
            if len(idx) and not 0 < k < len(idx):
                raise ValueError(f"test_fraction={test_fraction!r} leaves class {c} ({len(idx)} images) with no "
                                 f"image in one split")
            test.append(rng.permutation(idx)[:k])
        is_test = np.zeros(len(y), dtype=bool)
        is_test[np.concatenate(test)] = True
        train_idx = rng.permutation(np.flatnonzero(~is_test))
        test_idx = rng.permutation(np.flatnonzero(is_test))
        return ImageData(x[train_idx], y[train_idx], x[test_idx], y[test_idx], self.n_classes,
                         f"{self.source}, pooled and split stratified ({len(test_idx)} test images, "
                         f"{test_fraction:g} of each class)")


@dataclass(frozen=True)
class DataSpec:
    """The layout a declared data set's files must have: ``n_classes`` (labels in ``[0, K)``),
    ``channels`` on the axis the format puts them (``"last"``: ``(n, H, W, C)``, ``"first"``:
    ``(n, C, H, W)``; a one-channel set may leave the axis out, ``(n, H, W)``), and ``image_size``
    ``(H, W)`` where the set fixes it (None: any size, the same in every split)."""

    name: str
    n_classes: int
    channels: int = 1
    channel_axis: str = "last"
    image_size: tuple[int, int] | None = None


@dataclass(frozen=True)
class Field:
    """One array as read, the file (or folder) it came from and the key naming it there."""

    value: object
    file: str
    key: str

    def __str__(self) -> str:
        return f"{self.file} [{self.key}]"


@dataclass(frozen=True)
class Part:
    """Images and their labels read together (a split, a CIFAR-10 batch).

    Parameters
    ----------
    name : str
        The part's name, for messages.
    images, labels : Field
        The images and the labels as read.
    split : str or None
        The split they join (``"train"``, ``"test"``), or None (checked, then left out).
    """

    name: str
    images: Field
    labels: Field
    split: str | None


FASHION_MNIST = DataSpec("Fashion-MNIST", 10, 1, "last", (28, 28))


# MedMNIST v2's single-label 2D sets (ChestMNIST is multi-label, the 3D sets are volumes: not read here)
MEDMNIST = {"pathmnist": DataSpec("PathMNIST", 9, 3), "dermamnist": DataSpec("DermaMNIST", 7, 3),
            "octmnist": DataSpec("OCTMNIST", 4), "pneumoniamnist": DataSpec("PneumoniaMNIST", 2),
            "retinamnist": DataSpec("RetinaMNIST", 5, 3), "breastmnist": DataSpec("BreastMNIST", 2),
            "bloodmnist": DataSpec("BloodMNIST", 8, 3), "tissuemnist": DataSpec("TissueMNIST", 8),
            "organamnist": DataSpec("OrganAMNIST", 11), "organcmnist": DataSpec("OrganCMNIST", 11),
            "organsmnist": DataSpec("OrganSMNIST", 11)}


MEDMNIST_DEFAULT = "pneumoniamnist"  # the set of a file whose name names none (the shared subset's)


def _shape(images: np.ndarray) -> str:
    """``"28x28"`` or ``"32x32 (3 channels)"`` for images ``(n, C, H, W)``."""
    channels = f" ({images.shape[1]} channels)" if images.shape[1] > 1 else ""
    return "x".join(str(v) for v in images.shape[2:]) + channels


def _layout_images(spec: DataSpec, field: Field) -> np.ndarray:
    """``field``'s images as uint8 ``(n, C, H, W)`` (a view), or :class:`DataError` naming it."""
    images = field.value if isinstance(field.value, np.ndarray) else np.asarray(field.value)
    if images.dtype != np.uint8:
        raise DataError(f"{field}: images must be uint8 pixel values, got an array of {images.dtype}")
    where = "last" if spec.channel_axis == "last" else "second"
    wanted = ("(n, H, W) or (n, H, W, 1)" if spec.channel_axis == "last" else "(n, 1, H, W) or (n, H, W)") \
        if spec.channels == 1 else ("(n, H, W, C)" if spec.channel_axis == "last" else "(n, C, H, W)")
    if images.ndim == 3 and spec.channels == 1:
        images = images[:, None]
    elif images.ndim == 4:
        c = images.shape[3] if spec.channel_axis == "last" else images.shape[1]
        if c != spec.channels:
            raise DataError(f"{field}: images of shape {images.shape} have {c} channels on the {where} axis; "
                            f"{spec.name} images have {spec.channels}, {wanted}")
        if spec.channel_axis == "last":
            images = images.transpose(0, 3, 1, 2)
    else:
        raise DataError(f"{field}: images must be {wanted} with C = {spec.channels} for {spec.name}, "
                        f"got shape {images.shape}")
    if images.shape[2] < 1 or images.shape[3] < 1:
        raise DataError(f"{field}: images of shape {images.shape} have no pixels")
    if spec.image_size is not None and images.shape[2:] != tuple(spec.image_size):
        raise DataError(f"{field}: images of {_shape(images)}; {spec.name} images are "
                        f"{spec.image_size[0]}x{spec.image_size[1]}")
    if images.shape[0] == 0:
        raise DataError(f"{field}: no images (an empty split)")
    return images


def _layout_labels(spec: DataSpec, part: Part, n_images: int) -> np.ndarray:
    """``part``'s labels as int64 ``(n,)``, or :class:`DataError` naming the field."""
    field = part.labels
    try:
        labels = np.asarray(field.value)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{field}: labels are not an array ({exc})") from None
    if labels.ndim not in (1, 2) or labels.ndim == 2 and labels.shape[1] != 1:
        raise DataError(f"{field}: labels must be (n,) or (n, 1) (one class per image), got shape {labels.shape}")
    if labels.shape[0] != n_images:
        if part.images.file == field.file:
            raise DataError(f"{field.file} [{part.name}]: {n_images} images but {labels.shape[0]} labels "
                            f"({part.images.key}, {field.key})")
        raise DataError(f"{field}: {labels.shape[0]} labels but {part.images} holds {n_images} images")
    labels = integer_labels(labels, str(field), DataError)
    k = spec.n_classes
    if labels.min() < 0 or labels.max() >= k:
        raise DataError(f"{field}: labels outside 0..{k - 1} ({spec.name} has {k} classes), found "
                        f"{labels.min()}..{labels.max()}")
    return labels.astype(np.int64)


def check_layout(spec: DataSpec, parts: Iterable[Part], splits: tuple[str, ...] = ("train", "test")
                 ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Check what a loader read against the declared data set ``spec`` and join it into ``splits``:
    ``{split: (uint8 images (n, C, H, W), int64 labels (n,))}``. Every part is checked, those left
    out of the splits included: uint8 images with ``spec``'s channels on its axis, at least one
    image, one image shape in every part, as many labels as images, integers in ``[0, K)``; and
    the joined ``"train"`` split must hold at least two classes (a classifier trained on one learns
    nothing). The first violation raises :class:`DataError` naming the file and the field (for a
    single class, the files and the count of each class). No I/O: the one place the loaders'
    layout rules live."""
    joined = {s: ([], [], []) for s in splits}
    first = None
    for part in parts:
        images = _layout_images(spec, part.images)
        if first is None:
            first = (part.images, images)
        elif images.shape[1:] != first[1].shape[1:]:
            raise DataError(f"{part.images}: images of {_shape(images)} but {first[0].key} holds images of "
                            f"{_shape(first[1])} (in {first[0].file}); every split's images must have one shape")
        labels = _layout_labels(spec, part, images.shape[0])
        if part.split is not None:
            joined[part.split][0].append(images)
            joined[part.split][1].append(labels)
            joined[part.split][2].append(part.labels)
    for split, (images, _, _) in joined.items():
        if not images:
            raise ValueError(f"check_layout: no part joins the {split!r} split")  # a loader's bug, not the file's
    out = {s: (np.concatenate(ims) if len(ims) > 1 else ims[0], np.concatenate(lbs) if len(lbs) > 1 else lbs[0])
           for s, (ims, lbs, _) in joined.items()}
    if "train" in out and len(np.unique(out["train"][1])) < 2:
        counts = np.bincount(out["train"][1], minlength=spec.n_classes)
        fields = ", ".join(dict.fromkeys(str(f) for f in joined["train"][2]))
        raise DataError(f"{fields}: the training set holds a single class (images per class: "
                        f"{', '.join(f'{c}: {n}' for c, n in enumerate(counts.tolist()))}); it needs at least two")
    return out


def scaled_pixels(images: np.ndarray) -> np.ndarray:
    """uint8 ``(n, C, H, W)`` -> float32 in [0, 1]."""
    return np.ascontiguousarray(images, dtype=np.float32) / np.float32(255.0)
