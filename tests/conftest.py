import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

pytest_plugins = ["theory_checks.pytest_plugin"]  # fixtures verify_scheme, registered

# Numba compiles on first use: no deadlines; a small, fixed example budget keeps the suite short.
settings.register_profile(
    "project", deadline=None, max_examples=25, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("project")


@pytest.fixture
def one_torch_thread():
    """Small tensors: one intra-op thread (a loaded machine stalls torch's thread pool)."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
