"""The background writer: everything ``Tracker.log`` leaves undone happens here.

The writer opens the run in the store (creating it, or re-attaching to it), then a daemon thread wakes
every ``tick`` seconds, drains the shared deques with ``popleft`` (safe against concurrent ``append``
from the training thread without a lock; rows and typed messages such as config, events and flush
requests travel in separate deques), and writes a batch when the flush interval has passed, when
enough rows are pending, or when asked to. Backends get each batch on their own threads
(``fanout.py``), so a slow or broken backend costs neither training nor the local store anything.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import aggregates, settings
from .._warnings import warn_once
from ..backends.base import Backend, RunInfo
from ..config import merge
from ..edits import fold
from ..monitoring.alerts import Alert, Alerter
from ..monitoring.health import HealthMonitor, describe, warning
from ..states import State
from ..store import codec, layout, open_store
from ..store.base import ProcessWriter, Store
from ..store.ends import EndRecord, LastValues
from ..store.process_meta import ProcessMeta
from ..values import DROP, to_plain
from . import fanout
from .channel import Channel
from .fanout import BackendRunner
from .images import encode_png
from .messages import ConfigUpdate, Event, Flush, MediaFile, RunEdit, SystemSample, Table
from .tables import convert

#: values (metric points) per written block: 4,096 rows of 16 metrics, 131 rows of 500
BATCH_VALUES = 65_536
#: keys per row from which the writer folds a block's aggregates with NumPy even where nothing else
#: loaded it (``Writer._fold``)
WIDE_ROWS = 32
#: how long another node's first rank waits for global rank 0 to publish the job's run
JOIN_TIMEOUT = 1800.0


@dataclass
class RunRequest:
    """The run a writer is to record into, as the tracker knows it before the store is opened."""

    id: str | None  # the run to re-attach to; None creates a new run
    name: str | None
    project: str | None
    tags: list[str]
    created: float
    #: what the process records about itself (``provenance.run_metadata()``, role, ranks)
    process: ProcessMeta = field(default_factory=ProcessMeta)
    #: the distributed job whose other nodes join this run (``launch.job_id()``; global rank 0 only)
    job: str | None = None
    #: seconds between uploads, for a store in object storage (None: ``settings.upload_interval()``)
    upload_interval: float | None = None
    #: ``id`` names a new run rather than one to re-attach to (an imported run's id is derived from
    #: its source, so a second import finds it)
    new: bool = False


@dataclass
class OpenedRun:
    """The run as the store has it: an existing run keeps its name and project."""

    id: str
    name: str
    project: str | None
    dir: Path | str | None  # the run's folder (or URL); None without a store
    resumed: bool


@dataclass
class _Join:
    """A job's run this writer waits for, then joins (another node's first rank)."""

    store: Store
    job: str
    #: a run published before this process started is an earlier job's
    not_before: float
    request: RunRequest


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
    ) -> None:
        super().__init__(name="tunetrack-writer", daemon=True)
        #: the one way in: ``put_row``, ``send``, ``flush``
        self.channel = Channel(max_pending, self.is_alive)
        self.counters = self.channel.counters
        self.backends = list(backends)
        self.backend_timeout = backend_timeout
        self._runners: list[BackendRunner] = []
        self.flush_interval = flush_interval
        self.fsync_interval = fsync_interval
        self.heartbeat_interval = heartbeat_interval
        self.tick = min(tick, flush_interval)
        self.health = health
        self.alerter = alerter
        self.max_pending = max_pending
        self.strict = strict
        self.run_info: RunInfo | None = None
        self._stopping = threading.Event()
        self._mirroring = threading.Event()  # set while the thread waits for the backends at the end
        self._stop_mirroring = threading.Event()
        self._files: ProcessWriter | None = None
        self._store: Store | None = None  # the store the files are in (the run's Parquet copy goes there)
        #: told where this process's console file is once its files are open (``tracker.console``)
        self.console_sink: Callable[[Path], None] | None = None
        #: set once the files are open, or it is settled that they never will be (a job never published)
        self.settled = threading.Event()
        self._run_dir: Path | str | None = None  # where the files would be (lost rows are counted)
        self._join: _Join | None = None
        self._end: EndRecord | None = None  # how finish() says the process ended
        self._width = 16  # values per row, as last seen: sizes the blocks and the queue's cap
        self._pending = codec.Rows()
        self._pending_system = codec.Rows()
        #: the long strings this process's tables stored (each is stored once, then referred to)
        self._shared = codec.SharedStrings()
        self._last_values: dict[str, Any] = {}
        self._config: dict[str, Any] = {}  # the config records this process wrote, merged
        self._last_step: int | None = None
        #: each key's aggregates over what this process wrote (``tunetrack.aggregates``), stored in
        #: its end record so listings need not read the data; a rewind makes them a superset of the
        #: visible points, so it is recorded beside them and readers then read the data
        self._aggregates: dict[str, aggregates.Agg] = {}
        self._matrix_folds: dict[tuple[str, ...], aggregates.MatrixFold] = {}
        self._rewound = False
        self._last_write = self._last_fsync = self._last_beat = time.monotonic()

    # -- opening the run -----------------------------------------------------------------------------
    def open(self, dir: str | os.PathLike[str] | None, request: RunRequest) -> OpenedRun:
        """Create the run (or re-attach to ``request.id``) and this process's files, before ``start()``.

        Without a dir (``store=False``) only the identity is settled. A store that cannot be
        written is warned about once: the run goes on without it (rows counted as lost), except in
        strict mode."""
        if request.id is not None and not layout.is_run_id(request.id):
            if self.strict:
                raise ValueError(f"run id {request.id!r} is not usable")
            warn_once(
                f"run-id:{request.id}",
                f"run id {request.id!r} is not usable (letters, digits, '_' and '-', at most 128); "
                "the run was started with a new id",
            )
            request = dataclasses.replace(request, id=None)
        run_id = request.id or layout.new_run_id()
        name = (
            request.name
            or f"{request.project or 'run'}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(request.created))}"
        )
        opened = OpenedRun(run_id, name, request.project, None, bool(request.id))
        self.settled.set()  # whatever happens below, this process's files are settled by its end
        if dir is not None:
            store = open_store(dir, request.upload_interval)
            opened.dir = self._run_dir = store.run_dir(run_id)
            try:
                self._open_files(store, opened, request)
            except OSError as exc:
                if self.strict:
                    raise
                warn_once(
                    f"store-open:{run_id}",
                    f"cannot write the run store at {opened.dir} ({exc.strerror or exc}); training goes on, "
                    "logged rows are counted as lost and reported at finish()",
                )
        self._set_run(opened, request.tags)
        return opened

    def _open_files(self, store: Store, opened: OpenedRun, request: RunRequest) -> None:
        run = {
            "id": opened.id,
            "name": opened.name,
            "project": opened.project,
            "tags": request.tags,
            "created": request.created,
        }
        if not store.create_run(opened.id, {**run, "format": codec.FORMAT_VERSION}):
            opened.resumed = True
            opened.name, opened.project = _existing(store, opened.id, opened.name, opened.project)
        elif request.id is not None:
            opened.resumed = False
            if not request.new:
                warn_once(
                    f"resume:{opened.id}", f"run {opened.id!r} did not exist; started a new run with that id"
                )
        meta: ProcessMeta = {
            **request.process,
            "run_id": opened.id,
            "start": request.created,
            "resumed": opened.resumed,
        }
        self._files = store.open_process(opened.id, layout.proc_name(request.created), meta)
        self._store = store
        self._files_opened()
        if request.job is not None:
            try:
                store.publish_job(request.job, opened.id)
            except OSError as exc:  # only the other nodes' system metrics depend on it
                warn_once(f"job:{opened.id}", f"could not publish the run for the job's other nodes: {exc!r}")

    def join_job(self, dir: str | os.PathLike[str], job: str, not_before: float, request: RunRequest) -> None:
        """Record into the run that the job's global rank 0 publishes (another node's first rank):
        the thread waits for it (up to ``JOIN_TIMEOUT``), then opens this process's files there."""
        self._join = _Join(open_store(dir, request.upload_interval), job, not_before, request)

    def _joined(self) -> bool:
        """Wait for the job's run; False if it never came (or the tracker finished first)."""
        assert self._join is not None
        store, request = self._join.store, self._join.request
        run_id = store.wait_for_job(self._join.job, self._join.not_before, JOIN_TIMEOUT, self._stopping)
        if run_id is None:
            return False
        opened = OpenedRun(run_id, run_id, request.project, store.run_dir(run_id), True)
        self._run_dir = opened.dir
        try:
            opened.name, opened.project = _existing(store, run_id, run_id, None)
            meta: ProcessMeta = {
                **request.process,
                "run_id": run_id,
                "start": request.created,
                "resumed": True,
            }
            self._files = store.open_process(run_id, layout.proc_name(request.created), meta)
            self._store = store
            self._files_opened()
        except OSError as exc:
            warn_once(f"store-open:{run_id}", f"cannot write the run store at {opened.dir}: {exc!r}")
        self._set_run(opened, request.tags)
        return True

    def _files_opened(self) -> None:
        if self.console_sink is not None and self._files is not None:
            self.console_sink(self._files.console_path)

    def _set_run(self, opened: OpenedRun, tags: list[str]) -> None:
        self.name = f"tunetrack-writer-{opened.id}"
        self.channel.label = opened.id
        self.run_info = RunInfo(
            opened.id, opened.name, opened.project, list(tags), opened.dir, opened.resumed
        )

    # -- ending ------------------------------------------------------------------------------------
    def finish(
        self, state: str, error: str | None = None, timeout: float = 60.0, at: float | None = None
    ) -> bool:
        """Write everything, wait for the backends, record how the process ended (``at``: when, if not
        now: an imported run's end), and stop. ``timeout`` bounds the writer's own work, not the wait
        for the backends (``fanout.wait_for`` bounds that); False if the writer took longer (the run
        may then read as crashed)."""
        self._end = EndRecord(state=state, traceback=error)
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
        self._runners = [BackendRunner(backend, self.run_info) for backend in self.backends]
        for runner in self._runners:
            runner.start()
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
            self._store_op(lambda f: f.summarize(self._last_step, dict(self._last_values)))
            self._last_write = now
        if self._files is not None and now - self._last_beat >= self.heartbeat_interval:
            self._store_op(lambda f: f.heartbeat())
            self._last_beat = now
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
        record = codec.encode_rows(rows, convert=to_plain, on_drop=self._on_drop, last=self._last_values)
        self._last_step = rows.steps[-1]
        self._fold(record, rows)
        if not self._store_op(lambda f: f.append(codec.pack(record))) and self._run_dir is not None:
            self.counters.lost_rows += len(rows)
        if self.health is not None:
            columns = {k: c for k in self.health.keys if (c := codec.float_column(record, k)) is not None}
            for problem in self.health.check(columns):
                self._health_event(problem)
        if self._runners:
            dict_rows = _as_backend_rows(rows)
            for runner in self._runners:
                runner.submit("log", dict_rows, rows=len(dict_rows))

    def _fold(self, record: dict[str, Any], rows: codec.Rows) -> None:
        """Fold a written block into each key's aggregates. The matrix of a block whose rows share
        their float keys is folded with NumPy, one fold per key list merged at the end, when NumPy is
        already loaded (every training process has it) or the rows are wide (``WIDE_ROWS`` keys: a
        Python loop per key would cost the training thread's share of the interpreter more than
        loading NumPy once); narrow rows in a process without NumPy are folded key by key, and the
        writer does not load it for them."""
        keys = record.get(codec.MATRIX_KEYS)
        columns = codec.plain_columns(record)
        if keys and ("numpy" in sys.modules or len(keys) >= WIDE_ROWS):
            matrix = self._matrix_folds.get(tuple(keys))
            if matrix is None:
                matrix = self._matrix_folds[tuple(keys)] = aggregates.MatrixFold(keys)
            matrix.add(rows.steps, rows.times, record[codec.MATRIX])
        elif keys:
            columns = itertools.chain(codec.matrix_columns(record), columns)
        aggs = self._aggregates
        for key, steps, times, values in columns:
            new = aggregates.chunk(steps, times, values)
            if new is not None:
                aggs[key] = aggregates.merge(aggs.get(key), new)

    def _all_aggregates(self) -> dict[str, aggregates.Agg]:
        """Each key's aggregates over everything this process wrote."""
        out = dict(self._aggregates)
        for matrix in self._matrix_folds.values():
            for key, agg in matrix.aggregates().items():
                out[key] = aggregates.merge(out.get(key), agg)
        return out

    def _write_system(self) -> None:
        rows, self._pending_system = self._pending_system, codec.Rows()
        if self._files is not None:
            record = codec.encode_rows(rows, codec.SYSTEM, convert=to_plain, on_drop=self._on_drop)
            self._store_op(lambda f: f.append(codec.pack(record)))
        if self._runners:
            dict_rows = _as_backend_rows(rows)
            for runner in self._runners:
                runner.submit("log_system", dict_rows)

    def _write_config(self, message: ConfigUpdate) -> None:
        self._config = merge(self._config, message.config)
        record = codec.encode_config(message.time, message.config)
        self._store_op(lambda f: f.append(codec.pack(record)))
        for runner in self._runners:
            runner.submit("log_config", message.config)

    def _write_event(self, event: Event) -> None:
        record = codec.encode_event(event.kind, event.step, event.time, event.data)
        self._rewound = self._rewound or event.kind == "rewind"
        self._store_op(lambda f: f.append(codec.pack(record)))
        event_dict = {**event.data, "kind": event.kind, "step": event.step, "time": event.time}
        for runner in self._runners:
            runner.submit("log_event", event_dict)

    def _write_table(self, table: Table) -> None:
        """Convert, store and mirror one table of samples. Whatever the caller handed over is stored
        as well as it can be (``writer.tables``); what was odd is warned about once per key."""
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
        if self._runners:  # backends know samples as a text event
            event = {"kind": "text", "key": table.key, "rows": converted.rows()}
            for runner in self._runners:
                runner.submit("log_event", {**event, "step": table.step, "time": table.time})

    def _write_file(self, media: MediaFile) -> None:
        self._store_op(lambda f: f.put_file(media.path, media.data))

    def write_edit(self, body: dict[str, Any]) -> None:
        """Store an edit of the run (``tunetrack.edits``). Called on this thread while it runs, and by
        the tracker itself once it stopped (an edit after ``finish()``)."""
        self._store_op(lambda f: f.edit(layout.edit_name(float(body["time"])), body))

    def _health_event(self, problem: dict[str, Any]) -> None:
        step = problem.pop("step")
        self._write_event(Event("health", step, time.time(), problem))
        run = self.run_info
        if self.alerter is not None and run is not None:
            title, text = describe(problem, step)
            alert = Alert(title, text, "warn", run.id, run.name, run.project, State.RUNNING)
            self.alerter.send(alert, key=(run.id, "health", problem["key"], problem["problem"]))
        warn_once(f"{self._run_id}:health:{problem['problem']}", warning(problem, step))

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
        if self._runners:
            for runner in self._runners:
                runner.close(state)  # the backends catch up side by side
            self._mirroring.set()
            try:
                stall = settings.backend_stall()
                fanout.wait_for(
                    self._runners, stall, self.backend_timeout, self._stop_mirroring, fanout.terminal()
                )
            finally:
                self._mirroring.clear()
        backends = _labelled([(runner.label, runner.result()) for runner in self._runners])
        if self._files is not None:
            values = {
                k: v for k, v in ((k, to_plain(v)) for k, v in self._last_values.items()) if v is not DROP
            }
            end = EndRecord(
                **(self._end or EndRecord(state=state)),
                counters=self.counters.as_dict(),
                last=LastValues(step=self._last_step, values=values),
                aggregates=self._all_aggregates(),
                config=self._config,  # what this process logged, merged: readers need not read its records
            )
            if backends:
                end["backends"] = backends
            if self._rewound:
                end["rewound"] = True
            if self._store_op(lambda f: f.close(end)):
                self._write_parquet()

    def _write_parquet(self) -> None:
        """The run's Parquet copy (``manage.parquet.after_finish``), once its end is recorded, still on
        this thread (``finish()`` waits for it; training does not). In a process that already loaded
        pyarrow (a Hugging Face ``datasets`` one) it is written here; in one that did not, a child
        process that ``finish()`` does not wait for writes it (starting Python and pyarrow there costs
        a second; finishing a run never loads pyarrow or NumPy into the caller's process). Where
        pyarrow is not installed, nothing happens. A failure here is one warning; the child's are
        silent: the records are the source of truth, ``tunetrack query`` reads them where the copy is
        missing or stale, and ``tunetrack parquet`` writes it later."""
        if self._store is None or self.run_info is None or not settings.parquet_enabled():
            return
        try:
            if "pyarrow" in sys.modules:
                from ..manage.parquet import after_finish

                after_finish(self._store, self.run_info.id)
            else:
                _parquet_in_child(str(self._store), self.run_info.id)
        except Exception as exc:
            warn_once(
                f"{self._run_id}:parquet",
                f"run {self._run_id}: its Parquet copy was not written ({exc!r}); the records are complete, "
                "and `tunetrack parquet` writes it",
            )


#: what the child process runs (``Writer._write_parquet``): the same function, in a process of its own
_CHILD = "import sys; from tunetrack.manage.parquet import after_finish_at; after_finish_at(*sys.argv[1:])"


def _parquet_in_child(dir: str, run_id: str) -> None:
    """``manage.parquet.after_finish`` in a child Python, not waited for (in a session of its own: a
    Ctrl-C of the terminal does not stop it half-way); skipped where pyarrow is not installed (looked
    up without importing it)."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("pyarrow") is None:
        return
    subprocess.Popen(
        [sys.executable, "-c", _CHILD, dir, run_id],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _existing(store: Store, run_id: str, name: str, project: str | None) -> tuple[str, str | None]:
    """An existing run's name (as its edits left it) and project; ``name`` and ``project`` if the
    store no longer shows the run (deleted between creating and reading it)."""
    folder = store.run(run_id)
    run_json = (folder.run_json() if folder is not None else None) or {}
    renamed = fold(run_json, folder.edits() if folder is not None else []).name
    return renamed or name, run_json.get("project", project)


def _labelled(pairs: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Backends by name (a second backend of the same name gets ``name.2``)."""
    out: dict[str, dict[str, Any]] = {}
    for label, stats in pairs:
        key, n = label, 1
        while key in out:
            n += 1
            key = f"{label}.{n}"
        out[key] = stats
    return out


def _as_backend_rows(rows: codec.Rows) -> list[tuple[int, float, dict[str, Any]]]:
    return [(step, t, _as_dict(values)) for step, t, values in zip(rows.steps, rows.times, rows.values)]


def _as_dict(row: dict[Any, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        converted = to_plain(value)
        if converted is not DROP:
            out[key if type(key) is str else str(key)] = converted
    return out
