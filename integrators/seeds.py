"""One derivation of seeds for every part of an experiment.

An experiment that needs several independent random streams (the repeats of a Figure 1 point,
the levels of a telescoping sum, the data split, the optimizer and the chains of a BNN run) takes
each from :func:`derive` with labels that name the part::

    derive(seed, "figure1", k, r)      # repeat r at step size k
    derive(seed, "telescoping", level)
    derive(seed, "bnn", "sampler", label, k)

:func:`derive` feeds the user's seed and the labels to numpy's ``SeedSequence`` (the seed as its
entropy, the labels as its spawn key), whose hashing makes streams for different labels
independent in practice, and returns 64 bits of its output.  The same seed and labels give the
same number on every machine and in every process (string labels are hashed with BLAKE2b, not
Python's salted ``hash``).  Within one sampler run the chains' streams come from
:mod:`integrators._rng` (the seed, the stream kind and the chain's index); :func:`derive` is for
everything above one run.
"""

from __future__ import annotations

import hashlib
import numbers

import numpy as np

from integrators._validation import seed_value

SEED_BITS = 64


def label_word(label) -> int:
    """A label as a word in ``[0, 2**64)``: an integer in that range as it is, a string hashed with BLAKE2b
    to 8 bytes; anything else (a bool included) raises ``ValueError``."""
    if isinstance(label, str):
        return int.from_bytes(hashlib.blake2b(label.encode(), digest_size=8).digest(), "little")
    if isinstance(label, bool) or not isinstance(label, numbers.Integral) or not 0 <= label < 2**SEED_BITS:
        raise ValueError(f"a seed label must be a string or an integer in [0, 2**64), got {label!r}")
    return int(label)


def derive(seed, *labels) -> int:
    """The seed of the part of an experiment that ``labels`` name.

    The labels are the spawn key of a :class:`numpy.random.SeedSequence` with entropy ``seed``: the
    same seed and labels give the same seed, different labels independent ones.

    Parameters
    ----------
    seed : int
        The experiment's seed, in ``[0, 2**64)``.
    *labels : int or str
        The names of the part, outermost first (see ``label_word``).

    Returns
    -------
    int
        The derived seed, in ``[0, 2**64)``.

    Raises
    ------
    ValueError
        If ``seed`` is not an integer in ``[0, 2**64)``, or a label is refused by ``label_word``.
    """
    seed = seed_value(seed)
    words = np.random.SeedSequence(entropy=seed, spawn_key=tuple(label_word(lab) for lab in labels))
    return int(words.generate_state(1, np.uint64)[0])

__all__ = ["derive"]
