"""The backend interface: what a user's own tracker implements to receive everything tunetrack records.

Every method runs on the backend's own thread (``writer/fanout.py``), never the training thread or the
writer's: a slow backend falls behind alone, and one that falls too far behind misses rows (counted).
The first exception a backend raises is reported once (a ``TunetrackWarning`` with the traceback) and
that backend is disabled for the rest of the run; the local store and the other backends carry on.

``Backend`` is a ``Protocol``, so a backend needs no import from tunetrack and no base class.
Besides its four methods, tunetrack calls these when a backend defines them:

- ``log_event(event: dict)``: ``{"kind", "step", "time", **data}`` (checkpoint, rewind, text, image, ...);
- ``log_system(rows: Sequence[Row])``: system metrics (``gpu.0.util``, ``gpu.0.memory.used_bytes``, ...);
- ``held(keys, system=False) -> Mapping[str, Collection[int]]``: for ``tunetrack sync-backend``, called
  after ``start()``: for each of tunetrack's keys, the steps the target already holds for this run,
  so that a replay sends only the missing points (without it, a replay sends everything again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: ``(step, unix_time, {key: value})``: one logged row, values already converted to plain scalars.
Row = tuple[int, float, dict[str, float | int | str | bool | None]]


@dataclass
class RunInfo:
    """What a backend learns about the run at ``start``."""

    id: str
    name: str
    project: str | None
    tags: list[str]
    dir: Path | str | None  # the run's folder (or URL in object storage); None with ``store=False``
    resumed: bool  # this process re-attached to an existing run (``resume=``, or another node's process)


@runtime_checkable
class Backend(Protocol):
    """Receives a run's config and rows in order, in batches, on the writer thread."""

    def start(self, run: RunInfo) -> None: ...

    def log_config(self, config: dict[str, Any]) -> None:
        """The config, nested, JSON-safe and with secrets redacted; called again when it grows."""
        ...

    def log(self, rows: Sequence[Row]) -> None: ...

    def finish(self, state: str) -> None:
        """``"finished"``, ``"failed"`` or ``"killed"``; the last call a backend receives."""
        ...
