"""The run store in a folder of the local filesystem (or a network filesystem: NFS, Lustre); also
the spool of a run written to object storage.

``LocalStore`` is the store as a whole: it creates runs, opens a writing process's files
(``ProcessFiles``, used only by that process's writer thread), publishes distributed jobs, and gives
readers the runs it holds (``LocalRun``: a run folder's files, read-only). Names come from
``layout``; what the data files hold is ``codec``'s business, their envelope ``framing``'s.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from ..gc_pause import no_cyclic_gc
from ..jsonfile import read_json, write_json_atomic
from . import ends, jobs, layout
from .ends import EndRecord
from .folder_index import FolderIndex, Listed
from .process_files import ProcessFiles, write_atomic, write_edit
from .process_meta import ProcessMeta
from .process_meta import read as read_meta


@dataclass
class ProcessCopy:
    """Part of a writing process, copied from one store to another (``tunetrack sync``)."""

    run: dict[str, Any]  # the run's run.json (created in the destination if it has no such run)
    meta: ProcessMeta | None
    start: int  # where ``data`` goes in the process's records: the bytes the destination already has
    data: bytes
    end: EndRecord | None
    media: dict[str, bytes] = field(default_factory=dict)
    beat: float | None = None  # when the process last showed it was alive
    last: dict[str, Any] | None = None  # its last step and values, for listings
    console_start: int = 0  # as ``start``, for its console
    console: bytes = b""


#: a folder whose mtime is younger than this may change again within the same mtime (timestamps are
#: coarse): what was read of it is not kept for listings
SETTLE_NS = 1_000_000_000


class LocalRun:
    """A run folder, read-only: what readers see of a run. Missing or unreadable files read as
    absent (a reader never fails on one file).

    ``stamp``: the folder's mtime when it was opened, where it is old enough to tell every later
    change (``SETTLE_NS``), or the index's stamp of ``listed``: what the store's index holds of the
    run (its run.json, its processes' metadata and end records, its edits), which then answer
    without reading the run's files."""

    def __init__(self, path: Path | str, stamp: int | None = None, listed: Listed | None = None) -> None:
        self._path = path  # a str until asked for: a listing of 10,000 listed runs asks for few paths
        self.stamp = stamp
        self.listed = listed
        self._decoded: dict[str, Any] | None = None

    @property
    def path(self) -> Path:
        if isinstance(self._path, str):
            self._path = Path(self._path)
        return self._path

    def __str__(self) -> str:
        return str(self.path)

    def run_json(self) -> dict[str, Any] | None:
        if self.listed is not None:
            return self.listed.run
        return read_json(self.path / layout.RUN_JSON)

    def where(self, proc: str) -> str:
        """Where ``proc``'s records are, for messages."""
        return str(self.path / f"{proc}{layout.DATA_SUFFIX}")

    def processes(self) -> list[str]:
        """The writing processes, by name."""
        if self.listed is not None:
            return sorted(p["name"] for p in self._rest()["processes"])
        names = (layout.proc_of(p.name) for p in self.path.glob(f"*{layout.PROC_SUFFIX}"))
        return sorted(name for name in names if name is not None)

    def _rest(self) -> dict[str, Any]:
        """The index's processes and edits of the run, decoded once."""
        if self._decoded is None and self.listed is not None:
            self._decoded = self.listed.rest
        return self._decoded or {"processes": [], "edits": []}

    def process_meta(self, proc: str) -> ProcessMeta | None:
        return read_meta(read_json(self.path / f"{proc}{layout.PROC_SUFFIX}"))

    def process_end(self, proc: str) -> EndRecord | None:
        return ends.read(read_json(self.path / f"{proc}{layout.END_SUFFIX}"))

    def data_size(self, proc: str, suffix: str = layout.DATA_SUFFIX) -> int:
        if self.listed is not None and suffix == layout.DATA_SUFFIX:  # as it ended: no stat
            size = next((p.get("bytes") for p in self._rest()["processes"] if p["name"] == proc), None)
            if isinstance(size, int):
                return size
        try:
            return (self.path / f"{proc}{suffix}").stat().st_size
        except OSError:
            return 0

    def read_data(self, proc: str, offset: int = 0, suffix: str = layout.DATA_SUFFIX) -> bytes:
        """The process's record bytes (or its console's, ``suffix``) from ``offset`` on (what it has
        written so far)."""
        try:
            with open(self.path / f"{proc}{suffix}", "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return b""

    def heartbeat(self, proc: str) -> float | None:
        """When the process last showed it was alive (its writer touches the data file), or None."""
        try:
            return (self.path / f"{proc}{layout.DATA_SUFFIX}").stat().st_mtime
        except OSError:
            return None

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """Changes whenever a process of the run writes, ends, or starts. Looked at afresh: from now
        on the run is read from its own files, not from what a listing kept."""
        self.listed, self._decoded = None, None
        out = []
        try:
            with os.scandir(self.path) as entries:
                for entry in entries:
                    if entry.is_file():
                        st = entry.stat()
                        out.append((entry.name, st.st_size, st.st_mtime_ns))
        except OSError:
            pass
        return tuple(sorted(out))

    def edits(self) -> list[tuple[str, dict[str, Any]]]:
        """``(name, body)`` of every edit of the run, in no particular order."""
        if self.listed is not None:
            return [(name, body) for name, body in self._rest()["edits"]]
        out = []
        for path in self.path.glob(f"*{layout.EDIT_SUFFIX}"):
            name = layout.edit_of(path.name)
            body = read_json(path) if name is not None else None
            if name is not None and body is not None:
                out.append((name, body))
        return out

    def indexed(self) -> bool:
        return self.listed is not None

    def summary(self) -> dict[str, Any] | None:
        """The processes as the store's index holds them (no file read), or None: listings read the
        folder's own small files."""
        return {"processes": self._rest()["processes"]} if self.listed is not None else None

    def refresh(self) -> None:
        """Look at the folder itself from now on (not at what a listing kept of it)."""
        self.listed, self._decoded = None, None

    def media(self) -> list[str]:
        """Every media file of the run (``media/...``)."""
        base = self.path / layout.MEDIA_DIR
        return sorted(
            p.relative_to(self.path).as_posix()
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    def read_media(self, rel: str) -> bytes | None:
        """A media file of the run (``media/...``), or None if there is none there. A path that would
        leave the run's media folder names none."""
        base = (self.path / layout.MEDIA_DIR).resolve()
        target = (self.path / rel).resolve()
        if not target.is_relative_to(base) or not target.is_file():
            return None
        try:
            return target.read_bytes()
        except OSError:
            return None

    def parquet_file(self, table: str) -> Path | None:
        """The run's Parquet copy of ``table``, if it has one."""
        path = self.path / layout.parquet_name(table)
        return path if path.is_file() else None


class LocalStore:
    """A run store rooted at a folder: ``./tunetrack_runs``, ``$TUNETRACK_DIR`` or ``dir=``."""

    def __init__(self, root: Path, indexed: bool = True) -> None:
        self.root = root
        self._root_text = str(root)
        #: what listings read (``folder_index``); a writer's private spool keeps none
        self.index = FolderIndex(root) if indexed else None

    def __str__(self) -> str:
        return str(self.root)

    # -- writing ---------------------------------------------------------------------------------
    def create_run(self, run_id: str, data: dict[str, Any]) -> bool:
        """Create the run's ``run.json`` exactly once; False if another process created it first."""
        run_dir = self.root / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(run_dir / layout.RUN_JSON, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, allow_nan=True, default=str)
        self._indexed(run_id)
        return True

    def _indexed(self, run_id: str) -> None:
        """Record the run's state in the index, after a change a listing shows."""
        if self.index is not None:
            self.index.record(self.root / run_id)

    def open_process(self, run_id: str, proc: str, meta: ProcessMeta) -> ProcessFiles:
        """This process's files in the run, its metadata written."""
        files = ProcessFiles(self.root / run_id, proc, self.index)
        files.open(meta)
        return files

    def publish_job(self, job_key: str, run_id: str) -> None:
        jobs.publish(self.root, job_key, run_id)

    def wait_for_job(
        self, job_key: str, not_before: float, timeout: float, stop: threading.Event
    ) -> str | None:
        return jobs.wait_for(self.root, job_key, not_before, timeout, stop)

    def receive(self, run_id: str, proc: str, copy: ProcessCopy) -> None:
        """Take in part of a process copied from another store (``tunetrack sync``): its metadata, the
        record bytes from ``copy.start`` on (this store holds the bytes before), media, its end."""
        run_dir = self.root / run_id
        self.create_run(run_id, copy.run)
        meta_path = run_dir / f"{proc}{layout.PROC_SUFFIX}"
        if copy.meta is not None and not meta_path.exists():
            write_json_atomic(meta_path, copy.meta)
        for suffix, start, data in (
            (layout.DATA_SUFFIX, copy.start, copy.data),
            (layout.CONSOLE_SUFFIX, copy.console_start, copy.console),
        ):
            if data:
                with open(run_dir / f"{proc}{suffix}", "ab") as f:
                    if f.tell() != start:
                        raise OSError(
                            f"{run_dir / proc}{suffix}: holds {f.tell()} bytes, not the {start} the copy follows"
                        )
                    f.write(data)
        for rel, data in copy.media.items():
            ProcessFiles(run_dir, proc).put_file(rel, data)
        if copy.beat is not None:
            data_path = run_dir / f"{proc}{layout.DATA_SUFFIX}"
            if data_path.exists():
                os.utime(data_path, (copy.beat, copy.beat))
        if copy.end is not None:
            write_json_atomic(run_dir / f"{proc}{layout.END_SUFFIX}", copy.end)
        self._indexed(run_id)

    def put_edit(self, run_id: str, name: str, body: dict[str, Any]) -> None:
        """Add an edit to the run (``write_edit``)."""
        write_edit(self.root / run_id, name, body)
        self._indexed(run_id)

    def stop_request(self, run_id: str) -> dict[str, Any] | None:
        """The run folder's stop edit (``layout.STOP_EDIT``)."""
        path = self.root / run_id / f"{layout.STOP_EDIT}{layout.EDIT_SUFFIX}"
        return read_json(path) if path.exists() else None

    def put_audit(self, name: str, body: dict[str, Any]) -> None:
        """An audit record: a file of ``.audit/``, written once."""
        folder = self.root / layout.AUDIT_DIR
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.json"
        if not path.exists():
            write_json_atomic(path, body)

    def audit(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for path in sorted((self.root / layout.AUDIT_DIR).glob("*.json")):
            body = read_json(path)
            if body is not None:
                out.append((path.stem, body))
        return out

    def put_parquet(self, run_id: str, table: str, data: bytes) -> None:
        """The run's Parquet copy of ``table``, replaced whole (a run folder that is gone stays gone)."""
        run_dir = self.root / run_id
        if run_dir.is_dir():
            write_atomic(run_dir / layout.parquet_name(table), data)

    def delete_run(self, run_id: str) -> None:
        """Remove the run: its folder is renamed out of sight at once (readers see all of the run or
        none of it), then removed."""
        if self.run(run_id) is None:
            return
        gone = self.root / f"{layout.DELETED_PREFIX}{run_id}-{secrets.token_hex(4)}"
        os.replace(self.root / run_id, gone)
        if self.index is not None:
            self.index.forget(run_id)
        shutil.rmtree(gone)

    # -- reading ---------------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        return self.root / run_id

    def run(self, run_id: str, stamp: Any = None) -> LocalRun | None:
        """The run ``run_id``, or None if the store holds no such run. A run the index holds as ended
        (``stamp``: the index's stamp for it, as ``entries()`` just gave it) is answered from the
        index, without reading its files."""
        if not run_id or "/" in run_id or run_id.startswith("."):
            return None
        path = os.path.join(self._root_text, run_id)
        if isinstance(stamp, int) and stamp < 0 and self.index is not None:
            listed = self.index.held(run_id)
            if listed is not None and listed.stamp == stamp:
                return LocalRun(path, stamp, listed)
        try:
            mtime = stamp if isinstance(stamp, int) and stamp > 0 else os.stat(path).st_mtime_ns
        except OSError:
            return None
        stamp = mtime if time.time_ns() - mtime > SETTLE_NS else None
        return LocalRun(path, stamp) if os.path.isfile(os.path.join(path, layout.RUN_JSON)) else None

    def keep_listed(self, kept: dict[str, dict[str, Any]], present: set[str]) -> None:
        """Take what a reader read from the folders of runs the index did not hold as ended (``kept``:
        run id -> its listed state) into the index, and drop the runs not ``present`` any more; a
        new snapshot when that changed it, or when its log ran long."""
        if self.index is not None and (self.index.add(kept, present) or self.index.lagging()):
            self.index.write_snapshot()

    def reindex(self) -> int:
        """Rebuild the index from the run folders alone (``tunetrack reindex``); the runs indexed."""
        if self.index is None:
            return 0
        return self.index.rebuild(self.root / name for name in self._names())

    def read_kept(self, name: str) -> Any:
        """What a reader kept under ``name`` (``keep``), or None."""
        with no_cyclic_gc():
            try:
                return msgpack.unpackb((self.root / name).read_bytes(), strict_map_key=False)
            except (OSError, ValueError, msgpack.UnpackException):
                return None

    def keep(self, name: str, data: Any) -> None:
        """Keep ``data`` (what readers derived from the runs, for the next reader) in the file ``name``
        at the store's root, replaced whole. Best effort: a read-only or full disk only costs the next
        reader the work."""
        path = self.root / name
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            tmp.write_bytes(msgpack.packb(data, use_bin_type=True))
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):
            tmp.unlink(missing_ok=True)

    def entries(self) -> list[tuple[str, int]]:
        """``(run id, stamp)`` for every folder that may hold a run, from one listing of the store's
        folder (names only) and its index. A run the index holds as ended has the index's stamp (no
        file of it looked at); any other has its folder's mtime, which changes when a process of the
        run starts or ends (its files are created or renamed into place), not when records are
        appended."""
        held = self.index.read() if self.index is not None else {}
        out = []
        for name in self._names():
            listed = held.get(name)
            if listed is not None and listed.settled:
                out.append((name, listed.stamp))
                continue
            try:
                out.append((name, os.stat(os.path.join(self._root_text, name)).st_mtime_ns))
            except OSError:
                continue  # deleted meanwhile
        return out

    def created_times(self) -> dict[str, float]:
        """When each run the index knows was created (no file read)."""
        if self.index is None:
            return {}
        return {run_id: listed.created for run_id, listed in self.index.read().items()}

    def _names(self) -> list[str]:
        """The store's run folders, by name: one listing of its folder, no file looked at."""
        try:
            with os.scandir(self.root) as it:
                return [e.name for e in it if not e.name.startswith(".") and e.is_dir()]
        except OSError:
            return []
