"""Object storage as a few blob operations: put (optionally only if absent), get, list, delete.

``open_blobs(url)`` picks the client: obstore (``tunetrack[s3]``, ``[gcs]``, ``[azure]``) for
``s3://``, ``gs://``, ``az://``/``abfs://`` and ``file://``; fsspec for any other fsspec URL
(``memory://`` in tests). Credentials and endpoints come from each ecosystem's own environment
(for S3: ``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, instance roles; profiles through boto3 when it
is installed); nothing here stores them. Every failure to reach the store is raised as
``StoreUnavailable`` (an ``OSError``), so callers treat object storage like a disk that can fail.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import one_line

#: URL schemes obstore serves; any other scheme goes to fsspec.
OBSTORE_SCHEMES = ("s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "adl", "file")


class StoreUnavailable(OSError):
    """The object store could not be reached, or refused the request."""


@dataclass(frozen=True)
class Blob:
    key: str  # relative to the store's prefix
    size: int
    mtime: float  # unix time of the last write, as the store reports it
    etag: str | None


class Blobs(Protocol):
    """What tunetrack needs of an object store. Keys are relative to ``url``."""

    url: str

    def put(self, key: str, data: bytes, create: bool = False) -> bool:
        """Store ``data`` at ``key``; with ``create``, only if no object is there (False if one is)."""
        ...

    def get(self, key: str) -> bytes | None:
        """The object's bytes, or None if there is none."""
        ...

    def get_with_meta(self, key: str) -> tuple[bytes, Blob] | None:
        """The object's bytes and what a listing says of it, or None if there is none."""
        ...

    def list_blobs(self, prefix: str = "", after: str | None = None) -> list[Blob]:
        """Every object under ``prefix``, recursively (only keys sorting after ``after``, if given)."""
        ...

    def list_dirs(self, prefix: str = "") -> list[str]:
        """The ``folder/`` names directly under ``prefix``."""
        ...

    def head(self, key: str) -> Blob | None:
        """What a listing says of the object at ``key``, without its bytes; None if there is none."""
        ...

    def put_file(self, key: str, path: Path) -> None:
        """Store the file at ``path`` at ``key``, streamed (in parts where it is large)."""
        ...

    def get_file(self, key: str, path: Path) -> None:
        """Write the object at ``key`` to the file ``path``, streamed."""
        ...

    def delete(self, key: str) -> None: ...


def is_url(dir: str | os.PathLike[str]) -> bool:
    """Whether a store's dir is an object-store URL (``scheme://...``) rather than a folder."""
    text = os.fspath(dir)
    return "://" in text and text.split("://", 1)[0].isidentifier()


def open_blobs(url: str) -> Blobs:
    scheme = url.split("://", 1)[0].lower()
    return ObstoreBlobs(url) if scheme in OBSTORE_SCHEMES else FsspecBlobs(url)


# == obstore ======================================================================================
def _obstore() -> Any:
    try:
        import obstore
    except ImportError:
        raise ImportError(
            "object-store runs need obstore: pip install 'tunetrack[s3]' (or [gcs], [azure])"
        ) from None
    return obstore


class ObstoreBlobs:
    """obstore's stores: one Rust client per URL, retries and credentials handled by it."""

    def __init__(self, url: str, store: Any = None) -> None:
        self.url = url.rstrip("/")
        obs = _obstore()
        self._obs = obs
        self._store = store if store is not None else self._make_store(obs, self.url)
        from obstore import exceptions

        self._errors = exceptions

    @staticmethod
    def _make_store(obs: Any, url: str) -> Any:
        from obstore.store import from_url

        scheme = url.split("://", 1)[0].lower()
        if scheme == "file":
            os.makedirs(url.split("://", 1)[1], exist_ok=True)
            return from_url(url)
        options: dict[str, Any] = {}
        if scheme in ("s3", "s3a"):
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            if endpoint and endpoint.startswith("http://"):
                options["client_options"] = {"allow_http": True}  # a local S3-compatible server
            provider = _boto3_credentials()
            if provider is not None:
                options["credential_provider"] = provider
        try:
            return from_url(url, **options)
        except Exception as exc:  # a malformed URL or missing settings: a setup mistake, said once
            raise ValueError(f"cannot open object store {url!r}: {one_line(exc)}") from None

    def _fail(self, what: str, key: str, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"{what} {self.url}/{key} failed: {one_line(exc)}")

    def put(self, key: str, data: bytes, create: bool = False) -> bool:
        try:
            self._obs.put(self._store, key, data, mode="create" if create else "overwrite")
        except self._errors.AlreadyExistsError:
            return False
        except Exception as exc:
            raise self._fail("writing", key, exc) from None
        return True

    def get(self, key: str) -> bytes | None:
        found = self.get_with_meta(key)
        return found[0] if found is not None else None

    def get_with_meta(self, key: str) -> tuple[bytes, Blob] | None:
        try:
            result = self._obs.get(self._store, key)
            return bytes(result.bytes()), _blob(result.meta)
        except (self._errors.NotFoundError, FileNotFoundError):
            return None
        except Exception as exc:
            raise self._fail("reading", key, exc) from None

    def head(self, key: str) -> Blob | None:
        try:
            return _blob(self._obs.head(self._store, key))
        except (self._errors.NotFoundError, FileNotFoundError):
            return None
        except Exception as exc:
            raise self._fail("reading", key, exc) from None

    def put_file(self, key: str, path: Path) -> None:
        try:
            self._obs.put(self._store, key, Path(path))  # multipart above obstore's chunk size
        except Exception as exc:
            raise self._fail("writing", key, exc) from None

    def get_file(self, key: str, path: Path) -> None:
        try:
            with open(path, "wb") as f:
                for chunk in self._obs.get(self._store, key).stream():
                    f.write(chunk)
        except Exception as exc:
            raise self._fail("reading", key, exc) from None

    def list_blobs(self, prefix: str = "", after: str | None = None) -> list[Blob]:
        try:
            out = []
            for batch in self._obs.list(self._store, prefix or None, offset=after):
                out += [_blob(meta) for meta in batch]
            return out
        except Exception as exc:
            raise self._fail("listing", prefix, exc) from None

    def list_dirs(self, prefix: str = "") -> list[str]:
        try:
            result = self._obs.list_with_delimiter(self._store, prefix or None)
        except Exception as exc:
            raise self._fail("listing", prefix, exc) from None
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in result["common_prefixes"]]

    def delete(self, key: str) -> None:
        try:
            self._obs.delete(self._store, key)
        except (self._errors.NotFoundError, FileNotFoundError):
            pass
        except Exception as exc:
            raise self._fail("deleting", key, exc) from None


def _blob(meta: Any) -> Blob:
    modified = meta["last_modified"]
    return Blob(meta["path"], int(meta["size"]), modified.timestamp(), meta.get("e_tag"))


def _boto3_credentials() -> Any:
    """AWS profiles, SSO and assume-role through boto3's credential chain, when boto3 is installed and
    a profile is configured (obstore alone reads only the environment and instance metadata)."""
    if not (os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")):
        return None
    try:
        from obstore.auth.boto3 import Boto3CredentialProvider

        return Boto3CredentialProvider()
    except Exception:
        return None


# == fsspec =======================================================================================
_fsspec_lock = threading.Lock()


class FsspecBlobs:
    """Any other fsspec filesystem (``memory://``, ``hdfs://``, ...)."""

    def __init__(self, url: str) -> None:
        try:
            import fsspec
        except ImportError:
            raise ImportError(f"{url.split('://')[0]}:// stores need fsspec: pip install fsspec") from None
        self.url = url.rstrip("/")
        self._fs, self._root = fsspec.core.url_to_fs(self.url)
        self._root = self._root.rstrip("/")

    def _path(self, key: str) -> str:
        return f"{self._root}/{key}" if key else self._root

    def put(self, key: str, data: bytes, create: bool = False) -> bool:
        try:
            with _fsspec_lock:  # fsspec's create mode is not atomic on every filesystem
                if create and self._fs.exists(self._path(key)):
                    return False
                self._fs.pipe_file(self._path(key), data)
        except Exception as exc:
            raise StoreUnavailable(f"writing {self.url}/{key} failed: {one_line(exc)}") from None
        return True

    def get(self, key: str) -> bytes | None:
        try:
            return bytes(self._fs.cat_file(self._path(key)))
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise StoreUnavailable(f"reading {self.url}/{key} failed: {one_line(exc)}") from None

    def get_with_meta(self, key: str) -> tuple[bytes, Blob] | None:
        data = self.get(key)
        if data is None:
            return None
        found = [b for b in self._walk(key) if b.key == key]
        return (data, found[0]) if found else None

    def _walk(self, prefix: str) -> Iterator[Blob]:
        base = self._path(prefix.rstrip("/")) if prefix else self._root
        try:
            found = self._fs.find(base, detail=True) if self._fs.exists(base) else {}
        except FileNotFoundError:
            return
        for path, info in found.items():
            key = path[len(self._root) + 1 :] if path.startswith(self._root + "/") else path.lstrip("/")
            if key.startswith(prefix):
                mtime = info.get("mtime") or info.get("created") or 0.0
                mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime)
                yield Blob(key, int(info.get("size") or 0), mtime, str(info.get("size")) + f"-{mtime}")

    def head(self, key: str) -> Blob | None:
        found = [b for b in self._walk(key) if b.key == key]
        return found[0] if found else None

    def put_file(self, key: str, path: Path) -> None:
        try:
            self._fs.put_file(os.fspath(path), self._path(key))
        except Exception as exc:
            raise StoreUnavailable(f"writing {self.url}/{key} failed: {one_line(exc)}") from None

    def get_file(self, key: str, path: Path) -> None:
        try:
            self._fs.get_file(self._path(key), os.fspath(path))
        except Exception as exc:
            raise StoreUnavailable(f"reading {self.url}/{key} failed: {one_line(exc)}") from None

    def list_blobs(self, prefix: str = "", after: str | None = None) -> list[Blob]:
        try:
            return [b for b in self._walk(prefix) if after is None or b.key > after]
        except Exception as exc:
            raise StoreUnavailable(f"listing {self.url}/{prefix} failed: {one_line(exc)}") from None

    def list_dirs(self, prefix: str = "") -> list[str]:
        base = self._path(prefix.rstrip("/")) if prefix else self._root
        try:
            entries = self._fs.ls(base, detail=True) if self._fs.exists(base) else []
        except Exception as exc:
            raise StoreUnavailable(f"listing {self.url}/{prefix} failed: {one_line(exc)}") from None
        return [e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory"]

    def delete(self, key: str) -> None:
        try:
            self._fs.rm_file(self._path(key))
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise StoreUnavailable(f"deleting {self.url}/{key} failed: {one_line(exc)}") from None
