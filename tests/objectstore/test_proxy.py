"""Self-test of the fault proxy against a stdlib HTTP server (no object store, no extra packages)."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .proxy import FaultProxy


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as S3 servers do

    def _reply(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(self.path.encode())

    def do_PUT(self) -> None:
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.server.stored[self.path] = body  # type: ignore[attr-defined]
        self._reply(b"got %d" % len(body))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.stored = {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(server: ThreadingHTTPServer) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", server.server_address[1]) as p:
        yield p


def _request(
    port: int, method: str = "GET", path: str = "/a", body: bytes | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_forwards_and_counts(proxy: FaultProxy) -> None:
    assert _request(proxy.port, "GET", "/x/y?list-type=2") == (200, b"/x/y?list-type=2")
    assert _request(proxy.port, "PUT", "/k", b"z" * 100_000) == (200, b"got 100000")
    assert proxy.requests == [("GET", "/x/y?list-type=2", None), ("PUT", "/k", None)]


def test_keep_alive_client_sees_every_request(proxy: FaultProxy) -> None:
    """A pooled connection does not slip requests past the proxy: each one is inspected."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    for i in range(3):
        conn.request("GET", f"/{i}")
        resp = conn.getresponse()
        assert resp.read() == f"/{i}".encode()
        if resp.will_close:  # the proxy says Connection: close; http.client reconnects by itself
            conn.close()
    assert proxy.count("GET") == 3


def test_throttle_answers_503_slowdown_then_forwards(proxy: FaultProxy) -> None:
    proxy.throttle(2)
    for _ in range(2):
        status, body = _request(proxy.port, "PUT", "/k", b"payload")
        assert status == 503
        assert b"<Code>SlowDown</Code>" in body
    assert _request(proxy.port, "PUT", "/k", b"payload") == (200, b"got 7")
    assert proxy.count(status=503) == 2
    assert proxy.count(status=None) == 1


def test_throttle_only_matching_requests(proxy: FaultProxy) -> None:
    proxy.throttle(1, match=lambda method, target: method == "PUT")
    assert _request(proxy.port, "GET", "/a")[0] == 200
    assert _request(proxy.port, "PUT", "/a", b"1")[0] == 503
    assert _request(proxy.port, "PUT", "/a", b"1")[0] == 200


def test_close_refuses_then_reopen_on_the_same_port(proxy: FaultProxy) -> None:
    port = proxy.port
    proxy.close()
    with pytest.raises(ConnectionRefusedError):
        _request(port)
    proxy.reopen()
    assert proxy.port == port
    assert _request(port) == (200, b"/a")


def test_close_reset_mode(proxy: FaultProxy) -> None:
    proxy.close("reset")
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError)):
        _request(proxy.port)
    proxy.reopen()
    assert _request(proxy.port)[0] == 200


def test_close_hang_mode_times_out(proxy: FaultProxy) -> None:
    proxy.close("hang")
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=0.5)
    with pytest.raises(TimeoutError):
        conn.request("GET", "/a")
        conn.getresponse()
    conn.close()
    proxy.reopen()
    assert _request(proxy.port)[0] == 200


def test_lose_responses_the_write_happens_but_the_client_sees_a_reset(
    proxy: FaultProxy, server: ThreadingHTTPServer
) -> None:
    proxy.lose_responses(1, match=lambda method, target: method == "PUT")
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        _request(proxy.port, "PUT", "/run.json", b"first")
    assert server.stored["/run.json"] == b"first"  # type: ignore[attr-defined]
    assert proxy.requests == [("PUT", "/run.json", 0)]
    assert _request(proxy.port, "PUT", "/run.json", b"again") == (200, b"got 5")
