"""pytest plugin of the verification harness: add ``pytest_plugins = ["theory_checks.pytest_plugin"]``
to a ``conftest.py`` (the project's own ``tests/conftest.py`` does).

Fixtures:

* ``verify_scheme``: :func:`theory_checks.testing.assert_verified`, so a test reads
  ``def test_mine(verify_scheme): verify_scheme(MY_SCHEME)``; it fails on a failed claim and on
  an inconclusive one unless allowed by name (``allow_inconclusive=["strong_order"]``);
* ``verify_adapter``: the same function for another library's sampler behind an adapter
  (:mod:`theory_checks.adapters`): ``def test_mine(verify_adapter): verify_adapter(MyAdapter())``;
* ``registered``: registers schemes, plans and adapters for the duration of one test
  (``registered(scheme, plan, adapter, ...)``) and removes them afterwards.
"""

from __future__ import annotations

import pytest

from integrators.plans import PLAN_ATTRIBUTES, register_plan, unregister_plan
from integrators.schemes import register_scheme, unregister_scheme
from theory_checks.testing import _is_adapter, assert_verified

__all__ = ["registered", "verify_adapter", "verify_scheme"]


@pytest.fixture
def verify_scheme():
    return assert_verified


@pytest.fixture
def verify_adapter():
    return assert_verified


@pytest.fixture
def registered():
    added = []

    def register(*items):
        for item in items:
            if all(hasattr(item, a) for a in PLAN_ATTRIBUTES):
                register_plan(item)
                added.append((unregister_plan, item.NAME))
            elif _is_adapter(item):
                from theory_checks.adapters import ADAPTERS
                ADAPTERS.register(item)
                added.append((ADAPTERS.unregister, item.NAME))
            else:
                register_scheme(item)
                added.append((unregister_scheme, item.NAME))
        return items[0] if len(items) == 1 else items

    yield register
    for unregister, name in reversed(added):
        unregister(name)
