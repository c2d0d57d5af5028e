"""What listings read of runs in object storage, and how a reader keeps its view of them current with
a few requests.

Each writing process has one small index entry, rewritten at every upload (so its time is also the
process's heartbeat): ``.index/<process start ms>-<run id>-<proc>.json``. A new entry (a new process:
a new run, a resume, another node) is also announced in an append-only log, ``.index-log/<n>.json``,
whose records are created only if absent, so two writers can never take the same number. A reader
that has looked once reads the log from where it stopped (one GET that finds nothing, when nothing
started) and fetches again only the entries of processes that were still running: a warm listing of a
thousand runs is a request or two, and a GET per live process, whatever the size of the bucket. Every
``FULL_EVERY`` seconds it lists the whole index again (runs deleted, entries of long-dead processes
rewritten by a late ``tunetrack sync``). A reader that fetched many entries writes them all into one
compact object (``.index-compact/<time>.json``) with the log position they stop at, so that a reader
on another machine, holding nothing yet, fetches that one object and reads the log from there: it
never lists the index (nor the bucket).

An edit of a run (a new name, tags, a note: ``tunetrack.edits``) has an index entry too,
``.index/e-<run id>-<edit name>.json``, announced in the log like a new process, so a listing shows
renamed and retagged runs without reading any run's objects. An edit never changes, so its entry
counts as ended (fetched once, compacted). Its key does not start with digits, so the readers of
versions before edits existed pass it by. Deleting a run deletes its entries and announces their keys:
a reader that looks for an announced entry and finds none drops it.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import forks
from .blobs import Blobs, StoreUnavailable
from .cache import ObjectCache
from .index_entries import Entry, dumps, loads, pack, unpack
from .process_meta import LISTED, ProcessMeta

INDEX = ".index"
COMPACT = ".index-compact"
LOG = ".index-log"
EDIT_MARK = "e"  # the first part of an edit's entry key, where a process's has its start time
LOG_HEAD = f"{LOG}/head.json"  # a hint: the next free number, or less (writers race to update it)
#: seconds between two full listings of the index
FULL_EVERY = 600.0
#: a process whose entry is older than this is not fetched again between full listings: it ended,
#: or it died long ago
RECHECK_FOR = 3600.0
#: ended entries fetched one by one before a listing writes a compact object of them all
COMPACT_AFTER = 50
#: concurrent GETs when a listing fetches many entries
FETCHERS = 16
_STATE = "~listing.msgpack"  # in the reader's cache (no object key starts with "~")
#: the name a compact object ends with: packed columns (``index_entries``); an older version's ends
#: with ``.json``, one JSON object of every entry
PACKED = ".msgpack.z"
#: names the newest compact object, so that a cold reader GETs it instead of LISTing them
NEWEST = f"{COMPACT}-newest.json"


def log_key(n: int) -> str:
    return f"{LOG}/{n:012d}.json"


def announce(blobs: Blobs, key: str) -> None:
    """Append ``key`` (a new or rewritten entry) to the index's log: readers find it without listing."""
    head = loads(blobs.get(LOG_HEAD)) or {}
    n = int(head.get("next") or 0)
    while not blobs.put(log_key(n), dumps({"key": key}), create=True):
        n += 1  # taken by another writer (or the hint was behind)
    blobs.put(LOG_HEAD, dumps({"next": n + 1}))


def entry_key(run_id: str, proc: str, start: float) -> str:
    return f"{INDEX}/{int(start * 1000):013d}-{run_id}-{proc}.json"


def edit_key(run_id: str, name: str) -> str:
    return f"{INDEX}/{EDIT_MARK}-{run_id}-{name}.json"


def run_of(key: str) -> str | None:
    """The run id an entry key (a process's or an edit's) names."""
    if not key.startswith(f"{INDEX}/"):
        return None
    name = key[len(INDEX) + 1 :]
    parts = name.split("-", 2)
    first = len(parts) == 3 and (parts[0].isdigit() or parts[0] == EDIT_MARK)
    return parts[1] if first and name.endswith(".json") else None


def index_entry(
    run: dict[str, Any],
    proc: str,
    meta: ProcessMeta,
    last: dict[str, Any] | None,
    end: dict[str, Any] | None,
    beat: float,
    upload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What listings read of one process of a run: the run's identity, where the process runs, its
    last values, how it ended, when it last showed it was alive."""
    return {
        "run": {
            **{k: run.get(k) for k in ("id", "name", "project", "tags", "created")},
            **({forks.FIELD: run[forks.FIELD]} if forks.FIELD in run else {}),  # a fork's reference
        },
        "proc": proc,
        "meta": {k: meta.get(k) for k in LISTED},
        "last": last,
        "end": end,
        "beat": beat,
        "upload": upload,
    }


def edit_entry(run_id: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """What listings read of one edit of a run: the edit itself."""
    return {"run": {"id": run_id}, "edit": name, "body": body}


def write_compact(blobs: Blobs, entries: list[Entry], log_next: int) -> tuple[str, bytes] | None:
    """One object holding every entry (the ended ones no longer change; the live ones a reader
    looks at again) and ``log_next``, where in the log they stop, so that a reader on another
    machine fetches one object instead of listing the index and fetching one per run; its key and
    bytes. Best effort: a reader with read-only credentials simply does not write one (None)."""
    key = f"{COMPACT}/{int(time.time() * 1000):016d}-{uuid.uuid4().hex[:6]}{PACKED}"
    data = pack(entries, {"log_next": log_next}, compress=True)
    try:
        old = sorted(b.key for b in blobs.list_blobs(f"{COMPACT}/"))
        blobs.put(key, data)
        blobs.put(NEWEST, dumps({"key": key}))
        for name in old[:-1]:  # keep the one other readers may be fetching right now
            blobs.delete(name)
    except StoreUnavailable:
        return None
    return key, data


def read_compact(key: str, data: bytes) -> tuple[dict[str, Entry], int | None] | None:
    """The entries of a compact object and where in the log they stop (None where an older version's
    object does not say); None if it is damaged."""
    if key.endswith(PACKED):
        found = unpack(data, compressed=True)
        if found is None:
            return None
        log_next = found[1].get("log_next")
        return found[0], log_next if isinstance(log_next, int) else None
    body = loads(data)  # an older version's: one JSON object
    if body is None:
        return None
    entries = {
        key: Entry.of(key, held.get("etag"), float(held.get("mtime") or 0.0), held.get("body") or {})
        for key, held in (body.get("entries") or {}).items()
    }
    log_next = body.get("log_next")
    return entries, log_next if isinstance(log_next, int) else None


class Listing:
    """One reader's view of a store's index, kept current (and on disk between commands)."""

    def __init__(self, blobs: Blobs, cache: ObjectCache) -> None:
        self.blobs, self.cache = blobs, cache
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] | None = None
        self._full_at = 0.0
        self._log_next = 0  # the first log record this reader has not read
        #: the compact object this machine's saved state is a change of (kept in the cache), and
        #: what it holds of each entry: the state saves only what differs
        self._base: str | None = None
        self._base_seen: dict[str, tuple[str | None, float]] = {}

    def runs(self) -> dict[str, list[Entry]]:
        """Every run with an index entry: ``run id -> its processes' entries``."""
        with self._lock:
            if self._entries is None:
                self._load()
            assert self._entries is not None
            if not self._entries:  # another machine, so to speak: the compact object, else all
                compact = self._compact()
                if self._from_compact(compact):
                    self._since_last_look()
                else:
                    self._full(compact[0] if compact is not None else None)
            elif time.time() - self._full_at > FULL_EVERY:
                self._full()
            else:
                self._since_last_look()
            out: dict[str, list[Entry]] = {}
            for entry in self._entries.values():
                run_id = run_of(entry.key)
                if run_id is not None:
                    out.setdefault(run_id, []).append(entry)
            return out

    # -- the two ways of looking -------------------------------------------------------------------
    def _full(self, compact: dict[str, Entry] | None = None) -> None:
        assert self._entries is not None
        self._log_next = int((loads(self.blobs.get(LOG_HEAD)) or {}).get("next") or 0)
        listed = [b for b in self.blobs.list_blobs(f"{INDEX}/") if run_of(b.key) is not None]
        known, fetch = {}, []
        for blob in listed:
            held = self._entries.get(blob.key) or (compact or {}).get(blob.key)
            if held is not None and held.etag == blob.etag:
                held.mtime = blob.mtime
                known[blob.key] = held
            else:
                fetch.append(blob.key)
        fetched = self._fetch(fetch)
        self._entries = {**known, **fetched}
        self._full_at = time.time()
        if sum(e.ended for e in fetched.values()) >= COMPACT_AFTER:
            self._write_compact()
        self._save()

    def _from_compact(self, found: tuple[dict[str, Entry], int | None] | None) -> bool:
        """A reader that holds nothing yet trusts the newest compact object, which says where in the
        log it stops, and reads the log from there (``_since_last_look``): no LIST of the index. False
        where there is none, or one written by a version that did not say (then ``_full``)."""
        if found is None or found[1] is None:
            return False
        now = time.time()
        self._entries, self._log_next = found[0], found[1]
        for entry in self._entries.values():
            if not entry.ended:
                entry.mtime = now  # live when it was written: looked at again now
        self._full_at = now
        self._save()  # this machine's next look starts from here
        return True

    def _log_tail(self) -> list[str]:
        """The keys announced from ``_log_next`` on: one GET when there is none, else batches of
        ``FETCHERS`` at once (records are numbered without gaps)."""
        announced: list[str] = []
        batch = 1
        with ThreadPoolExecutor(FETCHERS) as pool:
            while True:
                numbers = range(self._log_next, self._log_next + batch)
                for record in pool.map(lambda n: loads(self.blobs.get(log_key(n))), numbers):
                    if record is None:
                        return announced
                    announced.append(str(record.get("key")))
                    self._log_next += 1
                batch = FETCHERS

    def _since_last_look(self) -> None:
        """The entries announced since the last look, and those of processes that were still live."""
        assert self._entries is not None
        announced = self._log_tail()
        now = time.time()
        fetch = [k for k in announced if run_of(k) is not None]
        fetch += [e.key for e in self._entries.values() if not e.ended and now - e.mtime < RECHECK_FOR]
        fetch = list(dict.fromkeys(fetch))
        fetched = self._fetch(fetch)
        for key in fetch:
            if key in fetched:
                self._entries[key] = fetched[key]
            else:
                self._entries.pop(key, None)  # deleted
        if sum(e.ended for e in fetched.values()) >= COMPACT_AFTER:
            self._write_compact()  # the next cold reader reads less log
        if fetch:
            self._save()

    def _fetch(self, keys: list[str]) -> dict[str, Entry]:
        if not keys:
            return {}

        def get(key: str) -> Entry | None:
            found = self.blobs.get_with_meta(key)
            if found is None:
                return None
            data, blob = found
            return Entry.parse(key, blob.etag, blob.mtime, data)

        with ThreadPoolExecutor(min(FETCHERS, len(keys))) as pool:
            return {e.key: e for e in pool.map(get, keys) if e is not None}

    # -- compact objects and the reader's state ---------------------------------------------------
    def _compact(self) -> tuple[dict[str, Entry], int | None] | None:
        """The newest compact object's entries and log position (kept in the local cache: it never
        changes), or None: the one ``NEWEST`` names, else (an older version wrote them, or it was
        removed meanwhile) the newest a LIST finds."""
        listed = False
        try:
            pointer = (loads(self.blobs.get(NEWEST)) or {}).get("key")
            key = pointer if isinstance(pointer, str) and pointer.startswith(f"{COMPACT}/") else None
            data = (self.cache.get(key) or self.blobs.get(key)) if key is not None else None
            if data is None:
                names = sorted(b.key for b in self.blobs.list_blobs(f"{COMPACT}/"))
                if not names:
                    return None
                key, listed = names[-1], True
                data = self.cache.get(key) or self.blobs.get(key)
        except StoreUnavailable:
            return None
        if key is None or data is None:
            return None
        found = read_compact(key, data)
        if found is not None:
            self.cache.put(key, data)
            self._rebase(key, found[0])
            if listed and key.endswith(PACKED):  # the next cold reader lists nothing
                with contextlib.suppress(StoreUnavailable):
                    self.blobs.put(NEWEST, dumps({"key": key}))
        return found

    def _write_compact(self) -> None:
        assert self._entries is not None
        written = write_compact(self.blobs, list(self._entries.values()), self._log_next)
        if written is not None:
            self.cache.put(*written)
            self._rebase(written[0], self._entries)

    def _rebase(self, key: str, entries: dict[str, Entry]) -> None:
        self._base = key
        self._base_seen = {k: (e.etag, e.mtime) for k, e in entries.items()}

    def _load(self) -> None:
        """This machine's state: the compact object it builds on, with what changed since."""
        changed, state = unpack(self.cache.get(_STATE)) or ({}, {})
        base = state.get("base")
        found = read_compact(base, self.cache.get(base) or b"") if isinstance(base, str) else None
        if isinstance(base, str) and found is None:  # the base is gone from the cache: look afresh
            self._entries = {}
            return
        entries = found[0] if found is not None else {}
        if found is not None and isinstance(base, str):
            self._rebase(base, entries)
        for key in state.get("removed") or []:
            entries.pop(key, None)
        entries.update(changed)
        self._entries = entries
        self._full_at = float(state.get("full_at") or 0.0)
        self._log_next = int(state.get("log_next") or 0)

    def _save(self) -> None:
        assert self._entries is not None
        seen = self._base_seen
        changed = [e for e in self._entries.values() if seen.get(e.key) != (e.etag, e.mtime)]
        state = {
            "full_at": self._full_at,
            "log_next": self._log_next,
            "base": self._base,
            "removed": [key for key in seen if key not in self._entries],
        }
        self.cache.put(_STATE, pack(changed, state))


__all__ = [
    "Listing",
    "announce",
    "edit_entry",
    "edit_key",
    "entry_key",
    "index_entry",
    "read_compact",
    "run_of",
    "write_compact",
]
