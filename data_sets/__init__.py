"""Data sets, read from local files in their standard public formats: one place for the BNN
experiments (images) and the logistic-regression experiments (their features, :mod:`experiments.logistic._compute`).

| loader | format | paper |
| --- | --- | --- |
| :func:`load_fashion_mnist` | the four IDX files (``train-images-idx3-ubyte`` ..., ``.gz`` or not) | Fashion-MNIST |
| :func:`load_cifar10` | the python batches (``data_batch_1..5``, ``test_batch``, pickled dicts) | CIFAR-10 |
| :func:`load_celeba` | ``img_align_celeba/*.jpg`` + ``list_attr_celeba.txt``: blond vs brown hair, 64 x 64 | Celeb-A |
| :func:`load_chest_xray` | ``{train,test}/{NORMAL,PNEUMONIA}/*`` images, grayscale 180 x 180 | chest X-ray |
| :func:`load_medmnist` | MedMNIST ``.npz`` (``train_images``, ``train_labels``, ...) | PneumoniaMNIST |
| :func:`embedded_digits` | scikit-learn's digits, shipped inside the package (the default) | - |

Where a file lies: :func:`find_medmnist` (a MedMNIST set: an explicit path or folder, then the folder
of the environment variable ``SMS_LANGEVIN_DATA_DIR`` (:data:`DATA_DIR_ENV`), then ``~/.medmnist``,
where ``pip install medmnist`` and ``medmnist.PneumoniaMNIST(split='train', download=True)`` save it)
and :func:`find_data` (a folder or file such as ``fashion-mnist``, found in the same folders); both
search the development setup's data folder beside the repository last, and a file found nowhere
raises :class:`DataError` saying where they looked and how to obtain it.

Each returns an :class:`ImageData`: float32 images ``(n, C, H, W)`` scaled to [0, 1] and int64
labels, for a train and a test split. No downloads: a missing, truncated or corrupt file raises
:class:`DataError` (a ``ValueError``) naming the file and the problem. Every loader hands
what it read to ``check_layout`` against the declared data set's ``DataSpec`` (the number of
classes, the channels and the axis the format puts them on, the image size where the set fixes it):
every split non-empty, one image shape across the splits, uint8 pixels, labels integers in
``[0, K)``; a file that breaks it raises :class:`DataError` naming the file and the field.
``SHARED_XRAY`` is the development setup's PneumoniaMNIST subset (the tests' file, the last
place :func:`find_medmnist` looks), read from where it lies, never copied.
``read_idx`` reads one IDX file.
"""

from data_sets._find import DATA_DIR_ENV, find_data, find_medmnist
from data_sets._idx import DataError
from data_sets._layout import ImageData, Part
from data_sets._loaders import (
    embedded_digits,
    load_celeba,
    load_chest_xray,
    load_cifar10,
    load_fashion_mnist,
    load_medmnist,
    synthetic,
)

__all__ = ["DATA_DIR_ENV", "DataError", "ImageData", "Part", "embedded_digits", "find_data", "find_medmnist",
           "load_celeba", "load_chest_xray", "load_cifar10", "load_fashion_mnist", "load_medmnist", "synthetic"]
