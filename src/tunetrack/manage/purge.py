"""Removing compacted data that no reader reads any more (``tunetrack compact``'s last step), so that
a warehouse does not grow with every re-compaction, and a deleted run's rows leave it.

A data file is *superseded* once every run it counts has a later commit (the run was resumed and
compacted again) or was recorded as deleted by a later one (``tunetrack rm``); a reader that has seen
those commits never opens it. A deleted run's rows can also sit in a file that still counts other runs:
``write_files`` compacts those runs again (``rewritten``), so the file is superseded by that commit.

A superseded file is removed ``PURGE_AFTER`` seconds after the commit that superseded it, so that a
query that read the commits before it still finds the files it chose. Where the store has Iceberg
tables, they must hold every commit first (their older snapshots name the files): the snapshots older
than ``PURGE_AFTER`` are expired, and only files no remaining snapshot names are removed, with the
files Iceberg itself wrote that no snapshot names any more (``iceberg.tidy``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..store import Store
from ..store.warehouse import Warehouse
from .iceberg import tidy

#: seconds between the commit that superseded a file and its removal: longer than a query takes
PURGE_AFTER = 300.0


@dataclass
class Purged:
    files: int = 0  # compacted files removed
    bytes: int = 0
    iceberg_files: int = 0  # files Iceberg wrote that no snapshot names any more
    kept: int = 0  # superseded files kept: the Iceberg tables were not brought up to date


def newest(found: Sequence[dict[str, Any]]) -> dict[str, int]:
    """``{run: the number of the newest commit that counts it}``."""
    return {run: c["number"] for c in found for run in c.get("runs") or {}}


def deleted_at(found: Sequence[dict[str, Any]]) -> dict[str, int]:
    """``{run: the number of the first commit that records it as deleted}``."""
    out: dict[str, int] = {}
    for c in found:
        for run in c.get("deleted") or []:
            out.setdefault(run, c["number"])
    return out


def rewritten(found: Sequence[dict[str, Any]], gone: set[str]) -> set[str]:
    """The runs to compact again so that no file still read holds rows of the ``gone`` runs: those
    whose newest commit is of a file that holds such rows."""
    latest = newest(found)
    out: set[str] = set()
    for c in found:
        counted = c.get("runs") or {}
        for f in c.get("files") or []:
            if gone & set(f["runs"]):
                out |= {r for r in f["runs"] if r in counted and r not in gone and latest[r] == c["number"]}
    return out


def superseded(found: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Every superseded file, with the time of the commit that superseded it (see the module)."""
    latest, gone = newest(found), deleted_at(found)
    created = {c["number"]: float(c.get("created") or 0.0) for c in found}
    out = []
    for c in found:
        number, counted = c["number"], c.get("runs") or {}
        for f in c.get("files") or []:
            later = []
            for run in (r for r in f["runs"] if r in counted):
                if latest[run] > number:
                    later.append(latest[run])
                elif gone.get(run, 0) > number:
                    later.append(gone[run])
                else:
                    break
            else:
                out.append((f, max((created[n] for n in later), default=created[number])))
    return out


def purge(
    store: Store,
    warehouse: Warehouse,
    found: Sequence[dict[str, Any]],
    iceberg: bool | None,
    now: float | None = None,
) -> Purged:
    """Remove the files superseded ``PURGE_AFTER`` seconds ago or more (see the module). ``iceberg``:
    whether the store has Iceberg tables, just brought up to date; None where it has some this
    compaction did not update (their older snapshots may name the files: they are kept)."""
    now = time.time() if now is None else now
    due = [f for f, since in superseded(found) if now - since >= PURGE_AFTER]
    if due:  # those not purged already: one listing, not a look per file ever purged
        present = {key for key, _ in warehouse.data_files()}
        due = [f for f in due if f["path"] in present]
    out = Purged()
    if iceberg is None:
        out.kept = len(due)
        return out
    named: set[str] = set()
    if iceberg and due:
        named, out.iceberg_files = tidy(store, warehouse, now - PURGE_AFTER)
    for f in due:
        if warehouse.location(f["path"]) not in named:
            warehouse.delete(f["path"])
            out.files += 1
            out.bytes += int(f.get("bytes") or 0)
    return out


__all__ = ["PURGE_AFTER", "Purged", "deleted_at", "newest", "purge", "rewritten", "superseded"]
