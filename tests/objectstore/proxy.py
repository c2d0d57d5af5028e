"""A loopback TCP proxy for object-store tests: store outages and S3 throttling on demand.

``FaultProxy(host, port)`` listens on ``127.0.0.1:<free port>`` and forwards every connection to
``host:port`` (the moto server). A test points ``AWS_ENDPOINT_URL`` at ``proxy.url`` and then:

- ``proxy.close()``: the store is down. ``mode="refuse"`` (default) closes the listening socket, so a
  connect gets ``ECONNREFUSED``, and resets every open connection; ``mode="reset"`` keeps listening but
  resets each new connection at once; ``mode="hang"`` accepts and never answers (for timeouts).
- ``proxy.reopen()``: the store is back, on the same port.
- ``proxy.throttle(n, match=None)``: the next ``n`` HTTP requests (those for which
  ``match(method, target)`` is true, if given) are answered ``503 SlowDown`` with S3's XML error body
  and never reach the server.
- ``proxy.lose_responses(n, match=None)``: the next ``n`` matching requests reach the server, but the
  client's connection is reset instead of getting the answer (a write that happened unbeknownst to
  the writer: its retry of a put-if-absent then meets its own object).
- ``proxy.latency = 0.02``: every forwarded request waits that long first (a distant store's round
  trip, to see what concurrency buys).
- ``proxy.requests``: every request seen, as ``(method, target, status)``, ``status`` being 503 for
  the injected answers, 0 for lost answers and ``None`` for forwarded ones (the proxy does not parse
  responses); a cheap request counter for request-cost tests.

Each forwarded request travels on its own upstream connection: the proxy reads the request head,
rewrites ``Connection`` to ``close`` and then pipes both ways until the server closes. So a client's
keep-alive pool never carries a request past the proxy's inspection, and ``throttle()`` applies to the
very next requests. Standard library only (threads and sockets); bounded: every thread ends when its
connection does, and ``stop()`` ends them all.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from typing import Literal

Mode = Literal["refuse", "reset", "hang"]
_SLOWDOWN = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    "<Message>Please reduce your request rate.</Message><RequestId>{rid}</RequestId></Error>"
)
_MAX_HEAD = 64 * 1024


def _reset(sock: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0), as a crashed or unreachable peer would."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def _force_close(head: bytes) -> bytes:
    """An HTTP message head with its Connection/Keep-Alive headers replaced by Connection: close."""
    lines = head[:-4].split(b"\r\n")
    kept = [ln for ln in lines[1:] if not ln.lower().startswith((b"connection:", b"keep-alive:"))]
    return b"\r\n".join([lines[0], *kept, b"Connection: close"]) + b"\r\n\r\n"


class _Killed(Exception):
    pass


class _Conn:
    """One client connection: owned by one thread, which alone reads, writes and closes its sockets."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.killed = False  # set by close()/stop(): the owning thread resets both sockets
        self.buf = b""
        client.settimeout(0.1)

    def _fill(self) -> bool:
        while True:
            if self.killed:
                raise _Killed
            try:
                data = self.client.recv(65536)
            except TimeoutError:
                continue
            self.buf += data
            return bool(data)

    def until(self, marker: bytes, limit: int = _MAX_HEAD) -> bytes | None:
        while marker not in self.buf:
            if len(self.buf) > limit or not self._fill():
                return None
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exactly(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self._fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def body(self, headers: dict[str, str]) -> bytes | None:
        """The whole request body (Content-Length or chunked), raw as sent."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            out = b""
            while True:
                line = self.until(b"\r\n")
                if line is None:
                    return None
                size = int(line.split(b";")[0].strip() or b"0", 16)
                out += line
                if size == 0:  # trailers, up to the empty line
                    while True:
                        t = self.until(b"\r\n")
                        if t is None:
                            return None
                        out += t
                        if t == b"\r\n":
                            return out
                chunk = self.exactly(size + 2)
                if chunk is None:
                    return None
                out += chunk
        n = int(headers.get("content-length", "0") or 0)
        return self.exactly(n) if n else b""

    def pipe(self) -> None:
        """Relay both ways until the server has closed and the response is out (or a kill)."""
        assert self.upstream is not None
        up, cl = self.upstream, self.client
        up.settimeout(None)
        cl.settimeout(None)
        up.setblocking(False)
        cl.setblocking(False)
        open_ = {cl: up, up: cl}
        resp_head = b""  # response heads are held until complete, to force Connection: close
        in_head = True
        while up in open_:
            if self.killed:
                raise _Killed
            readable, _, _ = select.select(list(open_), [], [], 0.1)
            for src in readable:
                dst = open_[src]
                try:
                    data = src.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    del open_[src]
                    if src is up and resp_head:
                        data, resp_head = resp_head, b""
                        self._send(dst, data)
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    continue
                if src is up and in_head:
                    resp_head += data
                    data = b""
                    while in_head and b"\r\n\r\n" in resp_head:
                        i = resp_head.index(b"\r\n\r\n") + 4
                        head, resp_head = resp_head[:i], resp_head[i:]
                        in_head = head[9:10] == b"1"  # a 1xx interim response: a final head follows
                        data += head if in_head else _force_close(head)
                    if not in_head:
                        data, resp_head = data + resp_head, b""
                    if not data:
                        continue
                self._send(dst, data)

    @staticmethod
    def _send(dst: socket.socket, data: bytes) -> None:
        dst.setblocking(True)
        dst.settimeout(30)
        try:
            dst.sendall(data)
        finally:
            dst.setblocking(False)


class FaultProxy:
    def __init__(self, host: str, port: int, *, listen_port: int = 0) -> None:
        self.target = (host, port)
        self._lock = threading.Lock()
        self._conns: set[_Conn] = set()
        self._held: list[socket.socket] = []  # accepted and never answered ("hang")
        self._threads: list[threading.Thread] = []
        self._throttle: list[list] = []  # [remaining, match]
        self._lose: list[list] = []  # [remaining, match]
        self._mode: Mode | None = None  # None: open
        self.requests: list[tuple[str, str, int | None]] = []
        #: seconds each forwarded request waits before it goes on, as a distant store's round trip would
        self.latency = 0.0
        self._listener: socket.socket | None = None
        self.port = listen_port
        self._listen()

    # -- public API ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def throttle(self, n: int, match: Callable[[str, str], bool] | None = None) -> None:
        """Answer the next ``n`` requests (matching ``match(method, target)``) ``503 SlowDown``."""
        with self._lock:
            self._throttle.append([n, match])

    def lose_responses(self, n: int, match: Callable[[str, str], bool] | None = None) -> None:
        """Forward the next ``n`` matching requests, let the server act on them, then reset the client's
        connection instead of relaying the answer: the write happened but the client cannot know (the
        case that makes a retried put-if-absent answer 412 to its own first attempt)."""
        with self._lock:
            self._lose.append([n, match])

    def close(self, mode: Mode = "refuse") -> None:
        """Take the store down: refuse (or reset, or hang) new connections; reset the open ones."""
        with self._lock:
            self._mode = mode
            conns, self._conns = list(self._conns), set()
            held, self._held = self._held, []
            listener = None
            if mode == "refuse":
                listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
            listener.close()
        for c in conns:
            c.killed = True  # its thread resets client and upstream within 0.1 s
        for sock in held:
            _reset(sock)

    def reopen(self) -> None:
        """Bring the store back, on the same port."""
        with self._lock:
            mode, self._mode = self._mode, None
            held, self._held = self._held, []
        for sock in held:
            _reset(sock)
        if mode == "refuse":
            self._listen()

    def stop(self) -> None:
        self.close("refuse")
        for t in list(self._threads):
            t.join(timeout=5)

    def count(self, method: str | None = None, status: int | None | str = "any") -> int:
        """How many requests were seen (of one method; ``status=503`` injected, ``None`` forwarded)."""
        return sum(
            1
            for m, _, st in self.requests
            if (method is None or m == method) and (status == "any" or st == status)
        )

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------------------------------
    def _spawn(self, fn: Callable[..., None], *args: object) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
        t.start()

    def _listen(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self.port = s.getsockname()[1]
        with self._lock:
            self._listener = s
        self._spawn(self._accept_loop, s)

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            with self._lock:
                mode = self._mode
                conn = None
                if mode == "hang":
                    self._held.append(client)
                elif mode is None:
                    conn = _Conn(client)
                    self._conns.add(conn)
            if mode == "reset":
                _reset(client)
            elif conn is not None:
                self._spawn(self._serve, conn)

    def _take(self, pending: list[list], method: str, target: str) -> bool:
        with self._lock:
            for entry in pending:
                n, match = entry
                if match is None or match(method, target):
                    entry[0] = n - 1
                    if entry[0] <= 0:
                        pending.remove(entry)
                    return True
        return False

    def _serve(self, conn: _Conn) -> None:
        killed = False
        try:
            head = conn.until(b"\r\n\r\n")
            if head is None:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target = ([*lines[0].split(" "), "", ""])[:2]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if self._take(self._throttle, method, target):
                self.requests.append((method, target, 503))
                # with Expect: 100-continue the body never comes; otherwise read it, so that the close
                # below is a clean FIN and not an RST that would hide the 503 from the client
                if "100-continue" not in headers.get("expect", "").lower():
                    conn.body(headers)
                body = _SLOWDOWN.format(rid=uuid.uuid4().hex[:16].upper()).encode()
                conn.client.settimeout(30)
                conn.client.sendall(
                    b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
                    b"Content-Length: %d\r\nConnection: close\r\nx-amz-request-id: faultproxy\r\n\r\n%s"
                    % (len(body), body)
                )
                with contextlib.suppress(OSError):
                    conn.client.shutdown(socket.SHUT_WR)
                return
            if self._take(self._lose, method, target):
                self.requests.append((method, target, 0))
                if "100-continue" in headers.get("expect", "").lower():
                    conn.client.settimeout(30)
                    conn.client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                    head = b"\r\n".join(
                        ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"expect:")
                    )
                body = conn.body(headers)
                if body is None:
                    return
                with socket.create_connection(self.target, timeout=30) as up:
                    up.sendall(_force_close(head) + body)
                    while up.recv(65536):  # the server's whole answer, dropped
                        pass
                killed = True  # the client gets a reset instead of the answer
                return
            self.requests.append((method, target, None))
            if self.latency > 0:
                time.sleep(self.latency)
            conn.upstream = socket.create_connection(self.target, timeout=30)
            conn.upstream.sendall(_force_close(head) + conn.buf)
            conn.buf = b""
            conn.pipe()
        except _Killed:
            killed = True
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            for sock in (conn.client, conn.upstream):
                if sock is None:
                    continue
                if killed:
                    _reset(sock)
                else:
                    with contextlib.suppress(OSError):
                        sock.close()
