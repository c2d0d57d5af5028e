"""Backends, each on its own thread with its own bounded queue.

A remote tracker (an MLflow server, W&B) can be slow, down or broken; none of that may slow training or
the local store. The writer hands each backend its batches and returns at once; the backend's thread
calls it. A backend that falls more than ``max_rows`` rows behind misses the rows that do not fit; a
backend that raises is disabled (its first error is warned about once, with the traceback); either way
the rows it missed are counted, stored in the run's end record and shown in its summary. At the end a
backend gets ``timeout`` seconds to catch up; what it has not taken by then is counted as missed too.
``tunetrack sync-backend`` replays a finished run into a backend later.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from typing import Any

from .._warnings import warn_once
from ..backends.base import OPTIONAL, Backend, RunInfo

#: rows a backend may have waiting before further rows are missed instead of queued
MAX_ROWS = 200_000
#: the calls whose queued rows are joined into one call
BATCHED = ("log", "log_system")
#: While training runs, a backend's thread pauses after each call so that its Python work (building
#: a tracker's requests or protobufs) holds the interpreter lock for at most this share of the time:
#: the training thread, which needs the same lock, keeps the rest. The pause is measured in the
#: thread's CPU time, so waiting on a network costs no pause. At ``finish()`` the pauses stop.
DUTY = 0.2
MAX_PAUSE = 1.0


def backend_name(backend: Backend) -> str:
    return str(getattr(backend, "name", None) or type(backend).__name__)


class BackendRunner(threading.Thread):
    def __init__(self, backend: Backend, run: RunInfo, max_rows: int | None = None) -> None:
        super().__init__(name=f"tunetrack-backend-{backend_name(backend)}", daemon=True)
        self.backend = backend
        self.label = backend_name(backend)
        self.run_info = run
        self.max_rows = MAX_ROWS if max_rows is None else max_rows
        self._calls: deque[tuple[str, tuple[Any, ...], int]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self.queued_rows = 0
        self.missed_rows = 0
        self.error: str | None = None  # why the backend was disabled
        self.started = threading.Event()  # its start() has returned (or raised)
        #: the optional methods (``backends.base.OPTIONAL``) this backend does not offer
        self._lacks = {m for m, capability in OPTIONAL.items() if not isinstance(backend, capability)}

    def submit(self, method: str, *args: Any, rows: int = 0) -> None:
        """Queue a call (``rows``: how many logged rows it carries, for the bounds and the counters)."""
        if method in self._lacks:
            return  # an optional method (log_event, log_system) this backend does not have
        with self._lock:
            if self.error is not None or (rows and self.queued_rows + rows > self.max_rows):
                self.missed_rows += rows
                if self.error is None:
                    warn_once(
                        f"{self.run_info.id}:backend-behind:{self.label}",
                        f"backend {self.label} is {self.queued_rows:,} rows behind; rows that do not fit are "
                        "missed and counted (the local store has them: tunetrack sync-backend replays a run)",
                    )
                return
            self.queued_rows += rows
            self._calls.append((method, args, rows))
        self._wake.set()

    def run(self) -> None:
        self._call("start", (self.run_info,), 0)
        self.started.set()
        while True:
            self._wake.wait(0.5)
            self._wake.clear()
            while self._calls:
                method, args, rows = self._next_call()
                cpu = time.thread_time()
                self._call(method, args, rows)
                if not self._closing:  # training runs: leave it the interpreter most of the time
                    time.sleep(min((time.thread_time() - cpu) * (1 / DUTY - 1), MAX_PAUSE))
            if self._closing and not self._calls:
                return

    def _next_call(self) -> tuple[str, tuple[Any, ...], int]:
        """The next call, with the rows of the ``log``/``log_system`` calls queued right behind it
        joined in (one request to a remote tracker instead of one per writer batch; order is kept)."""
        with self._lock:
            method, args, rows = self._calls.popleft()
            if method not in BATCHED:
                return method, args, rows
            joined = list(args[0])
            while self._calls and self._calls[0][0] == method:
                joined.extend(self._calls[0][1][0])
                rows += self._calls.popleft()[2]
        return method, (joined,), rows

    def _call(self, method: str, args: tuple[Any, ...], rows: int) -> None:
        try:
            if self.error is None:
                getattr(self.backend, method)(*args)
        except Exception:
            self.error = f"{method}() raised {traceback.format_exc().strip().splitlines()[-1]}"
            warn_once(
                f"{self.run_info.id}:backend:{id(self.backend)}",
                f"backend {self.label}.{method}() raised; it is disabled for this run (the local store has "
                f"everything):\n{traceback.format_exc()}",
            )
        with self._lock:
            self.queued_rows -= rows
            if self.error is not None:
                self.missed_rows += rows

    def finish(self, state: str, deadline: float) -> dict[str, Any]:
        """Send ``finish(state)`` and wait until ``deadline`` (monotonic) for the backend to catch up."""
        self.submit("finish", state)
        self._closing = True
        self._wake.set()
        self.join(max(deadline - time.monotonic(), 0.0))
        if self.is_alive():
            with self._lock:
                behind = self.queued_rows
                self.missed_rows += behind
                self.queued_rows = 0
                self.error = self.error or f"did not catch up before finish() ({behind:,} rows behind)"
                self._calls.clear()
            warn_once(
                f"{self.run_info.id}:backend-late:{self.label}",
                f"backend {self.label} did not catch up within the time finish() gives it; {behind:,} rows "
                "missed (tunetrack sync-backend replays the run)",
            )
        return {"missed_rows": self.missed_rows, "error": self.error}
