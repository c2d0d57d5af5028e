"""A long-lived reader's view of a store (the dashboard's): runs kept between requests, read again
only when their files change, and the runs table built from each run's small files.

A page's charts, its live polls and the runs table ask about the same runs over and over; parsing
them each time cost more than everything else the server does. A cached run is refreshed when any
file of it changed (name, size or mtime), and then reads only the bytes appended since.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..metric_keys import LOSS_LIKE
from .as_json import run_json
from .find import find_run, load, store_at
from .run import Run

#: A run without an end record turns ``crashed`` without writing anything: look at it again this often.
RECHECK = 5.0


class Catalog:
    """Parsed runs (least recently used dropped past ``size``) and the runs table's rows."""

    def __init__(self, dir: str | os.PathLike[str] | None, size: int = 64) -> None:
        self.store = store_at(dir)  # one client for the catalog's life (an object store's connections)
        self.size = size
        self._runs: OrderedDict[str, tuple[tuple, float, Run]] = OrderedDict()
        #: one row per run; small, so every run of the store fits
        self._rows: dict[str, tuple[Any, float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

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
                sig != hit[0] or (now - hit[1] >= RECHECK and hit[2].state == "running")
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
        self, project: str | None = None, state: str | None = None, keys: Sequence[str] = LOSS_LIKE
    ) -> list[dict[str, Any]]:
        """The runs table, newest first (``reader.run_json``, its ``last`` holding each of ``keys``
        the run has a last value of)."""
        out = [
            {**row, "last": {k: row["last"][k] for k in keys if k in row["last"]}}
            for row in self._table()
            if (project is None or row["project"] == project) and (state is None or row["state"] == state)
        ]
        return sorted(out, key=lambda row: row["created"], reverse=True)

    def keys(self) -> list[str]:
        """Every metric key some run of the table has a last value of, sorted."""
        return sorted({key for row in self._table() for key in row["last"]})

    def _table(self) -> list[dict[str, Any]]:
        """Every run's row, with the last value of each of its keys. A row is built from the run's
        small files (run.json, the processes' metadata and end records, which hold each key's last
        value); only a run that is still writing has its data read, incrementally, through the
        parsed-run cache.

        An ended run's row is kept while its stamp (its folder's mtime) is unchanged: its files change
        only by being created or renamed into place (a resumed run adds files). So a table of 1,000
        ended runs costs one listing of the store."""
        store = self.store
        now = time.monotonic()
        rows: dict[str, tuple[Any, float, dict[str, Any]]] = {}
        stamp: Any
        for run_id, listed in store.entries():
            hit = self._rows.get(run_id)
            if hit is not None:
                live = hit[2]["state"] == "running"
                folder = store.run(run_id) if live else None
                stamp = (listed, folder.signature()) if folder is not None else listed
                if hit[0] == stamp and not (live and now - hit[1] >= RECHECK):
                    rows[run_id] = hit
                    continue
            run = load(store, run_id)
            if run is None:
                continue  # not a run
            live = run.state == "running"
            stamp = (listed, run.folder.signature()) if live else (listed if _settled(listed) else None)
            shown = self._fresh(run) if live else run
            rows[run_id] = (stamp, now, run_json(shown, shown.latest()))
        self._rows = rows
        return [row for _, _, row in rows.values()]


def _settled(stamp: Any) -> bool:
    """A folder's stamp (its mtime) changed within the last second may change again with the same
    mtime (timestamps are coarse): such a row is built again next time. Other stamps are exact."""
    return not isinstance(stamp, int) or time.time_ns() - stamp > 1_000_000_000
