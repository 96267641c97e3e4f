import os
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

pytest_plugins = ["theory_checks.pytest_plugin"]  # fixtures verify_scheme, registered

# Numba compiles on first use: no deadlines; a small, fixed example budget keeps the suite short.
settings.register_profile(
    "project", deadline=None, max_examples=25, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("project")
