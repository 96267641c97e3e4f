"""data_sets: every loader on small files written here in its format; bad files give clear errors."""

import gzip
import os
import pickle
import re
import signal
import struct

import numpy as np
import pytest
import torch
from PIL import Image

import data_sets as data
from bnn import _augment as bnn_augment
from data_sets import DataError
from data_sets._find import SHARED_XRAY
from data_sets._loaders import CELEBA_ATTRS, CIFAR_TEST, CIFAR_TRAIN, XRAY_CLASSES

pytestmark = pytest.mark.torch


def _idx(arr: np.ndarray) -> bytes:
    return struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


@pytest.mark.parametrize("gz", [False, True])
def test_fashion_mnist_idx(tmp_path, gz):
    rng = np.random.default_rng(0)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
              "train-labels-idx1-ubyte": np.array([0, 1, 2, 9, 3], np.uint8),
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": np.array([4, 5, 6], np.uint8)}
    for name, arr in arrays.items():
        raw = _idx(arr)
        (tmp_path / (name + (".gz" if gz else ""))).write_bytes(gzip.compress(raw) if gz else raw)
    d = data.load_fashion_mnist(tmp_path)
    assert d.x_train.shape == (5, 1, 28, 28) and d.x_train.dtype == np.float32 and d.in_shape == (1, 28, 28)
    np.testing.assert_allclose(d.x_test[:, 0] * 255, arrays["t10k-images-idx3-ubyte"], atol=1e-4)
    assert d.y_train.tolist() == [0, 1, 2, 9, 3] and d.n_classes == 10


def test_fashion_mnist_truncated_file_is_named(tmp_path):
    arr = np.zeros((2, 28, 28), np.uint8)
    for name in ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte"):
        (tmp_path / name).write_bytes(_idx(arr))
    for name in ("train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"):
        (tmp_path / name).write_bytes(_idx(np.zeros(2, np.uint8)))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(_idx(arr)[:-10])
    with pytest.raises(DataError, match="train-images-idx3-ubyte.*header says"):
        data.load_fashion_mnist(tmp_path)
    with pytest.raises(DataError, match="file not found"):
        data.load_fashion_mnist(tmp_path / "absent")


def _cifar_batch(path, n, rng, labels=None):
    with open(path, "wb") as fh:
        pickle.dump({b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                     b"labels": labels if labels is not None else rng.integers(0, 10, n).tolist()}, fh)


def test_cifar10_python_batches(tmp_path):
    rng = np.random.default_rng(1)
    for name in CIFAR_TRAIN:
        _cifar_batch(tmp_path / name, 2, rng)
    _cifar_batch(tmp_path / CIFAR_TEST, 3, rng, labels=[1, 2, 3])
    d = data.load_cifar10(tmp_path)
    assert d.x_train.shape == (10, 3, 32, 32) and d.x_test.shape == (3, 3, 32, 32)
    assert d.y_test.tolist() == [1, 2, 3]
    (tmp_path / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="data_batch_3.*not a CIFAR-10 python batch"):
        data.load_cifar10(tmp_path)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(DataError, match="data_batch_3: file not found"):
        data.load_cifar10(tmp_path)


class _Payload:
    """Unpickled, calls ``func(*args)``: what a planted data file would run."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _cifar_folder(folder, rng, protocol, old_numpy=False):
    """The six batches as CIFAR-10 ships them: dicts with bytes keys (``batch_label``, ``labels``,
    ``data``, ``filenames``), pickled with ``protocol``; ``old_numpy`` writes numpy 1's module name."""
    for name in (*CIFAR_TRAIN, CIFAR_TEST):
        batch = {b"batch_label": name.encode(), b"labels": [0, 1, 2, 3],
                 b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8),
                 b"filenames": [f"{i}.png".encode() for i in range(4)]}
        raw = pickle.dumps(batch, protocol=protocol)
        if old_numpy:
            raw = raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
        (folder / name).write_bytes(raw)


@pytest.mark.parametrize("protocol,old_numpy", [(2, False), (2, True), (pickle.HIGHEST_PROTOCOL, False)])
def test_cifar10_real_format_batches_load_through_the_restricted_unpickler(tmp_path, protocol, old_numpy):
    rng = np.random.default_rng(7)
    _cifar_folder(tmp_path, rng, protocol, old_numpy)
    d = data.load_cifar10(tmp_path)
    assert d.x_train.shape == (20, 3, 32, 32) and d.y_test.tolist() == [0, 1, 2, 3]
    with open(tmp_path / CIFAR_TEST, "rb") as fh:
        raw = pickle.load(fh)[b"data"]
    np.testing.assert_array_equal(d.x_test, raw.reshape(-1, 3, 32, 32).astype(np.float32) / np.float32(255.0))


@pytest.mark.parametrize("where", ["top", "labels", "extra"])
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("payload", ["system", "eval", "write"])
def test_cifar10_batch_with_code_is_refused_and_the_code_never_runs(tmp_path, monkeypatch, where, protocol, payload):
    """A pickle whose payload would run code (a shell command, ``eval``, a file write) anywhere in
    the batch: a DataError naming the file and the global, and the marker file never appears."""
    import builtins
    import os
    import pathlib

    marker = tmp_path / "marker"
    monkeypatch.chdir(tmp_path)
    code = {"system": _Payload(os.system, f"touch {marker}"),
            "eval": _Payload(builtins.eval, f"open({str(marker)!r}, 'w').close()"),
            "write": _Payload(pathlib.Path.write_text, pathlib.Path(marker), "x")}[payload]
    rng = np.random.default_rng(8)
    _cifar_folder(tmp_path, rng, protocol)
    batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [0, 1, 2, 3]}
    planted = code if where == "top" else {**batch, b"labels" if where == "labels" else b"extra": code}
    (tmp_path / "data_batch_2").write_bytes(pickle.dumps(planted, protocol=protocol))
    with pytest.raises(DataError, match=r"data_batch_2: refused to unpickle the global \S+"):
        data.load_cifar10(tmp_path)
    assert not marker.exists()


def _write_celeba(root, rows):
    (root / "img_align_celeba").mkdir(parents=True)
    header = "5_o_Clock_Shadow Blond_Hair Brown_Hair Smiling"
    lines = [str(len(rows)), header]
    rng = np.random.default_rng(2)
    for i, (blond, brown) in enumerate(rows):
        name = f"{i:06d}.jpg"
        Image.fromarray(rng.integers(0, 256, (218, 178, 3), dtype=np.uint8)).save(root / "img_align_celeba" / name)
        lines.append(f"{name} -1 {1 if blond else -1} {1 if brown else -1} 1")
    (root / CELEBA_ATTRS).write_text("\n".join(lines) + "\n")


def test_celeba_blond_against_brown(tmp_path):
    _write_celeba(tmp_path, [(1, 0), (0, 1), (1, 1), (0, 0), (1, 0), (0, 1)])
    d = data.load_celeba(tmp_path, size=16, test_fraction=0.25, seed=0)
    assert d.in_shape == (3, 16, 16) and d.n_classes == 2
    assert len(d.y_train) + len(d.y_test) == 4  # both-or-neither images are left out
    assert sorted(d.y_train.tolist() + d.y_test.tolist()) == [0, 0, 1, 1]


def test_celeba_bad_files(tmp_path):
    _write_celeba(tmp_path, [(1, 0), (0, 1)])
    attrs = tmp_path / CELEBA_ATTRS
    attrs.write_text(attrs.read_text().replace(" 1\n", " maybe\n", 1))
    with pytest.raises(DataError, match="list_attr_celeba.txt: line 3"):
        data.load_celeba(tmp_path)
    _ok = tmp_path / "ok"
    _write_celeba(_ok, [(1, 0), (0, 1)])
    (_ok / "img_align_celeba" / "000001.jpg").write_bytes(b"\xff\xd8 truncated")
    with pytest.raises(DataError, match="000001.jpg: cannot read the image"):
        data.load_celeba(_ok)
    with pytest.raises(DataError, match="list_attr_celeba.txt: file not found"):
        data.load_celeba(tmp_path / "absent")


@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/passwd", "..\\secret.jpg", "a/../../b.jpg"])
def test_a_celeba_row_naming_a_file_outside_img_align_celeba_is_refused_naming_the_row(tmp_path, name):
    """The image of a row is opened at img_align_celeba/<name>: ../../../../etc/passwd opened that file."""
    _write_celeba(tmp_path, [(1, 0), (0, 1)])
    attrs = tmp_path / CELEBA_ATTRS
    attrs.write_text(attrs.read_text().replace("000001.jpg", name))
    with pytest.raises(DataError, match=rf"list_attr_celeba.txt: line 4: the file name {re.escape(repr(name))} "
                                        rf"leaves img_align_celeba/"):
        data.load_celeba(tmp_path)


def test_celeba_counts_in_messages_are_the_images_and_attributes_listed(tmp_path):
    """Blank lines are no images: the count a message gives is the images listed; a row is held to the
    header's count of attributes, and a bad value is named with its attribute."""
    _write_celeba(tmp_path, [(1, 0), (0, 1)])
    attrs = tmp_path / CELEBA_ATTRS
    _, header, *rows = attrs.read_text().splitlines()
    attrs.write_text("\n".join(["5", header, rows[0], "", "", rows[1], ""]) + "\n")
    with pytest.raises(DataError, match=re.escape("its first line says 5 images but it lists 2 (one line per image "
                                                  "after the header; truncated?)")):
        data.load_celeba(tmp_path)
    attrs.write_text("\n".join(["1", header, *rows]) + "\n")
    with pytest.raises(DataError, match=r"says 1 images but it lists 2 \(one line per image after the header\)$"):
        data.load_celeba(tmp_path)
    attrs.write_text("\n".join(["2", header, rows[0] + " 1", rows[1]]) + "\n")
    with pytest.raises(DataError, match="line 3 has 5 values after the file name; the header names 4 attributes"):
        data.load_celeba(tmp_path)
    attrs.write_text("\n".join(["2", header, rows[0], rows[1].replace(" -1 ", " 0 ", 1)]) + "\n")
    with pytest.raises(DataError, match="line 4: the value of 5_o_Clock_Shadow must be 1 or -1, got '0'"):
        data.load_celeba(tmp_path)


def _write_xray(root, n_per_class=2, size=(40, 30)):
    rng = np.random.default_rng(3)
    for split in ("train", "test"):
        for cls in XRAY_CLASSES:
            (root / split / cls).mkdir(parents=True)
            for i in range(n_per_class):
                Image.fromarray(rng.integers(0, 256, size, dtype=np.uint8)).save(root / split / cls / f"{i}.jpeg")


def test_chest_xray_folders(tmp_path):
    _write_xray(tmp_path)
    d = data.load_chest_xray(tmp_path, size=20)
    assert d.x_train.shape == (4, 1, 20, 20) and d.y_train.tolist() == [0, 0, 1, 1]
    (tmp_path / "test" / "PNEUMONIA" / "1.jpeg").write_bytes(b"garbage")
    with pytest.raises(DataError, match="1.jpeg: cannot read the image"):
        data.load_chest_xray(tmp_path, size=20)
    with pytest.raises(DataError, match="NORMAL: folder not found"):
        data.load_chest_xray(tmp_path / "absent")


def test_a_16_bit_grayscale_xray_is_scaled_by_65535_not_clipped(tmp_path):
    """Pillow's convert("L") clips 16-bit pixels at 255: 97% of a real 16-bit X-ray read as 1.0."""
    from data_sets._loaders import eight_bit

    _write_xray(tmp_path)
    ramp = (np.arange(400).reshape(20, 20) * 163).astype(np.uint16)
    Image.fromarray(ramp).save(tmp_path / "train" / "NORMAL" / "0.png")  # a 16-bit grayscale PNG
    (tmp_path / "train" / "NORMAL" / "0.jpeg").unlink()
    d = data.load_chest_xray(tmp_path, size=20)
    np.testing.assert_allclose(d.x_train[0, 0], ramp / 65535, atol=1 / 255)
    # mode "I" (how some Pillow versions open a 16-bit PNG): the same scale; beyond 16 bits refused by name
    as_i = np.asarray(eight_bit("x.png", Image.fromarray(ramp.astype(np.int32))), dtype=float)
    np.testing.assert_allclose(as_i, ramp / 65535 * 255, atol=1)
    with pytest.raises(DataError, match=r"x.png: image mode 'I' with values from 70000 to 70000, beyond 16 bits"):
        eight_bit("x.png", Image.fromarray(np.full((2, 2), 70000, np.int32)))


def test_a_medmnist_npz_that_is_a_symbolic_link_loop_is_said_to_be_one(tmp_path):
    """Path.exists() reads a link loop as absent: "file not found" sent the user looking elsewhere."""
    loop = tmp_path / "pneumoniamnist.npz"
    loop.symlink_to(loop)
    with pytest.raises(DataError, match="pneumoniamnist.npz: a symbolic link loop"):
        data.load_medmnist(loop)
    dangling = tmp_path / "bloodmnist.npz"
    dangling.symlink_to(tmp_path / "gone.npz")
    with pytest.raises(DataError, match="bloodmnist.npz: a symbolic link to .*gone.npz', which does not exist"):
        data.load_medmnist(dangling)


def test_medmnist_npz(tmp_path):
    rng = np.random.default_rng(4)
    arrays = {f"{s}_images": rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in
              (("train", 6), ("val", 2), ("test", 3))}
    arrays.update({f"{s}_labels": rng.integers(0, 2, (n, 1)).astype(np.uint8) for s, n in
                   (("train", 6), ("val", 2), ("test", 3))})
    np.savez(tmp_path / "m.npz", **arrays)
    d = data.load_medmnist(tmp_path / "m.npz")
    assert d.x_train.shape == (8, 1, 28, 28) and d.x_test.shape == (3, 1, 28, 28)
    assert d.y_train.tolist() == arrays["train_labels"].ravel().tolist() + arrays["val_labels"].ravel().tolist()
    assert data.load_medmnist(tmp_path / "m.npz", include_val=False).x_train.shape[0] == 6
    (tmp_path / "bad.npz").write_bytes((tmp_path / "m.npz").read_bytes()[:200])
    with pytest.raises(DataError, match="bad.npz: not a readable .npz"):
        data.load_medmnist(tmp_path / "bad.npz")
    np.savez(tmp_path / "partial.npz", train_images=arrays["train_images"])
    with pytest.raises(DataError, match="partial.npz: missing arrays train_labels"):
        data.load_medmnist(tmp_path / "partial.npz")
    np.savez(tmp_path / "mismatch.npz", **{**arrays, "test_labels": arrays["test_labels"][:2]})
    with pytest.raises(DataError, match=r"mismatch.npz \[test\]: 3 images but 2 labels"):
        data.load_medmnist(tmp_path / "mismatch.npz")


@pytest.mark.data  # the development data folder (tests/conftest.py)
def test_medmnist_reads_the_shared_chest_xray_subset():
    d = data.load_medmnist(SHARED_XRAY)
    assert d.x_train.shape == (3882 + 524, 1, 28, 28) and d.x_test.shape == (624, 1, 28, 28)
    assert np.bincount(d.y_test).tolist() == [234, 390]
    assert 0.0 <= d.x_train.min() and d.x_train.max() <= 1.0


def test_embedded_digits():
    d = data.embedded_digits()
    assert d.in_shape == (1, 8, 8) and d.n_classes == 10 and len(d.y_train) == 1200


def test_augmentation_keeps_range_shape_and_is_seeded():
    x = torch.rand(4, 1, 28, 28)
    a = bnn_augment.augment(x, torch.Generator().manual_seed(0))
    b = bnn_augment.augment(x, torch.Generator().manual_seed(0))
    assert a.shape == x.shape and torch.equal(a, b) and 0 <= a.min() and a.max() <= 1
    assert not torch.allclose(a, x)
    still = bnn_augment.augment(x, torch.Generator().manual_seed(0),
                         bnn_augment.Augmentation(max_rotation=0, max_shift=0, min_crop=1, brightness=0))
    torch.testing.assert_close(still, x, atol=1e-5, rtol=0)


# ------------------------------------------------------------- the layout check of every loader (DataError)

def _write_fashion(folder, **change):
    rng = np.random.default_rng(5)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (4, 28, 28), dtype=np.uint8),
              "train-labels-idx1-ubyte": np.array([0, 1, 9, 3], np.uint8),
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (2, 28, 28), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": np.array([4, 5], np.uint8)}
    folder.mkdir()
    for name, arr in {**arrays, **change}.items():
        raw = arr if isinstance(arr, bytes) else _idx(arr)
        (folder / name).write_bytes(raw)
    return folder


@pytest.mark.parametrize("change,message", [
    ({"train-images-idx3-ubyte": np.zeros((0, 28, 28), np.uint8),
      "train-labels-idx1-ubyte": np.zeros(0, np.uint8)}, r"train-images-idx3-ubyte \[train_images\]: no images"),
    ({"t10k-images-idx3-ubyte": np.zeros((0, 28, 28), np.uint8),
      "t10k-labels-idx1-ubyte": np.zeros(0, np.uint8)}, r"t10k-images-idx3-ubyte \[test_images\]: no images"),
    ({"t10k-images-idx3-ubyte": np.zeros((2, 32, 32), np.uint8)}, r"t10k-images-idx3-ubyte \[test_images\].*28x28"),
    ({"train-images-idx3-ubyte": np.zeros((4, 28, 28, 2), np.uint8)}, r"train-images-idx3-ubyte \[train_images\]"),
    ({"train-labels-idx1-ubyte": np.array([0, 1, 10, 3], np.uint8)},
     r"train-labels-idx1-ubyte \[train_labels\]: labels outside 0\.\.9"),
    ({"t10k-labels-idx1-ubyte": np.array([4, 5, 6], np.uint8)}, r"t10k-labels-idx1-ubyte \[test_labels\]: 3 labels"),
    ({"train-images-idx3-ubyte": struct.pack(">HBB", 0, 0x0B, 3) + struct.pack(">3I", 4, 28, 28)
      + np.zeros((4, 28, 28), ">i2").tobytes()}, r"train-images-idx3-ubyte \[train_images\].*uint8"),
])
def test_fashion_mnist_layout_is_checked(tmp_path, change, message):
    with pytest.raises(DataError, match=message):
        data.load_fashion_mnist(_write_fashion(tmp_path / "f", **change))


def test_cifar10_layout_is_checked(tmp_path):
    rng = np.random.default_rng(6)
    for name in CIFAR_TRAIN:
        _cifar_batch(tmp_path / name, 2, rng)
    _cifar_batch(tmp_path / CIFAR_TEST, 0, rng, labels=[])
    with pytest.raises(DataError, match=r"test_batch \[data\]: no images"):
        data.load_cifar10(tmp_path)
    _cifar_batch(tmp_path / CIFAR_TEST, 2, rng, labels=[3, 10])
    with pytest.raises(DataError, match=r"test_batch \[labels\]: labels outside 0\.\.9"):
        data.load_cifar10(tmp_path)
    _cifar_batch(tmp_path / "data_batch_4", 2, rng, labels=[1, 2, 3])
    with pytest.raises(DataError, match=r"data_batch_4 \[data_batch_4\]: 2 images but 3 labels"):
        data.load_cifar10(tmp_path)
    _cifar_batch(tmp_path / "data_batch_4", 2, rng, labels=["cat", "dog"])
    with pytest.raises(DataError, match=r"data_batch_4 \[labels\]: labels must be integers"):
        data.load_cifar10(tmp_path)


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("empty", [CIFAR_TEST, "data_batch_2"])
def test_cifar10_an_empty_batch_is_refused_as_empty_in_every_protocol(tmp_path, protocol, empty):
    # protocol 2 writes an empty array's buffer as the global __builtin__.bytes(): read as b"" (only that), so the
    # batch is refused for holding no images, not for the global
    rng = np.random.default_rng(6)
    for name in (*CIFAR_TRAIN, CIFAR_TEST):
        n = 0 if name == empty else 2
        (tmp_path / name).write_bytes(pickle.dumps({b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                                                    b"labels": [1] * n}, protocol=protocol))
    with pytest.raises(DataError, match=rf"{empty} \[data\]: no images"):
        data.load_cifar10(tmp_path)
    # bytes(n) with an argument would allocate n bytes: not the empty literal, refused before it runs
    (tmp_path / empty).write_bytes(b"\x80\x02c__builtin__\nbytes\nJ\x00\x00\x00\x40\x85R.")
    with pytest.raises(DataError, match=rf"{empty}: not a CIFAR-10 python batch .*not the empty bytes literal"):
        data.load_cifar10(tmp_path)


@pytest.mark.parametrize("labels", [[True, False], [1, True], np.array([True, False]), [[0], [np.True_]]])
def test_cifar10_boolean_labels_are_refused(tmp_path, labels):
    """True and False would pass as classes 1 and 0: CIFAR-10's labels are class indices."""
    rng = np.random.default_rng(6)
    for name in (*CIFAR_TRAIN, CIFAR_TEST):
        _cifar_batch(tmp_path / name, 2, rng)
    _cifar_batch(tmp_path / "data_batch_2", 2, rng, labels=labels)
    with pytest.raises(DataError, match=r"data_batch_2 \[labels\]: labels must be integers .*got the boolean True"):
        data.load_cifar10(tmp_path)


@pytest.mark.parametrize("key", ["labels", "data"])
def test_cifar10_a_batch_with_a_key_as_text_and_as_bytes_is_refused(tmp_path, key):
    rng = np.random.default_rng(6)
    for name in (*CIFAR_TRAIN, CIFAR_TEST):
        _cifar_batch(tmp_path / name, 2, rng)
    with open(tmp_path / "data_batch_3", "rb") as fh:
        batch = pickle.load(fh)
    batch[key] = batch[key.encode()]  # the same value under both spellings: still not one key
    (tmp_path / "data_batch_3").write_bytes(pickle.dumps(batch))
    with pytest.raises(DataError, match=f"data_batch_3: the batch holds both '{key}' and b'{key}'"):
        data.load_cifar10(tmp_path)


def test_celeba_empty_split_is_refused(tmp_path):
    _write_celeba(tmp_path, [(1, 0), (0, 0)])  # one usable image: the random split leaves no test image
    with pytest.raises(DataError, match=r"list_attr_celeba.txt \[test split\]: no images"):
        data.load_celeba(tmp_path, size=8)
    ok = tmp_path / "ok"
    _write_celeba(ok, [(1, 0), (0, 1), (1, 0)])
    (ok / "list_eval_partition.txt").write_text("000000.jpg 0\n000001.jpg 1\n000002.jpg 0\n")  # no test image
    with pytest.raises(DataError, match=r"list_eval_partition.txt \[test split\]: no images"):
        data.load_celeba(ok, size=8)
    (ok / "list_eval_partition.txt").write_text("000000.jpg 0\n000001.jpg\n")
    with pytest.raises(DataError, match=r"list_eval_partition.txt: line 2"):
        data.load_celeba(ok, size=8)


def test_chest_xray_empty_split_is_refused(tmp_path):
    _write_xray(tmp_path)
    for p in (tmp_path / "test").glob("*/*.jpeg"):
        p.unlink()
    with pytest.raises(DataError, match=r"test \[images.*\]: no images"):
        data.load_chest_xray(tmp_path, size=8)


def test_medmnist_names_a_set_it_cannot_read(tmp_path):
    np.savez(tmp_path / "chestmnist.npz", train_images=np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(DataError, match="chestmnist.npz: chestmnist is not a single-label 2D MedMNIST set"):
        data.load_medmnist(tmp_path / "chestmnist.npz")


def test_celeba_max_images_keeps_test_images_of_the_official_partition(tmp_path):
    """The official partition lists its test images last: max_images takes the first of each split
    (it took the first files only, leaving no test image)."""
    _write_celeba(tmp_path, [(1, 0), (0, 1), (1, 0), (0, 1), (1, 0), (0, 1)])
    (tmp_path / "list_eval_partition.txt").write_text("".join(f"{i:06d}.jpg {0 if i < 4 else 2}\n" for i in range(6)))
    d = data.load_celeba(tmp_path, size=8, max_images=3, test_fraction=0.3)
    assert len(d.y_train) == 2 and len(d.y_test) == 1


def test_medmnist_file_naming_no_set_says_how_it_was_read(tmp_path):
    rng = np.random.default_rng(5)
    arrays = {f"{s}_{k}": (rng.integers(0, 255, (n, 8, 8, 3), dtype=np.uint8) if k == "images"
                          else rng.integers(0, 8, (n, 1)))
              for s, n in (("train", 10), ("test", 4)) for k in ("images", "labels")}
    np.savez(tmp_path / "data.npz", **arrays)
    assert data.load_medmnist(tmp_path / "data.npz", n_classes=8).n_classes == 8  # a relabelled RGB file
    with pytest.raises(DataError, match="names no MedMNIST set.*dataset="):
        data.load_medmnist(tmp_path / "data.npz")


def _fashion_folder(folder):
    for name in ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte"):
        (folder / name).write_bytes(_idx(np.zeros((2, 28, 28), np.uint8)))
    for name in ("train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"):
        (folder / name).write_bytes(_idx(np.zeros(2, np.uint8)))


def _pneumonia_folder(folder):
    np.savez(folder / "pneumoniamnist.npz", **{f"{s}_{k}": np.zeros((2, 28, 28) if k == "images" else (2, 1), np.uint8)
                                               for s in ("train", "val", "test") for k in ("images", "labels")})


_FIFO_CASES = {  # a loader, how to lay its files out, and the file replaced by a fifo
    "fashion-mnist": (data.load_fashion_mnist, _fashion_folder, "train-images-idx3-ubyte"),
    "cifar-10": (data.load_cifar10, lambda f: _cifar_folder(f, np.random.default_rng(0), 4), CIFAR_TRAIN[1]),
    "celeba list": (data.load_celeba, lambda f: _write_celeba(f, [(1, 0), (0, 1)]), CELEBA_ATTRS),
    "celeba image": (data.load_celeba, lambda f: _write_celeba(f, [(1, 0), (0, 1)]), "img_align_celeba/000001.jpg"),
    "chest x-ray image": (lambda f: data.load_chest_xray(f, size=20), _write_xray, "train/NORMAL/0.jpeg"),
    "pneumoniamnist in a data folder": (lambda f: data.load_medmnist(data.find_medmnist(data_dir=f)),
                                        _pneumonia_folder, "pneumoniamnist.npz"),
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("case", list(_FIFO_CASES))
def test_a_fifo_in_place_of_a_data_file_is_refused_by_name_without_blocking(tmp_path, case):
    load, lay_out, name = _FIFO_CASES[case]
    lay_out(tmp_path)
    (tmp_path / name).unlink()
    os.mkfifo(tmp_path / name)
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail(f"{case}: the reader blocked on the fifo"))
    signal.alarm(10)
    try:
        with pytest.raises(DataError, match=re.escape(f"{tmp_path / name} is a fifo, not a regular file")):
            load(tmp_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("load, folder, page", [
    (data.load_fashion_mnist, "fashion-mnist", "https://github.com/zalandoresearch/fashion-mnist"),
    (data.load_cifar10, "cifar-10-batches-py", "https://www.cs.toronto.edu/~kriz/cifar.html"),
    (data.load_celeba, "celeba", "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html"),
    (lambda f: data.find_data(f.name, data_dir=f.parent), "celeba", "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html"),
])
def test_absent_data_says_where_to_download_it_which_folder_and_how_to_give_it(tmp_path, load, folder, page):
    with pytest.raises(DataError) as info:
        load(tmp_path / folder)
    message = str(info.value)
    assert "not found" in message and page in message, message
    assert f"folder {folder}" in message or f"folder named {folder}" in message, message
    assert "--data-dir" in message and "SMS_LANGEVIN_DATA_DIR" in message, message


@pytest.mark.parametrize("load, name, none_ok", [
    (data.load_fashion_mnist, "folder", False), (data.load_cifar10, "folder", False),
    (data.load_celeba, "folder", False), (data.load_chest_xray, "folder", False),
    (data.load_medmnist, "path", True), (data.find_data, "name", False),
    (lambda p: data.find_medmnist(data_dir=p), "data_dir", True),
])
def test_every_loader_refuses_a_path_that_is_not_one_by_name(load, name, none_ok):
    # one shared check (integrators._validation.file_path): a ValueError naming the argument, not pathlib's TypeError
    for bad in ([None] if not none_ok else []) + [3, 2.5, b"folder", ["a"], ""]:
        with pytest.raises(ValueError, match=f"^{name} must be a non-empty file or folder path") as info:
            load(bad)
        assert not isinstance(info.value, DataError), bad
