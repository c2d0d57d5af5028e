"""A run as JSON: the one shape the CLI's ``--json`` output and the dashboard's API share."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from ..metric_keys import main_loss
from ..store import process_meta
from .run import Run


def run_json(
    run: Run,
    latest: dict[str, Any] | None = None,
    last_keys: Sequence[str] | None = None,
    detail: bool = False,
    summary: dict[str, dict[str, Any]] | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Identity, state (with the known failure a run that did not finish ended in, ``CUDA error on
    rank 0``, and its cause in one line: ``Run.failure``, ``Run.cause``), times, hosts and the last
    step; with ``latest`` (``Run.latest()``, what
    listings use: no data read for an ended run) also ``last`` (each key's last value, only
    ``last_keys`` if given) and ``loss`` (the last training loss); with ``summary`` (``Run.summary()``:
    last, min, max, best and its step per key) that too; with ``detail`` also the error,
    the metadata of every process, where and how the run ran (``provenance``), what it could not
    keep (``Run.counters``), the config, the events and the runs forked from it (``forks``: id, name,
    step). ``fork``: where a fork branched (``Run.fork``: the parent's id and the step), else None.
    ``hidden``: the runs (by id) the reader may not see (a team member's, ``reader.visible``): the
    forks made of this run into such runs are not listed. (Its own parent is part of a fork's record,
    as its history up to the branch is part of its data: shown.)"""
    record: dict[str, Any] = {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "state": run.state,
        "failure": run.failure,
        "cause": run.cause,
        "tags": run.tags,
        "notes": run.notes,
        "stop": run.stop_request,
        "exit_code": run.exit_code,
        "created": run.created,
        "ended": run.ended,
        "hosts": run.hosts,
        "last_step": latest["step"] if latest is not None else run.last_step,
        "fork": run.fork,
    }
    if latest is not None:
        values = latest["values"]
        record["loss"] = main_loss(values)
        record["last"] = values if last_keys is None else {k: values[k] for k in last_keys if k in values}
    if summary is not None:
        record["summary"] = summary
    if detail:
        record.update(
            error=run.error,
            meta=run.meta,
            provenance=provenance(run),
            counters=run.counters(),
            config=run.config,
            events=run.events(),
            forks=[
                {"id": f.id, "name": f.name, "step": f.fork["step"] if f.fork else None}
                for f in run.forks()
                if hidden is None or not hidden(f.id)
            ],
        )
    return record


def provenance(run: Run) -> dict[str, Any]:
    """Where and how the run ran, as its primary process recorded it (or the import that wrote it;
    else the first process): ``user``; ``git`` (commit, branch, dirty, remote; None outside a
    repository); ``command`` (the command line, shell-quoted, secrets redacted when it was
    recorded); ``python``; ``versions`` (of the frameworks installed); how many ``processes`` wrote
    the run; and, for an imported run, where from (``imported``: ``from <tracker> <source>``)."""
    processes = run.meta["processes"]
    primary = next(
        (p for p in processes if process_meta.role(p) in process_meta.LEADS),
        processes[0] if processes else {},
    )
    imported = primary.get("imported") or {}
    source = imported.get("path") or imported.get("tracking_uri") or imported.get("project") or ""
    return {
        "processes": len(processes),
        "user": primary.get("user"),
        "git": primary.get("git") or None,
        "command": shlex.join(map(str, primary.get("argv") or [])) or None,
        "python": primary.get("python"),
        "versions": dict(primary.get("versions") or {}),
        "imported": f"from {imported.get('from')} {source}".strip() if imported else None,
    }
