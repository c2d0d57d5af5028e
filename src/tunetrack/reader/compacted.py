"""Reading what ``tunetrack compact`` committed (``store.warehouse``): which runs' rows a query takes
from the compacted files, and which rows of which file those are.

A commit says, per run, what the run's rows were derived from (its processes' data sizes, as a run's
Parquet copy says: ``parquet.sources``). A run is read from the compacted files only when the newest
commit holding the run's current sizes is found: that commit's files give its rows, and no other file
does. A run resumed after it was compacted has other sizes now, so it is read as before (its copy or
its records) until a later compaction covers it again; its rows in older files are left out. A run
deleted since is in no listing, so its compacted rows are left out too. Each row is thus read once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..gc_pause import no_cyclic_gc
from ..store import layout
from ..store.warehouse import Warehouse, warehouse_of
from .parquet import sources
from .run import Run

#: the commit format this reader knows; a commit of another is ignored (its runs read as before)
FORMAT = 1


@dataclass(frozen=True)
class Part:
    """A compacted file to read (a local path) and, where the file also holds rows that do not count,
    the runs whose rows do (None: all of them)."""

    path: str
    runs: tuple[str, ...] | None = None


@dataclass
class Compacted:
    """The runs read from compacted files, and those files per table (``layout.PARQUET_TABLES``)."""

    runs: set[str] = field(default_factory=set)
    parts: dict[str, list[Part]] = field(default_factory=lambda: {t: [] for t in layout.PARQUET_TABLES})


def commits(warehouse: Warehouse) -> list[dict[str, Any]]:
    """Every commit of this format, oldest first (each with its ``number``)."""
    out = []
    for number in warehouse.commits():
        body = warehouse.read_commit(number)
        if body is not None and body.get("format") == FORMAT and body.get("number") == number:
            out.append(body)
    return out


def covered(found: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """``{run: the sizes its newest commit holds}``: what a compactor compares a run's sizes with. A
    run a later commit records as deleted (``deleted``: gone from the store since) is covered no more."""
    out: dict[str, dict[str, int]] = {}
    for commit in found:
        out.update(commit.get("runs") or {})
        for run_id in commit.get("deleted") or []:
            out.pop(run_id, None)
    return out


def read_compacted(runs: Sequence[Run]) -> Compacted:
    """Which of ``runs`` (a listing of one store) are read from compacted files, and from which
    (downloaded into the cache for a bucket). A commit whose file is gone covers none of its runs."""
    store = next((run.store for run in runs if run.store is not None), None)
    if store is None:
        return Compacted()
    warehouse = warehouse_of(store)
    found = commits(warehouse)
    if not found:
        return Compacted()
    by_id = {run.id: run for run in runs}
    now: dict[str, dict[str, int]] = {}
    chosen: dict[str, int] = {}  # run -> the commit its rows are read from
    with no_cyclic_gc():  # 100,000 runs' sizes, beside 100,000 runs' objects
        for commit in reversed(found):
            for run_id, made_from in (commit.get("runs") or {}).items():
                if run_id in chosen or run_id not in by_id:
                    continue
                if run_id not in now:
                    now[run_id] = sources(by_id[run_id])
                if now[run_id] == made_from:
                    chosen[run_id] = commit["number"]
    local: dict[str, str] = {}
    for commit in found:
        for file in commit.get("files") or []:
            if not any(chosen.get(r) == commit["number"] for r in file["runs"]):
                continue
            path = warehouse.local_file(file["path"])
            if path is None:  # removed by hand: its runs are read as if never compacted
                for r in file["runs"]:
                    if chosen.get(r) == commit["number"]:
                        del chosen[r]
            else:
                local[file["path"]] = str(path)
    out = Compacted(runs=set(chosen))
    for commit in found:
        for file in commit.get("files") or []:
            wanted = tuple(r for r in file["runs"] if chosen.get(r) == commit["number"])
            if wanted and file["table"] in out.parts:
                whole = len(wanted) == len(file["runs"])
                out.parts[file["table"]].append(Part(local[file["path"]], None if whole else wanted))
    return out
