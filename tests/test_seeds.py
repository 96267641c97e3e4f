"""integrators.seeds: one derivation of the seeds of an experiment's parts."""

import subprocess
import sys

import pytest

from integrators.seeds import SEED_BITS, derive, label_word


def test_a_part_gets_the_same_seed_each_time_and_other_parts_other_seeds():
    parts = [("figure1", k, r) for k in range(3) for r in range(3)] + [("telescoping", 0), ("bnn", "sampler", "a", 0)]
    seeds = [derive(7, *labels) for labels in parts]
    assert seeds == [derive(7, *labels) for labels in parts]
    assert len(set(seeds)) == len(seeds)
    assert all(isinstance(s, int) and 0 <= s < 2**SEED_BITS for s in seeds)
    assert derive(7, "figure1") != derive(8, "figure1")  # the user's seed counts
    assert derive(7, "a", "b") != derive(7, "b", "a")  # and the labels' order


def test_string_labels_give_the_same_seed_in_another_process():
    """Strings are hashed with BLAKE2b, not Python's per-process salted ``hash``."""
    code = "from integrators.seeds import derive; print(derive(3, 'bnn', 'sampler', 2))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345", "PYTHONPATH": ":".join(sys.path)})
    assert int(other.stdout) == derive(3, "bnn", "sampler", 2)


def test_labels_are_words_of_at_most_64_bits():
    assert label_word(5) == 5 and label_word(2**64 - 1) == 2**64 - 1
    assert 0 <= label_word("figure1") < 2**64 and label_word("a") != label_word("b")


@pytest.mark.parametrize("label", [-1, 2**64, 1.0, True, None, b"x"])
def test_a_label_that_is_neither_a_string_nor_a_64_bit_integer_is_refused_naming_it(label):
    with pytest.raises(ValueError, match=r"a seed label must be a string or an integer in \[0, 2\*\*64\), got "
                       + repr(label).replace("(", r"\(").replace(")", r"\)")):
        derive(0, label)


@pytest.mark.parametrize("seed", [-1, 2**64, 0.5, "1"])
def test_a_seed_outside_64_bits_is_refused(seed):
    with pytest.raises(ValueError, match="seed"):
        derive(seed, "part")
