"""The background writer: everything ``Tracker.log`` leaves undone happens here.

The writer opens the run in the store (``opening``: creating it, re-attaching to it, or joining a
job's run), then a daemon thread wakes
every ``tick`` seconds, drains the shared deques with ``popleft`` (safe against concurrent ``append``
from the training thread without a lock; rows and typed messages such as config, events and flush
requests travel in separate deques), and writes a batch when the flush interval has passed, when
enough rows are pending, or when asked to. Backends get each batch on their own threads
(``fanout.py``), so a slow or broken backend costs neither training nor the local store anything.
What the end record will say is folded as blocks are written (``ending``); once it is recorded, the
run's Parquet copy is launched (``parquet_copy``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from ..backends.base import Backend, RunInfo
from ..monitoring.alerts import Alert, Alerter
from ..monitoring.health import HealthMonitor, describe, warning
from ..monitoring.rules import EVENT as RULE_EVENT
from ..monitoring.rules import Firing, RuleChecker
from ..states import State
from ..store import codec, layout
from ..store.base import ProcessWriter, Store
from ..store.ends import EndFields, EndRecord
from ..values import to_plain
from . import fanout
from .channel import Channel
from .ending import EndAccumulator
from .images import encode_png
from .messages import ConfigUpdate, Event, Flush, MediaFile, RunEdit, SystemSample, Table
from .opening import JobJoin, Opened, OpenedRun, RunRequest, join_job, open_run
from .parquet_copy import write_copy
from .samples import convert

#: values (metric points) per written block: 4,096 rows of 16 metrics, 131 rows of 500
BATCH_VALUES = 65_536


class Writer(threading.Thread):
    """Takes what its ``channel`` is given, from the training thread or an importer, into the store
    and the backends."""

    def __init__(
        self,
        backends: Sequence[Backend] = (),
        flush_interval: float = 1.0,
        fsync_interval: float = 30.0,
        heartbeat_interval: float = 5.0,
        tick: float = 0.02,
        health: HealthMonitor | None = None,
        max_pending: int = 1_000_000,
        strict: bool = False,
        backend_timeout: float | None = None,
        alerter: Alerter | None = None,
        rules: RuleChecker | None = None,
        stop: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(name="tunetrack-writer", daemon=True)
        #: the one way in: ``put_row``, ``send``, ``flush``
        self.channel = Channel(max_pending, self.is_alive)
        self.counters = self.channel.counters
        self.backends = list(backends)
        self.backend_timeout = backend_timeout
        self._fanout = fanout.Fanout()  # the backends, each on a thread of its own
        self.flush_interval = flush_interval
        self.fsync_interval = fsync_interval
        self.heartbeat_interval = heartbeat_interval
        self.tick = min(tick, flush_interval)
        self.health = health
        self.alerter = alerter
        #: the run's rules (``monitoring.rules``), and how one that stops the run asks it to (the
        #: tracker's ``request_stop``: the writer knows no tracker)
        self.rules, self.stop = rules, stop
        #: the metric columns the health monitor and the rules look at in each written block
        self._watched = list(
            dict.fromkeys([*(health.keys if health else ()), *(rules.keys if rules else ())])
        )
        self.max_pending = max_pending
        self.strict = strict
        self.run_info: RunInfo | None = None
        self._stopping = threading.Event()
        self._mirroring = threading.Event()  # set while the thread waits for the backends at the end
        self._stop_mirroring = threading.Event()
        self._files: ProcessWriter | None = None
        self._store: Store | None = None  # the store the files are in (the run's Parquet copy goes there)
        #: told where this process's console file is once its files are open (``tracker.console_capture``)
        self.console_sink: Callable[[Path], None] | None = None
        #: set once the files are open, or it is settled that they never will be (a job never published)
        self.settled = threading.Event()
        self._run_dir: Path | str | None = None  # where the files would be (lost rows are counted)
        self._join: JobJoin | None = None
        self._end: EndRecord | None = None  # how finish() says the process ended
        self._width = 16  # values per row, as last seen: sizes the blocks and the queue's cap
        self._pending = codec.Rows()
        self._pending_system = codec.Rows()
        #: the long strings this process's tables stored (each is stored once, then referred to)
        self._shared = codec.SharedStrings()
        #: the key lists this process's data file named (format 2; None: a run of format 1, whose
        #: blocks name their keys in every block)
        self._keys: codec.SharedKeys | None = None
        self._ending = EndAccumulator()  # what the end record will say, folded as blocks are written
        self._last_write = self._last_fsync = self._last_beat = time.monotonic()
        self._last_rows = self._last_write  # when rows last came (a stalled rule's clock)

    @property
    def store(self) -> Store | None:
        """The store the run is in, once its files are open (None without a store)."""
        return self._store

    # -- opening the run -----------------------------------------------------------------------------
    def open(self, dir: str | os.PathLike[str] | None, request: RunRequest) -> OpenedRun:
        """Create the run (or re-attach to ``request.id``) and this process's files, before ``start()``
        (``opening.open_run``)."""
        self.settled.set()  # whatever happens, this process's files are settled by its end
        opened = open_run(dir, request, self.strict)
        self._run_dir = opened.run.dir
        self._opened(opened, request.tags)
        return opened.run

    def join_job(self, dir: str | os.PathLike[str], job: str, not_before: float, request: RunRequest) -> None:
        """Record into the run that the job's global rank 0 publishes (another node's first rank):
        the thread waits for it (up to ``opening.JOIN_TIMEOUT``), then opens this process's files there."""
        self._join = join_job(dir, job, not_before, request)

    def _joined(self) -> bool:
        """Wait for the job's run; False if it never came (or the tracker finished first)."""
        assert self._join is not None
        opened = self._join.wait(self._stopping)
        if opened is None:
            return False
        self._run_dir = opened.run.dir
        self._opened(opened, self._join.request.tags)
        return True

    def _opened(self, opened: Opened, tags: list[str]) -> None:
        self._files, self._store = opened.files, opened.store
        self._keys = codec.SharedKeys() if opened.run.format >= codec.KEYS_FORMAT else None
        if self.console_sink is not None and self._files is not None:
            self.console_sink(self._files.console_path)
        run = opened.run
        self.name = f"tunetrack-writer-{run.id}"
        self.channel.label = run.id
        self.run_info = RunInfo(run.id, run.name, run.project, list(tags), run.dir, run.resumed)

    # -- ending ------------------------------------------------------------------------------------
    def finish(
        self,
        state: str,
        error: str | None = None,
        timeout: float = 60.0,
        at: float | None = None,
        fields: EndFields | None = None,
    ) -> bool:
        """Write everything, wait for the backends, record how the process ended (``at``: when, if not
        now: an imported run's end; ``fields``: what its kind of process adds), and stop. ``timeout`` bounds the writer's own work, not the wait
        for the backends (``fanout.wait_for`` bounds that); False if the writer took longer (the run
        may then read as crashed)."""
        self._end = EndRecord(state=state, traceback=error, **(fields or {}))
        if at is not None:
            self._end["time"] = at
        self._stopping.set()
        if threading.current_thread() is self:
            return False
        deadline = time.monotonic() + timeout
        while self.is_alive():
            self.join(fanout.POLL)
            if self._mirroring.is_set():
                deadline = time.monotonic() + timeout  # the writer's own work is done until it ends
            elif time.monotonic() >= deadline:
                break
        return not self.is_alive()

    def stop_mirroring(self) -> None:
        """Stop waiting for the backends at the end (Ctrl-C or SIGTERM during ``finish()``): the run's
        end is recorded at once; what they did not get is counted, and sync-backend sends it later."""
        self._stop_mirroring.set()

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            joined = self._join is None or self._joined()
        finally:
            self.settled.set()
        if not joined:
            return
        assert self.run_info is not None
        self._fanout.start(self.backends, self.run_info)
        while True:
            stopping = self._stopping.wait(self.tick)
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
            queue = self.channel.queue
            queue.take(min(len(queue.rows), batch - len(self._pending)), self._pending)
            if self._pending:
                self._width = max(len(self._pending.values[-1]), 1)
                queue.cap = max(self.max_pending // self._width, 1)
            if len(self._pending) < batch:
                break
            self._write_rows()
        if self._pending and (due or stopping or waiters):
            self._write_rows()
        if self._pending_system and (due or stopping or waiters):
            self._write_system()
        if self._files is not None and (due or waiters):
            self._store_op(lambda f: f.flush(fsync=self._fsync_due(now)))
            self._store_op(lambda f: f.summarize(self._ending.last_step, dict(self._ending.last_values)))
            self._last_write = now
        if self._files is not None and now - self._last_beat >= self.heartbeat_interval:
            self._store_op(lambda f: f.heartbeat())
            self._last_beat = now
        if self.rules is not None and self.rules.stalls:
            for fired in self.rules.stalled(now - self._last_rows, self._ending.last_step):
                self._rule_fired(fired)
        for done in waiters:
            done.set()

    def _fsync_due(self, now: float) -> bool:
        if self.fsync_interval and now - self._last_fsync >= self.fsync_interval:
            self._last_fsync = now
            return True
        return False

    def _drain(self) -> list[threading.Event]:
        """Apply the queued messages; return the flush waiters.

        Messages are taken before rows: every row logged before a flush request is then written too.
        """
        messages = self.channel.messages
        waiters = []
        for message in [messages.popleft() for _ in range(len(messages))]:
            if isinstance(message, Flush):
                waiters.append(message.done)
            elif isinstance(message, SystemSample):
                self._pending_system.add(message.step, message.time, message.values)
            elif isinstance(message, ConfigUpdate):
                self._write_config(message)
            elif isinstance(message, Event):
                self._write_event(message)
            elif isinstance(message, Table):
                self._write_table(message)
            elif isinstance(message, MediaFile):
                self._write_file(message)
            elif isinstance(message, RunEdit):
                self.write_edit(message.body)
        return waiters

    # -- writing -----------------------------------------------------------------------------------
    def _write_rows(self) -> None:
        rows, self._pending = self._pending, codec.Rows()
        record = codec.encode_rows(
            rows, convert=to_plain, on_drop=self._on_drop, last=self._ending.last_values, shared=self._keys
        )
        keys = codec.matrix_keys(record, self._keys)
        self._ending.rows(record, rows, keys)
        if not self._store_op(lambda f: f.append(codec.pack(record))) and self._run_dir is not None:
            self.counters.lost_rows += len(rows)
        self._fanout.rows("log", rows)  # first: whatever the checks below meet, the backends have the rows
        self._last_rows = time.monotonic()
        if self._watched:
            columns = {k: c for k in self._watched if (c := codec.float_column(record, k, keys)) is not None}
            if self.health is not None:
                for problem in self.health.check(columns):
                    self._health_event(problem)
            if self.rules is not None:
                for fired in self.rules.check(columns):
                    self._rule_fired(fired)

    def _write_system(self) -> None:
        rows, self._pending_system = self._pending_system, codec.Rows()
        if self._files is not None:
            record = codec.encode_rows(rows, codec.SYSTEM, convert=to_plain, on_drop=self._on_drop)
            self._store_op(lambda f: f.append(codec.pack(record)))
        self._fanout.rows("log_system", rows)

    def _write_config(self, message: ConfigUpdate) -> None:
        self._ending.config(message.config)
        record = codec.encode_config(message.time, message.config)
        self._store_op(lambda f: f.append(codec.pack(record)))
        self._fanout.submit("log_config", message.config)

    def _write_event(self, event: Event) -> None:
        record = codec.encode_event(event.kind, event.step, event.time, event.data)
        self._ending.event(event.kind)
        self._store_op(lambda f: f.append(codec.pack(record)))
        event_dict = {**event.data, "kind": event.kind, "step": event.step, "time": event.time}
        self._fanout.submit("log_event", event_dict)

    def _write_table(self, table: Table) -> None:
        """Convert, store and mirror one table of samples. Whatever the caller handed over is stored
        as well as it can be (``writer.samples``); what was odd is warned about once per key."""
        try:
            converted = convert(table.key, table.step, table.time, table.rows)
        except Exception as exc:  # an object that cannot even be iterated: nothing to store
            warn_once(f"{self._run_id}:table:{table.key}", f"could not store table {table.key!r}: {exc!r}")
            return
        for what, wording in converted.problems.items():
            warn_once(f"{self._run_id}:table:{table.key}:{what}", f"table {table.key!r}: {wording}")
        failed = set()
        for path, image in converted.images:
            try:
                data = encode_png(image)
            except Exception as exc:
                failed.add(path)
                warn_once(
                    f"{self._run_id}:table:{table.key}:image",
                    f"table {table.key!r}: an image could not be encoded ({exc!r}); its cell is empty",
                )
                continue
            self._write_file(MediaFile(path, data))
        if failed:
            converted.forget(failed)
        if self._files is not None:
            record = codec.encode_table(table.key, table.step, table.time, converted.columns, self._shared)
            self._store_op(lambda f: f.append(codec.pack(record)))
        if self._fanout:  # backends know samples as a text event
            event = {"kind": "text", "key": table.key, "rows": converted.rows()}
            self._fanout.submit("log_event", {**event, "step": table.step, "time": table.time})

    def _write_file(self, media: MediaFile) -> None:
        self._store_op(lambda f: f.put_file(media.path, media.data))

    def write_edit(self, body: dict[str, Any]) -> None:
        """Store an edit of the run (``tunetrack.edits``). Called on this thread while it runs, and by
        the tracker itself once it stopped (an edit after ``finish()``)."""
        name = layout.STOP_EDIT if "stop" in body else layout.edit_name(float(body["time"]))
        self._store_op(lambda f: f.edit(name, body))

    def _health_event(self, problem: dict[str, Any]) -> None:
        step = problem.pop("step")
        self._write_event(Event("health", step, time.time(), problem))
        run = self.run_info
        if self.alerter is not None and run is not None:
            title, text = describe(problem, step)
            alert = Alert(title, text, "warn", run.id, run.name, run.project, State.RUNNING)
            self.alerter.send(alert, key=(run.id, "health", problem["key"], problem["problem"]))
        warn_once(f"{self._run_id}:health:{problem['problem']}", warning(problem, step))

    def _rule_fired(self, fired: Firing, state: str = State.RUNNING) -> None:
        """A rule fired: a ``rule`` event, an alert, one warning, and the request to stop the run
        where the rule says so."""
        step = fired.step if fired.step is not None else 0
        self._write_event(Event(RULE_EVENT, step, time.time(), fired.event()))
        run = self.run_info
        if self.alerter is not None and run is not None:
            alert = Alert(fired.title, fired.text, fired.rule.level, run.id, run.name, run.project, state)
            self.alerter.send(alert, key=(run.id, RULE_EVENT, fired.rule.name))
        warn_once(f"{self._run_id}:rule:{fired.rule.name}", fired.warning())
        if fired.rule.stop and self.stop is not None:
            self.stop(fired.reason)

    def _on_drop(self, key: str, count: int) -> None:
        self.counters.dropped_values += count
        warn_once(
            f"{self._run_id}:unsupported:{key}",
            f"values logged under {key!r} are not scalars (or 0-d tensors) and were not stored; "
            "log a number, string, bool or None (use strict=True to raise instead)",
        )

    @property
    def _run_id(self) -> str | None:
        return self.run_info.id if self.run_info is not None else None

    def _store_op(self, op: Callable[[ProcessWriter], Any]) -> bool:
        if self._files is None:
            return False
        try:
            op(self._files)
            return True
        except OSError as exc:
            if self._keys is not None:  # what was lost may define a key list: every list is defined again
                self._keys.forget()
            warn_once(
                f"{self._run_id}:store-write",
                f"cannot write to {self._run_dir} ({exc.strerror or exc}); training goes on, "
                "the rows that could not be stored are counted and reported at finish()",
            )
            return False

    def _close(self) -> None:
        self._cycle(stopping=True)
        if self._pending:
            self._write_rows()
        if self._pending_system:
            self._write_system()
        state = self._end["state"] if self._end is not None else State.FINISHED
        if self.rules is not None:  # before the end record closes the files: its events are stored
            for fired in self.rules.ended(state, self._ending.last_step):
                self._rule_fired(fired, state)
        self._mirroring.set()  # the backends catch up side by side; finish() waits as long as they do
        try:
            backends = self._fanout.close(state, self.backend_timeout, self._stop_mirroring)
        finally:
            self._mirroring.clear()
        if self._files is not None:
            end = self._ending.record(self._end or EndRecord(state=state), self.counters, backends)
            if self._store_op(lambda f: f.close(end)) and self._store is not None and self.run_info:
                write_copy(self._store, self.run_info.id)
