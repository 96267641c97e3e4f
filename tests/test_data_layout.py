"""data_sets's layout check on MedMNIST ``.npz`` files: generated files with one defect each (a split's
image shape, a channel axis, dtypes, labels out of range or fractional, empty splits, missing keys, a
file that is no ``.npz``) raise a DataError naming the file and the field; valid files load."""

import io
import itertools
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import data_sets as data
from data_sets import DataError
from data_sets._find import SHARED_XRAY

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
        n = draw(st.integers(2 if s == "train" else 1, 4))
        shape = (n, h, w, c) if c > 1 or gray_axis else (n, h, w)
        arrays[f"{s}_images"] = rng.integers(0, 256, shape, dtype=np.uint8)
        label_dtype = draw(st.sampled_from([np.uint8, np.int64, np.float32]))
        labels = rng.integers(0, k, (n, 1))
        if s == "train":  # a training set holds two classes at least
            labels[:2] = rng.choice(k, (2, 1), replace=False)
        labels = labels.astype(label_dtype)
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
           "half_val", "not_npz", "single_class"]


@st.composite
def broken_files(draw, defect):
    """A valid file with ``defect``: ``(name, dataset, arrays or raw bytes, the field the error must name)``."""
    name, dataset, k, c, arrays = draw(valid_files())
    # an empty validation split is as if absent (accepted): the empty split is the training or test split
    present = [s for s in SPLITS if f"{s}_images" in arrays and (defect != "empty" or s != "val")]
    s = draw(st.sampled_from(["train"] if defect == "single_class" else present))
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
    elif defect == "single_class":  # every training image (the validation split's too) of one class
        key, one = "train_labels", draw(st.integers(0, k - 1))
        labels = np.full_like(labels, one)
        if "val_labels" in arrays:
            arrays = {**arrays, "val_labels": np.full_like(arrays["val_labels"], one)}
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
def test_mismatched_shapes_channels_labels_and_empty_splits_are_refused_before_any_training(tmp_path, change,
                                                                                             message):
    """A file whose splits disagree in shape, have extra channels, labels outside the classes or no
    rows, through the pipeline's loader of the quick preset's data set."""
    from experiments.bnn import _pipeline as pipeline

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


@pytest.mark.data  # the development data folder (tests/conftest.py)
def test_the_shared_subset_loads_as_before():
    """The layout check changes no value on valid input: the shared subset, read the way the loader
    read it before the check (channel axis added, scaled by 255, val joined to train)."""
    with np.load(SHARED_XRAY) as npz:
        raw = {k: npz[k] for k in npz.files}
    for include_val in (True, False):
        d = data.load_medmnist(SHARED_XRAY, include_val=include_val)
        parts = ("train", "val") if include_val else ("train",)
        x = np.concatenate([raw[f"{s}_images"] for s in parts])[:, None].astype(np.float32) / np.float32(255.0)
        np.testing.assert_array_equal(d.x_train, x)
        np.testing.assert_array_equal(d.x_test, raw["test_images"][:, None].astype(np.float32) / np.float32(255.0))
        assert d.y_train.tolist() == np.concatenate([raw[f"{s}_labels"].ravel() for s in parts]).tolist()
        assert d.y_test.tolist() == raw["test_labels"].ravel().tolist()
        assert d.n_classes == 2 and d.y_train.dtype == np.int64 and d.source == "MedMNIST npz pneumoniamnist-subset.npz"


# ------------------------------------------------------- the validation split's rule, single-class training sets

def test_a_missing_and_an_empty_validation_split_are_treated_alike(tmp_path):
    """Both mean no validation images: the file loads, with the training split alone (an empty
    ``val`` was refused while a missing one was accepted)."""
    full = dict(np.load(_pneumonia(tmp_path)))
    absent = {k: v for k, v in full.items() if not k.startswith("val_")}
    empty = {**absent, "val_images": np.zeros((0, 28, 28), np.uint8), "val_labels": np.zeros((0, 1), np.uint8)}
    loaded = [data.load_medmnist(_save(tmp_path / f"{name}.npz", arrays), dataset="pneumoniamnist")
              for name, arrays in (("absent", absent), ("empty", empty))]
    for d in loaded:
        np.testing.assert_array_equal(d.x_train, loaded[0].x_train)
        assert d.y_train.tolist() == full["train_labels"].ravel().tolist()
        assert len(d.y_test) == 3
    with pytest.raises(DataError, match=r"empty.npz: val_labels without val_images"):
        data.load_medmnist(_save(tmp_path / "empty.npz", {**absent, "val_labels": np.zeros((0, 1), np.uint8)}))


@given(st.integers(0, 1), st.integers(2, 9), st.booleans())
def test_a_training_set_of_one_class_is_refused_with_the_class_counts(tmp_path_factory, cls, n, include_val):
    folder = tmp_path_factory.mktemp("one")
    labels = np.full((n, 1), cls, np.uint8)
    path = _pneumonia(folder, train_images=np.zeros((n, 28, 28), np.uint8), train_labels=labels,
                      val_labels=np.full((2, 1), cls, np.uint8))
    counts = [n + 2 * include_val if c == cls else 0 for c in (0, 1)]
    with pytest.raises(DataError, match=rf"pneumoniamnist.npz \[train_labels\].*single class \(images per class: "
                                        rf"0: {counts[0]}, 1: {counts[1]}\)"):
        data.load_medmnist(path, include_val=include_val)
    if include_val:  # a validation split of the other class makes two classes in the joined training set
        other = _pneumonia(folder, train_images=np.zeros((n, 28, 28), np.uint8), train_labels=labels,
                           val_labels=np.full((2, 1), 1 - cls, np.uint8))
        assert sorted(set(data.load_medmnist(other).y_train.tolist())) == [0, 1]


# ------------------------------------------------------------------------------ where a MedMNIST file is found

PLACES = ("given", "env", "home", "dev")  # the search order of find_medmnist


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Four empty folders standing for the search places: a folder given, $SMS_LANGEVIN_DATA_DIR,
    ~/.medmnist (HOME moved) and the development setup's data folder."""
    from data_sets import _find as find

    folders = {p: tmp_path / p for p in PLACES}
    for f in folders.values():
        f.mkdir()
    monkeypatch.setenv("HOME", str(folders["home"]))
    folders["home"] = folders["home"] / ".medmnist"
    folders["home"].mkdir()
    monkeypatch.setenv(data.DATA_DIR_ENV, str(folders["env"]))
    monkeypatch.setattr(find, "DEV_DATA", folders["dev"])
    return folders


@pytest.mark.parametrize("holding", [set(c) for n in range(len(PLACES) + 1) for c in itertools.combinations(PLACES, n)])
@pytest.mark.parametrize("subset_name", [False, True])
def test_find_medmnist_takes_the_first_place_that_holds_the_file(places, holding, subset_name):
    file = "pneumoniamnist-subset.npz" if subset_name else "pneumoniamnist.npz"
    for place in holding:
        (places[place] / file).write_bytes(b"")
    for folder, order in ((places["given"], PLACES), (None, PLACES[1:])):
        found = [p for p in order if p in holding]
        if found:
            assert data.find_medmnist(data_dir=folder) == places[found[0]] / file
        else:
            with pytest.raises(DataError, match="pneumoniamnist.npz not found"):
                data.find_medmnist(data_dir=folder)


def test_find_medmnist_prefers_the_full_file_in_a_folder_and_takes_a_file_path_as_it_is(places):
    for name in ("pneumoniamnist.npz", "pneumoniamnist-subset.npz"):
        (places["env"] / name).write_bytes(b"")
    assert data.find_medmnist().name == "pneumoniamnist.npz"
    own = places["given"] / "mine.npz"
    own.write_bytes(b"")
    assert data.find_medmnist(data_dir=own) == own
    with pytest.raises(DataError, match="absent.npz: file not found"):
        data.find_medmnist(data_dir=places["given"] / "absent.npz")
    with pytest.raises(ValueError, match="name"):
        data.find_medmnist("chestmnist")
    with pytest.raises(ValueError, match="data_dir"):
        data.find_medmnist(data_dir=3)


def test_the_message_of_a_missing_file_says_where_it_looked_and_how_to_get_it(places, monkeypatch):
    monkeypatch.delenv(data.DATA_DIR_ENV)
    with pytest.raises(DataError) as err:
        data.load_medmnist()
    message = str(err.value)
    assert "pip install medmnist" in message and "medmnist.PneumoniaMNIST(split='train', download=True)" in message
    # the direct route first: the file, its checksum, where to put it; and what medmnist pulls in
    assert "https://zenodo.org/records/10519652/files/pneumoniamnist.npz?download=1" in message
    assert "MD5 28209eda62fecd6e6a2d98b1501bb15f" in message and "--data-dir" in message
    assert "torchvision" in message
    assert data.DATA_DIR_ENV in message and "~/.medmnist" in message
    assert "shared/" not in message and str(places["dev"]) not in message and "\n" not in message


def test_load_medmnist_without_a_path_reads_the_file_found(places):
    path = _pneumonia(places["home"])
    d = data.load_medmnist()
    assert d.source == "MedMNIST npz pneumoniamnist.npz" and len(d.y_test) == 3
    assert data.load_medmnist(places["home"]).source == d.source  # a folder is searched first
    assert data.find_medmnist() == path


def test_find_data_searches_the_data_folders_for_a_relative_name(places):
    (places["dev"] / "fashion-mnist").mkdir()
    assert data.find_data("fashion-mnist") == places["dev"] / "fashion-mnist"
    (places["env"] / "fashion-mnist").mkdir()
    assert data.find_data("fashion-mnist") == places["env"] / "fashion-mnist"
    assert data.find_data("fashion-mnist", data_dir=places["env"]) == places["env"] / "fashion-mnist"
    with pytest.raises(DataError, match="celeba: not found.*SMS_LANGEVIN_DATA_DIR") as err:
        data.find_data("celeba")
    assert "shared/" not in str(err.value)


def test_the_development_subset_keeps_its_name():
    assert SHARED_XRAY.name == "pneumoniamnist-subset.npz" and SHARED_XRAY.parent.name == "data"


# ----------------------------------------------------------------- a BNN unit's data, asked before a run starts

def test_missing_data_says_which_unit_lacks_its_files_and_finds_them_once_present(places):
    from experiments.bnn import _presets as presets

    assert presets.missing_data("tiny", "digits") is None  # made in memory
    for preset, name in (("quick", "xray_subset"), ("regime", "xray_stratified")):
        reason = presets.missing_data(preset, name)
        assert "pip install medmnist" in reason and data.DATA_DIR_ENV in reason and "\n" not in reason
        assert "shared/" not in reason
    reason = presets.missing_data("full", "fashion_mnist")
    assert "fashion-mnist: not found" in reason and data.DATA_DIR_ENV in reason and "shared/" not in reason
    _pneumonia(places["env"])
    (places["env"] / "fashion-mnist").mkdir()
    assert presets.missing_data("quick", "xray_subset") is None
    assert presets.missing_data("full", "fashion_mnist") is None
    assert presets.missing_data("full", "celeba") is not None
    with pytest.raises(ValueError, match="huge"):
        presets.missing_data("huge", "digits")
    with pytest.raises(ValueError, match="no experiment 'mnist'"):
        presets.missing_data("quick", "mnist")


def test_the_quick_preset_reads_the_file_the_finder_finds(places):
    from bnn import _config as config
    from experiments.bnn import _presets as presets

    path = _pneumonia(places["home"])
    cfg = presets.run_config("quick", "xray_subset", 0)
    assert config.data_location(cfg.dataset, cfg.data_path) == path
    assert config.DATASETS[cfg.dataset](cfg).source == "MedMNIST npz pneumoniamnist.npz"


def test_asking_whether_data_exist_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, experiments.bnn._presets as p; p.missing_data('quick', 'xray_subset'); "
            "p.missing_data('full', 'celeba'); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_configured_data_folder_wins_over_a_stray_copy_in_the_working_folder(places, tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "fashion-mnist").mkdir(parents=True)
    monkeypatch.chdir(work)
    assert data.find_data("fashion-mnist").resolve() == (work / "fashion-mnist").resolve()  # the last place
    (places["env"] / "fashion-mnist").mkdir()
    assert data.find_data("fashion-mnist") == places["env"] / "fashion-mnist"
    assert data.find_data("./fashion-mnist") == Path("./fashion-mnist")  # a path is taken as it is
    with pytest.raises(DataError, match="not found"):
        data.find_data("./celeba")


def test_the_development_data_folder_is_the_shared_folder_beside_the_repository(request):
    """Where the tests' data is looked for last: ``../shared/data`` of the checkout (a path, existing or not)."""
    if request.config.getoption("--without-dev-data"):
        pytest.skip("--without-dev-data moves the development data folder away")
    from data_sets._find import DEV_DATA, SHARED_XRAY
    root = Path(__file__).resolve().parents[1]
    assert DEV_DATA == root.parent / "shared" / "data" and SHARED_XRAY.parent == DEV_DATA


# ------------------------------------------------ an explicit data setting that is not a folder is an error

def _unusable(tmp_path, kind):
    if kind == "file":
        path = tmp_path / "a-file"
        path.write_text("x")
    elif kind == "missing":
        path = tmp_path / "absent"
    elif kind == "loop":
        path = tmp_path / "loop"
        path.symlink_to(path)
    elif kind == "nul":
        path = f"{tmp_path}/bad\0name"
    else:
        path = tmp_path / ("x" * 5000)
    return path


UNUSABLE = ["file", "missing", "loop", "nul", "too-long"]


@pytest.mark.parametrize("kind", UNUSABLE)
def test_an_unusable_data_dir_variable_is_an_error_naming_it_never_the_development_subset(places, monkeypatch,
                                                                                        tmp_path, kind):
    _pneumonia(places["dev"])  # what a quiet fall back would find
    (places["dev"] / "fashion-mnist").mkdir()
    # an environment variable cannot hold NUL (the argument can): a missing folder stands for it
    monkeypatch.setenv(data.DATA_DIR_ENV, str(_unusable(tmp_path, "missing" if kind == "nul" else kind)))
    for find in (data.find_medmnist, lambda: data.find_data("fashion-mnist")):
        with pytest.raises(DataError, match=f"\\${data.DATA_DIR_ENV} = .* is not a usable data folder"):
            find()


@pytest.mark.parametrize("kind", UNUSABLE)
def test_an_unusable_data_dir_argument_is_an_error_naming_it(places, tmp_path, kind):
    _pneumonia(places["env"])
    bad = _unusable(tmp_path, kind)
    for find in (lambda: data.find_medmnist(data_dir=bad), lambda: data.find_data("fashion-mnist", data_dir=bad),
                 lambda: data.find_data(str(places["env"]), data_dir=bad)):
        with pytest.raises(DataError, match="data_dir = .* is not a usable data folder") as err:
            find()
        assert len(str(err.value)) < 400
