"""Backends, each on its own thread with its own bounded queue.

A remote tracker (an MLflow server, W&B) can be slow, down or broken; none of that may slow training or
the local store. The writer hands each backend its batches and returns at once; the backend's thread
calls it. A backend that falls more than ``max_rows`` rows behind misses the rows that do not fit; a
backend that raises is disabled (its first error is warned about once, with the traceback); either way
the rows it missed are counted, stored in the run's end record and shown in its summary.

At ``finish()`` training is over, so the backends are waited for as long as they make progress
(``wait_for``): a short run mirrored into a tracking server arrives whole, as it does with the tracker's
own client. A backend that delivers nothing for ``stall`` seconds, a ``limit`` reached, or a user who
stops the wait (Ctrl-C, SIGTERM) ends it; what was not delivered is counted and said once, with the
``tunetrack sync-backend`` command that sends it later.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Sequence
from typing import Any, TextIO

from .. import settings
from .._warnings import warn_once
from ..backends.base import OPTIONAL, Backend, RunInfo
from ..store import codec
from ..values import DROP, to_plain

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
#: rows joined into one call at most: a long backlog is sent in calls that each show progress
MAX_JOINED = 10_000
#: how often the wait at ``finish()`` looks at the backends (and redraws its progress line)
POLL = 0.25
#: the progress line appears once the wait has lasted this long (a quick finish prints nothing)
QUIET = 1.0


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
        self.submitted_rows = 0  # rows handed to this runner, queued or missed
        self.delivered_rows = 0
        self.calls_done = 0  # calls returned (or raised): the wait at finish() reads progress from it
        self.error: str | None = None  # why the backend was disabled
        self.started = threading.Event()  # its start() has returned (or raised)
        #: the optional methods (``backends.base.OPTIONAL``) this backend does not offer
        self._lacks = {m for m, capability in OPTIONAL.items() if not isinstance(backend, capability)}

    def submit(self, method: str, *args: Any, rows: int = 0) -> None:
        """Queue a call (``rows``: how many logged rows it carries, for the bounds and the counters)."""
        if method in self._lacks:
            return  # an optional method (log_event, log_system) this backend does not have
        with self._lock:
            self.submitted_rows += rows
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
            while self._calls and self._calls[0][0] == method and rows < MAX_JOINED:
                joined.extend(self._calls[0][1][0])
                rows += self._calls.popleft()[2]
        return method, (joined,), rows

    def _call(self, method: str, args: tuple[Any, ...], rows: int) -> None:
        try:
            if self.error is None:
                getattr(self.backend, method)(*args)
        except Exception:
            self.raised = True
            self.error = f"{method}() raised {traceback.format_exc().strip().splitlines()[-1]}"
            warn_once(
                f"{self.run_info.id}:backend:{id(self.backend)}",
                f"backend {self.label}.{method}() raised; it is disabled for this run (the local store has "
                f"everything):\n{traceback.format_exc()}",
            )
        with self._lock:
            if self.unconfirmed:  # given up on while in this call: its rows were counted as missed
                return
            self.queued_rows -= rows
            if self.error is not None:
                self.missed_rows += rows
            else:
                self.delivered_rows += rows
            self.calls_done += 1

    def close(self, state: str) -> None:
        """Send ``finish(state)``, the last call, and stop pausing: training is over."""
        self.submit("finish", state)
        self._closing = True
        self._wake.set()

    def give_up(self, why: str) -> None:
        """Stop waiting for a backend still working after its last call: what it has not taken is
        missed (its thread drops the rest and ends after the call it is in)."""
        with self._lock:
            behind = self.queued_rows
            self.missed_rows += behind
            self.queued_rows = 0
            self.error = self.error or f"{why} ({behind:,} rows not delivered)"
            self._calls.clear()
            self.unconfirmed = True

    #: the backend was given up on before its ``finish()`` returned (its end state may not be there)
    unconfirmed = False
    #: the backend raised and was disabled (that was warned about, with the traceback)
    raised = False

    def result(self) -> dict[str, Any]:
        """What the run's end record keeps of this backend."""
        return {"missed_rows": self.missed_rows, "error": self.error}


class Fanout:
    """The writer's backends: one ``BackendRunner`` each, started once the run is known, given every
    batch, and waited for together at the end."""

    def __init__(self) -> None:
        self._runners: list[BackendRunner] = []

    def __bool__(self) -> bool:
        return bool(self._runners)

    def start(self, backends: Sequence[Backend], run: RunInfo) -> None:
        self._runners = [BackendRunner(backend, run) for backend in backends]
        for runner in self._runners:
            runner.start()

    def submit(self, method: str, *args: Any) -> None:
        for runner in self._runners:
            runner.submit(method, *args)

    def rows(self, method: str, rows: codec.Rows) -> None:
        """A written block, as the backends take rows: ``(step, time, {key: plain value})``."""
        if not self._runners:
            return
        dict_rows = [
            (step, t, _as_dict(values)) for step, t, values in zip(rows.steps, rows.times, rows.values)
        ]
        for runner in self._runners:
            runner.submit(method, dict_rows, rows=len(dict_rows))

    def close(self, state: str, limit: float | None, stop: threading.Event) -> dict[str, dict[str, Any]]:
        """Tell every backend the run ended, wait for them (``wait_for``), and give what each sent and
        missed, by name (a second backend of the same name gets ``name.2``)."""
        if self._runners:
            for runner in self._runners:
                runner.close(state)
            wait_for(self._runners, settings.backend_stall(), limit, stop, terminal())
        out: dict[str, dict[str, Any]] = {}
        for runner in self._runners:
            key, n = runner.label, 1
            while key in out:
                n += 1
                key = f"{runner.label}.{n}"
            out[key] = runner.result()
        return out


def _as_dict(row: dict[Any, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        converted = to_plain(value)
        if converted is not DROP:
            out[key if type(key) is str else str(key)] = converted
    return out


def wait_for(
    runners: Sequence[BackendRunner],
    stall: float,
    limit: float | None,
    stop: threading.Event,
    progress: TextIO | None = None,
) -> None:
    """Wait for the backends to take everything (``close()`` sent each its last call): as long as
    each makes progress, until none has delivered anything for ``stall`` seconds, ``limit`` seconds
    have passed (if given), or ``stop`` is set (the user stopped the wait). Then give up on those
    still working and say once what each did not deliver. On a terminal (``progress``), a line
    shows how far the mirrors are."""
    start = time.monotonic()
    seen = {id(r): (r.calls_done, start) for r in runners}
    line = ""
    why = None
    while True:
        alive = [r for r in runners if r.is_alive()]
        if not alive:
            break
        now = time.monotonic()
        for r in alive:
            if r.calls_done != seen[id(r)][0]:
                seen[id(r)] = (r.calls_done, now)
        if limit is not None and now - start >= limit:
            why = f"did not catch up within backend_timeout={limit:g} s"
        elif all(now - seen[id(r)][1] >= stall for r in alive):
            why = f"delivered nothing for {stall:g} s"
        if why is not None:
            break
        if progress is not None and now - start >= QUIET:
            line = _progress_line(alive, progress, line)
        if stop.wait(POLL):
            why = "the wait for it was stopped"
            break
    if line and progress is not None:
        progress.write("\r" + " " * len(line) + "\r")
        progress.flush()
    for runner in runners:
        if runner.is_alive():
            runner.give_up(why or "interrupted")
        _report(runner, why or "interrupted")


def _progress_line(alive: Sequence[BackendRunner], out: TextIO, previous: str) -> str:
    parts = [f"{r.label}: {r.delivered_rows:,} / {r.submitted_rows:,} rows" for r in alive]
    line = "tunetrack: mirroring to " + ", ".join(parts) + " (Ctrl-C stops waiting)"
    out.write("\r" + line + " " * max(len(previous) - len(line), 0))
    out.flush()
    return line


def _report(runner: BackendRunner, why: str) -> None:
    """The one warning about what a backend did not get: nothing when it got everything."""
    command = f"tunetrack sync-backend {runner.run_info.id} --to {runner.label}"
    if runner.missed_rows:
        warn_once(
            f"{runner.run_info.id}:backend-missed:{runner.label}",
            f"backend {runner.label} did not get {runner.missed_rows:,} of {runner.submitted_rows:,} rows "
            f"({'it was disabled by the error above' if runner.raised else runner.error or why}); "
            f"the local run has them: `{command}` sends them",
        )
    elif runner.unconfirmed:
        warn_once(
            f"{runner.run_info.id}:backend-unconfirmed:{runner.label}",
            f"backend {runner.label} got every row but did not confirm the run's end ({why}); "
            f"`{command}` records it",
        )


def terminal() -> TextIO | None:
    """Where the progress line goes: stderr, when it is a terminal."""
    return sys.stderr if sys.stderr is not None and sys.stderr.isatty() else None
