"""Dashboard tests: API tests in-process (httpx over ASGI), browser tests against a real server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers import SRC

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``tunetrack ui`` in a subprocess on a free port; stopped (SIGINT, like Ctrl-C) at teardown."""

    def __init__(self, root: Path, host: str = "127.0.0.1", token: str | None = None) -> None:
        self.port = free_port()
        self.base = f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{self.port}"
        cmd = [
            sys.executable,
            "-m",
            "tunetrack",
            "ui",
            "--dir",
            str(root),
            "--host",
            host,
            "--port",
            str(self.port),
        ]
        if token:
            cmd += ["--token", token]
        self.proc = subprocess.Popen(
            cmd,
            env={**os.environ, "PYTHONPATH": SRC},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.banner = self.proc.stdout.readline().strip()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server died: {self.banner}\n{self.proc.stdout.read()}")
            try:
                httpx.get(self.base + "/static/app.css", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> int:
        self.proc.send_signal(2)
        return self.proc.wait(timeout=15)


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
    playwright = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        yield b
        b.close()
