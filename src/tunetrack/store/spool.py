"""The spool: where a process writing to object storage keeps its run on local disk until it is
uploaded (a local store per object-store URL, under ``settings.spool_dir()``). What a process could
not upload before it died stays there for ``tunetrack sync``."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import settings
from ..jsonfile import write_json_atomic
from .local import LocalStore


def spool_root(url: str) -> Path:
    """Where runs written to the object store at ``url`` are spooled on this machine."""
    return settings.spool_dir() / hashlib.sha1(url.rstrip("/").encode()).hexdigest()[:16]


def spool_for(url: str) -> LocalStore:
    """The local store that spools runs for the object store at ``url``; it remembers the URL."""
    root = spool_root(url)
    root.mkdir(parents=True, exist_ok=True)
    marker = root / "remote.json"
    if not marker.exists():
        write_json_atomic(marker, {"url": url})
    return LocalStore(root, indexed=False)
