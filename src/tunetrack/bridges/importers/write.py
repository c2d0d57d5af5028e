"""Writing source runs into a tunetrack store, through the writer a live run uses (its channel), with
the source's steps and wall times."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator

from ... import settings
from ...reader import run_exists
from ...writer import ConfigUpdate, Event, Role, RunRequest, SystemSample, Writer
from .source import Imported, SourceError, SourceRun, run_id_for

#: the longest an importer waits for its writer to take rows (the writer is writing a file: a wait
#: this long means it is stuck)
WAIT = 600.0


def import_runs(
    runs: Iterable[SourceRun | Imported],
    dir: str | os.PathLike[str] | None = None,
    project: str | None = None,
) -> Iterator[Imported]:
    """Write each source run into the store at ``dir`` (default: ``$TUNETRACK_DIR``, else
    ``./tunetrack_runs``); ``project`` replaces the source's. An ``Imported`` among ``runs`` is a
    source run the importer passed over (still running), reported as it is."""
    dir = settings.store_dir(dir)
    for run in runs:
        yield run if isinstance(run, Imported) else write(run, dir, project)


def write(source: SourceRun, dir: str | os.PathLike[str], project: str | None = None) -> Imported:
    """Record ``source`` as a tunetrack run (nothing if an earlier import made it)."""
    kind = str(source.origin.get("from", "source"))
    if source.tunetrack_id is not None and run_exists(dir, source.tunetrack_id):
        return Imported(source.tunetrack_id, source.name, kind, "already in the store")
    run_id = run_id_for(source.key)
    if run_exists(dir, run_id):
        return Imported(run_id, source.name, kind, "already imported")
    writer = Writer(health=None)
    channel = writer.channel
    request = RunRequest(
        id=run_id,
        name=source.name,
        project=project or source.project,
        tags=list(source.tags),
        created=source.created,
        process={
            "role": Role.IMPORT,
            "imported": {**source.origin, "at": time.time()},
            **({"host": source.host} if source.host else {}),
        },
        new=True,
    )
    writer.open(dir, request)
    writer.start()
    if source.config:
        channel.send(ConfigUpdate(source.created, source.config))
    points = 0
    for step, when, values in source.rows():
        all_float = all(type(v) is float for v in values.values())
        if not channel.put_row(int(step), float(when), values, all_float, wait=WAIT):
            raise SourceError(f"the writer of run {run_id} stopped taking rows; the import is incomplete")
        points += len(values)
    for step, when, values in source.system():
        channel.send(SystemSample(int(step), float(when), values), wait=WAIT)
    for kind, step, when, data in source.events():
        channel.send(Event(kind, int(step), float(when), data), wait=WAIT)
    if not writer.finish(source.state, source.error, timeout=3600.0, at=source.ended):
        raise SourceError(f"could not finish writing run {run_id} into {dir}")
    return Imported(run_id, source.name, kind, "imported", points)
