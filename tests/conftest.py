"""Shared fixtures. Every test passes the store root explicitly (no global path patching)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.helpers import LAUNCH_PREFIXES, LAUNCH_VARS
from support.servers import webhook  # noqa: F401 - the fixture: an HTTP receiver for alerts

#: every test under this folder trains a real model with a real framework: marked ``e2e``
E2E = Path(__file__).resolve().parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The one marking of end-to-end tests, by folder: an item is ``e2e`` exactly when its file lies
    under ``tests/e2e/``, whatever else the session collected (the unit tests keep their switches)."""
    for item in items:
        if E2E in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session", autouse=True)
def unit_test_session(request):
    """In a session without end-to-end tests, the two switches below hold from its start: the stores
    that module- and session-scoped fixtures write are made before any function-scoped fixture runs
    (a 60-run sweep made with a recorder process and a Parquet copy per run took 16 s, without them
    2 s). A session with end-to-end tests keeps a user's defaults, and the switches act per test."""
    if any(item.get_closest_marker("e2e") for item in request.session.items):
        yield
        return
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TUNETRACK_CONSOLE", "0")
        env.setenv("TUNETRACK_PARQUET", "0")
        yield


@pytest.fixture(autouse=True)
def console_off(request, monkeypatch):
    """The console is recorded by default; unit tests of other things turn it off, so that each of the
    hundreds of trackers they start does not start a recorder process too (and pytest's own capture
    of fds 1 and 2 stays as it is). The console's tests turn it on (``TUNETRACK_CONSOLE=1``), and the
    end-to-end tests keep the default a user has: their training records its console."""
    if request.node.get_closest_marker("e2e") is None:
        monkeypatch.setenv("TUNETRACK_CONSOLE", "0")


@pytest.fixture(autouse=True)
def parquet_off(request, monkeypatch):
    """A run's last process writes its Parquet copy as it ends (``manage.parquet``), which costs each of
    the hundreds of trackers the unit tests start a reader's pass over its records (and, where the test
    process has not loaded pyarrow, a child process): off, except where a test turns it on
    (``TUNETRACK_PARQUET=1``: the query and Parquet tests) and in the end-to-end tests, which keep a
    user's default."""
    if request.node.get_closest_marker("e2e") is None:
        monkeypatch.setenv("TUNETRACK_PARQUET", "0")


@pytest.fixture(scope="session")
def sweep_store(tmp_path_factory):
    """``(root, runs)``: the generated 60-run sweep (``tests/support/sweep.py``), made once for the session and
    only read by the tests that use it."""
    from support.sweep import make_sweep

    root = tmp_path_factory.mktemp("sweep") / "runs"
    return root, make_sweep(root)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "runs"


@pytest.fixture
def plain_process(monkeypatch):
    """The test starts as a plain single process, whatever launched pytest."""
    for name in list(os.environ):
        if name in LAUNCH_VARS or name.startswith(LAUNCH_PREFIXES):
            monkeypatch.delenv(name)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test tested nothing: the session fails rather than count it as a pass."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == 0 and reporter is not None and reporter.stats.get("skipped"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
