"""Runs recorded by another tracker, brought into a tunetrack store: ``tunetrack import SOURCE ...``.

One module per tracker (``tensorboard``, ``mlflow``, ``wandb``, ``trackio``) reads that tracker's runs
with the tracker's own reader (its library is imported only then) and yields ``SourceRun``s; ``write``
records each as a tunetrack run through the writer a live run uses, keeping the source's steps and
wall times. The run's id is derived from what identifies the run at its source (an MLflow run id, a W&B
run folder, TensorBoard's event file names), so importing the same source again finds the runs it made
and creates nothing new.
"""

from __future__ import annotations

import hashlib
import os
import string
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ... import settings, states
from ...backends.base import Row
from ...errors import TunetrackError
from ...reader import store_at
from ...writer import ConfigUpdate, Counters, RowQueue, RunRequest, SystemSample, Writer

#: the trackers runs can be imported from: ``tunetrack import NAME``
SOURCES = ("tensorboard", "mlflow", "wandb", "trackio")
#: rows queued ahead of the writer while importing (memory stays bounded for any size of run)
BACKLOG = 50_000
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
    state: str = states.FINISHED
    ended: float | None = None
    error: str | None = None
    #: system-metric rows, where the source samples the machine
    system: Callable[[], Iterable[Row]] = lambda: ()
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


def import_runs(
    runs: Iterable[SourceRun | Imported],
    location: str | os.PathLike[str] | None = None,
    project: str | None = None,
) -> Iterator[Imported]:
    """Write each source run into the store at ``location`` (default: ``$TUNETRACK_DIR``, else
    ``./tunetrack_runs``); ``project`` replaces the source's. An ``Imported`` among ``runs`` is a
    source run the importer passed over (still running), reported as it is."""
    where = settings.store_location(location)
    for run in runs:
        yield run if isinstance(run, Imported) else write(run, where, project)


def write(source: SourceRun, location: str | os.PathLike[str], project: str | None = None) -> Imported:
    """Record ``source`` as a tunetrack run (nothing if an earlier import made it)."""
    store = store_at(location)
    kind = str(source.origin.get("from", "source"))
    if source.tunetrack_id is not None and store.run(source.tunetrack_id) is not None:
        return Imported(source.tunetrack_id, source.name, kind, "already in the store")
    run_id = run_id_for(source.key)
    if store.run(run_id) is not None:
        return Imported(run_id, source.name, kind, "already imported")
    queue, messages = RowQueue(), deque[Any]()
    writer = Writer(queue, messages, Counters(), health=None)
    request = RunRequest(
        id=run_id,
        name=source.name,
        project=project or source.project,
        tags=list(source.tags),
        created=source.created,
        process={
            "role": "import",
            "imported": {**source.origin, "at": time.time()},
            **({"host": source.host} if source.host else {}),
        },
        new=True,
    )
    writer.open(location, request)
    writer.start()
    if source.config:
        messages.append(ConfigUpdate(source.created, source.config))
    points = 0
    for step, when, values in source.rows():
        while len(queue.rows) >= BACKLOG:
            time.sleep(0.005)
        queue.put(int(step), float(when), values, all(type(v) is float for v in values.values()))
        points += len(values)
    for step, when, values in source.system():
        while len(messages) >= BACKLOG:
            time.sleep(0.005)
        messages.append(SystemSample(int(step), float(when), values))
    if not writer.finish(source.state, source.error, timeout=3600.0, at=source.ended):
        raise SourceError(f"could not finish writing run {run_id} into {location}")
    return Imported(run_id, source.name, kind, "imported", points)
