"""The background writer: everything ``Tracker.log`` leaves undone happens here.

A daemon thread wakes every ``tick`` seconds, drains the shared deques with ``popleft`` (safe against
concurrent ``append`` from the training thread without a lock; rows and control items such as config,
events and flush requests travel in separate deques), and writes a batch when the flush
interval has passed, when enough rows are pending, or when asked to. Backends are called here too, so
a slow or broken backend costs training nothing: its first exception is reported and it is disabled.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from ._values import DROP, to_python
from ._warnings import warn_once
from .backends.base import Backend, RunInfo
from .health import HealthMonitor
from .store.local import LocalStore, Rows, encode_rows

_popleft = deque.popleft

#: values (metric points) per written block: 4,096 rows of 16 metrics, 131 rows of 500
BATCH_VALUES = 65_536


class RowQueue:
    """Rows travel from ``Tracker.log`` to the writer in four parallel deques, not one tuple per row:
    appending allocates no garbage-collected container, so a fast logging loop never makes the
    collector walk the backlog. ``rows`` is appended last, so ``len(rows)`` rows are always complete."""

    __slots__ = ("cap", "plains", "rows", "steps", "times")

    def __init__(self, cap: int = 100_000) -> None:
        self.steps: deque = deque()
        self.times: deque = deque()
        self.plains: deque = deque()
        self.rows: deque = deque()
        #: rows ``log()`` may queue before it waits, then drops. The writer keeps it at
        #: ``max_pending`` values divided by the width of the rows it sees, so memory is bounded in
        #: values whatever the number of metrics per row.
        self.cap = cap

    def take(self, n: int, into: Rows) -> None:
        """Move the next ``n`` rows into ``into`` (on the writer thread; C-level loops only)."""
        into.steps += map(_popleft, repeat(self.steps, n))
        into.times += map(_popleft, repeat(self.times, n))
        into.values += map(_popleft, repeat(self.rows, n))
        plains = list(map(_popleft, repeat(self.plains, n)))  # all of them, before all() looks
        into.plain = into.plain and all(plains)


class Counters:
    """What could not be kept: reported in ``finish()`` and stored in the run's end record."""

    def __init__(self) -> None:
        self.dropped_rows = 0  # buffer full (the writer could not keep up)
        self.dropped_values = 0  # unsupported values
        self.lost_rows = 0  # the store could not write them (disk full, unwritable dir)
        self.late_rows = 0  # logged after finish()

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class Writer(threading.Thread):
    def __init__(
        self,
        buf: RowQueue,
        controls: deque,
        store: LocalStore | None,
        backends: Sequence[Backend],
        run: RunInfo,
        counters: Counters,
        flush_interval: float = 1.0,
        fsync_interval: float = 30.0,
        heartbeat_interval: float = 5.0,
        tick: float = 0.02,
        health: HealthMonitor | None = None,
        max_pending: int = 1_000_000,
    ) -> None:
        super().__init__(name=f"tunetrack-writer-{run.id}", daemon=True)
        self.buf = buf
        self.controls = controls
        self.store = store
        self.backends = list(backends)
        self.run_info = run
        self.counters = counters
        self.flush_interval = flush_interval
        self.fsync_interval = fsync_interval
        self.heartbeat_interval = heartbeat_interval
        self.tick = min(tick, flush_interval)
        self.stop_event = threading.Event()
        self.health = health
        self.max_pending = max_pending
        self._width = 16  # values per row, as last seen: sizes the blocks and the queue's cap
        self.end: dict[str, Any] = {}
        self._pending = Rows()
        self._pending_system = Rows()
        self.last_values: dict[str, Any] = {}
        self.last_step: int | None = None
        self._last_write = self._last_fsync = self._last_beat = time.monotonic()

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        for backend in list(self.backends):
            self._call(backend, "start", self.run_info)
        while True:
            stopping = self.stop_event.wait(self.tick)
            try:
                self._cycle(stopping)
            except Exception as exc:  # never let the thread die: a dead writer loses everything after
                warn_once(f"writer:{type(exc).__name__}", f"writer error (continuing): {exc!r}")
            if stopping:
                break
        self._close()

    def _cycle(self, stopping: bool) -> None:
        waiters = self._drain()
        now = time.monotonic()
        due = now - self._last_write >= self.flush_interval
        while True:  # a backlog is taken and written in blocks of about BATCH_VALUES values
            batch = max(BATCH_VALUES // self._width, 1)
            self.buf.take(min(len(self.buf.rows), batch - len(self._pending)), self._pending)
            if self._pending:
                self._width = max(len(self._pending.values[-1]), 1)
                self.buf.cap = max(self.max_pending // self._width, 1)
            if len(self._pending) < batch:
                break
            self._write_rows()
        if self._pending and (due or stopping or waiters):
            self._write_rows()
        if self._pending_system and (due or stopping or waiters):
            self._write_system()
        if self.store is not None and (due or waiters):
            self._store_op(lambda s: s.flush(fsync=self._fsync_due(now)))
            self._last_write = now
        if self.store is not None and now - self._last_beat >= self.heartbeat_interval:
            self._store_op(LocalStore.heartbeat)
            self._last_beat = now
        for event in waiters:
            event.set()

    def _fsync_due(self, now: float) -> bool:
        if self.fsync_interval and now - self._last_fsync >= self.fsync_interval:
            self._last_fsync = now
            return True
        return False

    def _drain(self) -> list[threading.Event]:
        """Apply the queued control items; return the flush waiters.

        Controls are taken before rows: every row logged before a flush request is then written too.
        """
        controls = self.controls
        items = [controls.popleft() for _ in range(len(controls))]
        waiters = []
        for kind, payload in items:
            if kind == "flush":
                waiters.append(payload)
            elif kind == "system":
                self._pending_system.add(*payload)
            else:
                self._control(kind, payload)
        return waiters

    # -- writing --------------------------------------------------------------------------------
    def _write_rows(self) -> None:
        rows, self._pending = self._pending, Rows()
        record = encode_rows(rows, on_drop=self._on_drop, last=self.last_values)
        self.last_step = rows.steps[-1]
        if self.store is not None:
            if not self._store_op(lambda s: s.append(record)):
                self.counters.lost_rows += len(rows)
        elif self.run_info.dir is not None:
            self.counters.lost_rows += len(rows)
        if self.health is not None:
            for event in self.health.check_record(record):
                self._health_event(event)
        if self.backends:
            dict_rows = _as_backend_rows(rows)
            for backend in list(self.backends):
                self._call(backend, "log", dict_rows)

    def _write_system(self) -> None:
        rows, self._pending_system = self._pending_system, Rows()
        if self.store is not None:
            record = {**encode_rows(rows, on_drop=self._on_drop), "k": "y"}
            self._store_op(lambda s: s.append(record))
        for backend in list(self.backends):
            if hasattr(backend, "log_system"):
                self._call(backend, "log_system", _as_backend_rows(rows))

    def _control(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "config":
            record = {"k": "c", "t": payload["time"], "config": payload["config"]}
            self._store_op(lambda s: s.append(record))
            for backend in list(self.backends):
                self._call(backend, "log_config", payload["config"])
        elif kind == "event":
            self._store_op(lambda s: s.append({"k": "e", **payload}))
            for backend in list(self.backends):
                if hasattr(backend, "log_event"):
                    self._call(backend, "log_event", payload)

    def _health_event(self, event: dict[str, Any]) -> None:
        step = event.pop("step")
        self._control("event", {"kind": "health", "step": step, "t": time.time(), "data": event})
        value = event["value"]
        warn_once(
            f"{self.run_info.id}:health:{event['problem']}",
            f"training health: {event['key']} = {value:.6g} at step {step} ({event['problem'].replace('_', ' ')}"
            + (f", baseline {event['baseline']:.6g}" if "baseline" in event else "")
            + "); recorded as an event, further occurrences are recorded silently",
        )

    def _on_drop(self, key: str, count: int) -> None:
        self.counters.dropped_values += count
        warn_once(
            f"{self.run_info.id}:unsupported:{key}",
            f"values logged under {key!r} are not scalars (or 0-d tensors) and were not stored; "
            "log a number, string, bool or None (use strict=True to raise instead)",
        )

    def _store_op(self, op: Any) -> bool:
        if self.store is None:
            return False
        try:
            op(self.store)
            return True
        except OSError as exc:
            warn_once(
                f"{self.run_info.id}:store-write",
                f"cannot write to {self.store.run_dir} ({exc.strerror or exc}); training goes on, "
                "the rows that could not be stored are counted and reported at finish()",
            )
            return False

    def _call(self, backend: Backend, method: str, *args: Any) -> None:
        try:
            getattr(backend, method)(*args)
        except Exception:
            name = type(backend).__name__
            warn_once(
                f"{self.run_info.id}:backend:{id(backend)}",
                f"backend {name}.{method}() raised; it is disabled for this run:\n{traceback.format_exc()}",
            )
            if backend in self.backends:
                self.backends.remove(backend)

    def _close(self) -> None:
        self._cycle(stopping=True)
        if self._pending:
            self._write_rows()
        if self._pending_system:
            self._write_system()
        state = self.end.get("state", "finished")
        for backend in list(self.backends):
            self._call(backend, "finish", state)
        if self.store is not None:
            self.end["counters"] = self.counters.as_dict()
            values = {
                k: v for k, v in ((k, to_python(v)) for k, v in self.last_values.items()) if v is not DROP
            }
            self.end["last"] = {"step": self.last_step, "values": values}
            self._store_op(lambda s: s.close(self.end))


def _as_backend_rows(rows: Rows) -> list[tuple[int, float, dict[str, Any]]]:
    return [(step, t, _as_dict(values)) for step, t, values in zip(rows.steps, rows.times, rows.values)]


def _as_dict(row: dict[Any, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        converted = to_python(value)
        if converted is not DROP:
            out[key if type(key) is str else str(key)] = converted
    return out
