"""The floor: the simplest background logger a competent engineer would write in ten minutes.

``log()`` copies the caller's dict and puts ``(step, time, row)`` on a ``queue.Queue``; a daemon
thread takes the rows, ``json.dumps`` each one and writes it to a JSONL file, flushing the file at
least once a second. ``finish()`` drains the queue, flushes and fsyncs. Nothing is bounded, nothing is
checked: it is the cost of "queue + thread" in pure Python, the reference tunetrack's hot path is
measured against (target: tunetrack's ``log()`` costs no more than this).
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_STOP = object()


class FloorLogger:
    def __init__(self, path: str | os.PathLike[str], flush_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.flush_interval = flush_interval
        self._q: queue.Queue[Any] = queue.Queue()
        self._f = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed by finish()
        self._thread = threading.Thread(target=self._run, name="floor-writer", daemon=True)
        self._thread.start()

    def log(self, metrics: Mapping[str, Any], step: int) -> None:
        self._q.put((step, time.time(), dict(metrics)))

    def _run(self) -> None:
        get, write, dumps = self._q.get, self._f.write, json.dumps
        last_flush = time.monotonic()
        while True:
            try:
                item = get(timeout=self.flush_interval)
            except queue.Empty:
                item = None
            if item is _STOP:
                break
            if item is not None:
                step, t, row = item
                write(dumps({"step": step, "time": t, **row}) + "\n")
            now = time.monotonic()
            if now - last_flush >= self.flush_interval:
                self._f.flush()
                last_flush = now
        self._f.flush()
        os.fsync(self._f.fileno())

    def finish(self) -> None:
        self._q.put(_STOP)
        self._thread.join()
        self._f.close()


def read_series(path: str | os.PathLike[str], key: str) -> list[float]:
    """Every value of ``key`` in a floor JSONL file (used only to verify what reached the disk)."""
    with open(path, encoding="utf-8") as f:
        return [row[key] for line in f if key in (row := json.loads(line))]
