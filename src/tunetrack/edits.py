"""Edits of a run after it was created: a new name, tags added or removed, a note, a request to stop.

``run.json`` is written once by the process that created the run, and every process writes only its
own files, so an edit is never a change to an existing file: it is a small immutable record of its
own (``store.layout`` says where it lives), and readers fold a run's edits over its ``run.json`` in
time order (``fold``). Two edits made at once (two shells, a training script and a shell) are two
records; neither can overwrite or corrupt the other. The later one wins for the name; tag edits
compose (each adds and removes what it names); notes accumulate.

What an edit may say is checked here, once, for every way of making one (``tunetrack tag``/``rename``/
``note``, ``Tracker.name = ...``, ``Tracker.add_tags``).

A stop request (``tunetrack stop``, the dashboard's Stop button, an agent, a rule) is an edit too: it
reaches a live run through its store, folder or bucket alike, without knowing where the run's process
is: it has a fixed name (``store.layout.STOP_EDIT``), created only if absent, which the run's process
looks for (``tracker.control``), and its adapter stops training cleanly. Only the first request
counts: it says who stopped the run and why.
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .values import is_number


def check_name(name: object) -> str:
    """A run's name: non-empty text on one line (surrounding blanks dropped)."""
    if not isinstance(name, str):
        raise ValueError(f"a run's name is text, not {type(name).__name__}")
    text = name.strip()
    if not text:
        raise ValueError("a run's name cannot be empty")
    if "\n" in text or "\r" in text:
        raise ValueError(f"a run's name is one line: {name!r}")
    return text


def check_tag(tag: object) -> str:
    """A tag: non-empty text on one line (surrounding blanks dropped)."""
    if not isinstance(tag, str):
        raise ValueError(f"a tag is text, not {type(tag).__name__}")
    text = tag.strip()
    if not text or "\n" in text or "\r" in text:
        raise ValueError(f"not a tag: {tag!r}")
    return text


def check_note(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a note cannot be empty")
    return text.strip()


def tag_changes(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``["+best", "-draft"]`` as ``(added, removed)``. A tag both added and removed is a mistake (which
    one was meant?), and so is an argument that says neither."""
    added: list[str] = []
    removed: list[str] = []
    for arg in args:
        if arg[:1] not in ("+", "-"):
            raise ValueError(f"tag changes are +TAG (add) or -TAG (remove), not {arg!r}")
        (added if arg[0] == "+" else removed).append(check_tag(arg[1:]))
    if not added and not removed:
        raise ValueError("no tag to add (+TAG) or remove (-TAG)")
    both = sorted(set(added) & set(removed))
    if both:
        raise ValueError(f"{both[0]!r} is both added and removed")
    return list(dict.fromkeys(added)), list(dict.fromkeys(removed))


def new_edit(
    *,
    name: str | None = None,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    note: str | None = None,
    stop: str | None = None,
    at: float | None = None,
    by: str | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """The record of one edit, checked, stamped with the time and who made it (``by``, else
    ``user@host``) and, for an audit trail, from where (``origin``: a team dashboard's client
    address; ``by`` already says a shell's host). ``stop`` asks the run to stop, for that reason
    (``""``: none given)."""
    body: dict[str, Any] = {"time": time.time() if at is None else at, "by": by or author()}
    if origin is not None:
        body["from"] = origin
    if name is not None:
        body["name"] = check_name(name)
    if add or remove:
        body["tags"] = {"add": [check_tag(t) for t in add], "remove": [check_tag(t) for t in remove]}
    if note is not None:
        body["note"] = check_note(note)
    if stop is not None:
        body["stop"] = check_reason(stop)
    if len(body) == 2 + ("from" in body):
        raise ValueError("an edit must change something")
    return body


def check_reason(reason: object) -> str:
    """Why a run is asked to stop: one line of text, possibly empty."""
    if not isinstance(reason, str):
        raise ValueError(f"a reason is text, not {type(reason).__name__}")
    text = reason.strip()
    if "\n" in text or "\r" in text:
        raise ValueError(f"a reason is one line: {reason!r}")
    return text


def stop_request(body: dict[str, Any]) -> dict[str, Any] | None:
    """The stop request an edit's body makes (``{"time", "by", "reason"}``), or None."""
    if "stop" not in body:
        return None
    try:
        return {"time": float(body["time"]), "by": body.get("by"), "reason": check_reason(body["stop"])}
    except (ValueError, TypeError):
        return None


def author() -> str:
    """Who makes an edit from this process: ``user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a uid without a passwd entry (containers)
        user = "?"
    return f"{user}@{socket.gethostname()}"


@dataclass
class Identity:
    """What a run is called after its edits: name, tags, notes (``{"time", "by", "text"}``), the first
    request to stop it (``{"time", "by", "reason"}``), and the edits themselves in the order they were
    applied."""

    name: str | None
    tags: list[str]
    notes: list[dict[str, Any]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    stop: dict[str, Any] | None = None


def fold(run_json: dict[str, Any], edits: Iterable[tuple[str, dict[str, Any]]]) -> Identity:
    """The run's identity: ``run_json``'s name and tags with ``edits`` (``(record name, body)``)
    applied in time order (the record name breaks ties, so every reader agrees). A malformed edit is
    skipped: a reader never fails on one record."""
    name = run_json.get("name")
    tags = [str(t) for t in run_json.get("tags") or []]
    out = Identity(str(name) if name else None, tags)
    valid = [
        (key, body)
        for key, body in edits
        if isinstance(body, dict) and is_number(t := body.get("time")) and t == t
    ]
    for _, body in sorted(valid, key=lambda e: (float(e[1]["time"]), e[0])):
        applied = _apply(out, body)
        if applied:
            out.edits.append(body)
    return out


def _apply(identity: Identity, body: dict[str, Any]) -> bool:
    try:
        name = check_name(body["name"]) if "name" in body else None
        changes = body.get("tags") or {}
        added = [check_tag(t) for t in changes.get("add") or []]
        removed = {check_tag(t) for t in changes.get("remove") or []}
        note = check_note(body["note"]) if "note" in body else None
        stop = stop_request(body) if "stop" in body else None
    except (ValueError, AttributeError, TypeError):
        return False
    if "stop" in body and stop is None:
        return False
    if stop is not None and identity.stop is None:
        identity.stop = stop
    if name is not None:
        identity.name = name
    identity.tags = [t for t in identity.tags if t not in removed]
    identity.tags += [t for t in dict.fromkeys(added) if t not in identity.tags]
    if note is not None:
        identity.notes.append({"time": body["time"], "by": body.get("by"), "text": note})
    return True


__all__ = [
    "Identity",
    "author",
    "check_name",
    "check_note",
    "check_reason",
    "check_tag",
    "fold",
    "new_edit",
    "stop_request",
    "tag_changes",
]
