"""The backend interface: what a user's own tracker implements to receive everything tunetrack records.

Backends run on the writer thread, never on the training thread: a slow backend delays only the
writer, and the first exception a backend raises is reported once and disables it for the run. It is
a ``Protocol``, so a backend needs no import from tunetrack to fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: ``(step, unix_time, {key: float | int | str | bool | None})``
Row = tuple[int, float, dict[str, Any]]


@dataclass
class RunInfo:
    """What a backend learns about the run at ``start``."""

    id: str
    name: str
    project: str | None
    tags: list[str]
    dir: Path | None
    resumed: bool
    config: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """Four operations; optionally ``log_event(event)`` and ``log_system(rows)`` too."""

    def start(self, run: RunInfo) -> None: ...

    def log_config(self, config: dict[str, Any]) -> None: ...

    def log(self, rows: Sequence[Row]) -> None: ...

    def finish(self, state: str) -> None: ...
