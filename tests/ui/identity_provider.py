"""A real OpenID Connect provider for the sign-in tests: panva's oidc-provider (``tests/ui/idp``, pinned
by its package-lock.json), run by Node on 127.0.0.1 on a free port, and the dashboard-side app it signs
people in to, served by uvicorn on a thread.

A fresh machine has no ``idp/node_modules`` (it is git-ignored): ``install`` runs ``npm ci`` there once.
Node and npm come from Debian's ``nodejs`` and ``npm`` (the ui nox session installs them if missing).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.helpers import free_port, wait_until

IDP = Path(__file__).resolve().parent / "idp"


def install() -> None:
    """``npm ci`` into ``idp/node_modules`` where oidc-provider is not there yet (exactly the locked
    versions; no install scripts run)."""
    if (IDP / "node_modules" / "oidc-provider" / "package.json").is_file():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is missing: the ui nox session installs Debian's nodejs and npm")
    done = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=IDP,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"npm ci in {IDP} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


class Provider:
    """``node provider.mjs`` with one confidential client; ``issuer`` once its discovery document
    answers. Its output goes to ``log``: why it failed to start, and the paths it was asked for
    (``asked``). ``claims_in_id_token``: the account's claims in the ID token too (not only at the
    userinfo endpoint)."""

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        redirect_uri: str,
        log: Path,
        claims_in_id_token: bool = False,
    ) -> None:
        install()
        node = shutil.which("node")
        if node is None:
            pytest.fail("node is missing: the ui nox session installs Debian's nodejs")
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [node, "provider.mjs", str(self.port), client_id, client_secret, redirect_uri],
                cwd=IDP,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "IDP_CLAIMS_IN_ID_TOKEN": "1" if claims_in_id_token else "0"},
            )
        try:
            wait_until(self._discoverable, timeout=60)
        except BaseException:
            self.stop()
            raise

    def _discoverable(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(
                f"the identity provider exited ({self.proc.returncode}):\n{self.log.read_text()}"
            )
        try:
            answer = httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2)
        except httpx.TransportError:
            return False
        return answer.status_code == 200 and answer.json().get("issuer") == self.issuer

    def asked(self) -> list[str]:
        """``METHOD PATH`` of each request the provider has had, in order."""
        return [
            line.removeprefix("asked ")
            for line in self.log.read_text().splitlines()
            if line.startswith("asked ")
        ]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class AppServer:
    """An ASGI app served by uvicorn on a thread, on a socket bound before the app exists (so the
    provider can be told the app's redirect URI first, with no race for the port)."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.server: Any = None
        self.thread: threading.Thread | None = None

    def serve(self, app: Any) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started or not self.thread.is_alive(), timeout=30)
        assert self.server.started, "uvicorn did not start"

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.should_exit = True
            self.thread.join(timeout=10)
        self.socket.close()
