"""Real tracker servers that tests start on 127.0.0.1 and stop: shared by tests/bridges and the
framework sessions that mirror a training run into them (a conftest imports the fixture).

``mlflow_server`` is a real ``mlflow server`` (a SQLite backend store and served artifacts in the
test's folder) on a free port, the test's own. It can be stopped and started again mid-test on the same
port and the same database, which is how the fault tests take the server away and bring it back.
``shared_mlflow_server`` is one such server for the whole session (starting one costs 12-30 s of a
2-core machine): for the tests that leave it running and read back only their own runs, found by their
``tunetrack.run_id`` tag.

The servers run without MLflow's job execution (``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``, unless the
environment sets it): by default ``mlflow server`` also starts a job runner and seven huey consumers
for its GenAI jobs (scorers, trace rollups), which no tunetrack code reaches. Measured on the 2-core
machine: with them a server took 47 CPU-seconds to start and 12 more every 30 s while idle, stolen from
the tests beside it; without them 12 to start and 0.07 idle. The tracking server, its REST API and its
SQLite store are the same.

``webhook`` is an HTTP receiver (the standard library's server, in a thread) that records every POST
and answers 200, or 500 (``failing``), or holds each request until ``release`` is set (``hang``):
the far end of tunetrack's alerts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.helpers import free_port


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
            env={"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ},
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
    """A server of the test's own: for a test that stops it, or that reads or counts everything the
    server holds (every experiment, every run), which another test's runs would change."""
    server = MlflowServer(tmp_path / "mlflow-server")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _mlflow_session_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-shared"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def shared_mlflow_server(_mlflow_session_server: MlflowServer) -> Iterator[MlflowServer]:
    """The session's one server, for a test that leaves it running and reads back only its own runs
    (by their ``tunetrack.run_id`` tag: other tests' runs are in the same experiments). A test that
    stopped it would fail here, not the tests after it."""
    server = _mlflow_session_server
    assert server.proc is not None and server.proc.poll() is None, "the shared mlflow server is down"
    yield server
    assert server.proc.poll() is None, "a test stopped the shared mlflow server: use mlflow_server"


class Webhook:
    """Records POSTs: ``received`` holds ``(path, parsed JSON body)``; ``url`` is its base URL."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict]] = []
        self.status = 200
        self.hang = False
        self.release = threading.Event()
        self.holding = 0  # requests being held right now
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.received.append((self.path, body))
                if hook.hang:
                    hook.holding += 1
                    hook.release.wait(60)
                    hook.holding -= 1
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: object) -> None: ...

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def bodies(self, path: str = "/hook") -> list[dict]:
        return [body for p, body in self.received if p == path]

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    try:
        yield hook
    finally:
        hook.stop()
