"""Runs kept between requests, so the dashboard reads a run's files again only when they change.

A page's charts, its live polls and the runs table ask about the same runs over and over; parsing
them each time cost more than everything else the server does. A cached run is refreshed when any
file in its folder changed (name, size or mtime), and then reads only the bytes appended since.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..reader import Run, open_run
from ..store import layout

#: A run without an end record turns ``crashed`` without writing anything: look at it again this often.
RECHECK = 5.0


def signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Changes whenever a process of the run writes, ends, or starts."""
    out = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_file():
                    st = entry.stat()
                    out.append((entry.name, st.st_size, st.st_mtime_ns))
    except OSError:
        pass
    return tuple(sorted(out))


class RunCache:
    """Parsed runs (least recently used dropped past ``size``) and the runs table's rows."""

    def __init__(self, root: str | os.PathLike[str] | None, size: int = 64) -> None:
        self.root = root
        self.size = size
        self._runs: OrderedDict[Path, tuple[tuple, float, Run]] = OrderedDict()
        #: one row per run folder; small, so every run of the store fits
        self._rows: dict[Path, tuple[tuple, float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def open(self, ref: str) -> Run:
        """The run named by ``ref`` (id, id prefix or name), refreshed if its files changed."""
        return self._fresh(open_run(ref, dir=self.root))

    def _fresh(self, run: Run) -> Run:
        """The cached ``Run`` of ``run``'s folder (``run`` itself the first time), brought up to date."""
        sig, now = signature(run.path), time.monotonic()
        with self._lock:
            hit = self._runs.get(run.path)
            stale = hit is not None and (
                sig != hit[0] or (now - hit[1] >= RECHECK and hit[2].state == "running")
            )
            if hit is not None:
                run = hit[2]
            if hit is None or stale:
                self._runs[run.path] = (sig, now, run)
            self._runs.move_to_end(run.path)
            while len(self._runs) > self.size:
                self._runs.popitem(last=False)
        if stale:
            run.refresh()
        return run

    def rows(self, project: str | None = None, state: str | None = None) -> list[dict[str, Any]]:
        """The runs table, newest first. A row is built from the run's small files (run.json, the
        processes' metadata and end records, which hold each key's last value); only a run that is
        still writing has its data read, incrementally, through the parsed-run cache.

        An ended run's row is kept while its folder's mtime is unchanged: its files change only by
        being created or renamed into place (a resumed run adds files), which touches the folder.
        So a table of 1,000 ended runs costs 1,000 stat calls."""
        root = layout.resolve_root(self.root)
        now = time.monotonic()
        rows: dict[Path, tuple[Any, float, dict[str, Any]]] = {}
        try:
            entries = [e for e in os.scandir(root) if e.is_dir()]
        except OSError:
            entries = []
        for entry in entries:
            path = Path(entry.path)
            try:
                mtime = entry.stat().st_mtime_ns
            except OSError:
                continue  # deleted meanwhile
            hit = self._rows.get(path)
            if hit is not None:
                live = hit[2]["state"] == "running"
                if hit[0] == ((mtime, signature(path)) if live else mtime) and not (
                    live and now - hit[1] >= RECHECK
                ):
                    rows[path] = hit
                    continue
            if (data := layout.read_json(path / layout.RUN_FILE)) is None:
                continue  # not a run
            run = Run(path, data)
            live = run.state == "running"
            # A folder changed within the last second may change again with the same mtime (timestamps
            # are coarse): such a row is built again next time.
            settled = time.time_ns() - mtime > 1_000_000_000
            stamp = (mtime, signature(path)) if live else (mtime if settled else None)
            rows[path] = (stamp, now, _row(self._fresh(run) if live else run))
        self._rows = rows
        out = [
            row
            for _, _, row in rows.values()
            if (project is None or row["project"] == project) and (state is None or row["state"] == state)
        ]
        return sorted(out, key=lambda row: row["created"], reverse=True)


def _row(run: Run) -> dict[str, Any]:
    latest = run.latest()
    return {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "state": run.state,
        "tags": run.tags,
        "hosts": run.hosts,
        "created": run.created,
        "ended": run.ended,
        "last_step": latest.get("step"),
        "loss": latest.get("values", {}).get("loss"),
    }
