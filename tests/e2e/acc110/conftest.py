"""End-to-end tests with accelerate 1.10 (no register_tracker_class): the instance path."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.e2e)
