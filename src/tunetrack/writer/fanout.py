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
from ..backends.base import Backend, RunInfo

#: rows a backend may have waiting before further rows are missed instead of queued
MAX_ROWS = 200_000


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

    def submit(self, method: str, *args: Any, rows: int = 0) -> None:
        """Queue a call (``rows``: how many logged rows it carries, for the bounds and the counters)."""
        if method != "finish" and not hasattr(self.backend, method):
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
        while True:
            self._wake.wait(0.5)
            self._wake.clear()
            while self._calls:
                method, args, rows = self._calls.popleft()
                self._call(method, args, rows)
            if self._closing and not self._calls:
                return

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
