"""A real S3-compatible server for the object-store tests: moto's standalone server, as a subprocess.

Fixtures:

- ``moto_server`` (session): ``python -m moto.server`` on ``127.0.0.1:<free port>``, started once, with
  one bucket; stopped at the end of the session. Its output is printed if it dies or never answers.
- ``s3_url`` (function): points the standard AWS variables at the server for this test only
  (``AWS_ENDPOINT_URL``, static keys, region, ``AWS_ALLOW_HTTP=true`` for obstore's plain-HTTP
  endpoint; the caller's profile, session token and config files are hidden) and yields a fresh
  ``s3://<bucket>/<unique prefix>``. The client under test finds everything the way it would on AWS.
- ``s3_proxy`` (function): the same, with ``AWS_ENDPOINT_URL`` on a ``FaultProxy`` in front of the
  server (store-down, 503 SlowDown, lost answers); yields ``(url, proxy)``.

Needs ``obstore`` and ``moto[s3]`` + ``flask`` + ``flask-cors`` (moto's server). Where they are not
installed (the core ``tests`` session), this folder is left out of collection instead of being skipped
(a skip fails that session); set ``TUNETRACK_OBJECTSTORE_TESTS=1`` to make a missing package an error.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_NEEDED = ("obstore", "moto", "flask", "flask_cors")
_MISSING = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
if _MISSING and os.environ.get("TUNETRACK_OBJECTSTORE_TESTS") != "1":
    # not installed here: leave the object-store tests out (the proxy self-test needs nothing)
    collect_ignore_glob = [
        p.name for p in Path(__file__).parent.glob("test_*.py") if p.name != "test_proxy.py"
    ]
elif _MISSING:
    raise ImportError(
        f"object-store tests need {', '.join(_MISSING)} (pip install obstore 'moto[s3]' flask flask-cors)"
    )

BUCKET = "tunetrack-test"
STARTUP_TIMEOUT_S = 60.0
#: variables that could point a client elsewhere or at other credentials: removed for each test
_HIDDEN = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT",
    "AWS_ENDPOINT_URL_S3",
    "AWS_REGION",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
)


@dataclass
class MotoServer:
    url: str
    port: int
    bucket: str
    startup_s: float
    log_path: Path

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": endpoint or self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",  # obstore refuses a plain-http endpoint without it
            "AWS_EC2_METADATA_DISABLED": "true",  # botocore: never ask an instance-metadata service
            # obstore: should a credential lookup ever fall through to instance metadata, it meets a
            # closed loopback port, never 169.254.169.254
            "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9",
            "AWS_CONFIG_FILE": os.devnull,  # no profile from the developer's ~/.aws
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _output(log_path: Path) -> str:
    try:
        return log_path.read_text(errors="replace")[-4000:]
    except OSError:
        return "(no output)"


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tempfile.NamedTemporaryFile(prefix="tunetrack-moto-", suffix=".log", delete=False)  # noqa: SIM115
    log_path = Path(log.name)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = started + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"moto's server exited with {proc.returncode} before answering:\n{_output(log_path)}",
                    pytrace=False,
                )
            try:
                with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"moto's server did not answer within {STARTUP_TIMEOUT_S:.0f} s:\n{_output(log_path)}",
                        pytrace=False,
                    )
                time.sleep(0.05)
        startup_s = time.monotonic() - started
        # CreateBucket: moto accepts it unsigned, so the fixture needs no S3 client of its own
        with urllib.request.urlopen(urllib.request.Request(f"{url}/{BUCKET}", method="PUT"), timeout=10):
            pass
        yield MotoServer(url=url, port=port, bucket=BUCKET, startup_s=startup_s, log_path=log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
        log_path.unlink(missing_ok=True)


def _point_env_at(monkeypatch: pytest.MonkeyPatch, server: MotoServer, endpoint: str | None = None) -> None:
    for name in _HIDDEN:
        monkeypatch.delenv(name, raising=False)
    for name, value in server.env(endpoint).items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def s3_url(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """``s3://<bucket>/<fresh prefix>``, with the AWS variables pointing at the moto server."""
    _point_env_at(monkeypatch, moto_server)
    return f"s3://{moto_server.bucket}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_proxy(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, object]]:
    """``(s3 url, FaultProxy)``: the AWS variables point at a fault proxy in front of the server."""
    from .proxy import FaultProxy

    with FaultProxy("127.0.0.1", moto_server.port) as proxy:
        _point_env_at(monkeypatch, moto_server, endpoint=proxy.url)
        yield f"s3://{moto_server.bucket}/t-{uuid.uuid4().hex[:12]}", proxy
