"""integrators.data's layout check on MedMNIST ``.npz`` files: generated files with one defect each (a split's
image shape, a channel axis, dtypes, labels out of range or fractional, empty splits, missing keys, a
file that is no ``.npz``) raise a DataError naming the file and the field; valid files load."""

import io
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrators import data
from integrators.data import DataError

pytestmark = pytest.mark.torch

SPLITS = ("train", "val", "test")
# (name the file carries, dataset= passed, classes, channels): the set is declared by the file name,
# by the argument, or (a name that says nothing) is the loader's default, PneumoniaMNIST
SETS = [("m.npz", None, 2, 1), ("pneumoniamnist_64.npz", None, 2, 1), ("bloodmnist.npz", None, 8, 3),
        ("x.npz", "dermamnist", 7, 3), ("y.npz", "octmnist", 4, 1)]


@st.composite
def valid_files(draw):
    """A MedMNIST-style file of a declared set: uint8 images (n, H, W) or (n, H, W, C), labels (n, 1)."""
    name, dataset, k, c = draw(st.sampled_from(SETS))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    gray_axis = c == 1 and draw(st.booleans())  # (n, H, W, 1) is grayscale with its channel axis
    splits = SPLITS if draw(st.booleans()) else ("train", "test")
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    arrays = {}
    for s in splits:
        n = draw(st.integers(1, 4))
        shape = (n, h, w, c) if c > 1 or gray_axis else (n, h, w)
        arrays[f"{s}_images"] = rng.integers(0, 256, shape, dtype=np.uint8)
        label_dtype = draw(st.sampled_from([np.uint8, np.int64, np.float32]))
        labels = rng.integers(0, k, (n, 1)).astype(label_dtype)
        arrays[f"{s}_labels"] = labels if draw(st.booleans()) else labels.reshape(-1)
    return name, dataset, k, c, arrays


def _save(path, arrays):
    np.savez(path, **arrays)
    return path


def _load(path, dataset, **kwargs):
    return data.load_medmnist(path, **({"dataset": dataset} if dataset else {}), **kwargs)


@given(valid_files(), st.booleans())
def test_valid_generated_files_load(tmp_path_factory, file, include_val):
    name, dataset, k, c, arrays = file
    path = _save(tmp_path_factory.mktemp("ok") / name, arrays)
    d = _load(path, dataset, include_val=include_val)
    joined = ("train", "val") if include_val and "val_images" in arrays else ("train",)
    assert d.n_classes == k and d.in_shape[0] == c and d.in_shape[1:] == arrays["train_images"].shape[1:3]
    for parts, x, y in ((joined, d.x_train, d.y_train), (("test",), d.x_test, d.y_test)):
        images = np.concatenate([arrays[f"{s}_images"] for s in parts])
        images = images[:, None] if images.ndim == 3 else images.transpose(0, 3, 1, 2)
        assert x.dtype == np.float32 and x.shape == images.shape
        np.testing.assert_array_equal(x, images.astype(np.float32) / np.float32(255.0))
        assert y.dtype == np.int64
        assert y.tolist() == np.concatenate([arrays[f"{s}_labels"].reshape(-1) for s in parts]).astype(int).tolist()


DEFECTS = ["shape", "channels", "extra_axis", "channel_first", "image_dtype", "label_dtype", "label_range",
           "label_negative", "label_fraction", "label_nan", "label_shape", "label_count", "empty", "missing",
           "half_val", "not_npz"]


@st.composite
def broken_files(draw, defect):
    """A valid file with ``defect``: ``(name, dataset, arrays or raw bytes, the field the error must name)``."""
    name, dataset, k, c, arrays = draw(valid_files())
    present = [s for s in SPLITS if f"{s}_images" in arrays]
    s = draw(st.sampled_from(present))
    images, labels = arrays[f"{s}_images"], arrays[f"{s}_labels"]
    n, h, w = images.shape[:3]
    key = f"{s}_images"
    if defect == "shape":  # one split's images of another size (32 x 32 test images beside 28 x 28)
        dh, dw = draw(st.sampled_from([(1, 0), (0, 1), (4, 4)]))
        images = np.zeros((n, h + dh, w + dw, *images.shape[3:]), np.uint8)
    elif defect == "channels":  # a channel axis of a size the set does not have, e.g. (n, 28, 28, 2)
        extra = draw(st.sampled_from([v for v in (1, 2, 3, 4, 28) if v != c]))
        images = np.zeros((n, h, w, extra), np.uint8)
    elif defect == "extra_axis":  # one axis too many: (n, H, W, C, 1)
        images = images.reshape(*images.shape, 1) if images.ndim == 4 else images[..., None, None]
    elif defect == "channel_first":  # (n, C, H, W): the channels where MedMNIST does not put them
        images = np.zeros((n, c, h + 4, w + 4), np.uint8)
    elif defect == "image_dtype":
        dtype = draw(st.sampled_from([np.float32, np.float64, np.int16, np.int64, "U1", np.bool_]))
        images = images.astype(dtype)
    elif defect == "label_dtype":
        key, labels = f"{s}_labels", labels.astype("U3")
    elif defect in ("label_range", "label_negative"):
        bad = draw(st.sampled_from([k, k + 5, 10**9] if defect == "label_range" else [-1, -(10**9)]))
        key, labels = f"{s}_labels", labels.astype(np.int64)
        labels.reshape(-1)[draw(st.integers(0, n - 1))] = bad
    elif defect in ("label_fraction", "label_nan"):
        key, labels = f"{s}_labels", labels.astype(np.float64)
        labels.reshape(-1)[draw(st.integers(0, n - 1))] = 0.5 if defect == "label_fraction" else np.nan
    elif defect == "label_shape":
        key, labels = f"{s}_labels", np.zeros((n, 2), np.uint8)
    elif defect == "label_count":
        key, labels = f"{s}_labels", np.zeros((n + draw(st.sampled_from([-1, 1])), 1), np.uint8)
    elif defect == "empty":  # a split with no images (and no labels)
        images, labels = images[:0], labels[:0]
    if defect in ("missing", "half_val", "not_npz"):
        arrays = dict(arrays)
        if defect == "missing":
            key = draw(st.sampled_from(["train_images", "train_labels", "test_images", "test_labels"]))
            del arrays[key]
        elif defect == "half_val":  # a validation split with images but no labels, or labels but no images
            key = draw(st.sampled_from(["val_images", "val_labels"]))
            arrays.pop("val_images" if key == "val_labels" else "val_labels", None)
            arrays[key] = arrays.get(key, np.zeros((2, h, w), np.uint8))
        else:
            buf = io.BytesIO()
            kind = draw(st.sampled_from(["npy", "text", "pickle", "empty", "truncated"]))
            if kind == "npy":  # a .npy renamed .npz
                np.save(buf, arrays["train_images"])
            elif kind == "text":
                buf.write(b"train_images,train_labels\n1,2\n")
            elif kind == "pickle":
                pickle.dump(arrays, buf)
            elif kind == "truncated":
                np.savez(buf, **arrays)
                buf = io.BytesIO(buf.getvalue()[:draw(st.integers(1, 200))])
            return name, dataset, buf.getvalue(), None
    else:
        arrays = {**arrays, f"{s}_images": images, f"{s}_labels": labels}
    return name, dataset, arrays, key


@pytest.mark.slow
@pytest.mark.parametrize("defect", DEFECTS)
@given(draws=st.data(), include_val=st.booleans())
def test_malformed_files_raise_a_data_error_naming_the_file_and_the_field(tmp_path_factory, defect, draws,
                                                                         include_val):
    name, dataset, content, key = draws.draw(broken_files(defect))
    path = tmp_path_factory.mktemp("bad") / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        _save(path, content)
    with pytest.raises(DataError) as err:  # never an ImageData of a wrong layout, nor another exception
        _load(path, dataset, include_val=include_val)
    assert str(path) in str(err.value)
    if key is not None:
        assert key in str(err.value)


def _pneumonia(tmp_path, **change):
    rng, sizes = np.random.default_rng(0), {"train": 6, "val": 2, "test": 3}
    arrays = {f"{s}_images": rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in sizes.items()}
    arrays.update({f"{s}_labels": rng.integers(0, 2, (n, 1)).astype(np.uint8) for s, n in sizes.items()})
    return _save(tmp_path / "pneumoniamnist.npz", {**arrays, **change})


@pytest.mark.parametrize("change,message", [
    ({"test_images": np.zeros((3, 32, 32), np.uint8)}, r"\[test_images\].*32x32.*train_images.*28x28"),
    ({"train_images": np.zeros((6, 28, 28, 2), np.uint8)}, r"\[train_images\].*2 channels"),
    ({"train_labels": np.array([[0], [1], [7], [0], [1], [0]], np.uint8)}, r"\[train_labels\].*outside 0\.\.1"),
    ({"train_labels": np.array([[0], [1], [10**9], [0], [1], [0]])}, r"\[train_labels\].*outside 0\.\.1"),
    ({"train_images": np.zeros((0, 28, 28), np.uint8), "train_labels": np.zeros((0, 1), np.uint8)},
     r"\[train_images\].*empty"),
    ({"test_images": np.zeros((0, 28, 28), np.uint8), "test_labels": np.zeros((0, 1), np.uint8)},
     r"\[test_images\].*empty"),
    ({"val_images": np.zeros((2, 30, 28), np.uint8)}, r"\[val_images\]"),
])
def test_the_issue_examples_are_refused_before_any_training(tmp_path, change, message):
    """The examples of the issue, through the pipeline's loader of the quick preset's data set."""
    from bnn import pipeline

    path = _pneumonia(tmp_path, **change)
    cfg = pipeline.RunConfig("xray_subset", "chest_xray", data_path=str(path))
    with pytest.raises(DataError, match="pneumoniamnist.npz " + message):
        pipeline.load(cfg)


def test_a_renamed_npy_is_refused_by_name(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((3, 28, 28), np.uint8))
    (tmp_path / "a.npy").rename(tmp_path / "a.npz")
    with pytest.raises(DataError, match=r"a\.npz: not an \.npz"):
        data.load_medmnist(tmp_path / "a.npz")


def test_the_declared_set_gives_the_classes(tmp_path):
    path = _pneumonia(tmp_path, train_labels=np.array([[0], [1], [3], [0], [1], [0]], np.uint8))
    with pytest.raises(DataError, match="PneumoniaMNIST"):
        data.load_medmnist(path)
    assert data.load_medmnist(path, dataset="octmnist").n_classes == 4
    assert data.load_medmnist(path, n_classes=5).n_classes == 5
    with pytest.raises(ValueError, match="dataset"):
        data.load_medmnist(path, dataset="no-such-mnist")


@pytest.mark.skipif(not data.SHARED_XRAY.exists(), reason=f"shared chest X-ray subset absent at {data.SHARED_XRAY}")
def test_the_shared_subset_loads_as_before():
    """The layout check changes no value on valid input: the shared subset, read the way the loader
    read it before the check (channel axis added, scaled by 255, val joined to train)."""
    with np.load(data.SHARED_XRAY) as npz:
        raw = {k: npz[k] for k in npz.files}
    for include_val in (True, False):
        d = data.load_medmnist(data.SHARED_XRAY, include_val=include_val)
        parts = ("train", "val") if include_val else ("train",)
        x = np.concatenate([raw[f"{s}_images"] for s in parts])[:, None].astype(np.float32) / np.float32(255.0)
        np.testing.assert_array_equal(d.x_train, x)
        np.testing.assert_array_equal(d.x_test, raw["test_images"][:, None].astype(np.float32) / np.float32(255.0))
        assert d.y_train.tolist() == np.concatenate([raw[f"{s}_labels"].ravel() for s in parts]).tolist()
        assert d.y_test.tolist() == raw["test_labels"].ravel().tolist()
        assert d.n_classes == 2 and d.y_train.dtype == np.int64 and d.source == "MedMNIST npz pneumoniamnist-subset.npz"
