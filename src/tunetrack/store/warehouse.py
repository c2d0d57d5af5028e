"""Where compacted data lies in a store (``tunetrack compact``): many ended runs' Parquet copies merged
into large files, and the numbered commits that say which files count. Keys, relative to the store::

    .warehouse/commits/<number, 10 digits>.json                      one commit, created once
    .warehouse/<table>/project=<p>/month=<YYYY-MM>/part-<uuid>.parquet  a data file (never rewritten)
    .warehouse/iceberg/...                                           the Iceberg tables (``manage.iceberg``)

A data file counts only once a commit names it: files a compactor wrote before it died are no one's
(readers never list the data files, they read the commits), and a later compactor removes them once
they are old enough not to be another compactor's work in progress. A commit is put only if absent
(``O_EXCL``-like in a folder, a create-only put in a bucket), so two compactors never both commit the
same number: the second reads what the first committed and tries the next number. Commits are
immutable, so a bucket's are downloaded once into the reader's cache; data files too, as engines read
local files (``parquet_file``'s way for a run's copy).
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, Protocol

from .base import Store
from .blobs import Blobs
from .cache import ObjectCache
from .local import LocalStore

WAREHOUSE = ".warehouse"
COMMITS = "commits"
#: the Iceberg catalog and tables over the data files: neither commits nor data files of ours
ICEBERG = "iceberg"
#: a commit's name: its number, zero-padded so that names sort as numbers
_DIGITS = 10


def commit_key(number: int) -> str:
    return f"{COMMITS}/{number:0{_DIGITS}d}.json"


def commit_number(key: str) -> int | None:
    """The number of the commit at ``key`` (``commits/0000000007.json``), or None for anything else."""
    folder, _, name = key.rpartition("/")
    stem = name[: -len(".json")] if name.endswith(".json") else ""
    return int(stem) if folder == COMMITS and len(stem) == _DIGITS and stem.isdigit() else None


def data_key(table: str, project: str | None, month: str) -> str:
    """A new data file's key: Hive-style partitions (``project=<p>``, the name percent-quoted, ``_``
    for a run with no project; ``month=<YYYY-MM>`` of the runs' start), a name no other file has."""
    part = urllib.parse.quote(project, safe="") if project else "_"
    return f"{table}/project={part}/month={month}/part-{uuid.uuid4().hex}.parquet"


class Warehouse(Protocol):
    """A store's ``.warehouse``: its commits and data files, whatever the store is made of."""

    def commits(self) -> list[int]:
        """The numbers of the commits there are, in order."""
        ...

    def read_commit(self, number: int) -> dict[str, Any] | None: ...

    def create_commit(self, number: int, body: dict[str, Any]) -> bool:
        """Put commit ``number`` only if there is none yet; False if another compactor's is there."""
        ...

    def scratch(self) -> Path:
        """A local folder to write data files in before ``put_data`` (a folder store's is inside its
        warehouse, so a file left there by a killed compactor is cleaned like any uncommitted one)."""
        ...

    def put_data(self, key: str, path: Path) -> None:
        """The local file ``path`` (written in ``scratch()``) as the data file ``key``; ``path`` is gone."""
        ...

    def has_data(self, key: str) -> bool: ...

    def data_files(self, under: str | None = None) -> list[tuple[str, float]]:
        """``(key, unix time written)`` of every data file, committed or not; with ``under``, of
        every file in that folder of the warehouse (the files Iceberg wrote for a table)."""
        ...

    def delete(self, key: str) -> None: ...

    def local_file(self, key: str) -> Path | None:
        """A local file holding the data file ``key`` (a bucket's downloaded once), None if there is none."""
        ...

    def location(self, key: str) -> str:
        """Where engines other than tunetrack find ``key``: an absolute path, or the object's URL."""
        ...


def _dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def _loads(data: bytes | None) -> dict[str, Any] | None:
    try:
        body = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class FolderWarehouse:
    """``<folder store>/.warehouse``: a commit is linked into place (``os.link`` fails if the name is
    taken, and a reader never sees half a commit)."""

    def __init__(self, root: Path) -> None:
        self.root = root / WAREHOUSE

    def commits(self) -> list[int]:
        try:
            names = os.listdir(self.root / COMMITS)
        except OSError:
            return []
        return sorted(n for name in names if (n := commit_number(f"{COMMITS}/{name}")) is not None)

    def read_commit(self, number: int) -> dict[str, Any] | None:
        try:
            return _loads((self.root / commit_key(number)).read_bytes())
        except OSError:
            return None

    def create_commit(self, number: int, body: dict[str, Any]) -> bool:
        path = self.root / commit_key(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        with open(tmp, "wb") as f:
            f.write(_dumps(body))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def scratch(self) -> Path:
        path = self.root / ".scratch"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def put_data(self, key: str, path: Path) -> None:
        target = self.root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "rb") as f:
            os.fsync(f.fileno())  # on disk before a commit names it
        os.replace(path, target)

    def has_data(self, key: str) -> bool:
        return (self.root / key).is_file()

    def data_files(self, under: str | None = None) -> list[tuple[str, float]]:
        out = []
        for folder, dirs, files in os.walk(self.root / under if under else self.root):
            if Path(folder) == self.root:
                dirs[:] = [d for d in dirs if d not in (COMMITS, ICEBERG)]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    out.append(
                        (os.path.relpath(path, self.root).replace(os.sep, "/"), os.stat(path).st_mtime)
                    )
                except OSError:
                    continue
        return out

    def delete(self, key: str) -> None:
        (self.root / key).unlink(missing_ok=True)

    def local_file(self, key: str) -> Path | None:
        path = self.root / key
        return path if path.is_file() else None

    def location(self, key: str) -> str:
        return str(self.root.resolve() / key)


class BucketWarehouse:
    """``<bucket store>/.warehouse/``: a commit is a create-only put."""

    def __init__(self, blobs: Blobs, cache: ObjectCache) -> None:
        self.blobs, self.cache = blobs, cache

    def _key(self, key: str) -> str:
        return f"{WAREHOUSE}/{key}"

    def commits(self) -> list[int]:
        prefix = f"{WAREHOUSE}/"
        blobs = self.blobs.list_blobs(f"{prefix}{COMMITS}/")
        return sorted(n for b in blobs if (n := commit_number(b.key[len(prefix) :])) is not None)

    def read_commit(self, number: int) -> dict[str, Any] | None:
        key = self._key(commit_key(number))
        data = self.cache.get(key)  # immutable: kept for good
        if data is None:
            data = self.blobs.get(key)
            if data is not None:
                self.cache.put(key, data)
        return _loads(data)

    def create_commit(self, number: int, body: dict[str, Any]) -> bool:
        return self.blobs.put(self._key(commit_key(number)), _dumps(body), create=True)

    def scratch(self) -> Path:
        return Path(tempfile.gettempdir())

    def put_data(self, key: str, path: Path) -> None:
        try:
            self.blobs.put_file(self._key(key), path)  # in parts where it is large
        finally:
            path.unlink(missing_ok=True)

    def has_data(self, key: str) -> bool:
        return self.blobs.head(self._key(key)) is not None

    def data_files(self, under: str | None = None) -> list[tuple[str, float]]:
        prefix = f"{WAREHOUSE}/"
        return [
            (b.key[len(prefix) :], b.mtime)
            for b in self.blobs.list_blobs(f"{prefix}{under}/" if under else prefix)
            if under or not b.key[len(prefix) :].startswith((f"{COMMITS}/", f"{ICEBERG}/"))
        ]

    def delete(self, key: str) -> None:
        self.blobs.delete(self._key(key))

    def location(self, key: str) -> str:
        return f"{self.blobs.url}/{self._key(key)}"

    def local_file(self, key: str) -> Path | None:
        """Downloaded once into the cache (a data file is never rewritten: its key is its version),
        streamed to a temporary name first, so a torn download is never taken for the file."""
        full = self._key(key)
        found = self.cache.file(full)
        if found is not None:
            return found
        target = self.cache.root / full
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            self.blobs.get_file(full, tmp)
            os.replace(tmp, target)
        except OSError:
            return None
        return target


def warehouse_of(store: Store) -> Warehouse:
    """The warehouse of ``store``: a folder's, or a bucket's (``remote.ObjectStore``)."""
    if isinstance(store, LocalStore):
        return FolderWarehouse(store.root)
    blobs, cache = getattr(store, "blobs", None), getattr(store, "cache", None)
    if blobs is None or not isinstance(cache, ObjectCache):
        raise ValueError(f"{store} keeps no compacted data (neither a folder nor a bucket)")
    return BucketWarehouse(blobs, cache)
