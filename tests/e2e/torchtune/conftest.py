"""End-to-end tests with torchtune 0.6.1 recipes run by `tune run`, on CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "torchtune"))


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    from prepare import prepare

    return prepare(tmp_path_factory.mktemp("torchtune"))
