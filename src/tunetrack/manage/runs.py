"""Changing runs after the fact: rename, tag, note, ask to stop (edits: ``tunetrack.edits``) and delete.

An edit adds a record to the run (``store.layout``) and changes no file of it, so it is safe while the
run is still being written and while others edit it too. Deleting removes the run and everything of
it; it refuses a run that is still running unless forced (its process would go on writing into a run
that is gone).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..edits import author, new_edit
from ..errors import RunInUse, RunNotRunning
from ..reader import Run
from ..reader.find import find_run, named, store_at
from ..states import State
from ..store import layout

Dir = str | os.PathLike[str] | None


def rename_run(ref: str, name: str, dir: Dir = None) -> Run:
    """Give the run ``ref`` names a new name. The name must find the run afterwards, so a name that
    already names another run (its name, its id or a prefix of its id) is refused."""
    return edit_run(ref, dir, name=name)


def tag_run(ref: str, add: Sequence[str] = (), remove: Sequence[str] = (), dir: Dir = None) -> Run:
    """Add tags to and remove tags from a run (a tag it has is not added twice)."""
    return edit_run(ref, dir, add=add, remove=remove)


def note_run(ref: str, text: str, dir: Dir = None) -> Run:
    """Add a note to a run (notes accumulate, each with its time and author)."""
    return edit_run(ref, dir, note=text)


def stop_run(
    ref: str, reason: str = "", dir: Dir = None, by: str | None = None, origin: str | None = None
) -> Run:
    """Ask the live run ``ref`` names to stop (who asks: ``by``, else ``user@host``; why:
    ``reason``). Its process finds the request within ``settings.control_interval()`` seconds and its
    adapter stops training cleanly; the run then ends ``stopped``. A run that is not running is
    refused (``RunNotRunning``): there is nothing to stop. Asking twice changes nothing: the first
    request says who stopped the run."""
    store = store_at(dir)
    run = find_run(store, ref)
    if run.state != State.RUNNING:
        raise RunNotRunning(f"run {run.id} ({run.name}) is {run.state}: there is nothing to stop")
    if run.stop_request is None:  # the edit is created only if absent: the first request counts
        store.put_edit(run.id, layout.STOP_EDIT, new_edit(stop=reason, by=by, origin=origin))
        run.refresh()
    return run


def edit_run(ref: str, dir: Dir = None, **changes: Any) -> Run:
    """One edit of the run ``ref`` names (``edits.new_edit``'s fields: a name, tags added and removed,
    a note, who and from where), made, and the run read again with it."""
    body = new_edit(**changes)  # a bad name or tag fails before the store is looked at
    store = store_at(dir)
    run = find_run(store, ref)
    if "name" in body:
        taken = [r for r in named(store, body["name"]) if r.id != run.id]
        if taken:
            other = taken[0]
            raise ValueError(
                f"{body['name']!r} already names run {other.id} ({other.name}): pick another name"
            )
    store.put_edit(run.id, layout.edit_name(body["time"]), body)
    run.refresh()
    return run


def delete_runs(
    refs: Sequence[str],
    dir: Dir = None,
    force: bool = False,
    confirm: Callable[[list[Run]], bool] | None = None,
    by: str | None = None,
    origin: str | None = None,
) -> list[Run]:
    """Delete the runs ``refs`` name, and return them. Every ref is looked up before anything is
    deleted (one that names no run deletes none); a run still running, or one that other runs were
    forked from (they read their history before the branch from it), is refused unless ``force``;
    ``confirm`` (given the runs) may still say no, and then nothing is deleted. Each deletion is
    recorded first (``deletion_record``: who, from where, what the run was), so an audit trail
    outlives the run."""
    store = store_at(dir)
    runs = list({r.id: r for r in (find_run(store, ref) for ref in refs)}.values())
    running = [r for r in runs if r.state == State.RUNNING]
    if running and not force:
        listed = ", ".join(f"{r.id} ({r.name})" for r in running)
        verb = "is" if len(running) == 1 else "are"
        raise RunInUse(f"{listed} {verb} still running; --force (force=True) deletes it anyway")
    deleted = {r.id for r in runs}
    forked = [(r, kept) for r in runs if (kept := [f for f in r.forks() if f.id not in deleted])]
    if forked and not force:
        r, kept = forked[0]
        names = ", ".join(f"{f.id} ({f.name})" for f in kept[:5])
        raise RunInUse(
            f"{r.id} ({r.name}) has forks that read their history before the branch from it: {names}; "
            "--force (force=True) deletes it anyway (they keep only their own steps)"
        )
    if confirm is not None and not confirm(runs):
        return []
    for run in runs:
        body = deletion_record(run, by, origin)
        store.put_audit(layout.edit_name(body["time"]), body)
        store.delete_run(run.id)
    return runs


def deletion_record(run: Run, by: str | None, origin: str | None) -> dict[str, Any]:
    """What the store keeps of a deleted run: when, who (``by``, else ``user@host``), from where, the
    run as it was (id, name, project, tags, state), and its trail (run.json's name and tags, and its
    edits), so that its history outlives it: read by ``reader.audit``."""
    body: dict[str, Any] = {"time": time.time(), "by": by or author()}
    if origin is not None:
        body["from"] = origin
    body["deleted"] = {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "tags": run.tags,
        "state": str(run.state),
        "created_as": {k: run.created_as.get(k) for k in ("name", "tags")},
        "edits": run.meta["edits"],
    }
    return body


__all__ = ["delete_runs", "deletion_record", "edit_run", "note_run", "rename_run", "stop_run", "tag_run"]


def reindex(dir: Dir = None) -> int:
    """Rebuild the index of the store at ``dir`` from its runs alone: the runs indexed. For an index
    that was lost or damaged, or runs copied in by other means; safe while jobs write (what they
    record meanwhile is taken in as usual)."""
    return store_at(dir).reindex()
