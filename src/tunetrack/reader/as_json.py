"""A run as JSON: the one shape the CLI's ``--json`` output and the dashboard's API share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..metric_keys import main_loss
from .run import Run


def run_json(
    run: Run,
    latest: dict[str, Any] | None = None,
    last_keys: Sequence[str] | None = None,
    detail: bool = False,
) -> dict[str, Any]:
    """Identity, state, times, hosts and the last step; with ``latest`` (``Run.latest()``, what
    listings use: no data read for an ended run) also ``last`` (each key's last value, only
    ``last_keys`` if given) and ``loss`` (the last training loss); with ``detail`` also the error,
    the metadata of every process, the config and the events."""
    record: dict[str, Any] = {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "state": run.state,
        "tags": run.tags,
        "notes": run.notes,
        "created": run.created,
        "ended": run.ended,
        "hosts": run.hosts,
        "last_step": latest["step"] if latest is not None else run.last_step,
    }
    if latest is not None:
        values = latest["values"]
        record["loss"] = main_loss(values)
        record["last"] = values if last_keys is None else {k: values[k] for k in last_keys if k in values}
    if detail:
        record.update(error=run.error, meta=run.meta, config=run.config, events=run.events())
    return record
