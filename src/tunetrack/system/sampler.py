"""The sampler thread: samples every source at a fixed interval and hands rows to the tracker.

The first sample is taken at start, so even a short run has one. Sampling never runs on the training
thread; a source that raises is reported once and dropped, the others go on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._warnings import warn_once
from .base import Source

log = logging.getLogger("tunetrack.system")
MIN_INTERVAL = 0.1


def default_sources(disk_path: str | None = None, tree: bool = False) -> list[Source]:
    """Every built-in source that works on this machine; the missing ones cost one info line. ``tree``:
    the host's process share is this process's and its descendants' (``host.HostSource``)."""
    sources: list[Source] = []
    try:
        from .host import HostSource

        sources.append(HostSource(disk_path, tree=tree))
    except Exception as exc:  # psutil missing or /proc unreadable
        log.info("tunetrack: host metrics unavailable (%s)", exc)
    from .gpu import gpu_sources

    sources.extend(gpu_sources())
    return sources


class SystemSampler(threading.Thread):
    """Calls ``sink(unix_time, row)`` with one merged row per interval."""

    def __init__(
        self, sources: Sequence[Source], interval: float, sink: Callable[[float, dict[str, Any]], None]
    ) -> None:
        super().__init__(name="tunetrack-system", daemon=True)
        self.sources = list(sources)
        self.interval = max(float(interval), MIN_INTERVAL)
        self.sink = sink
        self.stop_event = threading.Event()

    def sample_once(self) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for source in list(self.sources):
            try:
                row.update(source.sample())
            except Exception as exc:
                warn_once(
                    f"system:{source.name}", f"system source {source.name!r} failed and was dropped: {exc!r}"
                )
                self.sources.remove(source)
                _close(source)
        return row

    def run(self) -> None:
        while True:
            now = time.time()
            row = self.sample_once()
            if row:
                self.sink(now, row)
            if self.stop_event.wait(self.interval):
                break
        for source in self.sources:
            _close(source)

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)


def _close(source: Source) -> None:
    try:
        source.close()
    except Exception as exc:
        log.debug("closing %s failed: %s", source.name, exc)
