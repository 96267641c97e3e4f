"""Input checks through the public entry points, end to end: a few refusals through ``sample``,
``sample_together`` and the torch chains' ``sample`` (each a ValueError naming the value, before
anything compiles or allocates), valid but unusual options that run, and a divergence reported at
the same step by every entry point.

The refusals themselves are tables run against the validation layer and the run spec, which
compile nothing: tests/test_validation.py (it also runs :data:`END_TO_END_REFUSALS` in a fresh
interpreter and finds no kernel compiled).
"""

import numpy as np
import pytest

from bias.telescoping import telescoping_bias
from integrators import GaussianTarget, sample, sample_together
from integrators.backends import Torch
from integrators.torch import chains

ONE_D = GaussianTarget.one_d_example()
RUN = dict(h=0.1, n_chains=4, n_steps=50, burn_in=5, batch_size=1)
HUGE = 10**12
MEMORY = "GiB of arrays, more than this machine's"
LONE = "samplers must be a list of .scheme, plan. pairs"


def refuse_end_to_end(entry, kwargs):
    if entry is sample_together:
        sample_together(ONE_D, **{"samplers": [("ubu", "sms")], "batch_size": 1, "h": 0.1, "n_chains": 2,
                                  "n_steps": 10, **kwargs})
    else:
        entry(ONE_D, "ubu", "sms", **{**RUN, **kwargs})


# (entry point, keywords, what the message says); the same checks on both backends and many more: the
# tables of tests/test_validation.py
END_TO_END_REFUSALS = [
    pytest.param(sample, {"seed": 2**64}, r"seed must be < 2\*\*64", id="sample-seed-beyond-64-bits"),
    pytest.param(sample, {"x_ref": [0.0]}, "x_ref is given but control_variate is false",
                 id="sample-x_ref-without-control-variate"),
    pytest.param(sample, {"path_refine": 2**21}, r"path_refine must be a power of two <= 2\*\*20",
                 id="sample-path_refine-2**21"),
    pytest.param(sample, {"n_chains": HUGE}, f"n_chains={HUGE}.*{MEMORY}", id="sample-n_chains-beyond-memory"),
    pytest.param(chains.sample, {"full_moments": "no"}, "full_moments must be True or False",
                 id="torch-full_moments-string"),
    pytest.param(chains.sample, {"histogram": (-3.0, 3.0, HUGE)}, f"{HUGE} histogram bins.*{MEMORY}",
                 id="torch-histogram-beyond-memory"),
    pytest.param(chains.sample, {"compile": "maybe"}, "compile='maybe' is not a torch.compile backend",
                 id="torch-compile-word"),
    pytest.param(sample_together, {"samplers": "ubu"}, LONE, id="together-a-lone-name"),
    pytest.param(sample_together, {"samplers": {"ubu": "sms"}}, LONE, id="together-a-mapping"),
    pytest.param(sample_together, {"backend": Torch()}, "sample_together runs on the Numba backend",
                 id="together-on-torch"),
]


@pytest.mark.parametrize("entry, kwargs, words", END_TO_END_REFUSALS)
def test_entry_points_refuse_bad_input_by_name(entry, kwargs, words):
    with pytest.raises(ValueError, match=words):
        refuse_end_to_end(entry, kwargs)


@pytest.mark.slow
def test_unusual_but_valid_options_run_end_to_end():
    """Options the checks once refused, run (their canonical values: tests/test_validation.py):
    integral float histogram bins on both backends, a path refinement of 8 (2**62 was accepted and
    never ended; the bound is 2**20), and a scalar x0 and x_ref for a one-dimensional target."""
    for run in (sample, chains.sample):
        assert run(ONE_D, "ubu", "sms", **RUN, histogram=(-3, 3, 10.0)).histogram.sum() > 0
    assert not sample(ONE_D, "ubu", "sms", **RUN, path_refine=2**3).diverged
    res = sample(ONE_D, "ubu", "sms", **RUN, x0=0.5, control_variate=True, x_ref=-0.9)
    assert not res.diverged


@pytest.mark.slow
def test_every_entry_point_reports_the_divergence_the_target_bound_defines():
    """EM at h = 1 on the 1-D example leaves the target's scale within a few steps: sample, the
    torch backend and the coupled chains (hence the telescoping sum) all report it (the coupled
    chains and torch used a fixed bound of 1e8 and returned differences of 1e11 as numbers)."""
    numba_run = sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3)
    assert np.all(numba_run.diverged_at > 0)
    torch_default = chains.sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3)
    torch_target = chains.sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3,
                                 divergence_bound=ONE_D.divergence_bound())
    torch_loose = chains.sample(ONE_D, "em", "full", h=1.0, n_chains=4, n_steps=44, seed=3, divergence_bound=1e8)
    assert np.all(torch_default.diverged_at > 0)
    np.testing.assert_array_equal(torch_default.diverged_at, torch_target.diverged_at)
    assert np.all(torch_loose.diverged_at > torch_default.diverged_at)  # the bound matters here
    with pytest.raises(RuntimeError, match="diverged at h=1"):
        telescoping_bias(ONE_D, "em", "full", 1.0, levels=1, base_epochs=20, n_chains=4)
