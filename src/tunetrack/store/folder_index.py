"""A folder store's index: what listings show of every run, kept by the processes that change the
runs, so that a reader lists 100,000 runs without opening (or stat'ing) their folders.

Two files under ``.index/`` at the store's root:

- ``log.jsonl``, append-only: one line each time what a listing shows of a run changes (it is
  created, a process starts or ends, an edit, a sync, a deletion). The line is the run's whole listed
  state after the change (``read_entry``: its run.json, its processes' metadata and end records, its
  edits) or ``{"id": ..., "gone": true}``. The process that made the change reads the run's small
  files and appends while it holds the log's lock (``flock``), so the lines are in the order their
  states were read, and a run's last line is its latest state. A line is whole state, so replaying
  one twice changes nothing.
- ``snapshot.msgpack``: the log folded up to a byte offset, as columns (ids, stamps, each run's
  run.json and the rest as msgpack bytes), so 100,000 runs load in tens of milliseconds and only the
  runs a listing shows have their processes decoded. Whoever finds more than ``COMPACT_BYTES`` of
  log past it (a process that ends, a reader) writes a new one, replaced whole; any snapshot is a
  correct fold of the log up to its offset, so two written at once cannot make a wrong one.

Readers trust it: a run whose last state says every process ended is not looked at in its folder
again. One listing of the store's folder (names only) finds the runs it does not know (copied in by
hand, or written by an older version), which are read from their files and handed back (``keep``),
and the runs gone. ``tunetrack reindex`` rebuilds it from the folders.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgpack

from ..gc_pause import no_cyclic_gc
from ..jsonfile import read_json
from . import ends, layout
from .process_meta import LISTED
from .process_meta import read as read_meta

DIR = ".index"
LOG = "log.jsonl"
SNAPSHOT = "snapshot.msgpack"
COMPACT_LOCK = "compact.lock"
FORMAT = 2
#: log bytes past the snapshot after which the next process that ends (or reader) folds them in
COMPACT_BYTES = 4 << 20


def read_entry(run_dir: Path) -> dict[str, Any] | None:
    """What a listing shows of the run in ``run_dir``, read from its small files, or None when it
    holds no run. The shape readers hand back too (``reader.listing_cache``)."""
    run = read_json(run_dir / layout.RUN_JSON)
    if run is None:
        return None
    processes, edits = [], []
    try:
        names = sorted(os.listdir(run_dir))
    except OSError:
        return None
    for name in names:
        if (proc := layout.proc_of(name)) is not None and (meta := read_meta(read_json(run_dir / name))):
            end = ends.read(read_json(run_dir / f"{proc}{layout.END_SUFFIX}"))
            processes.append(
                {
                    "name": proc,
                    "meta": {k: meta.get(k) for k in LISTED if k in meta},
                    "end": {k: v for k, v in end.items() if k != "config"} if end is not None else None,
                    "bytes": _size(run_dir / f"{proc}{layout.DATA_SUFFIX}"),  # final once it ended
                }
            )
        elif (edit := layout.edit_of(name)) is not None and (body := read_json(run_dir / name)) is not None:
            edits.append([edit, body])
    return {"run": run, "processes": processes, "edits": edits}


def settled(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` says all there is to list of its run: it has processes and every one ended
    (the last values and aggregates are then in their end records)."""
    procs = entry.get("processes") or []
    return bool(procs) and all(p.get("end") is not None for p in procs)


class Listed:
    """One run as the index holds it: its run.json decoded when asked, the rest when a listing shows
    it. ``stamp`` (a negative int: never a folder's mtime) changes with the state."""

    __slots__ = ("_rest", "_run", "created", "settled", "stamp")

    def __init__(self, stamp: int, run: bytes, rest: bytes, is_settled: bool, created: float) -> None:
        self.stamp, self._run, self._rest, self.settled = stamp, run, rest, is_settled
        self.created = created  # run.json's, undecoded: listings order runs by it before reading any

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Listed:
        run = msgpack.packb(entry["run"], use_bin_type=True, default=str)
        rest = msgpack.packb(
            {"processes": entry.get("processes") or [], "edits": entry.get("edits") or []},
            use_bin_type=True,
            default=str,
        )
        digest = hashlib.blake2b(run + rest, digest_size=7).digest()
        created = entry["run"].get("created")
        created = float(created) if isinstance(created, int | float) else 0.0
        return cls(-1 - int.from_bytes(digest, "big"), run, rest, settled(entry), created)

    @property
    def run(self) -> dict[str, Any]:
        value: dict[str, Any] = msgpack.unpackb(self._run, strict_map_key=False)
        return value

    @property
    def rest(self) -> dict[str, Any]:
        value: dict[str, Any] = msgpack.unpackb(self._rest, strict_map_key=False)
        return value


class FolderIndex:
    """The index of the store at ``root`` (``.index/``), for its writers and one reader's view."""

    def __init__(self, root: Path) -> None:
        self.dir = root / DIR
        self._held: dict[str, Listed] = {}
        self._offset = 0  # the log bytes folded into ``_held``
        self._snapshot: tuple[int, int] | None = None  # the snapshot file they started from
        self._lock = threading.RLock()  # one view, shared by a dashboard's threads

    # -- writing: the processes that change runs -----------------------------------------------------
    def record(self, run_dir: Path) -> None:
        """Append the run's state as its files say now. Best effort: a read-only or full disk loses
        the line, and readers then find the run from its folder."""
        self._append(lambda: (e := read_entry(run_dir)) and {"id": run_dir.name, **e})

    def forget(self, run_id: str) -> None:
        """The run is gone (deleted)."""
        self._append(lambda: {"id": run_id, "gone": True})

    def _append(self, line: Any) -> None:
        try:
            self.dir.mkdir(exist_ok=True)
            with open(self.dir / LOG, "a+b") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                f.seek(0, os.SEEK_END)  # where the log ends now, after the writers before this one
                body = line()  # read under the lock: lines stay in the order their states were read
                if not body:
                    return
                data = json.dumps(body, allow_nan=True, default=str).encode() + b"\n"
                if f.tell() and os.pread(f.fileno(), 1, f.tell() - 1) != b"\n":
                    data = b"\n" + data  # a line cut short by a killed writer stays alone, skipped
                f.write(data)
        except OSError:
            pass

    def compact_if_due(self) -> None:
        """Fold the log into a new snapshot once enough has piled up past the last one (a process
        that ends calls this: the next reader then reads little log)."""
        try:
            size = (self.dir / LOG).stat().st_size
        except OSError:
            return
        if size - _snapshot_offset(self.dir / SNAPSHOT) > COMPACT_BYTES:
            self.read()
            self.write_snapshot()

    # -- reading -----------------------------------------------------------------------------------
    def read(self) -> dict[str, Listed]:
        """Every run the index knows, by id: the snapshot, then the log from where it stops (from
        where this view stopped, when it has looked before and the snapshot is the same)."""
        with self._lock:
            snapshot = _identity(self.dir / SNAPSHOT)
            if snapshot != self._snapshot:
                self._load_snapshot()
                self._snapshot = snapshot
            self._read_log()
            return dict(self._held)  # the caller's to iterate while another thread looks again

    def held(self, run_id: str) -> Listed | None:
        """The run as the last ``read`` found it, if it holds the run as ended."""
        listed = self._held.get(run_id)
        return listed if listed is not None and listed.settled else None

    def _load_snapshot(self) -> None:
        self._held, self._offset = {}, 0
        try:
            data = msgpack.unpackb((self.dir / SNAPSHOT).read_bytes(), strict_map_key=False)
        except (OSError, ValueError, msgpack.UnpackException):
            return
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return
        try:
            with no_cyclic_gc():
                columns = zip(
                    *(data[k] for k in ("ids", "stamps", "runs", "rest", "settled", "created")), strict=True
                )
                held = {i: Listed(stamp, run, rest, s, c) for i, stamp, run, rest, s, c in columns}
            offset = int(data["log"])
        except (KeyError, TypeError, ValueError):
            return  # damaged: read as no snapshot (the whole log, and the folders)
        self._held, self._offset = held, offset

    def _read_log(self) -> None:
        try:
            with open(self.dir / LOG, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        for line in data[:end].splitlines():
            try:
                body = json.loads(line)
                run_id = body["id"]
                if body.get("gone"):
                    self._held.pop(run_id, None)
                else:
                    self._held[run_id] = Listed.of(body)
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short
        self._offset += end

    def add(self, entries: dict[str, dict[str, Any]], present: Iterable[str]) -> bool:
        """Take in what a reader read from the folders of ended runs the index did not know (or knew
        stale), and drop the runs whose folders are gone; whether anything changed."""
        present = set(present)
        new = {k: Listed.of(e) for k, e in entries.items() if settled(e)}  # a live run changes unlogged
        with self._lock:
            gone = [run_id for run_id in self._held if run_id not in present]
            for run_id in gone:
                del self._held[run_id]
            new = {
                k: v for k, v in new.items() if (held := self._held.get(k)) is None or held.stamp != v.stamp
            }
            self._held.update(new)
        return bool(gone or new)

    def lagging(self) -> bool:
        """Whether the log has run ``COMPACT_BYTES`` past the snapshot this view read."""
        return self._offset - _snapshot_offset(self.dir / SNAPSHOT) > COMPACT_BYTES

    def write_snapshot(self, wait: bool = False) -> None:
        """The view as a snapshot, replaced whole. One at a time: others skip (theirs would be no
        better) unless they ``wait``; best effort, like ``record``."""
        try:
            self.dir.mkdir(exist_ok=True)
            with open(self.dir / COMPACT_LOCK, "ab") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
                with self._lock:
                    held, offset = dict(self._held), self._offset
                body = {
                    "format": FORMAT,
                    "log": offset,
                    "ids": list(held),
                    "stamps": [v.stamp for v in held.values()],
                    "runs": [v._run for v in held.values()],
                    "rest": [v._rest for v in held.values()],
                    "settled": [v.settled for v in held.values()],
                    "created": [v.created for v in held.values()],
                }
                path = self.dir / SNAPSHOT
                tmp = path.with_name(f".{SNAPSHOT}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
                try:
                    tmp.write_bytes(msgpack.packb(body, use_bin_type=True))
                    os.replace(tmp, path)
                finally:
                    tmp.unlink(missing_ok=True)
                self._snapshot = _identity(path)
        except OSError:
            pass  # another process is writing one, or the disk said no

    def rebuild(self, run_dirs: Iterable[Path]) -> int:
        """A new index from the runs' folders alone (``tunetrack reindex``): the log read so far
        is skipped, every run read afresh. The number of runs indexed."""
        try:
            self._offset = (self.dir / LOG).stat().st_size
        except OSError:
            self._offset = 0
        self._held = {}
        for run_dir in run_dirs:
            if (entry := read_entry(run_dir)) is not None:
                self._held[run_dir.name] = Listed.of(entry)
        self._read_log()  # what was appended while the folders were read is newer still
        self.write_snapshot(wait=True)
        return len(self._held)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _snapshot_offset(path: Path) -> int:
    """The log offset a snapshot covers, from its head, without loading it all."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
        unpacker = msgpack.Unpacker()
        unpacker.feed(head)
        n = unpacker.read_map_header()
        for _ in range(n):
            key = unpacker.unpack()
            value = unpacker.unpack()
            if key == "log":
                return int(value)
    except (OSError, ValueError, msgpack.UnpackException, msgpack.OutOfData):
        pass
    return 0
