"""A store's audit trail: every rename, tag change, note, stop request and deletion, with who made it,
when, from where, and what changed, in time order: ``tunetrack audit``, and the run page's History.

Nothing is written for it: an edit is already a record of its own that says who made it and when
(``tunetrack.edits``; a team dashboard adds the client's address), so a run's trail is its edits,
replayed to say what each one changed (a new name reads ``old → new``). A deleted run's edits go with
it, so its deletion leaves a record of its own in the store (``manage.runs.deletion_record``).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from ..edits import fold
from ..store.base import Store
from .find import all_runs, store_at
from .run import Run


@dataclass(frozen=True)
class Entry:
    """One change: when, ``by`` whom, ``origin`` (where from, if known), its ``action`` (``rename``,
    ``tag``, ``note``, ``stop``, ``delete``, or several joined by ``+``), the run (id, name as it then
    was, project) and ``what`` changed, in words."""

    time: float
    by: str
    origin: str | None
    action: str
    run: str
    name: str
    project: str | None
    what: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_trail(run: Run) -> list[Entry]:
    """The run's edits in the order readers apply them, each worded against the run before it."""
    return _replay(run.id, run.project, run.created_as, run.meta.get("edits") or [])


def _replay(run_id: str, project: str | None, created_as: dict[str, Any], edits: list[Any]) -> list[Entry]:
    before = fold(created_as, [])
    out = []
    for body in edits:
        if not isinstance(body, dict):
            continue
        after = fold({"name": before.name, "tags": before.tags}, [("", body)])
        if after.edits == []:  # not an edit readers apply (malformed): not one that changed anything
            continue
        actions, words = _changes(body, before.name or run_id, after.name or run_id, before.tags, after.tags)
        out.append(
            Entry(
                time=float(body["time"]),
                by=str(body.get("by") or "?"),
                origin=body.get("from"),
                action="+".join(actions),
                run=run_id,
                name=after.name or run_id,
                project=project,
                what="; ".join(words),
            )
        )
        before = after
    return out


def _changes(
    body: dict[str, Any], old: str, new: str, had: list[str], has: list[str]
) -> tuple[list[str], list[str]]:
    actions: list[str] = []
    words: list[str] = []
    if "name" in body:
        actions.append("rename")
        words.append(f"name: {old} → {new}")
    if "tags" in body:
        actions.append("tag")
        added = [f"+{t}" for t in has if t not in had]
        removed = [f"-{t}" for t in had if t not in has]
        words.append(" ".join(added + removed) or "tags unchanged")
    if "note" in body:
        actions.append("note")
        words.append(f"note: {body['note']}")
    if "stop" in body:
        actions.append("stop")
        words.append(f"asked to stop: {body['stop'] or 'no reason given'}")
    return actions, words


def deletions(store: Store) -> list[Entry]:
    """The store's records of deleted runs (``manage.runs.deletion_record``): each run's edits as they
    were, then its deletion; a malformed record is skipped."""
    out = []
    for _, body in store.audit():
        gone = body.get("deleted")
        if not isinstance(gone, dict) or not isinstance(body.get("time"), (int, float)):
            continue
        created = gone.get("created_as")
        edits = gone.get("edits")
        if isinstance(created, dict) and isinstance(edits, list):
            out += _replay(str(gone.get("id")), gone.get("project"), created, edits)
        tags = ", ".join(map(str, gone.get("tags") or []))
        out.append(
            Entry(
                time=float(body["time"]),
                by=str(body.get("by") or "?"),
                origin=body.get("from"),
                action="delete",
                run=str(gone.get("id")),
                name=str(gone.get("name")),
                project=gone.get("project"),
                what=f"deleted ({gone.get('state')}{'; tags ' + tags if tags else ''})",
            )
        )
    return out


def trail(dir: str | os.PathLike[str] | None = None, project: str | None = None) -> list[Entry]:
    """Every change to the runs of the store at ``dir`` and every deletion in it, oldest first;
    ``project``: only those about its runs."""
    store = store_at(dir)
    runs = [r for r in all_runs(store) if project is None or r.project == project]
    entries = [e for run in runs for e in run_trail(run)] + deletions(store)
    return sorted(
        (e for e in entries if project is None or e.project == project), key=lambda e: (e.time, e.run)
    )
