"""``tunetrack compact``: ended runs' Parquet copies merged into large files, partitioned by project
and month, so that a query over 100,000 runs opens a few files instead of 300,000 (``store.warehouse``
has the layout, ``reader.compacted`` what readers do with it).

One compaction: (1) remove data files that no commit names and that are older than ``ORPHAN_AGE``
(a compactor killed before its commit left them; a younger one may be another compactor's work in
progress); (2) list the runs that are not running and whose data sizes no commit holds yet; (3) copy
each one's current Parquet copies (written first where missing or stale: ``manage.parquet``) into one
data file per table and partition, its rows sorted by run, key and step, in row groups of
``ROW_GROUP``; (4) commit: one object, created only if absent, numbered one past the newest commit.
If another compactor took that number, the runs it covered with the same sizes are dropped from this
commit (their rows in this compactor's files are then not read) and the next number is tried.

It never removes a run's own records or copies: they stay the source of truth, and a run resumed
after it was compacted is read from them until a later compaction covers it again. A second
compaction with nothing new commits nothing; one that finds compacted runs deleted from the store
since records their ids (``deleted``), so that the Iceberg tables drop their rows, and compacts again
the runs that share a file with them, so that the file can be purged.

Then the commits the Iceberg tables lack are applied to them (``manage.iceberg``): by default when
pyiceberg is installed and it can write the store. Last, files no reader reads any more (superseded by
later commits, or holding a deleted run's rows) are removed a while after (``manage.purge``).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import groupby
from typing import TYPE_CHECKING, Any

from ..errors import TunetrackError
from ..reader import Run
from ..reader.compacted import FORMAT, commits, covered
from ..reader.find import all_runs, store_at
from ..reader.parquet import sources, stamped_sources, writer_options
from ..states import State
from ..store import Store, layout
from ..store.warehouse import Warehouse, data_key, warehouse_of
from .iceberg import Published, available, exists, publish, writable
from .parquet import write_copies
from .purge import Purged, deleted_at, purge, rewritten

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

Dir = str | os.PathLike[str] | None

#: how old (seconds) a data file that no commit names must be before it is removed as a dead
#: compactor's: longer than any compaction takes
ORPHAN_AGE = 3600.0
#: runs whose copies are read at once (``_copies``)
READERS = 8
#: rows per row group: a filter on ``run`` or ``key`` skips the others by their statistics
ROW_GROUP = 1 << 17
#: rows per data file, at most (a new file is begun at the next run past it)
FILE_ROWS = 1 << 24
#: each run's rows, in a data file where runs follow one another in id order
SORT = {
    "metrics": ["key", "step", "process", "time"],
    "system": ["key", "time", "node"],
    "params": ["key"],
}


class CompactError(TunetrackError):
    """A compaction that could not commit (its files were removed meanwhile)."""


@dataclass
class Pending:
    """Data files written and not yet committed: what a commit will say."""

    base: int  # the newest commit when the runs were chosen
    runs: dict[str, dict[str, int]] = field(default_factory=dict)  # run -> the sizes its rows are of
    files: list[dict[str, Any]] = field(default_factory=list)
    #: runs an earlier commit covers that the store no longer holds: recorded, so that the Iceberg
    #: tables drop their rows too (a query leaves them out by itself: they are in no listing)
    deleted: list[str] = field(default_factory=list)


@dataclass
class Compaction:
    """What one ``compact`` did."""

    number: int | None  # the commit made; None: nothing new (or another compactor covered it all)
    runs: int = 0
    deleted: int = 0  # runs deleted from the store since they were compacted, recorded as such
    rows: int = 0
    files: int = 0
    bytes: int = 0
    removed: int = 0  # data files of dead compactors removed
    seconds: float = 0.0
    iceberg: Published | None = None  # what was applied to the Iceberg tables; None: not published
    iceberg_skipped: str | None = (
        None  # why not, where pyiceberg is installed (a store pyiceberg cannot write)
    )
    purged: Purged = field(default_factory=Purged)  # superseded files removed (or kept, and why)


def compact(dir: Dir = None, orphan_age: float = ORPHAN_AGE, iceberg: bool | None = None) -> Compaction:
    """Compact the ended runs of the store at ``dir`` that no commit covers yet (see the module), then
    bring the Iceberg tables up to date: with ``iceberg`` None, when pyiceberg is installed and the
    store is a folder; True: always (an ``IcebergError`` if it cannot); False: never."""
    started = time.monotonic()
    store = store_at(dir)
    warehouse = warehouse_of(store)
    removed = clean(warehouse, orphan_age)
    pending = write_files(store, warehouse)
    number = commit(warehouse, pending) if pending.runs or pending.deleted else None
    published, skipped = _publish(store, iceberg)
    tables = exists(store)
    updated = None if published is None and tables else tables  # None: tables this run left as they were
    purged = purge(store, warehouse, commits(warehouse), updated)
    return Compaction(
        number,
        runs=len(pending.runs) if number is not None else 0,
        deleted=len(pending.deleted) if number is not None else 0,
        rows=sum(f["rows"] for f in pending.files) if number is not None else 0,
        files=len(pending.files) if number is not None else 0,
        bytes=sum(f["bytes"] for f in pending.files) if number is not None else 0,
        removed=removed,
        seconds=time.monotonic() - started,
        iceberg=published,
        iceberg_skipped=skipped,
        purged=purged,
    )


def _publish(store: Store, iceberg: bool | None) -> tuple[Published | None, str | None]:
    """The Iceberg step of ``compact``: what it did, or why it was skipped where pyiceberg is there
    (where it is not, the tables were not asked for: nothing to say)."""
    if iceberg is False or (iceberg is None and not available()):
        return None, None
    if iceberg is None and (why := writable(store)) is not None:
        return None, why
    return publish(store), None


def clean(warehouse: Warehouse, orphan_age: float = ORPHAN_AGE) -> int:
    """Remove the data files no commit names that are older than ``orphan_age`` seconds; return how
    many. The files are listed before the commits are read, so a file committed meanwhile is kept."""
    files = warehouse.data_files()
    named = {
        f["path"] for n in warehouse.commits() for f in (warehouse.read_commit(n) or {}).get("files") or []
    }
    now, removed = time.time(), 0
    for key, written in files:
        if key not in named and now - written >= orphan_age:
            warehouse.delete(key)
            removed += 1
    return removed


def _partition(run: Run) -> tuple[str, str]:
    return run.project or "", time.strftime("%Y-%m", time.gmtime(run.created))


def write_files(store: Store, warehouse: Warehouse) -> Pending:
    """Write the data files of every ended run that no commit covers with its current sizes (the
    first half of a compaction: nothing a reader sees until ``commit``)."""
    found = commits(warehouse)
    pending = Pending(found[-1]["number"] if found else 0)
    done = covered(found)
    present = all_runs(store)
    pending.deleted = sorted(set(done) - {r.id for r in present})
    # the runs that share a file still read with a deleted run's rows: compacted again, so that the
    # file is superseded and purged, and the deleted run's rows with it
    again = rewritten(found, set(pending.deleted) | set(deleted_at(found)))
    todo = [
        r for r in present if r.state != State.RUNNING and (done.get(r.id) != sources(r) or r.id in again)
    ]
    todo.sort(key=lambda r: (*_partition(r), r.id))
    for (project, month), group in groupby(todo, key=_partition):
        files = {t: _Files(warehouse, t, project or None, month) for t in layout.PARQUET_TABLES}
        for run, made_from, tables in _copies(store, group):
            pending.runs[run.id] = made_from
            for table, data in tables.items():
                files[table].add(run.id, data)
        for writer in files.values():
            pending.files += writer.close()
    return pending


def _copies(store: Store, runs: Iterator[Run]) -> Iterator[tuple[Run, dict[str, int], dict[str, pa.Table]]]:
    """Each run's current copies with the sizes they were made from (``_read_copies``), in the order
    of ``runs``, read ``READERS`` runs at a time: at 100,000 runs a compaction opens 300,000 small
    files, and one at a time it waits on each (pyarrow reads them without the interpreter's lock).
    At most twice ``READERS`` runs' tables are held ahead of the writer."""
    with ThreadPoolExecutor(READERS, thread_name_prefix="tunetrack-compact") as pool:
        ahead: deque[Future[tuple[Run, dict[str, int], dict[str, pa.Table]] | None]] = deque()
        for run in runs:
            ahead.append(pool.submit(_read_copies, store, run))
            while len(ahead) > 2 * READERS or (ahead and ahead[0].done()):
                if (found := ahead.popleft().result()) is not None:
                    yield found
        for future in ahead:
            if (found := future.result()) is not None:
                yield found


def _read_copies(store: Store, run: Run) -> tuple[Run, dict[str, int], dict[str, pa.Table]] | None:
    """``run``'s three copies and the sizes they were made from; copies that are missing or stale
    (made from other sizes than the run's now) are written first and read again. None where they do
    not agree (a process writing meanwhile): the run is left for a later compaction."""
    tables, stamps = _read_tables(run)
    now = sources(run)
    if any(stamp != now for stamp in stamps):
        write_copies(store, run)
        run.folder.refresh()
        tables, stamps = _read_tables(run)
    if stamps[0] is None or any(stamp != stamps[0] for stamp in stamps):
        return None
    return run, stamps[0], {t: d for t, d in tables.items() if d is not None}


def _read_tables(run: Run) -> tuple[dict[str, pa.Table | None], list[dict[str, int] | None]]:
    """The run's copies as they are (None: missing, torn or replaced meanwhile) and what each says it
    was made from."""
    import pyarrow.parquet as pq

    tables: dict[str, pa.Table | None] = {}
    stamps: list[dict[str, int] | None] = []
    for table in layout.PARQUET_TABLES:
        path = run.folder.parquet_file(table)
        try:
            data = pq.read_table(path) if path is not None else None
        except (OSError, ValueError):
            data = None
        stamps.append(stamped_sources(data.schema, run.id) if data is not None else None)
        tables[table] = data
    return tables, stamps


class _Files:
    """One table's data files of one partition, written as runs are added: rows buffered up to a row
    group, a new file begun past ``FILE_ROWS``."""

    def __init__(self, warehouse: Warehouse, table: str, project: str | None, month: str) -> None:
        self.warehouse, self.table, self.project, self.month = warehouse, table, project, month
        self.done: list[dict[str, Any]] = []
        self.writer: pq.ParquetWriter | None = None
        self.buffer: list[pa.Table] = []
        self.buffered = 0
        self.rows = 0
        self.runs: list[str] = []

    def add(self, run_id: str, data: pa.Table) -> None:
        if not data.num_rows:
            return
        if self.rows >= FILE_ROWS:
            self._finish()
        if self.writer is None:
            import pyarrow.parquet as pq

            self.schema = data.schema.remove_metadata()
            self.path = self.warehouse.scratch() / f"part-{uuid.uuid4().hex}.parquet.tmp"
            self.writer = pq.ParquetWriter(self.path, self.schema, **writer_options(self.schema))
        data = data.replace_schema_metadata(None).cast(self.schema)
        self.buffer.append(data.sort_by([(c, "ascending") for c in SORT[self.table]]))
        self.buffered += data.num_rows
        self.rows += data.num_rows
        self.runs.append(run_id)
        if self.buffered >= ROW_GROUP:
            self._flush(whole_groups=True)

    def _flush(self, whole_groups: bool) -> None:
        import pyarrow as pa

        if not self.buffer or self.writer is None:
            return
        data = pa.concat_tables(self.buffer)
        cut = data.num_rows - data.num_rows % ROW_GROUP if whole_groups else data.num_rows
        self.writer.write_table(data.slice(0, cut), row_group_size=ROW_GROUP)
        rest = data.slice(cut)
        self.buffer, self.buffered = ([rest], rest.num_rows) if rest.num_rows else ([], 0)

    def _finish(self) -> None:
        if self.writer is None:
            return
        self._flush(whole_groups=False)
        self.writer.close()
        key = data_key(self.table, self.project, self.month)
        size = self.path.stat().st_size
        self.warehouse.put_data(key, self.path)
        self.done.append(
            {"table": self.table, "path": key, "rows": self.rows, "bytes": size, "runs": self.runs}
        )
        self.writer, self.rows, self.runs = None, 0, []

    def close(self) -> list[dict[str, Any]]:
        self._finish()
        return self.done


def commit(warehouse: Warehouse, pending: Pending) -> int | None:
    """Commit ``pending`` under the number past the newest commit, created only if absent; when
    another compactor took it, drop the runs it covered with the same sizes and try the next. Returns
    the number, or None when nothing was left to commit (its files are then removed)."""
    number = pending.base + 1
    while True:
        if not all(warehouse.has_data(f["path"]) for f in pending.files):
            raise CompactError("data files written by this compaction were removed before its commit")
        body = {
            "format": FORMAT,
            "number": number,
            "created": time.time(),
            "by": f"{socket.gethostname()}-{os.getpid()}",
            "runs": pending.runs,
            "files": pending.files,
            "deleted": pending.deleted,
        }
        if warehouse.create_commit(number, body):
            return number
        newer = [c for c in commits(warehouse) if c["number"] >= number]
        done = covered(newer)
        pending.runs = {r: s for r, s in pending.runs.items() if done.get(r) != s}
        recorded = {r for c in newer for r in c.get("deleted") or []}
        pending.deleted = [r for r in pending.deleted if r not in recorded]
        unused = [f for f in pending.files if not set(f["runs"]) & set(pending.runs)]
        for f in unused:
            warehouse.delete(f["path"])
        pending.files = [f for f in pending.files if f not in unused]
        if not pending.runs and not pending.deleted:
            return None
        number = max([number, *(c["number"] for c in newer)]) + 1


__all__ = ["ORPHAN_AGE", "CompactError", "Compaction", "Pending", "clean", "commit", "compact", "write_files"]
