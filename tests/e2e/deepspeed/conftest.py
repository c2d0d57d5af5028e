"""End-to-end tests with the real deepspeed launcher and a real DeepSpeed engine, on CPU (gloo)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.e2e)
