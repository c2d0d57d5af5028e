"""What the tracker tells its writer besides rows: small typed messages on a second deque.

The training thread appends them (``deque.append`` is atomic); the writer takes them before the rows
of each cycle, so a ``Flush`` covers every row logged before it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class ConfigUpdate:
    """A captured config, merged into the run's."""

    time: float
    config: dict[str, Any]


@dataclass(slots=True)
class Event:
    """A discrete event (checkpoint, evaluation, rewind, text, image, ...) at a step."""

    kind: str
    step: int
    time: float
    data: dict[str, Any]


@dataclass(slots=True)
class Table:
    """A table of samples (``Tracker.log_table``) at a step, as the caller handed it over: the writer
    reads, types and encodes it (``writer.samples``), so the caller pays for a reference only."""

    key: str
    step: int
    time: float
    rows: Any


@dataclass(slots=True)
class SystemSample:
    """One row of system metrics from the sampler thread."""

    step: int
    time: float
    values: dict[str, Any]


@dataclass(slots=True)
class MediaFile:
    """A file kept with the run (an encoded image), at ``path`` inside the run."""

    path: str
    data: bytes


@dataclass(slots=True)
class RunEdit:
    """An edit of the run (``tunetrack.edits.new_edit``): a new name, tags added or removed."""

    body: dict[str, Any]


@dataclass(slots=True)
class Flush:
    """Write and flush everything queued so far, then set ``done``."""

    done: threading.Event


Message = ConfigUpdate | Event | Table | SystemSample | MediaFile | RunEdit | Flush
