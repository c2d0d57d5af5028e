"""Shared fixtures. Every test passes the store root explicitly (no global path patching)."""

from __future__ import annotations

from pathlib import Path

import pytest

from servers import webhook  # noqa: F401 - the fixture: an HTTP receiver for alerts


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test tested nothing: the session fails rather than count it as a pass."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == 0 and reporter is not None and reporter.stats.get("skipped"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
