"""The run store in object storage (S3 and S3-compatible stores, GCS, Azure, any fsspec filesystem).

Object stores have no append, so a writing process keeps its records in a local spool (a local
store, ``upload.py``) and uploads what it flushed as sealed, immutable chunk objects; the framing
makes each chunk self-delimiting. Keys, relative to the store's URL::

    <run id>/run.json                                  created once (put-if-absent)
    <run id>/<proc>.json, <proc>.end.json              as in a folder
    <run id>/<proc>/<start>-<end>.ttr                  bytes [start, end) of <proc>'s records
    <run id>/<proc>/<start>-<end>.console              bytes [start, end) of <proc>'s console
    <run id>/<proc>.beat                               rewritten at every upload: the heartbeat
    <run id>/<edit>.edit                               one edit of the run (created once, as in a folder)
    <run id>/media/...                                 images
    <run id>/metrics.parquet, system.parquet, ...      the run's Parquet copy (replaced whole)
    .index/<start ms>-<run id>-<proc>.json             what listings read (rewritten at every upload)
    .index/e-<run id>-<edit>.json                      an edit, for listings (written once)
    .index-compact/<time>.msgpack.z                    every entry in one object, and its log position
    .index-compact-newest.json                         the name of the newest one
    .jobs/<digest>.json                                a distributed job's run id

Readers read a process's chunks in order (a longer chunk that covers shorter ones replaces them),
keep them in a local cache (they never change), and list a store from its index (``index.py``;
``index_rebuild.py`` makes it again). Deleting a run deletes its index entries first (announced, so
warm listings drop it), then its objects, this machine's spool copy and cached downloads of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .. import settings
from . import ends, index_rebuild, layout
from .blobs import Blob, Blobs, StoreUnavailable, open_blobs
from .cache import ObjectCache
from .chunks import chunk_name, cover, parse_chunk
from .ends import EndRecord
from .index import INDEX, Listing, announce, edit_entry, edit_key, entry_key, index_entry, run_of
from .index_entries import Entry, created_of, dumps, loads
from .local import LocalStore
from .process_meta import ProcessMeta
from .process_meta import read as read_meta
from .spool import spool_for, spool_root
from .upload import UploadingProcess

#: how long ``start()`` waits for the store (creating the run, publishing a job): a store that is down
#: or slow must not hold training up; the uploader does the rest once the store answers
START_WAIT = 3.0


def _within(seconds: float, fn: Any, default: Any) -> Any:
    """``fn()``, or ``default`` if it takes longer than ``seconds`` or cannot reach the store (it may
    still finish in the background)."""
    box: list[Any] = []

    def call() -> None:
        with contextlib.suppress(StoreUnavailable):
            box.append(fn())

    thread = threading.Thread(target=call, name="tunetrack-store-start", daemon=True)
    thread.start()
    thread.join(seconds)
    return box[0] if box else default


class ObjectStore:
    """A run store at an object-store URL (``s3://bucket/prefix``)."""

    def __init__(self, url: str, blobs: Blobs | None = None, upload_interval: float | None = None) -> None:
        self.url = url.rstrip("/")
        self.blobs = blobs if blobs is not None else open_blobs(self.url)
        self.cache = ObjectCache(self.url)
        self.upload_interval = settings.upload_interval(upload_interval)
        self.listing = Listing(self.blobs, self.cache)
        self._index: dict[str, list[Entry]] = {}  # run id -> its processes' index entries, as last listed
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return self.url

    def run_dir(self, run_id: str) -> str:
        return f"{self.url}/{run_id}"

    # -- writing ---------------------------------------------------------------------------------
    def create_run(self, run_id: str, data: dict[str, Any]) -> bool:
        """Create ``run.json`` once. A store that cannot be reached now is taken to have no such run
        (new ids are random): the process's uploader creates it later, once, the same way."""
        body = {**data, "writer": uuid.uuid4().hex}
        if not spool_for(self.url).create_run(run_id, body):  # the spool's copy, for `tunetrack sync`
            return False  # resumed on this machine
        return bool(_within(START_WAIT, lambda: self.put_run_json(run_id, body), True))

    def put_run_json(self, run_id: str, body: dict[str, Any]) -> bool:
        """Put-if-absent, made safe against a lost answer: the body carries a writer token, and an
        error is followed by reading the object back to see whose it is."""
        key = f"{run_id}/{layout.RUN_JSON}"
        try:
            return self.blobs.put(key, dumps(body), create=True)
        except StoreUnavailable:
            existing = loads(self.blobs.get(key))
            if existing is None:
                raise
            return existing.get("writer") == body.get("writer")

    def open_process(self, run_id: str, proc: str, meta: ProcessMeta) -> UploadingProcess:
        spool = spool_for(self.url)
        if spool.run(run_id) is None:  # another node's process, or a resume on another machine
            body = _within(START_WAIT, lambda: loads(self.blobs.get(f"{run_id}/{layout.RUN_JSON}")), None)
            spool.create_run(run_id, body or {"id": run_id})
        return UploadingProcess(self, run_id, proc, meta)

    def receive(self, run_id: str, proc: str, copy: Any) -> None:
        """Take in part of a process copied from another store (``tunetrack sync``, a dead process's
        spool): chunks are put only if absent, so a copy racing the process's own uploader, or a
        second sync, never duplicates anything."""
        prefix = f"{run_id}/{proc}"
        self.put_run_json(run_id, {**copy.run, "writer": uuid.uuid4().hex})
        if copy.meta is not None:
            self.blobs.put(f"{prefix}{layout.PROC_SUFFIX}", dumps(copy.meta))
        for suffix, start, data in (
            (layout.DATA_SUFFIX, copy.start, copy.data),
            (layout.CONSOLE_SUFFIX, copy.console_start, copy.console),
        ):
            if data:
                self.blobs.put(f"{prefix}/{chunk_name(start, start + len(data), suffix)}", data, create=True)
        for rel, data in copy.media.items():
            self.blobs.put(f"{run_id}/{rel}", data)
        beat = copy.beat if copy.beat is not None else time.time()
        self.blobs.put(
            f"{prefix}{layout.BEAT_SUFFIX}", dumps({"time": beat, "bytes": copy.start + len(copy.data)})
        )
        if copy.end is not None:
            self.blobs.put(f"{prefix}{layout.END_SUFFIX}", dumps(copy.end))
        meta = copy.meta or ProcessMeta()
        entry = index_entry(copy.run, proc, meta, copy.last, copy.end, beat)
        start = float(meta.get("start") or beat)
        key = entry_key(run_id, proc, start)
        self.blobs.put(key, dumps(entry))
        announce(self.blobs, key)

    def put_edit(self, run_id: str, name: str, body: dict[str, Any]) -> None:
        """The edit's object (created only if absent: the same edit put twice is one), then its index
        entry, announced so that warm listings pick it up with their next look."""
        self.blobs.put(f"{run_id}/{name}{layout.EDIT_SUFFIX}", dumps(body), create=True)
        key = edit_key(run_id, name)
        self.blobs.put(key, dumps(edit_entry(run_id, name, body)))
        announce(self.blobs, key)

    def stop_request(self, run_id: str) -> dict[str, Any] | None:
        """The run's stop edit object (``layout.STOP_EDIT``): one GET, a 404 while there is none."""
        return loads(self.blobs.get(f"{run_id}/{layout.STOP_EDIT}{layout.EDIT_SUFFIX}"))

    def put_audit(self, name: str, body: dict[str, Any]) -> None:
        """An audit record: an object of ``.audit/``, created only if absent."""
        self.blobs.put(f"{layout.AUDIT_DIR}/{name}.json", dumps(body), create=True)

    def audit(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for blob in self.blobs.list_blobs(f"{layout.AUDIT_DIR}/"):
            body = loads(self.blobs.get(blob.key))
            if isinstance(body, dict):
                out.append((blob.key.rpartition("/")[2].removesuffix(".json"), body))
        return out

    def put_parquet(self, run_id: str, table: str, data: bytes) -> None:
        """The run's Parquet copy of ``table``, one object (a put replaces it whole)."""
        self.blobs.put(f"{run_id}/{layout.parquet_name(table)}", data)

    def delete_run(self, run_id: str) -> None:
        """Every object of the run and its index entries. The entries go first and are announced, so
        listings (here and on other machines) stop showing the run before its objects go; run.json
        goes before the rest, so the run is not found by id while its data is being removed."""
        entries = [b.key for b in self.blobs.list_blobs(f"{INDEX}/") if run_of(b.key) == run_id]
        objects = sorted(
            (b.key for b in self.blobs.list_blobs(f"{run_id}/")),
            key=lambda k: k != f"{run_id}/{layout.RUN_JSON}",
        )
        for key in entries:
            self.blobs.delete(key)
        for key in entries:
            announce(self.blobs, key)
        for key in objects:
            self.blobs.delete(key)
        with self._lock:
            self._index.pop(run_id, None)
        spool = spool_root(self.url)
        if (spool / run_id).is_dir():  # else `tunetrack sync` would send it back
            LocalStore(spool, indexed=False).delete_run(run_id)
        self.cache.forget(run_id)

    def _job_key(self, job_key: str) -> str:
        return f"{layout.JOBS_DIR}/{hashlib.sha1(job_key.encode()).hexdigest()[:20]}.json"

    def publish_job(self, job_key: str, run_id: str) -> None:
        body = {"run_id": run_id, "created": time.time(), "job": job_key}
        _within(START_WAIT, lambda: self.blobs.put(self._job_key(job_key), dumps(body)), None)

    def wait_for_job(
        self, job_key: str, not_before: float, timeout: float, stop: threading.Event
    ) -> str | None:
        from .jobs import TOLERANCE

        deadline, wait = time.monotonic() + timeout, 0.5
        while time.monotonic() < deadline:
            try:
                data = loads(self.blobs.get(self._job_key(job_key)))
            except StoreUnavailable:
                data = None
            if data and float(data.get("created", 0)) >= not_before - TOLERANCE and data.get("run_id"):
                return str(data["run_id"])
            if stop.wait(wait):
                return None
            wait = min(wait * 1.5, 5.0)
        return None

    # -- reading ---------------------------------------------------------------------------------
    def run(self, run_id: str, stamp: Any = None) -> RemoteRun | None:
        if not run_id or "/" in run_id or run_id.startswith("."):
            return None
        listed = self._index.get(run_id)
        if listed:
            return RemoteRun(self, run_id, listed)
        run_json = loads(self.blobs.get(f"{run_id}/{layout.RUN_JSON}"))
        return RemoteRun(self, run_id, None, run_json) if run_json is not None else None

    def keep_listed(self, kept: dict[str, dict[str, Any]], present: set[str]) -> None:
        """The bucket's index already lists runs without reading them (``index``)."""

    def read_kept(self, name: str) -> Any:
        """Nothing is kept beside a bucket's runs: its index is what listings read."""
        return None

    def keep(self, name: str, data: Any) -> None:
        """Nothing is kept beside a bucket's runs (``read_kept``)."""

    def reindex(self) -> int:
        """Rebuild the index from the runs' objects (``tunetrack reindex``); the runs indexed."""
        return index_rebuild.rebuild(self.blobs)

    def created_times(self) -> dict[str, float]:
        """When each run the last listing found was created, from its index entries."""
        with self._lock:
            found = {run_id: created_of(entries) for run_id, entries in self._index.items()}
        return {run_id: created for run_id, created in found.items() if created is not None}

    def entries(self) -> list[tuple[str, Any]]:
        """Every run with an index entry (``index.Listing``: a short LIST and a GET per live process
        once this machine has looked before); a stamp changes when any of the run's entries does."""
        index = self.listing.runs()
        if not index:  # lost, or an empty store: one more LIST
            index_rebuild.warn_if_lost(self.blobs)
        with self._lock:
            self._index = index
        return [
            (run_id, tuple(sorted((e.key, e.etag) for e in entries))) for run_id, entries in index.items()
        ]


class RemoteRun:
    """A run in an object store, read-only: its objects listed once (``signature()`` lists again),
    chunks and metadata downloaded once into the local cache."""

    def __init__(
        self,
        store: ObjectStore,
        run_id: str,
        index: list[Entry] | None = None,
        run_json: dict[str, Any] | None = None,
    ) -> None:
        self.store, self.run_id = store, run_id
        self.path = store.run_dir(run_id)
        self._index = index  # its processes' and edits' index entries, when found by listing the store
        self._run_json = run_json
        self._files: dict[str, Blob] | None = None

    def __str__(self) -> str:
        return self.path

    def _listing(self) -> dict[str, Blob]:
        if self._files is None:
            prefix = f"{self.run_id}/"
            self._files = {b.key[len(prefix) :]: b for b in self.store.blobs.list_blobs(prefix)}
        return self._files

    def refresh(self) -> None:
        self._files = None
        self._index = None  # looked at afresh: state and values from the run's own objects

    def signature(self) -> tuple[Any, ...]:
        self.refresh()
        try:
            return tuple(sorted((k, b.size, b.etag) for k, b in self._listing().items()))
        except StoreUnavailable:
            return ()

    def _get(self, rel: str, immutable: bool = False) -> bytes | None:
        key = f"{self.run_id}/{rel}"
        blob = self._listing().get(rel)
        if blob is None:
            return None
        tag = None if immutable else (blob.etag or str(blob.mtime))
        data = self.store.cache.get(key, tag)
        if data is None:
            data = self.store.blobs.get(key)
            if data is not None:
                self.store.cache.put(key, data, tag)
        return data

    def _processes_listed(self) -> list[Entry]:
        return [e for e in self._index or [] if e.edit is None]

    def run_json(self) -> dict[str, Any] | None:
        if self._run_json is None:
            listed = self._processes_listed()
            if listed:
                self._run_json = dict(listed[0].body.get("run") or {})
            else:
                self._run_json = loads(self.store.blobs.get(f"{self.run_id}/{layout.RUN_JSON}"))
        return self._run_json

    def where(self, proc: str) -> str:
        return f"{self.path}/{proc}/"

    def processes(self) -> list[str]:
        names = (layout.proc_of(rel) for rel in self._listing() if "/" not in rel)
        return sorted(name for name in names if name is not None)

    def process_meta(self, proc: str) -> ProcessMeta | None:
        return read_meta(loads(self._get(f"{proc}{layout.PROC_SUFFIX}")))

    def process_end(self, proc: str) -> EndRecord | None:
        return ends.read(loads(self._get(f"{proc}{layout.END_SUFFIX}")))

    def _chunks(self, proc: str, suffix: str) -> list[tuple[int, int]]:
        prefix = f"{proc}/"
        listed = [
            parse_chunk(rel[len(prefix) :], suffix) for rel in self._listing() if rel.startswith(prefix)
        ]
        cached = {
            c for name in self.store.cache.names(f"{self.run_id}/{proc}") if (c := parse_chunk(name, suffix))
        }
        return cover([c for c in listed if c is not None], cached)

    def data_size(self, proc: str, suffix: str = layout.DATA_SUFFIX) -> int:
        chunks = self._chunks(proc, suffix)
        return chunks[-1][1] if chunks else 0

    def read_data(self, proc: str, offset: int = 0, suffix: str = layout.DATA_SUFFIX) -> bytes:
        parts = []
        for start, end in self._chunks(proc, suffix):
            if end <= offset:
                continue
            key = f"{self.run_id}/{proc}/{chunk_name(start, end, suffix)}"
            data = self.store.cache.get(key)
            if data is None:
                data = self.store.blobs.get(key)
                if data is None:  # replaced by a longer chunk meanwhile: the next look lists again
                    break
                self.store.cache.put(key, data)
            parts.append(data[max(offset - start, 0) :])
        return b"".join(parts)

    def heartbeat(self, proc: str) -> float | None:
        """The time its last upload wrote into its beat object (a process copied later by ``tunetrack
        sync`` keeps the time it was last alive), else when its metadata was written."""
        beat = loads(self._get(f"{proc}{layout.BEAT_SUFFIX}"))
        if beat is not None and isinstance(beat.get("time"), (int, float)):
            return float(beat["time"])
        blob = self._listing().get(f"{proc}{layout.PROC_SUFFIX}")
        return blob.mtime if blob is not None else None

    def indexed(self) -> bool:
        return bool(self._processes_listed())  # found by listing the store, its objects unread

    def summary(self) -> dict[str, Any] | None:
        """The run as its index entries describe it (written at every upload), when it was found by
        listing the store; None once the run's own objects are read (``signature()``)."""
        listed = self._processes_listed()
        if not listed:
            return None
        processes = [
            {
                "name": e.body.get("proc"),
                "meta": e.body.get("meta") or {},
                "end": e.body.get("end"),
                "beat": min(e.mtime, float(e.body.get("beat") or e.mtime)),
                "last": e.body.get("last"),
            }
            for e in listed
        ]
        return {"processes": processes}

    def edits(self) -> list[tuple[str, dict[str, Any]]]:
        """From the index entries when the run was found by listing the store (no object of the run
        read), else from the run's own edit objects (each downloaded once: they never change)."""
        if self._index:
            return [edit for e in self._index if (edit := e.edit) is not None]
        out = []
        for rel in self._listing():
            name = layout.edit_of(rel) if "/" not in rel else None
            body = loads(self._get(rel, immutable=True)) if name is not None else None
            if name is not None and body is not None:
                out.append((name, body))
        return out

    def media(self) -> list[str]:
        return sorted(rel for rel in self._listing() if rel.startswith(f"{layout.MEDIA_DIR}/"))

    def read_media(self, rel: str) -> bytes | None:
        parts = rel.split("/")
        if not rel.startswith(f"{layout.MEDIA_DIR}/") or any(p in ("", ".", "..") for p in parts):
            return None
        try:
            return self._get(rel, immutable=True)
        except StoreUnavailable:
            return None

    def parquet_file(self, table: str) -> Path | None:
        """The run's Parquet copy of ``table``, downloaded into the cache once per version (its ETag):
        engines read a local file. None if there is none, or it cannot be kept locally."""
        rel = layout.parquet_name(table)
        try:
            blob = self._listing().get(rel)
            if blob is None:
                return None
            key, tag = f"{self.run_id}/{rel}", blob.etag or f"{blob.size}-{blob.mtime}"
            if self.store.cache.file(key, tag) is None:
                data = self.store.blobs.get(key)
                if data is None:
                    return None
                self.store.cache.put(key, data, tag)
            return self.store.cache.file(key, tag)
        except StoreUnavailable:
            return None
