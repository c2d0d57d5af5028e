"""Replay a recorded run into a backend: ``tunetrack sync-backend RUN --to NAME``.

For what a live mirror missed (the tracking server was down, the backend fell behind) and for runs
recorded offline. The backend is started as for a resumed run, so it continues the same remote run
(MLflow finds it by its ``tunetrack.run_id`` tag). A backend with ``held(keys, system)`` says which
steps it already has, and only the other points are sent: a gap in the middle is filled and a second
replay sends nothing. A backend without it gets every point again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..backends import registry
from ..backends.base import Backend, KnowsHeld, LogsEvents, LogsSystem, Row, RunInfo
from ..reader import Run

#: rows per ``log`` call (the backend batches its own requests within one call)
CHUNK = 5_000


@dataclass
class Replayed:
    """What a replay sent."""

    points: int = 0
    system_points: int = 0
    events: int = 0

    def __str__(self) -> str:
        if not (self.points or self.system_points or self.events):
            return "nothing new to send"
        return f"{self.points:,} points, {self.system_points:,} system points, {self.events:,} events sent"


def replay(run: Run, target: Backend | str, on_rows: Callable[[int], None] = lambda n: None) -> Replayed:
    """Send ``run`` into ``target``, a backend or a backend's name (started here, finished with the
    run's state). ``on_rows(n)`` is called as rows are sent (a progress bar)."""
    backend: Backend = registry.resolve(target)
    done = Replayed()
    info = RunInfo(
        id=run.id, name=run.name, project=run.project, tags=list(run.tags), dir=run.path, resumed=True
    )
    backend.start(info)
    if run.config:
        backend.log_config(run.config)
    held: Mapping[str, Collection[int]] = _held(backend, run.keys(), system=False)
    for rows in _chunks(_missing(run.rows(), held), on_rows):
        backend.log(rows)
        done.points += sum(len(values) for _, _, values in rows)
    nodes = run.nodes
    if isinstance(backend, LogsSystem) and nodes:
        # one node's samples: a backend keeps one series per system key (the live mirror sends the
        # primary node's, the first in order)
        first = (r for r in run.system_rows() if r["node"] == nodes[0])
        held_system = _held(backend, run.system_keys(), system=True)
        for rows in _chunks(_missing(first, held_system), on_rows):
            backend.log_system(rows)
            done.system_points += sum(len(values) for _, _, values in rows)
    if isinstance(backend, LogsEvents) and not any(
        held.values()
    ):  # events only into a target that had nothing
        # tables of samples go to a backend as the text events it knows (as the live mirror sends them)
        media = [e for e in run.events() if e["kind"] == "image"] + run.texts()
        for event in sorted(media, key=lambda e: e["time"]):
            backend.log_event(event)
            done.events += 1
    backend.finish(run.state)
    return done


def _held(backend: Backend, keys: list[str], system: bool) -> Mapping[str, Collection[int]]:
    return backend.held(keys, system=system) if isinstance(backend, KnowsHeld) and keys else {}


def _missing(rows: Iterator[dict[str, Any]], held: Mapping[str, Collection[int]]) -> Iterator[Row]:
    """The reader's rows as backend rows, without the points the target holds (and without None)."""
    for row in rows:
        step = row["step"]
        values = {
            key: value
            for key, value in row.items()
            if key not in ("step", "time", "node") and value is not None and step not in held.get(key, ())
        }
        if values:
            yield step, row["time"], values


def _chunks(rows: Iterator[Row], on_rows: Callable[[int], None]) -> Iterator[list[Row]]:
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK:
            yield chunk
            on_rows(len(chunk))
            chunk = []
    if chunk:
        yield chunk
        on_rows(len(chunk))
