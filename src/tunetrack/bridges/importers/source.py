"""What an importer yields: a run as another tracker recorded it (``SourceRun``), and the helpers that
turn a source's records into tunetrack's rows. Each importer module (``tensorboard``, ``mlflow``,
``wandb``, ``trackio``, ``comet``) is an ``Importer``."""

from __future__ import annotations

import hashlib
import string
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ... import settings
from ...backends.base import Row
from ...errors import TunetrackError
from ...states import State

#: the trackers runs can be imported from: ``tunetrack import NAME``
SOURCES = ("tensorboard", "mlflow", "wandb", "trackio", "comet")
#: a value the store keeps as a metric point (what a source holds beside them, tables, images, ..., is not imported)
SCALARS = (int, float, bool, str, type(None))


class SourceError(TunetrackError):
    """A source that is missing or cannot be read (one line, shown as the command's error)."""


@dataclass
class SourceRun:
    """One run as another tracker recorded it."""

    #: what identifies the run at its source across imports (``"mlflow:<run id>"``)
    key: str
    name: str
    created: float
    #: the logged rows ``(step, unix time, values)`` in the order they were recorded, read lazily
    rows: Callable[[], Iterable[Row]]
    project: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    state: str = State.FINISHED
    ended: float | None = None
    error: str | None = None
    #: system-metric rows, where the source samples the machine
    system: Callable[[], Iterable[Row]] = lambda: ()
    #: events ``(kind, step, unix time, data)``: the histograms the source holds
    events: Callable[[], Iterable[tuple[str, int, float, dict[str, Any]]]] = lambda: ()
    #: where it came from, kept in the run's process metadata (``{"from": "mlflow", ...}``)
    origin: dict[str, Any] = field(default_factory=dict)
    #: the machine that recorded it, where the source says
    host: str | None = None
    #: a run tunetrack itself mirrored into the source: its id in the tunetrack store it came from
    tunetrack_id: str | None = None


@dataclass
class Imported:
    """What importing one source run did."""

    run_id: str
    name: str
    source: str
    #: ``imported``, ``already imported``, ``already in the store`` or ``skipped: <why>``
    outcome: str
    points: int = 0


class Importer(Protocol):
    """An importer module: ``runs(...)`` reads the source (with that tracker's own reader, imported
    only then; its arguments are the source's: a folder, a tracking URI, a project) and yields each
    run, or an ``Imported`` for a run it passes over (one still running)."""

    def runs(self, *args: Any, **kwargs: Any) -> Iterator[SourceRun | Imported]: ...


def run_id_for(key: str) -> str:
    """A run id shaped as a new run's (eight base-36 characters), derived from the source's key."""
    value = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    chars = []
    for _ in range(8):
        value, digit = divmod(value, 36)
        chars.append((string.digits + string.ascii_lowercase)[digit])
    return "".join(chars)


def settled(last_activity: float | None) -> bool:
    """Whether a source run without an end is certainly over: silent for longer than tunetrack's
    staleness limit (the rule tunetrack's own runs are judged ``crashed`` by)."""
    return last_activity is not None and time.time() - last_activity > settings.stale_after()


def number(value: Any) -> Any:
    """A metric value as the store keeps it: a JSON number as a float (``0.0`` and ``0`` are the same
    point once a tracker wrote them as JSON), anything else unchanged."""
    return float(value) if type(value) is int else value


def scalars(values: dict[str, Any]) -> dict[str, Any]:
    return {key: number(value) for key, value in values.items() if isinstance(value, SCALARS)}


def nested(flat: Mapping[str, Any], separator: str) -> dict[str, Any]:
    """A tracker's flat params as a nested config: keys joined with ``separator`` (the way the tracker,
    or tunetrack's mirror into it, flattened a nested config) nested again, unless a key is both a
    value and a prefix (then it stays as it is)."""
    out: dict[str, Any] = {}
    for key in sorted(flat):
        parts, node = key.split(separator), out
        if any(separator.join(parts[:i]) in flat for i in range(1, len(parts))):
            out[key] = flat[key]
            continue
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = flat[key]
    return out


def rows_of(points: Iterable[tuple[float, int, str, Any]]) -> Iterator[Row]:
    """Rows from ``(unix time, step, key, value)`` points in time order, for a source that keeps one
    series per metric: points recorded together (the same time and step) make one row, as the
    source's own writer received them; every other point is a row of its own, with its own time."""
    row: dict[str, Any] = {}
    at: tuple[float, int] | None = None
    for when, step, key, value in points:
        if (when, step) != at or key in row:
            if row and at is not None:
                yield at[1], at[0], row
            row, at = {}, (when, step)
        row[key] = value
    if row and at is not None:
        yield at[1], at[0], row
