"""trackio's local store: ``tunetrack import trackio [PROJECT]`` (every project when none is named).

Read with trackio's own storage API, from where trackio keeps it (``TRACKIO_DIR``, by default under the
Hugging Face cache). Imported: each run's config (trackio's own ``_*`` entries left out), every logged
row with its step and time, its system metrics, name and project. trackio has no run state: a run is
imported ``finished``, unless a tunetrack mirror recorded how it ended (the ``run failed``/``run
killed``/``run crashed`` alert tunetrack's trackio backend raises).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ...backends.base import Row
from ...backends.names import trackio as names
from ...states import State
from .source import SourceError, SourceRun, scalars


def runs(project: str | None = None) -> Iterator[SourceRun]:
    try:
        from trackio.sqlite_storage import SQLiteStorage
        from trackio.utils import TRACKIO_DIR
    except ImportError:
        raise ImportError("importing from trackio needs trackio: pip install 'tunetrack[trackio]'") from None
    projects = SQLiteStorage.get_projects()
    if project is not None and project not in projects:
        raise SourceError(f"no trackio project named {project!r} in {TRACKIO_DIR}")
    if not projects:
        raise SourceError(f"no trackio projects in {TRACKIO_DIR}")
    for name in [project] if project is not None else projects:
        for record in SQLiteStorage.get_run_records(name):
            yield _run(SQLiteStorage, name, record)


def _run(storage: Any, project: str, record: dict[str, Any]) -> SourceRun:
    run_id, name = record.get("id"), str(record.get("name"))
    logs = storage.get_logs(project, name, run_id=run_id)
    rows: list[Row] = []
    for entry in logs:
        values = scalars({k: v for k, v in entry.items() if k not in ("step", "timestamp")})
        if values:
            rows.append((int(entry["step"]), _time(entry["timestamp"]), values))
    system: list[Row] = []
    for entry in storage.get_system_logs(project, name, run_id=run_id):
        values = scalars({k: v for k, v in entry.items() if k != "timestamp"})
        if values:
            system.append((rows[-1][0] if rows else 0, _time(entry["timestamp"]), values))
    system.sort(key=lambda row: row[1])
    config = {
        k: v
        for k, v in (storage.get_run_config(project, name, run_id=run_id) or {}).items()
        if not k.startswith("_")
    }
    created = _time(record["created_at"]) if record.get("created_at") else (rows[0][1] if rows else 0.0)
    return SourceRun(
        key=f"trackio:{project}:{run_id or name}",
        name=name,
        created=created,
        rows=lambda: rows,
        project=project,
        config=config,
        state=_state(storage, project, name, run_id),
        ended=max([created] + [row[1] for row in rows[-1:]] + [row[1] for row in system[-1:]]),
        system=lambda: system,
        origin={"from": "trackio", "project": project, "run": name, "run_id": run_id},
    )


def _state(storage: Any, project: str, name: str, run_id: str | None) -> str:
    for alert in storage.get_alerts(project, run_name=name, run_id=run_id):
        state = names.ended(str(alert.get("title") or ""))
        if state in (State.FAILED, State.KILLED, State.CRASHED):
            return state
    return State.FINISHED


def _time(value: Any) -> float:
    return (
        value.timestamp() if isinstance(value, datetime) else datetime.fromisoformat(str(value)).timestamp()
    )
