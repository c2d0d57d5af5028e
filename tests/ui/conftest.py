"""Dashboard tests: API tests in-process (httpx over ASGI), browser tests against a real server."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import Server

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"


@pytest.fixture
def server_factory():
    servers = []

    def make(root, **kw):
        servers.append(Server(root, **kw))
        return servers[-1]

    yield make
    for s in servers:
        if s.proc.poll() is None:
            s.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright import sync_api as playwright  # the ui session installs it: a missing one fails

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        yield b
        b.close()
