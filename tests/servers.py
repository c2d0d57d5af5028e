"""Real tracker servers that tests start on 127.0.0.1 and stop: shared by tests/bridges and the
framework sessions that mirror a training run into them (a conftest imports the fixture).

``mlflow_server`` is a real ``mlflow server`` (a SQLite backend store and served artifacts in the
test's folder) on a free port. It can be stopped and started again mid-test on the same port and the
same database, which is how the fault tests take the server away and bring it back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import free_port


class MlflowServer:
    """``mlflow server`` in a subprocess; ``url`` is its tracking URI."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    def start(self, timeout: float = 90) -> None:
        mlflow = shutil.which("mlflow", path=os.path.dirname(sys.executable)) or "mlflow"
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [
                mlflow,
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{self.folder / 'mlflow.db'}",
                "--artifacts-destination",
                str(self.folder / "artifacts"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"mlflow server exited: {(self.folder / 'server.log').read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer in {timeout} s")

    def stop(self) -> None:
        """Stops the server and every worker it started (the whole process group)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        import signal

        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path / "mlflow-server")
    server.start()
    try:
        yield server
    finally:
        server.stop()
