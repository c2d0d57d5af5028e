"""The Tracker: the one object every adapter drives (start, log_config, log, finish).

``log()`` is the hot path. It does the least work that keeps the caller's values intact (a dict copy,
a snapshot only for mutable values) and appends to bounded deques; the writer thread does the rest.
Nothing here raises into training except in ``strict`` mode: faults are warned about once, counted,
and reported at ``finish()``.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .. import settings
from .._warnings import warn_once
from ..attach.environment import take_run
from ..backends.base import Backend
from ..config import capture
from ..edits import new_edit, stop_request
from ..errors import InvalidFork, InvalidValue
from ..histograms import HISTOGRAM, Histogram
from ..monitoring.alerts import Alerter
from ..monitoring.health import HealthConfig
from ..monitoring.rules import Rule
from ..states import State
from ..values import FAST_TYPES, snapshot
from ..writer import (
    FORK_EVENT,
    ArtifactVersion,
    Channel,
    ConfigUpdate,
    EndFields,
    Event,
    ForkRef,
    MediaFile,
    Role,
    RunEdit,
    RunRequest,
    SystemSample,
    Table,
    Writer,
    resolve_fork,
)
from . import exit_hooks
from .alerting import Alerts
from .artifacts import Artifacts
from .checkpoints import Checkpoints
from .console_capture import ConsoleCapture
from .console_capture import start as capture_console
from .control import StopWatch
from .editing import Labels
from .launch import job_id, rank_info, role_of
from .media import Media
from .options import Options

_all_fast = FAST_TYPES.issuperset
_all_float = frozenset({float}).issuperset
_now = time.time
#: how long ``finish()`` waits for the writer to store what is left (the wait for the backends, as long as
#: they make progress, comes on top: ``writer.fanout.wait_for``)
FINISH_TIMEOUT = 60.0
#: how long ``finish()`` of a rank that has not yet joined its job's run (a very short job) waits for
#: it, so that its console is recorded there
JOIN_AT_FINISH = 10.0


class Tracker:
    """Records one run: hyperparameters, metrics and events, into the local store and any backends.

    The constructor has no side effects (adapters build trackers on every rank); the run is created
    by ``start()`` or by the first ``log()``/``log_config()``. The run's name and tags
    (``editing.Labels``), its alerts (``alerting.Alerts``) and its samples and images
    (``media.Media``) are parts of their own, each given only the few things it needs.
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
        id: str | None = None,
        backends: Sequence[Backend | str] | str | None = None,
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
        upload_interval: float | None = None,
        backend_timeout: float | None = None,
        alerts: str | Sequence[str] | None = None,
        alert_finished: bool = False,
        console: bool | str | None = None,
        fork_from: str | None = None,
        rules: Sequence[Rule] | str | os.PathLike[str] | None = None,
    ) -> None:
        self.project = project
        self.strict = strict
        self._opts = Options(
            dir,
            config,
            id,
            resume,
            resume_step,
            backends,
            store,
            all_ranks,
            flush_interval,
            fsync_interval,
            max_pending,
            system,
            system_interval,
            system_sources,
            health,
            upload_interval,
            backend_timeout,
            alerts,
            console,
            strict,
            fork_from,
            rules,
        )
        self._sampler: Any = None
        self._console: ConsoleCapture | None = None
        self._labels = Labels(name, tags, strict, self._deliver_edit)
        self._alerts = Alerts(strict, alert_finished, lambda: (self.id, self.name, self.project), self.event)
        self._media = Media(
            strict, self._recording, self._send, self._step_of, self.event, lambda: (self.id, self.run_dir)
        )
        self._checkpoints = Checkpoints(self._event_now)
        #: the first request to stop the run (``edits.stop_request``), once one was made or found
        self._stop: dict[str, Any] | None = None
        self._stop_watch: StopWatch | None = None
        self._artifacts = Artifacts(lambda: (self._store_dir, self.id), self._event_now)
        #: the store's dir (a folder or a URL) once started; None without a store
        self._store_dir: str | None = None
        self._lock = threading.RLock()
        self._writer: Writer | None = None
        #: the writer's way in (None until ``start()``, and on a process that records no rows)
        self._channel: Channel | None = None
        #: ``Channel.put_row`` while this process records rows; None before ``start()`` and after
        #: ``finish()``, and on a process that does not record
        self._put: Callable[..., bool] | None = None
        self._started = self._finished = False
        self._active = True
        self._step = 0
        self.id: str | None = None
        #: the run's folder, or its URL in an object store; None without a store
        self.run_dir: Path | str | None = None

    # -- public properties ------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """False on a process that does not record (a non-zero rank), and after ``finish()``."""
        return self._active and not self._finished

    @property
    def should_stop(self) -> bool:
        """Whether someone asked this run to stop (``tunetrack stop``, the dashboard, an agent, a rule,
        ``request_stop``). A training loop that reads it stops at its next step; the adapters do so
        themselves, the way their framework stops cleanly. The run then ends ``stopped``."""
        return self._stop is not None

    @property
    def stop_request(self) -> dict[str, Any] | None:
        """Who asked the run to stop, when and why (``{"time", "by", "reason"}``), or None."""
        return self._stop

    def request_stop(self, reason: str = "", by: str | None = None) -> None:
        """Ask this run to stop: ``should_stop`` turns true here at once, and the request is stored
        with the run (who asked, ``by``: ``user@host`` by default; why, ``reason``) as ``tunetrack
        stop`` stores it. Never raises, except in ``strict`` mode for a reason that is not one line."""
        try:
            body = new_edit(stop=reason, by=by)
        except ValueError:
            if self.strict:
                raise
            body = new_edit(stop=" ".join(str(reason).split()), by=by)
        if self._stop is None and self._recording():
            self._deliver_edit(body)
        self._stopped(stop_request(body) or {})

    def _rule_stop(self, reason: str) -> None:
        """A rule that stops the run fired (on the writer thread): a request as ``request_stop`` makes
        it, unless ``finish()`` began (under the lock: the run's end is no time to ask)."""
        with self._lock:
            if not self._finished:
                self.request_stop(reason, by="rule")

    def _stopped(self, request: dict[str, Any]) -> None:
        """The run was asked to stop (found in its store by the stop watch, or asked here): recorded
        as a ``stop`` event, told once on the console."""
        with self._lock:
            if self._stop is not None or self._finished:
                return
            self._stop = request
        by, reason = request.get("by") or "?", request.get("reason") or ""
        if self._trains:
            self._event_now("stop", self._step, by=by, reason=reason)
        warn_once(
            f"stop:{self.id}",
            f"run {self.id} was asked to stop by {by}"
            + (f" ({reason})" if reason else "")
            + ": training stops at the next step where the loop or its adapter looks (Tracker.should_stop)",
        )

    @property
    def step(self) -> int:
        """The last step logged (or rewound to)."""
        return self._step

    @property
    def name(self) -> str | None:
        """The run's name. Set before ``start()``, it names the run; set later, it renames the run (an
        edit, as ``tunetrack rename`` makes: readers show the new name, and find the run by it)."""
        return self._labels.name

    @name.setter
    def name(self, value: str | None) -> None:
        if value is None and not self._started:
            self._labels.name = None  # the default name, made at start()
            return
        self._labels.edit(name="" if value is None else value)  # a run that exists keeps a name

    @property
    def tags(self) -> list[str]:
        """The run's tags (a copy: change them with ``add_tags`` and ``remove_tags``)."""
        return list(self._labels.tags)

    def add_tags(self, *tags: str) -> None:
        """Tag the run. Before ``start()`` the run is created with these tags; later they are added to
        it (an edit, as ``tunetrack tag RUN +TAG`` makes). Never raises, except in ``strict`` mode."""
        if tags:
            self._labels.edit(add=tags)

    def remove_tags(self, *tags: str) -> None:
        """Untag the run (before or after ``start()``, as ``add_tags``)."""
        if tags:
            self._labels.edit(remove=tags)

    def _deliver_edit(self, body: dict[str, Any]) -> None:
        """Record an edit in the run once the run exists: through the writer while it runs, at once
        after ``finish()``. Only the process that records the run records it (on other ranks it only
        changes this object)."""
        with self._lock:
            writer = self._writer if self._started and self._active else None
            if writer is not None and not self._finished:
                writer.channel.send(RunEdit(body))  # finish() drains it before the writer stops
                return
        if writer is None:
            return
        try:
            writer.write_edit(body)  # a store that cannot be written is warned about there
        except Exception as exc:
            if self.strict:
                raise
            warn_once(f"edit-after:{self.id}", f"could not store an edit of run {self.id}: {exc!r}")

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Tracker:
        """Create (or re-attach to) the run and start the writer. Idempotent; never raises, but for
        an unusable ``fork_from`` (``errors.InvalidFork``, before anything is recorded)."""
        with self._lock:
            if self._started:
                return self
            self._started = True
            try:
                self._start()
            except InvalidFork:
                self._active = False
                raise
            except Exception as exc:  # a tracker must never take training down with it
                if self.strict:
                    raise
                warn_once(f"start:{id(self)}", f"could not start the run ({exc!r}); nothing will be recorded")
                self._active = False
        return self

    def _start(self) -> None:
        from .provenance import run_metadata

        ranks = rank_info()
        job = job_id() if ranks.world_size > 1 else None
        console = settings.console(self._opts.console) if self._opts.store else None
        role = self._role(role_of(ranks, job, self._opts.all_ranks, self._opts.store, console is not None))
        if role is None:
            self._active = False
            return
        dir = settings.store_dir(self._opts.dir) if self._opts.store else None
        self._store_dir = None if dir is None else os.fspath(dir)
        fork = self._fork(dir) if role == Role.PRIMARY else None  # before anything starts: it may raise
        # the recorder process starts now and is ready by the time the run is (fds redirected below)
        recorder = capture_console(console == "stderr", settings.console_max()) if console else None
        try:
            now = time.time()
            # resume= naming the fork's own parent (an adapter's automatic resume in the parent's
            # output folder) forks it: the parent is not re-attached to, nor rewound
            resume = None if fork is not None and self._opts.resume == fork[0]["run"] else self._opts.resume
            if role == Role.PRIMARY and resume is None and self._opts.id is None and fork is None:
                resume = take_run()  # started by `tunetrack run`: this process joins the command's run
            request = RunRequest(
                id=resume or self._opts.id,
                new=resume is None and self._opts.id is not None,
                name=self._labels.name,
                project=self.project,
                tags=self._labels.tags,
                created=now,
                process={**run_metadata(), "role": role, "rank": ranks.as_meta()},
                job=job if role == Role.PRIMARY and ranks.rank == 0 else None,
                upload_interval=self._opts.upload_interval,
                fork=fork[0] if fork is not None else None,
            )
            urls = settings.alert_urls(self._opts.alerts)
            if urls and role in (Role.PRIMARY, Role.COMMAND):
                self._alerts.alerter = Alerter(urls)
            rule_stop = self._rule_stop if role == Role.PRIMARY else None  # the rows are checked there
            writer = self._writer = self._opts.writer(self._alerts.alerter, rule_stop)
        except BaseException:  # the run does not start: neither does the console's recorder
            if recorder is not None:
                recorder.cancel()
            raise
        self._channel = writer.channel
        if recorder is not None:
            self._console = recorder.redirect()
            if self._console is not None:
                writer.console_sink = self._console.record_to
        if role in (Role.PRIMARY, Role.COMMAND):  # only it takes rows
            self._put = writer.channel.put_row
        if role in (Role.NODE, Role.CONSOLE):
            # Another rank: no training metrics here, but its console (and on another node's first
            # rank, that node's system metrics) join the job's run once global rank 0 has published it.
            self._active = False
            import psutil

            assert dir is not None and job is not None
            writer.join_job(dir, job, psutil.Process().create_time(), request)
        else:
            opened = writer.open(dir, request)
            self.id, self._labels.name, self.project, self.run_dir = (
                opened.id,
                opened.name,
                opened.project,
                opened.dir,
            )
        writer.start()
        if self._active and writer.store is not None and self.id is not None:
            self._stop_watch = StopWatch(writer.store, self.id, self._stopped)
            self._stop_watch.start()
        self._sampler = self._opts.sampler(ranks, self._log_system)
        if self._sampler is not None:
            self._sampler.start()
        exit_hooks.track(self)
        if self._active:
            if fork is not None and not opened.resumed:  # a resumed fork has its branch point already
                ref, parent_config = fork
                self._step = ref["step"]  # the next row is the first of the fork's own
                self.event(FORK_EVENT, step=ref["step"], run=ref["run"], config=parent_config)
            if self._opts.config is not None:
                self.log_config(self._opts.config)
            if self._opts.resume_step is not None and (resume is not None or self._opts.resume is None):
                self.rewind(self._opts.resume_step)

    def _role(self, role: Role | None) -> Role | None:
        """What this process does for the run, given what its rank says (``launch.role_of``): a
        tracker of a special kind (``tunetrack run``'s command) says otherwise."""
        return role

    def _end_fields(self) -> EndFields:
        """What this kind of tracker adds to its process's end record (``tunetrack run``'s command:
        its exit code)."""
        return {}

    #: this kind of tracker records training (its steps place a ``stop`` event); ``tunetrack run``'s
    #: command process records none: the training process that joined its run marks the stop
    _trains = True

    def _fork(self, dir: str | os.PathLike[str] | None) -> tuple[ForkRef, dict[str, Any]] | None:
        """The parent and branch step of ``fork_from`` with the parent's config (``errors.InvalidFork``
        for one that names no usable run and step); None for a run that is no fork, or one without a
        store (nothing to branch from: warned about once)."""
        if self._opts.fork_from is None:
            return None
        if dir is None:
            warn_once(f"fork-no-store:{id(self)}", "fork_from is ignored with store=False")
            return None
        return resolve_fork(dir, self._opts.fork_from)

    def _log_system(self, unix_time: float, row: dict[str, Any]) -> None:
        if self._channel is not None:
            self._channel.send(SystemSample(self._step, unix_time, row))

    def finish(self, state: str | None = None, error: str | None = None) -> None:
        """End the run: flush everything, fsync, record the final state. Idempotent.

        ``state`` defaults to what the process went through (``failed`` after an uncaught
        exception, ``killed`` after SIGTERM/SIGINT), else ``stopped`` when the run was asked to stop
        (``should_stop``), else ``finished``.
        """
        with self._lock:
            if self._finished or not self._started:
                self._finished = True
                return
            self._finished = True
            writer, self._put = self._writer, None
        exit_hooks.finishing(self)
        last_lines: list[str] = []
        try:
            if self._stop_watch is not None:
                self._stop_watch.close()
            if self._sampler is not None:
                self._sampler.stop()
            if self._console is not None:  # before the writer's last upload, which sends the console too
                if writer is not None:  # another rank that is joining the job's run: its console goes there
                    writer.settled.wait(JOIN_AT_FINISH)
                last_lines = self._console.stop(error)
            if writer is None:
                return
            self._checkpoints.close()  # the hashes still being computed, then what rotation removed
            self._artifacts.close()
            state = state or exit_hooks.exit_state(self) or (State.STOPPED if self._stop else State.FINISHED)
            try:
                done = writer.finish(state, error, timeout=FINISH_TIMEOUT, fields=self._end_fields())
            except KeyboardInterrupt:  # Ctrl-C while the mirrors catch up: record the end, then stop
                writer.stop_mirroring()
                writer.join(FINISH_TIMEOUT)
                raise
        finally:
            exit_hooks.untrack(self)
        if not done:
            warn_once(
                f"finish:{self.id}",
                f"the writer did not finish within {FINISH_TIMEOUT:g} s; the run may read as crashed",
            )
        self._alerts.end(state, error, self._step, last_lines)
        lost = {k: v for k, v in writer.counters.as_dict().items() if v}
        if lost:
            warn_once(f"lost:{self.id}", f"run {self.id}: not everything logged was stored: {lost}")

    def hurry(self) -> None:
        """Stop waiting for the backends in a ``finish()`` that is under way (SIGTERM arrived): the
        run's end is recorded at once, what the backends did not get is counted."""
        if self._writer is not None:
            self._writer.stop_mirroring()
            self._writer.join(FINISH_TIMEOUT)

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until everything logged so far is written and flushed to the OS."""
        if self._put is None or self._channel is None:
            return False
        return self._channel.flush(timeout)

    def __enter__(self) -> Tracker:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish()
        else:
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            self.finish(State.KILLED if issubclass(exc_type, KeyboardInterrupt) else State.FAILED, text)

    # -- recording ---------------------------------------------------------------------------------
    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Record one row of metrics at ``step`` (default: the last step + 1).

        Costs a few microseconds: the values are frozen and queued; conversion and I/O happen on the
        writer thread. Unsupported values are warned about once per key and dropped. When the writer
        cannot keep up, the channel gives it a few milliseconds, then drops the row and counts it.
        """
        try:
            put = self._put
            if put is None and (put := self._put_after_start()) is None:
                return
            if step is None:
                step = self._step + 1
            elif type(step) is not int:
                step = self._coerce_step(step)
            if _all_float(map(type, metrics.values())):  # the writer's fastest encoding
                row, all_float = dict(metrics), True
            elif _all_fast(map(type, metrics.values())):
                row, all_float = dict(metrics), False
            else:
                row, all_float = snapshot(metrics, self.strict), False
                if self._histograms(row, step) and not row:  # nothing else in the row: no row
                    self._step = step
                    return
            self._step = step
            put(step, _now(), row, all_float)
        except InvalidValue:
            raise
        except Exception as exc:
            if self.strict:
                raise InvalidValue(f"tunetrack cannot log {metrics!r}: {exc}") from exc
            warn_once(f"log:{type(exc).__name__}", f"log() ignored a call it could not record: {exc!r}")

    def _histograms(self, row: dict[Any, Any], step: int) -> bool:
        """Take the ``Histogram`` values out of a row (the slow path's): each is an event of its own.
        Whether there was one."""
        found = [k for k, v in row.items() if isinstance(v, Histogram)]
        for key in found:
            self._send(Event(HISTOGRAM, step, time.time(), row.pop(key).data(str(key))))
        return bool(found)

    def _put_after_start(self) -> Callable[..., bool] | None:
        """The channel's ``put_row`` when ``log()`` finds none: the first call starts the run; after
        ``finish()`` the row is counted as late; a process that does not record has none."""
        if not self._started:
            self.start()
            return self._put
        if self._finished and self._active and self._writer is not None:
            self._writer.counters.late_rows += 1
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
        self._send(ConfigUpdate(time.time(), capture(config)))

    def event(self, kind: str, step: int | None = None, **data: Any) -> None:
        """Record a discrete event (checkpoint, evaluation, warning, ...) at ``step``."""
        self._send(Event(kind, self._step_of(step), time.time(), capture(data)))

    def log_checkpoint(
        self,
        path: str | os.PathLike[str],
        step: int | None = None,
        kind: str | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a checkpoint saved at ``step`` (default: the current step) in ``path`` (a folder, a
        file, or a URL such as ``s3://...``): its kind (``adapter``, ``model``, ``state``; from its
        files when not given) and the metrics it was evaluated with. Each file's size and SHA-256 are
        computed in a process of their own, never delaying the save; a checkpoint later removed (a
        Trainer's ``save_total_limit``) is marked deleted. ``tunetrack checkpoints RUN`` lists them."""
        try:
            if self._recording():
                self._checkpoints.record(os.fspath(path), self._step_of(step), kind, metrics)
        except Exception as exc:
            if self.strict:
                raise
            warn_once(f"checkpoint:{self.id}", f"log_checkpoint({path!r}) was not recorded: {exc!r}")

    def log_artifact(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        kind: str | None = None,
        aliases: Sequence[str] = (),
        reference: bool | None = None,
        metadata: dict[str, Any] | None = None,
        step: int | None = None,
    ) -> Future[ArtifactVersion]:
        """Keep a file or folder (a data set, a model, an evaluation's output) in the run's store as a
        new version of artifact ``name`` (default: the path's last part), with ``aliases`` such as
        ``best``; its files are stored by content, once however many runs log them. A URL
        (``s3://``, ``hf://``), or a local path with ``reference=True``, is recorded without copying.
        Hashing and copying run on a thread of their own; the returned future holds the version
        (``.result()`` waits), and ``finish()`` waits for it. Bad arguments raise here; a failure
        while storing is warned about once and never stops training."""
        if not self._recording():  # another rank: training goes on, ``.result()`` says why
            return _failed(RuntimeError("log_artifact: this process does not record the run (rank 0 does)"))
        return self._artifacts.log(
            os.fspath(path), self._step_of(step), name, kind, aliases, reference, metadata
        )

    def log_input(
        self,
        location: str | os.PathLike[str],
        name: str | None = None,
        kind: str | None = None,
        digest: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Future[ArtifactVersion]:
        """Record what this run was made from (a base model, a data set, a tokenizer) as an input,
        by reference: nothing is copied. ``digest`` names its content where its files are not read
        (a ``datasets`` fingerprint, a hub revision); without one a local path's files are hashed. Two
        runs given the same content share one version, so ``tunetrack lineage`` reaches both. The
        adapters record their framework's inputs with it."""
        if not self._recording():
            return _failed(RuntimeError("log_input: this process does not record the run (rank 0 does)"))
        location = os.fspath(location)
        return self._artifacts.log(location, self._step, name, kind, (), True, metadata, digest, used=True)

    def use_artifact(self, spec: str, step: int | None = None) -> ArtifactVersion:
        """The artifact version ``spec`` names (``name``, ``name:v3``, ``name:best``; ``latest`` by
        default), recorded as an input of this run for ``tunetrack lineage``; ``.download()`` gives its
        files. An unknown name or alias raises ``LookupError`` saying what there is."""
        step = self._step_of(step)
        if not self._recording():
            return self._artifacts.store().resolve(spec)  # another rank reads it; rank 0 records the use
        return self._artifacts.use(spec, step)

    def _event_now(self, kind: str, step: int, **data: Any) -> None:
        """An event sent while the writer still takes messages, ``finish()`` included (the
        checkpoints' hashes arrive then)."""
        if self._channel is not None:
            self._channel.send(Event(kind, step, time.time(), capture(data)))

    def _step_of(self, step: Any) -> int:
        """The step a record is made at: the caller's, or the current one."""
        return self._step if step is None else self._coerce_step(step)

    def log_table(self, key: str, rows: Any, step: int | None = None) -> None:
        """A table of samples (generations, GRPO completions with their rewards) at ``step`` (default:
        the current step): a list of dicts or a pandas DataFrame. Columns may hold text, numbers,
        bools, chat messages (lists of ``{"role", "content"}``) and images (PIL, arrays, tensors).
        The caller pays for a reference only: reading, typing and encoding the table happen on the
        writer thread, so do not change the rows after handing them over (a list is copied, its
        dicts are not). Odd input is stored as well as it can be and warned about once; this never
        raises (``strict`` included: the table is read after the call returned)."""
        self._media.table(key, rows, step)

    def log_text(
        self, key: str, rows: str | Mapping[str, Any] | Sequence[Mapping[str, Any]], step: int | None = None
    ) -> None:
        """Text samples at ``step``: a string (one row whose ``text`` is it), a dict (one row) or a list
        of dicts; the same as ``log_table``."""
        self._media.table(key, rows, step)

    def log_image(self, key: str, image: Any, step: int | None = None, index: int = 0) -> str | None:
        """Store an image (PIL, NumPy array or tensor) as a PNG with the run and record an ``image``
        event; returns its path inside the run. Encoding happens on the calling thread (images are
        rare and large), storing on the writer's."""
        return self._media.image(key, image, step, index)

    def alert(self, title: str, text: str = "", level: str = "info") -> None:
        """Send an alert about this run to the run's alert destinations (``alerts=``,
        ``$TUNETRACK_ALERT_URL``), and record it as an ``alert`` event. Returns at once: sending
        happens in the background; the same title is sent at most once per
        ``$TUNETRACK_ALERT_INTERVAL`` (300 s)."""
        self._alerts.alert(title, text, level)

    def rewind(self, step: int) -> None:
        """Supersede what was logged so far after ``step`` (resuming from a checkpoint at ``step``).

        The superseded rows stay on disk; readers hide them, so curves never zig-zag.
        """
        step = self._coerce_step(step)
        self.event("rewind", step=step)
        self._step = step

    def _recording(self) -> bool:
        """Whether this process records the run (starting it on the first call)."""
        return self._put is not None or self._put_after_start() is not None

    def _send(self, message: ConfigUpdate | Event | MediaFile | Table) -> None:
        if self._recording():
            assert self._channel is not None
            self._channel.send(message)


def _failed(exc: Exception) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future
