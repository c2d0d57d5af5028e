"""The backend interface: what a user's own tracker implements to receive everything tunetrack records.

Every method runs on the backend's own thread (``writer/fanout.py``), never the training thread or the
writer's: a slow backend falls behind alone, and one that falls too far behind misses rows (counted).
The first exception a backend raises is reported once (a ``TunetrackWarning`` with the traceback) and
that backend is disabled for the rest of the run; the local store and the other backends carry on.

``Backend`` is a ``Protocol``, so a backend needs no import from tunetrack and no base class.
Besides its four methods, a backend may offer the capabilities below, each a small ``Protocol`` of
its own: tunetrack calls a method only on a backend that defines it (``LogsEvents``, ``LogsSystem``,
``KnowsHeld``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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


@runtime_checkable
class LogsEvents(Protocol):
    """Receives events: checkpoints, rewinds, text samples, images, alerts, ..."""

    def log_event(self, event: dict[str, Any]) -> None:
        """``{"kind", "step", "time", **data}``."""
        ...


@runtime_checkable
class LogsSystem(Protocol):
    """Receives system metrics (``gpu.0.util``, ``gpu.0.memory.used_bytes``, ...)."""

    def log_system(self, rows: Sequence[Row]) -> None: ...


@runtime_checkable
class KnowsHeld(Protocol):
    """Tells ``tunetrack sync-backend`` what the target already holds, so that a replay sends only the
    missing points (without it, a replay sends everything again)."""

    def held(self, keys: Sequence[str], system: bool = False) -> Mapping[str, Collection[int]]:
        """Called after ``start()``: for each of tunetrack's ``keys``, the steps the target holds for
        this run."""
        ...


#: the optional methods, by the capability that declares each
OPTIONAL: dict[str, type] = {"log_event": LogsEvents, "log_system": LogsSystem, "held": KnowsHeld}
