"""Copying runs from one store to another: a folder to a bucket (``tunetrack sync --to s3://...``),
a bucket to a folder, or a dead process's spool to the bucket it was uploading to.

Incremental and idempotent: for each process the destination's records are a byte prefix of the
source's, so a sync sends only the whole records after that prefix (a run still being written is
copied up to its last whole record; the next sync sends the rest), and what it sends is written only
where absent. A run's edits (``tunetrack.edits``) go by name: those the destination lacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RunNotFound
from ..reader import Run
from ..reader.find import open_run, store_at
from ..store import RunFolder, Store, StoreUnavailable, is_url, layout, process_meta
from ..store.framing import ScanReport, scan
from ..store.local import ProcessCopy
from ..store.process_meta import ProcessMeta
from ..store.spool import spool_root


@dataclass
class SyncReport:
    runs: int = 0  # runs that had something to send
    processes: int = 0
    bytes: int = 0
    files: int = 0  # media files
    edits: int = 0  # edits of runs (a new name, tags, a note)
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if not (self.runs or self.errors):
            return "nothing new to send"
        parts = [f"{self.bytes:,} bytes of records and {self.files} files of {self.processes} processes"]
        parts = (parts if self.processes else []) + ([f"{self.edits} edits"] if self.edits else [])
        text = f"sent {' and '.join(parts)} in {self.runs} runs"
        return text + (f"; {len(self.errors)} runs failed: {'; '.join(self.errors)}" if self.errors else "")


def spool_of(url: str) -> Path | None:
    """The local spool of runs written to the object store at ``url``, if this machine has one."""
    if not is_url(url) or url.startswith("file://"):
        return None
    root = spool_root(url)
    return root if root.is_dir() and any(p.is_dir() for p in root.iterdir()) else None


def sync(
    source: str | os.PathLike[str] | None,
    destination: str | os.PathLike[str],
    refs: Sequence[str] = (),
    on_run: Callable[[str], None] | None = None,
    lenient: bool = False,
) -> SyncReport:
    """Copy the runs ``refs`` (ids, prefixes or names; every run if empty) of the store at ``source``
    to the store at ``destination``. ``on_run`` is called once per run looked at (a progress bar);
    ``lenient`` skips a ref this store does not have (one of several sources)."""
    src, dst = store_at(source), store_at(destination)
    report = SyncReport()
    run_ids = [i for i, _ in src.entries()] if not refs else []
    for ref in refs:
        try:
            run_ids.append(open_run(ref, dir=source).id)
        except RunNotFound:
            if not lenient:
                raise

    for run_id in run_ids:
        try:
            _copy_run(src, dst, run_id, report)
        except (StoreUnavailable, OSError) as exc:
            report.errors.append(f"{run_id}: {exc}")
        if on_run is not None:
            on_run(run_id)
    return report


def count_runs(source: str | os.PathLike[str] | None, refs: Sequence[str] = ()) -> int:
    return len(refs) if refs else len(store_at(source).entries())


def _whole_records(data: bytes) -> int:
    """How many leading bytes of ``data`` are whole records (a live writer may be mid-record)."""
    report = ScanReport()
    for _ in scan(data, report):
        pass
    return report.consumed


def _unsent(source: RunFolder, target: RunFolder | None, proc: str, suffix: str) -> tuple[int, bytes]:
    """(bytes the target holds, the whole records after them) of ``proc``'s ``suffix`` file."""
    have = target.data_size(proc, suffix) if target is not None else 0
    data = source.read_data(proc, have, suffix) if source.data_size(proc, suffix) > have else b""
    return have, data[: _whole_records(data)]


def _copy_run(src: Store, dst: Store, run_id: str, report: SyncReport) -> None:
    source = src.run(run_id)
    if source is None:
        return
    run_json = source.run_json() or {"id": run_id}
    target = dst.run(run_id)
    held = set(target.processes()) if target is not None else set()
    media = [rel for rel in source.media() if target is None or rel not in set(target.media())]
    reading = Run(source, run_json)
    sent_any = False
    for proc in source.processes():
        have, data = _unsent(source, target, proc, layout.DATA_SUFFIX)
        console_have, console = _unsent(source, target, proc, layout.CONSOLE_SUFFIX)
        end = source.process_end(proc)
        if end is not None and target is not None and target.process_end(proc) == end:
            end = None
        copy = ProcessCopy(
            run={k: v for k, v in run_json.items() if k != "writer"},
            meta=source.process_meta(proc) if proc not in held else None,
            start=have,
            data=data,
            end=end,
            media={rel: blob for rel in media if (blob := source.read_media(rel)) is not None},
            beat=source.heartbeat(proc),
            console_start=console_have,
            console=console,
        )
        media = []  # sent with the first process
        if copy.meta is None and not copy.data and not copy.console and copy.end is None and not copy.media:
            continue
        primary = process_meta.global_rank(source.process_meta(proc) or ProcessMeta()) == 0
        end = source.process_end(proc)
        copy.last = dict(end["last"]) if end and "last" in end else (reading.latest() if primary else None)
        dst.receive(run_id, proc, copy)
        sent_any = True
        report.processes += 1
        report.bytes += len(copy.data) + len(copy.console)
        report.files += len(copy.media)
    if target is not None or sent_any:  # the destination has the run: its edits can go there
        held_edits = {name for name, _ in target.edits()} if target is not None else set()
        for name, body in source.edits():
            if name not in held_edits:
                dst.put_edit(run_id, name, body)
                report.edits += 1
                sent_any = True
    report.runs += sent_any


def sources_for(destination: str, source: str | os.PathLike[str] | None) -> list[str | Path]:
    """Where ``tunetrack sync --to URL`` looks without ``--dir``: the default local store, and this
    machine's spool for ``URL`` (what a process could not upload before it died)."""
    from .. import settings

    if source is not None:
        return [settings.store_dir(source)]
    found: list[str | Path] = []
    local = settings.store_dir(None)
    if not is_url(local) and Path(local).is_dir():
        found.append(local)
    spool = spool_of(destination)
    if spool is not None:
        found.append(spool)
    return found


__all__ = ["SyncReport", "count_runs", "sources_for", "spool_of", "sync"]
