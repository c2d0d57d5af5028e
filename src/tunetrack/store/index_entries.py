"""A bucket index's entries (``index``) as a reader holds them: each entry's JSON kept as it was
fetched and decoded only when a listing opens its run, beside the few fields every listing needs of
all of them (key, etag, time, whether it ended, when its run was created). Those are packed as
msgpack columns, for the compact object another machine fetches and for this machine's state between
commands. At 100,000 runs the entries' JSON is about 110 MB: parsing it whole took 3.5 s and writing
it back 2 s, where the columns unpack in 0.1 s (measured on the 2-core machine the tests run on).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import msgpack

#: the packed columns' format; anything else unpacks as nothing (the reader then looks afresh)
FORMAT = 2


def dumps(data: Any) -> bytes:
    return json.dumps(data, allow_nan=True, default=str).encode()


def loads(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(eq=False)
class Entry:
    key: str
    etag: str | None
    mtime: float
    raw: bytes  # the entry's JSON, as fetched
    ended: bool  # never to change again: an ended process's entry, or an edit's
    created: float | None  # when its run was created, as a process's entry says (an edit's: None)

    @classmethod
    def of(cls, key: str, etag: str | None, mtime: float, body: dict[str, Any]) -> Entry:
        """The entry of ``body`` (already decoded: kept, not decoded again)."""
        run = body.get("run") if "proc" in body else None
        created = run.get("created") if isinstance(run, dict) else None
        ended = body.get("end") is not None or "edit" in body
        when = float(created) if isinstance(created, int | float) and not isinstance(created, bool) else None
        entry = cls(key, etag, mtime, dumps(body), ended, when)
        entry.__dict__["body"] = body
        return entry

    @classmethod
    def parse(cls, key: str, etag: str | None, mtime: float, data: bytes) -> Entry | None:
        """The entry of the fetched JSON ``data``; None if it is not an object."""
        body = loads(data)
        if body is None:
            return None
        entry = cls.of(key, etag, mtime, body)
        entry.raw = data
        return entry

    @cached_property
    def body(self) -> dict[str, Any]:
        return loads(self.raw) or {}

    @property
    def edit(self) -> tuple[str, dict[str, Any]] | None:
        """``(name, body)`` if this is an edit's entry, else None (a process's)."""
        name, body = self.body.get("edit"), self.body.get("body")
        return (str(name), body) if name is not None and isinstance(body, dict) else None


def created_of(entries: list[Entry]) -> float | None:
    """When the run of ``entries`` (its processes' and edits') was created, as its processes' say."""
    return next((e.created for e in entries if e.created is not None), None)


def pack(entries: list[Entry], extra: dict[str, Any], compress: bool = False) -> bytes:
    """``entries`` as columns, with ``extra`` (the reader's position in the log, ...); compressed for
    an object other machines download."""
    data = msgpack.packb(
        {
            **extra,
            "format": FORMAT,
            "keys": [e.key for e in entries],
            "etags": [e.etag for e in entries],
            "mtimes": [e.mtime for e in entries],
            "ended": [e.ended for e in entries],
            "created": [e.created for e in entries],
            "raw": [e.raw for e in entries],
        }
    )
    return zlib.compress(data, 1) if compress else data


def unpack(data: bytes | None, compressed: bool = False) -> tuple[dict[str, Entry], dict[str, Any]] | None:
    """``(key -> entry, the extra fields)`` of packed columns; None if ``data`` is not that."""
    if data is None:
        return None
    try:
        body = msgpack.unpackb(zlib.decompress(data) if compressed else data)
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            return None
        columns = zip(
            body.pop("keys"),
            body.pop("etags"),
            body.pop("mtimes"),
            body.pop("raw"),
            body.pop("ended"),
            body.pop("created"),
            strict=True,
        )
        entries = {key: Entry(key, *rest) for key, *rest in columns}
    except (ValueError, TypeError, KeyError, zlib.error, msgpack.UnpackException):
        return None
    return entries, body


__all__ = ["FORMAT", "Entry", "created_of", "dumps", "loads", "pack", "unpack"]
