"""pytest plugin of the verification harness: add ``pytest_plugins = ["theory_checks.pytest_plugin"]``
to a ``conftest.py`` (the project's own ``tests/conftest.py`` does).

Fixtures:

* ``verify_scheme``: :func:`theory_checks.testing.assert_verified`, so a test reads
  ``def test_mine(verify_scheme): verify_scheme(MY_SCHEME)``;
* ``registered``: registers schemes and plans for the duration of one test
  (``registered(scheme, plan, ...)``) and removes them afterwards.
"""

from __future__ import annotations

import pytest

from integrators.plans import PLAN_ATTRIBUTES, register_plan, unregister_plan
from integrators.schemes import register_scheme, unregister_scheme
from theory_checks.testing import assert_verified


@pytest.fixture
def verify_scheme():
    return assert_verified


@pytest.fixture
def registered():
    added = []

    def register(*items):
        for item in items:
            is_plan = all(hasattr(item, a) for a in PLAN_ATTRIBUTES)
            (register_plan if is_plan else register_scheme)(item)
            added.append((is_plan, item.NAME))
        return items[0] if len(items) == 1 else items

    yield register
    for is_plan, name in reversed(added):
        (unregister_plan if is_plan else unregister_scheme)(name)
