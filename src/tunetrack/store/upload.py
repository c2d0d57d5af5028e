"""A writing process of a run in object storage: records go to a local spool as they would to a
folder, and an uploader thread sends what was flushed, every ``upload_interval`` seconds and at the
end, as sealed chunk objects, and the same of its console file (written by its console recorder). The writer
thread never waits for the network.

A store that is down, slow or throttling costs nothing but lag: a failed upload is retried with
backoff (warned about once), the data waits in the spool, and the lag is counted in the process's end
record (``upload``). The spool is bounded only by the local disk, like a folder store; what is still
unsent when ``finish()`` gives up waiting (``settings.upload_timeout()``) stays there, and
``tunetrack sync`` sends it later. A process that finished uploading removes its spool files.

Chunks are named by the byte range they hold and are written only if absent, so this thread and a
``tunetrack sync`` of the same spool never duplicate or interleave data. Every ``MERGE`` chunks are
merged into one, so a long run stays a few objects per process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import settings
from .._warnings import warn_once
from . import layout
from .blobs import Blobs, StoreUnavailable
from .chunks import chunk_name, cover, parse_chunk
from .ends import EndRecord
from .index import announce, entry_key, index_entry
from .index_entries import dumps
from .layout import BEAT_SUFFIX
from .process_files import ProcessFiles
from .process_meta import ProcessMeta
from .spool import spool_for


class Bucket(Protocol):
    """What an uploading process needs of the store in a bucket (``remote.ObjectStore``): its client and
    the writes that are not chunks."""

    url: str
    blobs: Blobs
    upload_interval: float

    def run_dir(self, run_id: str) -> str: ...

    def put_run_json(self, run_id: str, body: dict[str, Any]) -> bool: ...

    def put_edit(self, run_id: str, name: str, body: dict[str, Any]) -> None: ...


#: chunks merged into one when this many of the same size have piled up
MERGE = 64


@dataclass
class Sent:
    """An append-only file of the process that goes to the store as chunks (its records, or its
    console), and how much of it has gone."""

    path: Path
    suffix: str
    uploaded: int = 0  # bytes of the file that are in the store
    chunks: list[tuple[int, int]] = field(default_factory=list)  # what this process has in the store


class UploadingProcess:
    """A ``ProcessWriter``: the local spool's files, and the thread that uploads them."""

    def __init__(self, store: Bucket, run_id: str, proc: str, meta: ProcessMeta) -> None:
        self.store, self.run_id, self.proc = store, run_id, proc
        self.meta: ProcessMeta = {**meta, "upload_interval": store.upload_interval}
        self.spool = spool_for(store.url)
        self.files: ProcessFiles = self.spool.open_process(run_id, proc, self.meta)
        self.console_path = self.files.console_path
        self.run_dir = store.run_dir(run_id)
        self.sealed = 0  # bytes of whole records in the spool file (the writer flushed them)
        self.last: dict[str, Any] | None = None
        self.end: EndRecord | None = None
        self.media: list[str] = []
        #: edits of the run made by this process, in the spool until the uploader has sent them
        self.edits: list[tuple[str, dict[str, Any]]] = []
        self.edits_direct = False  # the uploader sent its last edit: later ones go to the store at once
        self.lock = threading.Lock()
        self.uploader = Uploader(self)
        self.uploader.start()

    # -- the writer thread's calls -----------------------------------------------------------------
    def append(self, payload: bytes) -> None:
        self.files.append(payload)

    def flush(self, fsync: bool = False) -> None:
        self.files.flush(fsync)
        self.sealed = self.files.size()

    def heartbeat(self) -> None:
        self.files.heartbeat()

    def put_file(self, rel: str, data: bytes) -> None:
        self.files.put_file(rel, data)
        self.media.append(rel)

    def edit(self, name: str, body: dict[str, Any]) -> None:
        """Kept in the spool and sent by the uploader (the writer thread never waits for the network);
        after the uploader's last pass (an edit after ``finish()``), put into the store here."""
        with self.lock:
            direct = self.edits_direct
            if not direct:
                self.files.edit(name, body)
                self.edits.append((name, body))
        if direct:
            self.store.put_edit(self.run_id, name, body)

    def summarize(self, last_step: int | None, last_values: dict[str, Any]) -> None:
        self.last = {"step": last_step, "values": last_values}

    def close(self, end: EndRecord) -> None:
        self.files.close(end)
        self.sealed = self.files.size()
        self.end = {**end, "time": end.get("time", time.time())}
        self.uploader.finish(settings.upload_timeout())


class Uploader(threading.Thread):
    def __init__(self, process: UploadingProcess) -> None:
        super().__init__(name=f"tunetrack-upload-{process.run_id}", daemon=True)
        self.p = process
        self.blobs = process.store.blobs
        self.prefix = f"{process.run_id}/{process.proc}"
        self.interval = process.store.upload_interval
        self.wake = threading.Event()
        self.closing = False
        self.done = threading.Event()
        self.data = Sent(process.files.data_path, layout.DATA_SUFFIX)
        #: written by the console recorder, another process, in whole records (one write each)
        self.console = Sent(process.console_path, layout.CONSOLE_SUFFIX)
        self.sent_media = 0
        self.sent_edits = 0
        self.run_created = False
        self.meta_sent = False
        self.announced = False
        self.failures = 0
        self.lag_since: float | None = None  # when the oldest unsent flush was not sent
        self.max_lag = 0.0

    def finish(self, timeout: float) -> None:
        """Upload what is left and the end record; give up after ``timeout`` seconds (it stays in the
        spool, and ``tunetrack sync`` sends it)."""
        self.closing = True
        self.wake.set()
        if not self.done.wait(timeout):
            warn_once(
                f"upload-left:{self.p.run_id}:{self.p.proc}",
                f"run {self.p.run_id}: {self.p.sealed - self.data.uploaded:,} bytes could not be uploaded to "
                f"{self.p.store.url} before finish() gave up; they wait in {self.p.files.run_dir}: "
                f"tunetrack sync --to {self.p.store.url} sends them",
            )

    def run(self) -> None:
        wait = 0.0
        while True:
            self.wake.wait(wait)
            self.wake.clear()
            closing = self.closing
            try:
                self.upload(final=closing)
            except StoreUnavailable as exc:
                self._failed(exc)
                wait = min(max(wait * 2, 1.0), self.interval)
                continue
            self._caught_up()
            if closing:
                self._clean_spool()
                self.done.set()
                return
            wait = self.interval

    def _failed(self, exc: OSError) -> None:
        self.failures += 1
        if self.lag_since is None:
            self.lag_since = time.time()
        warn_once(
            f"upload:{self.p.run_id}:{self.p.proc}",
            f"cannot upload run {self.p.run_id} to {self.p.store.url} ({exc}); training goes on, the data "
            "waits in the local spool and is sent when the store answers again",
        )

    def _caught_up(self) -> None:
        if self.lag_since is not None:
            self.max_lag = max(self.max_lag, time.time() - self.lag_since)
            self.lag_since = None

    def stats(self) -> dict[str, Any]:
        lag = self.max_lag if self.lag_since is None else max(self.max_lag, time.time() - self.lag_since)
        return {
            "failed_attempts": self.failures,
            "max_lag_s": round(lag, 3),
            "unsent_bytes": self.p.sealed - self.data.uploaded,
        }

    # -- one pass ----------------------------------------------------------------------------------
    def upload(self, final: bool = False) -> None:
        p = self.p
        if not self.run_created:
            run_json = p.spool.run(p.run_id)
            body = run_json.run_json() if run_json is not None else None
            if body is not None:
                p.store.put_run_json(p.run_id, body)  # absent only if the store was down at start
            self.run_created = True
        if not self.meta_sent:
            self.blobs.put(f"{self.prefix}{layout.PROC_SUFFIX}", dumps(p.meta))
            self.meta_sent = True
        sealed = p.sealed
        if sealed > self.data.uploaded:
            self._send_chunk(self.data, sealed)
        with contextlib.suppress(FileNotFoundError):  # none while nothing was printed, or not recorded
            printed = self.console.path.stat().st_size
            if printed > self.console.uploaded:
                self._send_chunk(self.console, printed)
        while self.sent_media < len(p.media):
            rel = p.media[self.sent_media]
            data = (p.files.run_dir / rel).read_bytes()
            self.blobs.put(f"{p.run_id}/{rel}", data)
            self.sent_media += 1
        self._merge(self.data)
        self._merge(self.console)
        now = time.time()
        self.blobs.put(f"{self.prefix}{BEAT_SUFFIX}", dumps({"time": now, "bytes": self.data.uploaded}))
        end = None
        if final and p.end is not None:
            end = {**p.end, "upload": self.stats()}
            self.blobs.put(f"{self.prefix}{layout.END_SUFFIX}", dumps(end))
        run = (p.spool.run(p.run_id) or _Nothing()).run_json() or {}
        entry = index_entry(run, p.proc, p.meta, p.last, end, now, self.stats())
        key = entry_key(p.run_id, p.proc, float(p.meta.get("start") or now))
        self.blobs.put(key, dumps(entry))
        if not self.announced:  # readers learn of the new process from the index's log
            announce(self.blobs, key)
            self.announced = True
        self._send_edits(final)

    def _send_edits(self, final: bool) -> None:
        """The edits made since the last pass (after the process's entry: a listing finds the run they
        belong to). The final pass hands later edits over to ``UploadingProcess.edit``."""
        p = self.p
        while True:
            with p.lock:
                if self.sent_edits == len(p.edits):
                    if final:
                        p.edits_direct = True
                    return
                name, body = p.edits[self.sent_edits]
            p.store.put_edit(p.run_id, name, body)
            self.sent_edits += 1

    def _send_chunk(self, sent: Sent, end: int) -> None:
        start = sent.uploaded
        with open(sent.path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        end = start + len(data)
        if not self.blobs.put(f"{self.prefix}/{chunk_name(start, end, sent.suffix)}", data, create=True):
            # already there (a `tunetrack sync` of this spool): take the store's word for what it has
            listed = [
                c
                for b in self.blobs.list_blobs(f"{self.prefix}/")
                if (c := parse_chunk(b.key.rsplit("/", 1)[-1], sent.suffix))
            ]
            sent.chunks = cover(listed)
            sent.uploaded = sent.chunks[-1][1] if sent.chunks else 0
            return
        sent.chunks.append((start, end))
        sent.uploaded = end

    def _merge(self, sent: Sent) -> None:
        """When ``MERGE`` chunks of about the same size follow each other, upload them as one and
        delete them: a run of a day stays a few objects per process (each byte is re-sent only
        once per level)."""
        while len(sent.chunks) >= MERGE:
            tail = sent.chunks[-MERGE:]
            sizes = [e - s for s, e in tail]
            if max(sizes) > 8 * max(min(sizes), 1) and len(sent.chunks) < 2 * MERGE:
                return
            start, end = tail[0][0], tail[-1][1]
            with open(sent.path, "rb") as f:
                f.seek(start)
                data = f.read(end - start)
            self.blobs.put(f"{self.prefix}/{chunk_name(start, end, sent.suffix)}", data, create=True)
            sent.chunks[-MERGE:] = [(start, end)]
            for s, e in tail:
                self.blobs.delete(f"{self.prefix}/{chunk_name(s, e, sent.suffix)}")

    def _clean_spool(self) -> None:
        """Everything is in the store: the spool copy of this process goes (and the run's folder with
        its last process)."""
        files = self.p.files
        try:
            for path in (files.data_path, files.console_path, files.proc_path, files.end_path):
                path.unlink(missing_ok=True)
            for rel in self.p.media:
                (files.run_dir / rel).unlink(missing_ok=True)
            for name, _ in self.p.edits:
                (files.run_dir / f"{name}{layout.EDIT_SUFFIX}").unlink(missing_ok=True)
            others = [e for e in os.listdir(files.run_dir) if e != layout.RUN_JSON and e != layout.MEDIA_DIR]
            if not others:
                shutil.rmtree(files.run_dir, ignore_errors=True)
        except OSError:
            pass


class _Nothing:
    def run_json(self) -> None:
        return None
