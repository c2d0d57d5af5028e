"""What a store is to the writer and to the readers, whatever it is made of (a folder, a bucket).

A ``Store`` creates runs and opens one writing process's files (a ``ProcessWriter``); readers get a
run's files read-only (a ``RunFolder``). ``LocalStore`` (a folder) and ``ObjectStore`` (a bucket, with
a local spool) implement them.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from .ends import EndRecord
from .process_meta import ProcessMeta


class ProcessWriter(Protocol):
    """One writing process's files in a run. Called only from that process's writer thread."""

    #: the local file the process's console recorder appends to (``writer/console_recorder.py``, another
    #: process): in the run's folder, or in the spool, from where the uploader sends it
    console_path: Path

    def append(self, payload: bytes) -> None:
        """Add one record (``codec.pack``'s payload)."""
        ...

    def flush(self, fsync: bool = False) -> None: ...

    def heartbeat(self) -> None:
        """Show readers the process is alive."""
        ...

    def put_file(self, rel: str, data: bytes) -> None:
        """A file of the run besides the records (an image), at ``rel`` inside the run."""
        ...

    def edit(self, name: str, body: dict[str, Any]) -> None:
        """An edit of the run (``layout``: its own record, named ``name``), made by this process."""
        ...

    def summarize(self, last_step: int | None, last_values: dict[str, Any]) -> None:
        """What listings show of the run while it is written (stores that keep a listing index)."""
        ...

    def close(self, end: EndRecord) -> None:
        """Record how the process ended; the last call."""
        ...


class RunFolder(Protocol):
    """A run's files, read-only. A missing or unreadable file reads as absent."""

    def run_json(self) -> dict[str, Any] | None: ...

    def where(self, proc: str) -> str:
        """Where ``proc``'s records are, for messages."""
        ...

    def processes(self) -> list[str]: ...

    def process_meta(self, proc: str) -> ProcessMeta | None: ...

    def process_end(self, proc: str) -> EndRecord | None: ...

    def data_size(self, proc: str, suffix: str = ...) -> int:
        """The size of ``proc``'s records (``suffix``: ``layout.DATA_SUFFIX``, or ``CONSOLE_SUFFIX`` for
        its console)."""
        ...

    def read_data(self, proc: str, offset: int = 0, suffix: str = ...) -> bytes:
        """``proc``'s record bytes (of its data, or ``suffix``'s file) from ``offset`` on."""
        ...

    def heartbeat(self, proc: str) -> float | None:
        """When ``proc`` last showed it was alive (unix time), or None."""
        ...

    def signature(self) -> tuple[Any, ...]:
        """Changes whenever a process of the run writes, ends, or starts (looked at afresh)."""
        ...

    def refresh(self) -> None:
        """Look at the run afresh next time (a store that lists a run's files once forgets them)."""
        ...

    def edits(self) -> list[tuple[str, dict[str, Any]]]:
        """``(name, body)`` of every edit of the run (``tunetrack.edits``), in no particular order."""
        ...

    def indexed(self) -> bool:
        """Whether the store's index answered for the run (its small files were not read)."""
        ...

    def summary(self) -> dict[str, Any] | None:
        """What the store keeps for listings (an object store's index entry), or None: then the run's
        state and last values are derived from its processes."""
        ...

    def media(self) -> list[str]:
        """Every media file of the run (``media/...``)."""
        ...

    def read_media(self, rel: str) -> bytes | None: ...

    def parquet_file(self, table: str) -> Path | None:
        """A local file holding the run's Parquet copy of ``table`` (``layout.parquet_name``): the
        folder's own file, or a bucket's object downloaded into the cache; None if there is none."""
        ...


class Store(Protocol):
    """A run store. ``str(store)`` names it as the user would (a folder, a URL)."""

    def run_dir(self, run_id: str) -> Path | str:
        """Where a run is: its folder, or its URL."""
        ...

    def create_run(self, run_id: str, data: dict[str, Any]) -> bool:
        """Create the run exactly once; False if another process created it first."""
        ...

    def open_process(self, run_id: str, proc: str, meta: ProcessMeta) -> ProcessWriter: ...

    def publish_job(self, job_key: str, run_id: str) -> None: ...

    def wait_for_job(
        self, job_key: str, not_before: float, timeout: float, stop: threading.Event
    ) -> str | None: ...

    def receive(self, run_id: str, proc: str, copy: Any) -> None:
        """Take in part of a process copied from another store (``local.ProcessCopy``)."""
        ...

    def put_edit(self, run_id: str, name: str, body: dict[str, Any]) -> None:
        """Add the edit ``name`` to the run; putting the same edit again changes nothing."""
        ...

    def stop_request(self, run_id: str) -> dict[str, Any] | None:
        """The body of the run's request to stop (``layout.STOP_EDIT``), read now, or None: what a live
        run's process looks at every few seconds (``tracker.control``): one stat, or one GET."""
        ...

    def put_audit(self, name: str, body: dict[str, Any]) -> None:
        """Add the audit record ``name`` (``layout.AUDIT_DIR``: what outlives the run it is about),
        created only if absent."""
        ...

    def audit(self) -> list[tuple[str, dict[str, Any]]]:
        """``(name, body)`` of every audit record, in no particular order."""
        ...

    def put_parquet(self, run_id: str, table: str, data: bytes) -> None:
        """Put the run's Parquet copy of ``table``, replacing the one there (whole, never half)."""
        ...

    def delete_run(self, run_id: str) -> None:
        """Remove the run and everything of it the store keeps (nothing if there is no such run)."""
        ...

    def run(self, run_id: str, stamp: Any = None) -> RunFolder | None:
        """The run ``run_id``, or None if the store holds no such run. ``stamp``: what ``entries()``
        just gave for it, where the caller has it (a folder store then looks at the folder once)."""
        ...

    def entries(self) -> list[tuple[str, Any]]:
        """``(run id, stamp)`` for every run (perhaps a few folders that are not runs): a stamp changes
        when the run's listing changes."""
        ...

    def created_times(self) -> dict[str, float]:
        """When each run was created, for the runs the store can date without reading them (its
        index, as the last ``entries()`` found it): a listing of the newest few orders 100,000 runs
        by it and opens only those it shows."""
        ...

    def reindex(self) -> int:
        """Rebuild the store's index from the runs alone (``tunetrack reindex``): the runs indexed."""
        ...

    def keep_listed(self, kept: dict[str, dict[str, Any]], present: set[str]) -> None:
        """Keep what a reader read of ended runs for the next listing (``reader.listing_cache.entry``), and
        forget runs not ``present``; a store with an index of its own ignores it."""
        ...

    def read_kept(self, name: str) -> Any:
        """What a reader kept under ``name`` (``keep``), or None (a store that keeps nothing)."""
        ...

    def keep(self, name: str, data: Any) -> None:
        """Keep ``data``, derived from the runs by a reader, for the next reader (best effort)."""
        ...
