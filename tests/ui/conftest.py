"""Dashboard tests: API tests in-process (httpx over ASGI), browser tests against a real server."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.helpers import Server

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
#: a run name, tag, config key or value, command-line argument: anything the pages must show as text
XSS = "<img src=x onerror=alert(1)>"


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


@pytest.fixture
def page(browser):
    """A fresh browser context's page; ``page.dialogs`` collects any dialog (an injected script's alert)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page
    context.close()
