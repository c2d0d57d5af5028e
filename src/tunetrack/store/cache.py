"""What readers downloaded from an object store, kept on local disk: a second look at a run downloads
nothing old.

Record chunks never change once written, so they are kept by name for good. Small objects that can
be rewritten (index entries) are kept under their ETag: a listing says whether the copy is current.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from .. import settings


class ObjectCache:
    def __init__(self, url: str, root: Path | None = None) -> None:
        slug = hashlib.sha1(url.encode()).hexdigest()[:16]
        self.root = (root or settings.cache_dir()) / slug

    def _path(self, key: str, etag: str | None = None) -> Path:
        name = key if etag is None else f"{key}@{hashlib.sha1(etag.encode()).hexdigest()[:16]}"
        return self.root / name

    def get(self, key: str, etag: str | None = None) -> bytes | None:
        try:
            return self._path(key, etag).read_bytes()
        except OSError:
            return None

    def file(self, key: str, etag: str | None = None) -> Path | None:
        """Where ``key`` is kept (under ``etag``), if it is."""
        path = self._path(key, etag)
        return path if path.is_file() else None

    def put(self, key: str, data: bytes, etag: str | None = None) -> None:
        """Keep ``data`` (best effort: a full or read-only disk only costs a download next time)."""
        path = self._path(key, etag)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError:
            pass

    def names(self, folder: str) -> list[str]:
        """The names kept under ``folder`` (a run's chunks of one process)."""
        try:
            return [p.name for p in (self.root / folder).iterdir() if not p.name.startswith(".")]
        except OSError:
            return []

    def forget(self, folder: str) -> None:
        """Drop everything kept under ``folder`` (a deleted run's)."""
        shutil.rmtree(self.root / folder, ignore_errors=True)
