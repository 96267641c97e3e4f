"""integrators._divergence: what a divergence records (the policy itself is tested where each sampler
applies it: tests/test_chain_summary.py, tests/test_torch_module.py and the coupled chains' tests)."""

import pickle

from integrators._divergence import NOT_DIVERGED, SamplerDiverged


def test_a_divergence_names_its_first_step_and_what_was_not_finite():
    error = SamplerDiverged(17, "the force", diverged_at=(NOT_DIVERGED, 17, 20))
    assert isinstance(error, RuntimeError) and not isinstance(error, ValueError)
    assert str(error) == "the sampler diverged at step 17: the force is not finite"
    assert (error.step, error.what, error.diverged_at) == (17, "the force", (-1, 17, 20))
    assert SamplerDiverged(3, "x").diverged_at is None


def test_a_divergence_crosses_a_process_boundary_whole():
    """Pickled (a worker process's exception), it keeps its step, what and every chain's step."""
    error = pickle.loads(pickle.dumps(SamplerDiverged(5, "chain 2's parameters", diverged_at=(5, NOT_DIVERGED))))
    assert (error.step, error.what, error.diverged_at) == (5, "chain 2's parameters", (5, -1))
    assert str(error) == "the sampler diverged at step 5: chain 2's parameters is not finite"
