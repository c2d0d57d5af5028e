"""Opening a run for a writing process: creating it, re-attaching to it (a resume), or joining the run
a distributed job's global rank 0 published (another node's first rank). What comes out is the run as
the store has it and this process's open files; the writer's loop starts from there.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from ..edits import fold
from ..store import codec, forks, layout, open_store
from ..store.base import ProcessWriter, Store
from ..store.evaluations import CheckpointRef
from ..store.forks import ForkRef
from ..store.process_meta import ProcessMeta

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
    #: the run this one is a fork of, and where it branched (``resolve_fork``): stored in ``run.json``
    #: when the run is created; a resumed fork keeps the reference it was created with
    fork: ForkRef | None = None


@dataclass
class OpenedRun:
    """The run as the store has it: an existing run keeps its name and project."""

    id: str
    name: str
    project: str | None
    dir: Path | str | None  # the run's folder (or URL); None without a store
    resumed: bool
    #: the record format this process writes (``codec.FORMAT_VERSION``): a run re-attached to keeps
    #: the version it was created with where that is older, so that what reads it reads all of it
    format: int = codec.FORMAT_VERSION


@dataclass
class Opened:
    """What opening gave the writer: the run, and this process's files in its store (both None
    without a store, or where the store could not be written: the rows are then counted as lost)."""

    run: OpenedRun
    store: Store | None = None
    files: ProcessWriter | None = None


def open_run(dir: str | os.PathLike[str] | None, request: RunRequest, strict: bool) -> Opened:
    """Create the run (or re-attach to ``request.id``) and this process's files.

    Without a dir (``store=False``) only the identity is settled. A store that cannot be written is
    warned about once: the run goes on without it, except in strict mode (which also refuses an
    unusable run id instead of replacing it)."""
    if request.id is not None and not layout.is_run_id(request.id):
        if strict:
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
    opened = Opened(OpenedRun(run_id, name, request.project, None, bool(request.id)))
    if dir is None:
        return opened
    store = open_store(dir, request.upload_interval)
    opened.run.dir = store.run_dir(run_id)
    try:
        _open_files(store, opened, request)
    except OSError as exc:
        if strict:
            raise
        warn_once(
            f"store-open:{run_id}",
            f"cannot write the run store at {opened.run.dir} ({exc.strerror or exc}); training goes on, "
            "logged rows are counted as lost and reported at finish()",
        )
    return opened


def _open_files(store: Store, opened: Opened, request: RunRequest) -> None:
    run = opened.run
    record: dict[str, Any] = {"id": run.id, "name": run.name, "project": run.project, "tags": request.tags}
    if request.fork is not None:
        record[forks.FIELD] = request.fork
    if not store.create_run(run.id, {**record, "created": request.created, "format": codec.FORMAT_VERSION}):
        run.resumed = True
        run.name, run.project, run.format = _existing(store, run.id, run.name, run.project)
    elif request.id is not None:
        run.resumed = False
        if not request.new:
            warn_once(f"resume:{run.id}", f"run {run.id!r} did not exist; started a new run with that id")
    opened.files = _open_process(store, run, request)
    opened.store = store
    if request.job is not None:
        try:
            store.publish_job(request.job, run.id)
        except OSError as exc:  # only the other nodes' system metrics depend on it
            warn_once(f"job:{run.id}", f"could not publish the run for the job's other nodes: {exc!r}")


def _open_process(store: Store, run: OpenedRun, request: RunRequest) -> ProcessWriter:
    meta: ProcessMeta = {
        **request.process,
        "run_id": run.id,
        "start": request.created,
        "resumed": run.resumed,
    }
    return store.open_process(run.id, layout.proc_name(request.created), meta)


@dataclass
class JobJoin:
    """A job's run a writer waits for, then joins (another node's first rank)."""

    store: Store
    job: str
    #: a run published before this process started is an earlier job's
    not_before: float
    request: RunRequest

    def wait(self, stopping: threading.Event) -> Opened | None:
        """Wait for the job's run (up to ``JOIN_TIMEOUT``, or until ``stopping``) and open this
        process's files in it; None if it never came."""
        store, request = self.store, self.request
        run_id = store.wait_for_job(self.job, self.not_before, JOIN_TIMEOUT, stopping)
        if run_id is None:
            return None
        opened = Opened(OpenedRun(run_id, run_id, request.project, store.run_dir(run_id), True))
        try:
            opened.run.name, opened.run.project, opened.run.format = _existing(store, run_id, run_id, None)
            opened.files = _open_process(store, opened.run, request)
            opened.store = store
        except OSError as exc:
            warn_once(f"store-open:{run_id}", f"cannot write the run store at {opened.run.dir}: {exc!r}")
        return opened


def resolve_fork(dir: str | os.PathLike[str], spec: str) -> tuple[ForkRef, dict[str, Any]]:
    """The reference a fork of ``spec`` (``RUN@STEP``) stores and the parent's config, resolved in the store at ``dir`` as every
    reader resolves a run (``manage.forks.resolve``); raises ``errors.InvalidFork``."""
    from ..manage.forks import resolve  # the readers, loaded only by a process that forks

    return resolve(dir, spec)


def resolve_checkpoint(dir: str | os.PathLike[str] | None, spec: Any) -> CheckpointRef:
    """The checkpoint ``spec`` names (``RUN@STEP``, ``RUN``, its location, or a ``Checkpoint`` read
    back) as a ``CheckpointRef`` (``store.evaluations``), resolved as every reader resolves a run; raises
    ``errors.CheckpointNotFound``."""
    from ..manage.evaluations import resolve  # the readers, loaded only by a process that evaluates

    return resolve(dir, spec)


def join_job(dir: str | os.PathLike[str], job: str, not_before: float, request: RunRequest) -> JobJoin:
    """The wait for the run that the job's global rank 0 publishes, in the store at ``dir``."""
    return JobJoin(open_store(dir, request.upload_interval), job, not_before, request)


def _existing(store: Store, run_id: str, name: str, project: str | None) -> tuple[str, str | None, int]:
    """An existing run's name (as its edits left it), project, and the record format to write into it
    (its own version where older than this one's: 1 for a run that records none); ``name``,
    ``project`` and this version if the store no longer shows the run (deleted between creating and
    reading it)."""
    folder = store.run(run_id)
    run_json = (folder.run_json() if folder is not None else None) or {"format": codec.FORMAT_VERSION}
    renamed = fold(run_json, folder.edits() if folder is not None else []).name
    written = run_json.get("format")
    version = written if isinstance(written, int) and not isinstance(written, bool) and written > 0 else 1
    return renamed or name, run_json.get("project", project), min(version, codec.FORMAT_VERSION)
