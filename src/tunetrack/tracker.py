"""The Tracker: the one object every adapter drives (start, log_config, log, finish).

``log()`` is the hot path. It does the least work that keeps the caller's values intact (a keys
tuple, a values tuple, a snapshot only for mutable values) and appends to a bounded deque; the writer
thread does the rest. Nothing here raises into training except in ``strict`` mode: faults are warned
about once, counted, and reported at ``finish()``.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import signal
import sys
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import config as _config
from ._values import FAST_TYPES, snapshot
from ._warnings import warn_once
from .backends.base import Backend, RunInfo
from .errors import InvalidValue
from .health import HealthConfig, HealthMonitor
from .store import jobs, layout
from .store.local import LocalStore
from .writer import Counters, RowQueue, Writer

_live: weakref.WeakSet[Tracker] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooks_installed = False
_previous_handlers: dict[int, Any] = {}
_previous_excepthook = sys.excepthook
_all_fast = FAST_TYPES.issuperset
_all_float = frozenset({float}).issuperset
_now = time.time


class Tracker:
    """Records one run: hyperparameters, metrics and events, into the local store and any backends.

    The constructor has no side effects (adapters build trackers on every rank); the run is created
    by ``start()`` or by the first ``log()``/``log_config()``.
    """

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        config: Any = None,
        tags: Sequence[str] | None = None,
        resume: str | None = None,
        resume_step: int | None = None,
        backends: Sequence[Backend] | None = None,
        store: bool = True,
        strict: bool = False,
        all_ranks: bool = False,
        flush_interval: float = 1.0,
        fsync_interval: float = 30.0,
        max_pending: int = 1_000_000,
        system: bool | None = None,
        system_interval: float | None = None,
        system_sources: Sequence[Any] | None = None,
        health: bool | HealthConfig = True,
    ) -> None:
        self.project = project
        self.name = name
        self.tags = list(tags or [])
        self.strict = strict
        self._dir = dir
        self._initial_config = config
        self._resume = resume
        self._resume_step = resume_step
        self._backends = list(backends or [])
        self._use_store = store
        self._all_ranks = all_ranks
        self._flush_interval = flush_interval
        self._fsync_interval = fsync_interval
        self._max_pending = max_pending
        self._system = system
        self._system_interval = system_interval
        self._system_sources = system_sources
        self._sampler: Any = None
        self._health = health
        self._stop_waiting = threading.Event()
        self._lock = threading.RLock()
        self._buf: deque | None = None  # the queue's rows; None when this process does not record
        self._queue = RowQueue()
        self._controls: deque = deque()
        self._writer: Writer | None = None
        self._counters = Counters()
        self._started = self._finished = False
        self._active = True
        self._step = 0
        self._exit_state: str | None = None
        self._config: dict[str, Any] = {}
        self.id: str | None = None
        self.run_dir: Path | None = None

    # -- public properties ------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """False on a process that does not record (a non-zero rank), and after ``finish()``."""
        return self._active and not self._finished

    @property
    def step(self) -> int:
        """The last step logged (or rewound to)."""
        return self._step

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Tracker:
        """Create (or re-attach to) the run and start the writer. Idempotent; never raises."""
        with self._lock:
            if self._started:
                return self
            self._started = True
            try:
                self._start()
            except Exception as exc:  # a tracker must never take training down with it
                if self.strict:
                    raise
                warn_once(f"start:{id(self)}", f"could not start the run ({exc!r}); nothing will be recorded")
                self._active = False
        return self

    def _start(self) -> None:
        from .env import job_id, rank_info

        ranks = rank_info()
        role = "primary" if ranks.rank == 0 or self._all_ranks else "node" if ranks.local_rank == 0 else None
        job = job_id() if ranks.world_size > 1 else None
        root = layout.resolve_root(self._dir)
        if role == "node" and job is not None and self._use_store:
            # Another node's first rank: no training metrics here, but this node's system metrics
            # join the job's run as soon as global rank 0 has published it.
            self._active = False
            threading.Thread(
                target=self._join_job, args=(root, job, ranks), name="tunetrack-job", daemon=True
            ).start()
            _live.add(self)
            _install_hooks()
            return
        if role != "primary":
            self._active = False
            return
        now = time.time()
        self.id = self._resume or layout.new_run_id()
        self.run_dir = root / self.id if self._use_store else None
        if self.name is None:
            self.name = f"{self.project or 'run'}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}"
        store, resumed = self._open_store(now, ranks, role)
        if job is not None and store is not None and ranks.rank == 0:
            _quietly(jobs.publish, root, job, self.id)
        self._use_queue(RowQueue(cap=max(self._max_pending // 10, 1)))  # until the writer sees rows
        self._launch(store, resumed, ranks)
        if self._initial_config is not None:
            self.log_config(self._initial_config)
        if self._resume_step is not None:
            self.rewind(self._resume_step)

    def _use_queue(self, queue: RowQueue) -> None:
        self._queue, self._buf = queue, queue.rows
        self._add_step, self._add_time, self._add_plain = (
            queue.steps.append,
            queue.times.append,
            queue.plains.append,
        )

    def _join_job(self, root: Path, job: str, ranks: Any) -> None:
        import psutil

        run_id = jobs.wait_for(
            root, job, psutil.Process().create_time(), timeout=1800, stop=self._stop_waiting
        )
        with self._lock:
            if run_id is None or self._finished:
                return
            self.id, self.run_dir = run_id, root / run_id
            store, _ = self._open_store(time.time(), ranks, "node")
            self._launch(store, True, ranks)

    def _launch(self, store: LocalStore | None, resumed: bool, ranks: Any) -> None:
        assert self.id is not None
        info = RunInfo(
            self.id, self.name or self.id, self.project, list(self.tags), self.run_dir, resumed, {}
        )
        self._writer = Writer(
            self._queue,
            self._controls,
            store,
            self._backends,
            info,
            self._counters,
            flush_interval=self._flush_interval,
            fsync_interval=self._fsync_interval,
            health=None
            if self._health is False
            else HealthMonitor(self._health if self._health is not True else None),
            max_pending=self._max_pending,
        )
        self._writer.start()
        self._start_system(ranks)
        _live.add(self)
        _install_hooks()

    def _start_system(self, ranks: Any) -> None:
        """System metrics: on by default, one sampler per node (local rank 0), off the training thread."""
        enabled = self._system if self._system is not None else os.environ.get("TUNETRACK_SYSTEM", "1") != "0"
        if not enabled or ranks.local_rank != 0:
            return
        from .system import SystemSampler, default_sources

        interval = self._system_interval or float(os.environ.get("TUNETRACK_SYSTEM_INTERVAL", "10"))
        sources = list(self._system_sources) if self._system_sources is not None else default_sources()
        self._sampler = SystemSampler(sources, interval, self._log_system)
        self._sampler.start()

    def _log_system(self, unix_time: float, row: dict[str, Any]) -> None:
        self._controls.append(("system", (self._step, unix_time, row, False)))

    def _open_store(self, now: float, ranks: Any, role: str) -> tuple[LocalStore | None, bool]:
        """Create the run folder and this process's files; on failure, warn and run without a store."""
        from .env import run_metadata

        if self.run_dir is None:
            return None, bool(self._resume)
        resumed = False
        try:
            run = {
                "id": self.id,
                "name": self.name,
                "project": self.project,
                "tags": self.tags,
                "created": now,
            }
            if not layout.create_run_file(self.run_dir, {**run, "format": 1}):
                resumed = True
                existing = layout.read_json(self.run_dir / layout.RUN_FILE) or {}
                self.name = existing.get("name", self.name)
                self.project = existing.get("project", self.project)
            elif self._resume:
                warn_once(
                    f"resume:{self.id}", f"run {self.id!r} did not exist; started a new run with that id"
                )
            store = LocalStore(self.run_dir, layout.proc_name(now))
            meta = {**run_metadata(), "run_id": self.id, "start": now, "resumed": resumed, "role": role}
            store.open({**meta, "rank": dataclasses.asdict(ranks)})
            return store, resumed
        except OSError as exc:
            if self.strict:
                raise
            warn_once(
                f"store-open:{self.id}",
                f"cannot write the run store at {self.run_dir} ({exc.strerror or exc}); training goes on, "
                "logged rows are counted as lost and reported at finish()",
            )
            return None, resumed

    def finish(self, state: str | None = None, error: str | None = None) -> None:
        """End the run: flush everything, fsync, record the final state. Idempotent.

        ``state`` defaults to what the process went through (``failed`` after an uncaught
        exception, ``killed`` after SIGTERM/SIGINT), else ``finished``.
        """
        self._stop_waiting.set()
        with self._lock:
            if self._finished or not self._started:
                self._finished = True
                return
            self._finished = True
            writer, self._buf = self._writer, None
        _live.discard(self)
        if self._sampler is not None:
            self._sampler.stop()
        if writer is None:
            return
        writer.end = {"state": state or self._exit_state or "finished", "traceback": error}
        writer.stop_event.set()
        if threading.current_thread() is not writer:
            writer.join(timeout=60)
        if writer.is_alive():
            warn_once(
                f"finish:{self.id}", "the writer did not finish within 60 s; the run may read as crashed"
            )
        lost = {k: v for k, v in self._counters.as_dict().items() if v}
        if lost:
            warn_once(f"lost:{self.id}", f"run {self.id}: not everything logged was stored: {lost}")

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until everything logged so far is written and flushed to the OS."""
        writer = self._writer
        if self._buf is None or writer is None or not writer.is_alive():
            return False
        done = threading.Event()
        self._controls.append(("flush", done))
        return done.wait(timeout)

    def __enter__(self) -> Tracker:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish()
        else:
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            self.finish("killed" if issubclass(exc_type, KeyboardInterrupt) else "failed", text)

    # -- recording ---------------------------------------------------------------------------------
    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Record one row of metrics at ``step`` (default: the last step + 1).

        Costs a few microseconds: the values are frozen and queued; conversion and I/O happen on the
        writer thread. Unsupported values are warned about once per key and dropped.
        """
        try:
            buf = self._buf
            if buf is None and (buf := self._buf_slow()) is None:
                return
            if step is None:
                step = self._step + 1
            elif type(step) is not int:
                step = self._coerce_step(step)
            if _all_float(map(type, metrics.values())):  # the writer's fastest encoding
                row, plain = dict(metrics), True
            elif _all_fast(map(type, metrics.values())):
                row, plain = dict(metrics), False
            else:
                row, plain = snapshot(metrics, self.strict), False
            self._step = step
            if len(buf) >= self._queue.cap and not self._room_after_waiting(buf):
                return
            self._add_step(step)
            self._add_time(_now())
            self._add_plain(plain)
            buf.append(row)  # last: the writer takes only rows whose parts are all queued
        except InvalidValue:
            raise
        except Exception as exc:
            if self.strict:
                raise InvalidValue(f"tunetrack cannot log {metrics!r}: {exc}") from exc
            warn_once(f"log:{type(exc).__name__}", f"log() ignored a call it could not record: {exc!r}")

    def _room_after_waiting(self, buf: deque) -> bool:
        """Backpressure before dropping: give the writer the interpreter for up to 5 ms.

        Only a loop that logs far faster than the writer converts (hundreds of thousands of rows per
        second) ever gets here; it slows down a little instead of losing rows. A writer that is truly
        stuck (a hung disk) costs at most 5 ms per call, then the row is dropped and counted.
        """
        for _ in range(5):
            time.sleep(0.001)
            if len(buf) < self._queue.cap:
                return True
        self._counters.dropped_rows += 1
        warn_once(
            f"full:{self.id}",
            f"the writer cannot keep up ({len(buf):,} rows, about {self._max_pending:,} values, pending); "
            "rows are being dropped and counted (see the run's summary)",
        )
        return False

    def _buf_slow(self) -> deque | None:
        if not self._started:
            self.start()
            return self._buf
        if self._finished and self._active:
            self._counters.late_rows += 1
            warn_once(f"late:{self.id}", "log() after finish() is ignored (counted as late rows)")
        return None

    def _coerce_step(self, step: Any) -> int:
        try:
            if isinstance(step, bool):
                raise TypeError
            value = int(step.item() if hasattr(step, "item") else step)
            if value != step:
                raise ValueError
            return value
        except (TypeError, ValueError):
            if self.strict:
                raise InvalidValue(f"step must be an integer, got {step!r}") from None
            warn_once(f"step:{id(self)}", f"step {step!r} is not an integer; using the next step instead")
            return self._step + 1

    def log_config(self, config: Any) -> None:
        """Merge ``config`` into the run's config (captured now; never raises)."""
        captured = _config.capture(config)
        self._config = _config.merge(self._config, captured)
        self._control("config", {"time": time.time(), "config": captured})

    def event(self, kind: str, step: int | None = None, **data: Any) -> None:
        """Record a discrete event (checkpoint, evaluation, warning, ...) at ``step``."""
        step = self._step if step is None else self._coerce_step(step)
        self._control("event", {"kind": kind, "step": step, "t": time.time(), "data": _config.capture(data)})

    def log_text(
        self, key: str, rows: str | Mapping[str, Any] | Sequence[Mapping[str, Any]], step: int | None = None
    ) -> None:
        """Text samples (generations, GRPO completions) at ``step``: a string, a dict, or a list of dicts."""
        if isinstance(rows, str):
            rows = [{"text": rows}]
        elif isinstance(rows, Mapping):
            rows = [rows]
        self.event("text", step=step, key=key, rows=list(rows))

    def log_image(self, key: str, image: Any, step: int | None = None, index: int = 0) -> str | None:
        """Store an image (PIL, NumPy array or tensor) as a PNG in the run folder and record an
        ``image`` event. Encoding happens on the calling thread: images are rare and large."""
        if self._buf is None and self._buf_slow() is None:
            return None
        step = self._step if step is None else self._coerce_step(step)
        if self.run_dir is None:
            return None
        from .media import save_image

        try:
            rel = save_image(self.run_dir, key, image, step, index)
        except Exception as exc:
            if self.strict:
                raise
            warn_once(f"image:{self.id}:{key}", f"could not store image {key!r}: {exc!r}")
            return None
        self.event("image", step=step, key=key, path=rel)
        return rel

    def rewind(self, step: int) -> None:
        """Supersede what was logged so far after ``step`` (resuming from a checkpoint at ``step``).

        The superseded rows stay on disk; readers hide them, so curves never zig-zag.
        """
        step = self._coerce_step(step)
        self.event("rewind", step=step)
        self._step = step

    def _control(self, kind: str, payload: dict[str, Any]) -> None:
        if self._buf is None and self._buf_slow() is None:
            return
        self._controls.append((kind, payload))


def _quietly(fn: Any, *args: Any) -> None:
    """Best effort: a failure here only costs a convenience, never the run."""
    try:
        fn(*args)
    except OSError as exc:
        warn_once(f"quiet:{fn.__name__}", f"{fn.__name__} failed: {exc!r}")


# -- process-wide hooks: truthful run states without a server ------------------------------------
def _install_hooks() -> None:
    """Once per process: atexit (no finish() means finished), the excepthook (failed), signals (killed)."""
    global _hooks_installed
    with _hooks_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_finish_all)
    sys.excepthook = _excepthook
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError, OSError):  # not allowed here (embedded interpreter)
                _previous_handlers[signum] = signal.signal(signum, _on_signal)


def _finish_all(state: str | None = None, tb: str | None = None) -> None:
    for tracker in list(_live):
        tracker.finish(state, tb)


def _excepthook(exc_type: Any, exc: Any, tb: Any) -> None:
    killed = issubclass(exc_type, KeyboardInterrupt)
    _finish_all("killed" if killed else "failed", "".join(traceback.format_exception(exc_type, exc, tb)))
    _previous_excepthook(exc_type, exc, tb)


def _on_signal(signum: int, frame: Any) -> None:
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if previous is signal.SIG_IGN:
        return
    for tracker in list(_live):
        tracker._exit_state = "killed"
        tracker.flush(timeout=5.0)
    if callable(previous):
        previous(signum, frame)  # e.g. KeyboardInterrupt for SIGINT: the excepthook/atexit end the run
        return
    _finish_all("killed")
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
