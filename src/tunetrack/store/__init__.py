"""The run store: where runs live, what their files are called (``layout``), what their records hold
(``codec``) and how each record is enveloped (``framing``). ``open_store`` gives the store at a
dir: a folder (``local``) or an object-store URL (``remote``, with ``upload`` and ``cache``).
``base`` says what every store offers the writer and the readers."""

from __future__ import annotations

import os
from pathlib import Path

from .base import ProcessWriter, RunFolder, Store
from .blobs import StoreUnavailable, is_url
from .local import LocalRun, LocalStore


def open_store(dir: str | os.PathLike[str], upload_interval: float | None = None) -> Store:
    """The store at ``dir``: a folder (it need not exist yet; ``file://`` names one too), or an
    object-store URL (``s3://bucket/prefix``, ``gs://``, ``az://``, any fsspec URL)."""
    if is_url(dir):
        url = os.fspath(dir)
        if url.startswith("file://"):
            return LocalStore(Path(url[len("file://") :]))
        from .remote import ObjectStore

        return ObjectStore(url, upload_interval=upload_interval)
    return LocalStore(Path(dir))


__all__ = [
    "LocalRun",
    "LocalStore",
    "ProcessWriter",
    "RunFolder",
    "Store",
    "StoreUnavailable",
    "is_url",
    "open_store",
]
