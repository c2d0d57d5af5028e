"""Rebuilding a bucket's index (``index``) from the runs' own objects (``tunetrack reindex``): after
it was lost or damaged, or when runs were copied into the bucket by something other than tunetrack.
This is the one reader of the whole bucket: it lists every run's objects once and writes each of its
processes' and edits' entries again, announced in the log so warm readers take them in, and deletes
the entries of runs that are gone."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._warnings import warn_once
from . import ends, layout
from .blobs import Blobs
from .index import (
    FETCHERS,
    INDEX,
    LOG_HEAD,
    announce,
    edit_entry,
    edit_key,
    entry_key,
    index_entry,
    run_of,
    write_compact,
)
from .index_entries import Entry, dumps, loads
from .process_meta import ProcessMeta
from .process_meta import read as read_meta

#: seconds after which a run the index does not list means the index was lost (its writer uploads an
#: entry within its first upload interval)
LOST_AFTER = 300.0


def rebuild(blobs: Blobs) -> int:
    """Write every run's index entries from its objects, delete those of runs gone, and one compact
    object of them all (a reader on another machine then reads that, not the log of the rebuild);
    the runs indexed."""
    run_ids = [name for name in blobs.list_dirs("") if not name.startswith(".")]
    with ThreadPoolExecutor(FETCHERS) as pool:
        written = dict(zip(run_ids, pool.map(lambda r: _run(blobs, r), run_ids)))
    indexed = {run_id for run_id, entries in written.items() if entries is not None}
    for blob in blobs.list_blobs(f"{INDEX}/"):
        if (run_id := run_of(blob.key)) is not None and run_id not in indexed:
            blobs.delete(blob.key)
            announce(blobs, blob.key)  # a warm reader that looks for it finds none, and drops it
    now = time.time()
    entries = [Entry.of(key, None, now, body) for run in written.values() for key, body in run or []]
    write_compact(blobs, entries, int((loads(blobs.get(LOG_HEAD)) or {}).get("next") or 0))
    return len(indexed)


def warn_if_lost(blobs: Blobs) -> None:
    """Say once that the bucket holds runs its (empty) index does not list: it was lost. A run
    created less than ``LOST_AFTER`` ago may simply not have uploaded its first entry yet."""
    names = [name for name in blobs.list_dirs("") if not name.startswith(".")]
    for name in names[:FETCHERS]:
        blob = blobs.head(f"{name}/{layout.RUN_JSON}")
        if blob is not None and time.time() - blob.mtime > LOST_AFTER:
            url = blobs.url
            warn_once(
                f"index:{url}",
                f"{url} holds runs but its index lists none: run `tunetrack reindex --dir {url}`",
            )
            return


def _run(blobs: Blobs, run_id: str) -> list[tuple[str, dict[str, Any]]] | None:
    """Index one run from its objects: the entries written; None when it has no run.json (not a run)."""
    run = loads(blobs.get(f"{run_id}/{layout.RUN_JSON}"))
    if run is None:
        return None
    names = {b.key[len(run_id) + 1 :]: b for b in blobs.list_blobs(f"{run_id}/")}
    keys: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        if "/" in name:
            continue
        if (proc := layout.proc_of(name)) is not None:
            meta: ProcessMeta = read_meta(loads(blobs.get(f"{run_id}/{name}"))) or ProcessMeta()
            end = ends.read(loads(blobs.get(f"{run_id}/{proc}{layout.END_SUFFIX}")))
            beat_body = loads(blobs.get(f"{run_id}/{proc}{layout.BEAT_SUFFIX}")) or {}
            beat = float(beat_body.get("time") or names[name].mtime)
            last = dict(found) if end is not None and (found := end.get("last")) is not None else None
            entry = index_entry(run, proc, meta, last, dict(end) if end is not None else None, beat)
            keys.append((entry_key(run_id, proc, float(meta.get("start") or beat)), entry))
        elif (edit := layout.edit_of(name)) is not None and (body := loads(blobs.get(f"{run_id}/{name}"))):
            keys.append((edit_key(run_id, edit), edit_entry(run_id, edit, body)))
    for key, entry in keys:
        blobs.put(key, dumps(entry))
        announce(blobs, key)
    return keys
