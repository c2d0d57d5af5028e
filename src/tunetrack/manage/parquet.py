"""Writing runs' Parquet copies (``reader.parquet``: a run's metrics, system metrics and params as one
Parquet file each) into their store: by the writer thread once a run's last writing process has ended
(``after_finish``), and afterwards for any run (``write_parquet``: ``tunetrack parquet``).

pyarrow is not needed to record a run: without it ``after_finish`` writes nothing and says nothing,
and ``tunetrack parquet`` (or ``tunetrack query``, which reads the records where a run has no current
copy) covers the run later.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from .. import settings
from ..reader import Run
from ..reader.find import all_runs, find_run, load, store_at
from ..reader.parquet import current_file, parquet_bytes, sources
from ..reader.processes import processes
from ..store import Store, layout

Dir = str | os.PathLike[str] | None


@dataclass
class Written:
    run: Run
    bytes: int  # 0: its copies were current, nothing written


def write_copies(store: Store, run: Run) -> int:
    """Write (or replace) every Parquet copy of ``run``; return the bytes written."""
    made_from = sources(run)  # before the data is read: what is appended meanwhile makes it stale
    total = 0
    for table in layout.PARQUET_TABLES:
        data = parquet_bytes(run, table, made_from)
        store.put_parquet(run.id, table, data)
        total += len(data)
    return total


def after_finish(store: Store, run_id: str) -> int:
    """The run's copies, written by a process that has just recorded its end, if pyarrow can be
    imported, ``TUNETRACK_PARQUET`` is not ``0``, and no other process of the run is still writing
    (in a distributed job, the last rank to end writes them). Returns the bytes written."""
    if not settings.parquet_enabled():
        return 0
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return 0
    run = load(store, run_id)
    if run is None or not all(p.ended for p in processes(run.folder)):
        return 0
    return write_copies(store, run)


def after_finish_at(dir: str, run_id: str) -> int:
    """``after_finish`` for the store at ``dir`` (a child process of the writer runs this)."""
    return after_finish(store_at(dir), run_id)


def write_parquet(refs: Sequence[str] = (), dir: Dir = None, force: bool = False) -> list[Written]:
    """Write the Parquet copies of the runs ``refs`` name (every run of the store if none) where they
    are missing or stale (``force``: always). A run still running gets a copy of what it has logged
    so far, which is stale as soon as it logs more."""
    store = store_at(dir)
    runs = [find_run(store, ref) for ref in refs] if refs else all_runs(store)
    out = []
    for run in runs:
        if not force and all(current_file(run, t) is not None for t in layout.PARQUET_TABLES):
            out.append(Written(run, 0))
        else:
            out.append(Written(run, write_copies(store, run)))
    return out


__all__ = ["Written", "after_finish", "after_finish_at", "write_copies", "write_parquet"]
