"""One writing process's files in a run folder of a folder store (or of a spool): its records, its
metadata and end record, its edits and media. Each change a listing shows is recorded in the store's
index (``folder_index``)."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

from ..jsonfile import write_json_atomic
from . import layout
from .ends import EndRecord
from .folder_index import FolderIndex
from .framing import frame
from .process_meta import ProcessMeta


def write_edit(run_dir: Path, name: str, body: dict[str, Any]) -> None:
    """Create the edit ``name`` of the run in ``run_dir`` (``layout``: one file per edit, never
    changed). Written again with the same name (a second ``tunetrack sync``) it stays as it was; a
    run folder that is gone (deleted) is not made again."""
    path = run_dir / f"{name}{layout.EDIT_SUFFIX}"
    if not path.exists():
        write_json_atomic(path, body)


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` at ``path``, replaced whole: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class ProcessFiles:
    """One writing process's files in a run folder. Called only from that process's writer thread.
    Each change a listing shows (it started, an edit, it ended) is recorded in the store's ``index``."""

    def __init__(self, run_dir: Path, proc: str, index: FolderIndex | None = None) -> None:
        self.run_dir = run_dir
        self.index = index
        self.data_path = run_dir / f"{proc}{layout.DATA_SUFFIX}"
        self.proc_path = run_dir / f"{proc}{layout.PROC_SUFFIX}"
        self.end_path = run_dir / f"{proc}{layout.END_SUFFIX}"
        self.console_path = run_dir / f"{proc}{layout.CONSOLE_SUFFIX}"
        self._file: Any = None
        self._dirty = False

    def open(self, proc_meta: ProcessMeta) -> None:
        write_json_atomic(self.proc_path, proc_meta)
        self._file = open(self.data_path, "ab", buffering=1 << 20)  # noqa: SIM115 - open for the run
        if self.index is not None:
            self.index.record(self.run_dir)

    def append(self, payload: bytes) -> None:
        """Add one record (its payload, as ``codec.pack`` made it)."""
        self._file.write(frame(payload))
        self._dirty = True

    def flush(self, fsync: bool = False) -> None:
        if self._dirty:
            self._file.flush()
            self._dirty = False
        if fsync:
            os.fsync(self._file.fileno())

    def heartbeat(self) -> None:
        """Readers call a run crashed when this file's mtime goes stale, so touch it while alive."""
        os.utime(self.data_path)

    def size(self) -> int:
        """Bytes of records written to the file so far (whole records, after a ``flush``)."""
        return self._file.tell() if self._file is not None else self.data_path.stat().st_size

    def edit(self, name: str, body: dict[str, Any]) -> None:
        """An edit of the run (``Tracker.name = ...``): a file of its own, written at once."""
        write_edit(self.run_dir, name, body)
        if self.index is not None:
            self.index.record(self.run_dir)

    def summarize(self, last_step: int | None, last_values: dict[str, Any]) -> None:
        """A folder needs no listing index: readers take the last values from the end record."""

    def put_file(self, rel: str, data: bytes) -> None:
        """A file of the run besides the records (an image), at ``rel`` inside the run folder."""
        path = self.run_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)

    def close(self, end: EndRecord) -> None:
        try:
            if self._file is not None:
                self.flush(fsync=True)
                self._file.close()
        finally:
            self._file = None
            write_json_atomic(self.end_path, {**end, "time": end.get("time", time.time())})
            if self.index is not None:
                self.index.record(self.run_dir)
                self.index.compact_if_due()
