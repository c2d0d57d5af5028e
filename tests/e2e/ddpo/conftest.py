"""End-to-end tests with TRL 0.23.1's DDPO and AlignProp trainers and a tiny Stable Diffusion pipeline."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.e2e)
