"""An MLflow tracking server or store: ``tunetrack import mlflow [--tracking-uri URI] [--experiment NAME]``.

Read with ``MlflowClient`` (MLflow's settings where an option is left out: ``MLFLOW_TRACKING_URI``,
else MLflow's default ``./mlruns``/``mlflow.db``). Each MLflow run becomes a tunetrack run in a project
named after its experiment: params as the config (a JSON value as the value, ``"a.b"`` keys nested),
every metric's full history with its steps and times, tags (``key`` for a tag set to ``true`` or empty,
else ``key=value``; MLflow's own ``mlflow.*`` tags left out), its name and its status. A run still
``RUNNING`` is left for a later import while it is active, and imported ``crashed`` once silent past
tunetrack's staleness limit (MLflow never marks a run whose process died).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ...backends.mlflow import limited, request_limits
from ...backends.names import mlflow as names
from ...states import STATES, State
from .source import Imported, SourceError, SourceRun, nested, rows_of, settled

_STATES = {"FINISHED": State.FINISHED, "FAILED": State.FAILED, "KILLED": State.KILLED}
#: per-request bounds while importing: an unreachable server is an error in seconds, not minutes
_LIMITS = request_limits(timeout=30, retries=2)
_NAMED = {"True": True, "False": False, "None": None}  # what ``mlflow.log_param`` writes for these


def runs(tracking_uri: str | None = None, experiment: str | None = None) -> Iterator[SourceRun | Imported]:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ImportError("importing from MLflow needs its client: pip install 'tunetrack[mlflow]'") from None
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    with limited(_LIMITS):
        client = MlflowClient(tracking_uri=uri)
        where = client.tracking_uri if hasattr(client, "tracking_uri") else uri
        try:
            if experiment is not None:
                found = client.get_experiment_by_name(experiment)
                if found is None:
                    raise SourceError(f"no MLflow experiment named {experiment!r} at {where}")
                experiments = [found]
            else:
                experiments = list(client.search_experiments())
        except SourceError:
            raise
        except Exception as exc:
            raise SourceError(f"cannot read MLflow at {where}: {exc}") from None
        for exp in experiments:
            token = None
            while True:
                page = client.search_runs([exp.experiment_id], max_results=1000, page_token=token)
                for run in page:
                    yield _run(client, str(where), exp.name, run)
                token = page.token
                if not token:
                    break


def _run(client: Any, where: str, experiment: str, run: Any) -> SourceRun | Imported:
    info, data = run.info, run.data
    tags = dict(data.tags)
    histories = {key: client.get_metric_history(info.run_id, key) for key in data.metrics}
    last = max((m.timestamp for h in histories.values() for m in h), default=info.start_time) / 1000
    name = info.run_name or tags.get("mlflow.runName") or info.run_id
    state = _STATES.get(info.status)
    if state is None:  # RUNNING or SCHEDULED
        if not settled(last):
            return Imported("", name, "mlflow", "skipped: still running in MLflow; import it once it ends")
        state = State.CRASHED
    if tags.get(names.STATE) in STATES:  # a tunetrack mirror says what MLflow cannot
        state = tags[names.STATE]
    points = sorted(
        ((m.timestamp / 1000, m.step, key, m.value) for key, history in histories.items() for m in history),
        key=lambda p: (p[0], p[1]),
    )
    return SourceRun(
        key=f"mlflow:{info.run_id}",
        name=name,
        created=info.start_time / 1000,
        rows=lambda: rows_of(points),
        project=experiment,
        config=_config(data.params),
        tags=[
            key if value in ("", "true") else f"{key}={value}"
            for key, value in sorted(tags.items())
            if not key.startswith(names.NOT_USER_TAGS)
        ],
        state=state,
        ended=info.end_time / 1000 if info.end_time else last,
        origin={"from": "mlflow", "tracking_uri": where, "run_id": info.run_id, "experiment": experiment},
        tunetrack_id=tags.get(names.RUN_ID),
    )


def _config(params: dict[str, str]) -> dict[str, Any]:
    """Params as a config: each value parsed back (JSON, or Python's spelling of a bool or None), and
    dotted keys nested again (the flattening tunetrack's own mlflow backend does)."""
    return nested({key: _value(text) for key, text in params.items()}, ".")


def _value(text: str) -> Any:
    if text in _NAMED:
        return _NAMED[text]
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if not isinstance(value, str) else text
