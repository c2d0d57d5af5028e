"""A long-lived reader's view of a store (the dashboard's): runs kept between requests, read again
only when their files change, and the runs table built from each run's small files.

A page's charts, its live polls and the runs table ask about the same runs over and over; parsing
them each time cost more than everything else the server does. A cached run is refreshed when any
file of it changed (name, size or mtime), and then reads only the bytes appended since.
"""

from __future__ import annotations

import heapq
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .. import aggregates
from ..gc_pause import no_cyclic_gc
from ..metric_keys import LOSS_LIKE, minimized, spelled
from ..states import State
from ..store import layout
from .as_json import run_json
from .find import find_run, keep, load, newest, store_at
from .run import Run

#: A run without an end record turns ``crashed`` without writing anything: look at it again this often.
RECHECK = 5.0
#: what a kept row holds (``refresh``): change it whenever a row's content does, so that rows kept by
#: an older version are built again
ROWS_FORMAT = 1
#: which projects' runs a reader may see (a team member's: ``reader.visible``)
Visibility = Callable[[str | None], bool]


class Catalog:
    """Parsed runs (least recently used dropped past ``size``) and the runs table's rows."""

    def __init__(self, dir: str | os.PathLike[str] | None, size: int = 64) -> None:
        self.store = store_at(dir)  # one client for the catalog's life (an object store's connections)
        self.size = size
        self._runs: OrderedDict[str, tuple[tuple, float, Run]] = OrderedDict()
        #: one row per run; small, so every run of the store fits
        self._rows: dict[str, tuple[Any, float, dict[str, Any]]] = {}
        self._version = 0
        self._keys: tuple[int, list[str]] = (-1, [])  # the version they are of, the keys
        self._projects: tuple[int, frozenset[str | None]] = (-1, frozenset())
        self._refreshed_from = -math.inf  # when the last refresh began
        self._seen: list[tuple[str, Any]] | None = None  # the store's entries the rows are of
        self._unsure: set[str] = set()  # rows that may change without their stamp: looked at each time
        self._lock = threading.Lock()
        self._table_lock = threading.Lock()

    def open(self, ref: str) -> Run:
        """The run named by ``ref`` (id, id prefix or name), refreshed if its files changed."""
        return self._fresh(find_run(self.store, ref))

    def _fresh(self, run: Run) -> Run:
        """The cached ``Run`` of ``run``'s id (``run`` itself the first time), brought up to date."""
        with self._lock:
            hit = self._runs.get(run.id)
        if hit is not None:
            run = hit[2]
        sig, now = run.folder.signature(), time.monotonic()  # looked at afresh
        with self._lock:
            stale = hit is not None and (
                sig != hit[0] or (now - hit[1] >= RECHECK and hit[2].state == State.RUNNING)
            )
            if hit is None or stale:
                self._runs[run.id] = (sig, now, run)
            self._runs.move_to_end(run.id)
            while len(self._runs) > self.size:
                self._runs.popitem(last=False)
        if stale:
            run._forget()
        return run

    def rows(
        self,
        project: str | None = None,
        state: str | None = None,
        keys: Sequence[str] = LOSS_LIKE,
        *,
        refresh: bool = True,
        best: Mapping[str, bool] | None = None,
        visible: Visibility | None = None,
    ) -> list[dict[str, Any]]:
        """The runs table, newest first (``reader.run_json``, its ``last`` holding each of ``keys``
        the run has a last value of, its ``summary`` each of their aggregates: last, min, max, best
        and its step, ``Run.summary``'s). ``refresh=False``: as the last ``refresh()`` left it, for a
        caller that has just refreshed it to read its version. ``best``: what "best" is per key where
        not ``metric_keys.minimized``'s choice (``{"kl": True}``: lower is better), as ``--best``.
        ``visible``: only the runs of the projects it accepts (a team member's, ``reader.visible``)."""
        if refresh:
            self.refresh()
        lower = spelled(best)
        with no_cyclic_gc():
            out = [_shaped(row, keys, lower) for row in self._matching(project, state, visible)]
        return sorted(out, key=lambda row: row["created"], reverse=True)

    def _matching(
        self, project: str | None, state: str | None, visible: Visibility | None
    ) -> Iterator[dict[str, Any]]:
        for _, _, row in list(self._rows.values()):
            if (
                (project is None or row["project"] == project)
                and (state is None or row["state"] == state)
                and (visible is None or visible(row["project"]))
            ):
                yield row

    @property
    def version(self) -> int:
        """The table's version as the last ``refresh`` left it (0: never built), without a refresh."""
        return self._version

    def newest(
        self,
        limit: int,
        project: str | None = None,
        state: str | None = None,
        keys: Sequence[str] = LOSS_LIKE,
        *,
        best: Mapping[str, bool] | None = None,
        visible: Visibility | None = None,
    ) -> list[dict[str, Any]]:
        """The first ``limit`` rows of ``rows`` (the newest runs), without the whole table where it
        was never built: the runs are ordered by the store's index and only those shown are opened
        (``find.newest``, as ``tunetrack ls --limit``), so a fresh dashboard's first screen of
        100,000 runs does not wait for their table."""
        lower = spelled(best)
        if self._rows:  # built: its newest rows, without shaping the other 100,000
            top = heapq.nlargest(
                limit, self._matching(project, state, visible), key=lambda row: row["created"]
            )
            return [_shaped(row, keys, lower) for row in top]

        def wanted(run: Run) -> bool:
            return (
                (project is None or run.project == project)
                and (visible is None or visible(run.project))
                and (state is None or run.state == state)
            )

        return [_shaped(self._row(run), keys, lower) for run in newest(self.store, wanted, limit)]

    def _row(self, run: Run) -> dict[str, Any]:
        """The table's row of ``run``: its JSON shape, with every key's stored aggregates."""
        live = run.state == State.RUNNING
        shown = self._fresh(run) if live else run
        row = run_json(shown, shown.latest())
        # an ended run's aggregates come from its end records; a live one's data is read anyway
        # (incrementally, in the parsed-run cache). A run that ended without them (written by
        # an older version, or rewound) shows none here rather than have a cold table read
        # every such run's data: `tunetrack ls` computes them. A fork's are its parent's and its
        # own together, which no end record holds: read (forks are few)
        stored = shown.aggregates() if live or shown.fork else shown.stored_aggregates()
        row["aggregates"] = stored or {}
        return row

    def keys(self, visible: Visibility | None = None) -> list[str]:
        """Every metric key some run of the table has a last value of, sorted: worked out once per
        version of the table (a page asks for them with its rows, and every poll after). ``visible``:
        of the runs of the projects it accepts only (worked out each time)."""
        version = self.refresh(share=True)
        with self._table_lock:
            if visible is not None:
                rows = [row for _, _, row in self._rows.values() if visible(row["project"])]
                return sorted({key for row in rows for key in row["last"]})
            if self._keys[0] != version:
                self._keys = (
                    version,
                    sorted({key for _, _, row in self._rows.values() for key in row["last"]}),
                )
            return list(self._keys[1])

    def project_of(self, run_id: str) -> tuple[bool, str | None]:
        """``(whether the table holds the run, its project)``: what a team member's view asks of a run
        another one forked from or into (``reader.visible``)."""
        self.refresh(share=True)
        with self._table_lock:
            hit = self._rows.get(run_id)
        return (False, None) if hit is None else (True, hit[2]["project"])

    def projects(self) -> frozenset[str | None]:
        """The projects the runs of the table are in (None: a run in none): worked out once per
        version of the table (a team member's every listing asks, ``reader.visible``)."""
        version = self.refresh(share=True)
        with self._table_lock:
            if self._projects[0] != version:
                self._projects = (version, frozenset(row["project"] for _, _, row in self._rows.values()))
            return self._projects[1]

    def refresh(self, share: bool = False) -> int:
        """Bring the runs table up to date with the store, and return its version: a number that
        changes whenever a row does, so a reader can tell that nothing changed without building the
        rows (the dashboard answers a browser's poll of 10,000 runs with a 304).

        A row holds the last value of each of the run's keys, and is built from the run's small files
        (run.json, the processes' metadata and end records, which hold each key's last value); only a
        run that is still writing has its data read, incrementally, through the parsed-run cache. An
        ended run's row is kept while its stamp (its folder's mtime) is unchanged: its files change
        only by being created or renamed into place (a resumed run adds files). So a table of 1,000
        ended runs costs one listing of the store. The rows of ended runs are also kept in the store
        (``Store.keep``: a folder's ``.rows.msgpack``) with their stamps, so a dashboard started
        afresh on 10,000 runs reads one file, not their 30,000, and builds only the rows of runs that
        changed since.

        One refresh at a time, and callers that wait share one: a refresh that began after a caller
        asked is as recent as its own would be (a page's requests for the rows and for the keys, or
        many browsers' polls, cost one listing). ``share``: a refresh under way when the caller asks
        will do (the key picker's list, asked for beside the rows, need not wait for a second look at
        10,000 folders)."""
        asked = -math.inf if share and self._table_lock.locked() else time.monotonic()
        with self._table_lock, no_cyclic_gc():
            if self._refreshed_from >= asked:
                return self._version
            store = self.store
            now = self._refreshed_from = time.monotonic()
            stamp: Any
            changed = False
            entries = store.entries()
            # the same stamps as last time: only the rows that may change unstamped are looked at (a
            # live run's, a folder changed too lately to tell); a poll of 100,000 ended runs is a list
            unchanged = entries == self._seen
            rows = dict(self._rows) if unchanged else {}
            unsure: set[str] = set()
            loaded: list[Run] = []
            kept = _kept_rows(store) if not self._rows else {}  # a new catalog: the last one's rows
            built = False  # an ended run's row made here: kept for the next catalog
            for run_id, listed in [e for e in entries if e[0] in self._unsure] if unchanged else entries:
                hit = self._rows.get(run_id)
                if hit is None and (was := kept.get(run_id)) is not None and was[0] == listed:
                    hit = (listed, now, was[1])
                if hit is not None:
                    live = hit[2]["state"] == State.RUNNING
                    folder = store.run(run_id) if live else None
                    stamp = (listed, folder.signature()) if folder is not None else listed
                    if hit[0] == stamp and not (live and now - hit[1] >= RECHECK):
                        rows[run_id] = hit
                        if live:
                            unsure.add(run_id)
                        continue
                run = load(store, run_id, listed)
                if run is None:
                    rows.pop(run_id, None)
                    continue  # not a run
                loaded.append(run)
                live = run.state == State.RUNNING
                stamp = (listed, run.folder.signature()) if live else (listed if _settled(listed) else None)
                rows[run_id] = (stamp, now, self._row(run))
                if live or stamp is None:
                    unsure.add(run_id)
                changed = changed or hit is None or hit[2] != rows[run_id][2]
                built = built or isinstance(stamp, int)
            if changed or rows.keys() != self._rows.keys():
                self._version += 1
            gone = bool(self._rows.keys() - rows.keys()) or bool(kept.keys() - rows.keys())
            self._rows, self._seen, self._unsure = rows, entries, unsure
            keep(store, loaded, {run_id for run_id, _ in entries})
            if built or gone:
                ended = {k: [stamp, row] for k, (stamp, _, row) in rows.items() if isinstance(stamp, int)}
                store.keep(layout.ROWS, {"format": ROWS_FORMAT, "rows": ended})
            return self._version


def _shaped(row: dict[str, Any], keys: Sequence[str], lower: Mapping[str, bool]) -> dict[str, Any]:
    """A table row as ``rows`` gives it: the last values and the summaries of ``keys`` only."""
    return {
        **{k: v for k, v in row.items() if k != "aggregates"},
        "last": {k: row["last"][k] for k in keys if k in row["last"]},
        "summary": {
            k: aggregates.summary(agg, lower.get(k, minimized(k)))
            for k in keys
            if (agg := row["aggregates"].get(k)) is not None
        },
    }


def _kept_rows(store: Any) -> dict[str, tuple[int, dict[str, Any]]]:
    """The rows the last catalog of this store kept (``refresh``), if made by this row format."""
    data = store.read_kept(layout.ROWS)
    if (
        not isinstance(data, dict)
        or data.get("format") != ROWS_FORMAT
        or not isinstance(data.get("rows"), dict)
    ):
        return {}
    return {k: (v[0], v[1]) for k, v in data["rows"].items() if isinstance(v, list) and len(v) == 2}


def _settled(stamp: Any) -> bool:
    """A folder's stamp (its mtime) changed within the last second may change again with the same
    mtime (timestamps are coarse): such a row is built again next time. Other stamps are exact."""
    return not isinstance(stamp, int) or time.time_ns() - stamp > 1_000_000_000
