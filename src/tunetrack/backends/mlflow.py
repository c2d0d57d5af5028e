"""An MLflow tracking server (or any MLflow tracking URI), mirrored from a run:
``Tracker(backends=["mlflow"])``, ``TUNETRACK_BACKENDS=mlflow``, or ``MLflowBackend(tracking_uri=...,
experiment=...)``.

Mapped the way MLflow's own users read a run: the config as params (flattened with dots), metrics with
their steps and wall times, system metrics under the names MLflow's own system-metrics monitor uses
(``system/gpu_0_utilization_percentage``), tunetrack's tags as tags, the run's name, text samples and
images as artifacts, and the final state as the run's status. Only ``MlflowClient`` is used, never
the fluent API, so a run the user started with ``mlflow.start_run`` is left alone. Needs the MLflow
client (``pip install 'tunetrack[mlflow]'``: ``mlflow-skinny``), imported when the run starts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from ..config.tree import flatten
from ..states import State
from .base import Row, RunInfo
from .names import mlflow as names
from .system_names import converted, renamed

#: MLflow's limits for one ``log_batch`` request, and for one param
MAX_METRICS, MAX_PARAMS, MAX_VALUE = 1000, 100, 6000
#: characters MLflow accepts in a metric or param name (others are replaced with ``_``)
_INVALID = re.compile(r"[^\w\-. /]")
_STATUS: dict[str, str] = {State.FINISHED: "FINISHED", State.FAILED: "FAILED", State.KILLED: "KILLED"}
#: tunetrack's system keys -> (MLflow's system-metric name, scale); ``{i}`` is the GPU's index
_SYSTEM = {
    "cpu.percent": ("cpu_utilization_percentage", 1.0),
    "mem.used_bytes": ("system_memory_usage_megabytes", 1e-6),
    "mem.percent": ("system_memory_usage_percentage", 1.0),
    "disk.used_percent": ("disk_usage_percentage", 1.0),
    "gpu.{i}.util": ("gpu_{i}_utilization_percentage", 1.0),
    "gpu.{i}.memory.used_bytes": ("gpu_{i}_memory_usage_megabytes", 1e-6),
    "gpu.{i}.memory.percent": ("gpu_{i}_memory_usage_percentage", 1.0),
    "gpu.{i}.power_w": ("gpu_{i}_power_usage_watts", 1.0),
}


def request_limits(timeout: float, retries: int) -> dict[str, str]:
    """MLflow's own per-request settings (``MLFLOW_HTTP_REQUEST_*``) for ``timeout`` and ``retries``,
    leaving out those the user set: MLflow's defaults retry an unreachable server for minutes."""
    return {
        key: value
        for key, value in (
            ("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(int(timeout), 1))),
            ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(retries)),
        )
        if key not in os.environ
    }


@contextlib.contextmanager
def limited(limits: Mapping[str, str]) -> Iterator[None]:
    """``limits`` (from ``request_limits``) in the environment, where MLflow reads them on every
    request, for the calls inside the block only."""
    saved = {key: os.environ.get(key) for key in limits}
    os.environ.update(limits)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _bounded(method: Callable[..., Any]) -> Callable[..., Any]:
    """Runs a backend method with the backend's request limits."""

    @functools.wraps(method)
    def bounded(self: MLflowBackend, *args: Any, **kwargs: Any) -> Any:
        with limited(self._limits):
            return method(self, *args, **kwargs)

    return bounded


def system_name(key: str) -> tuple[str, float]:
    """MLflow's name for a tunetrack system metric, and the factor to its unit; keys MLflow has no
    name for keep theirs (under ``system/``, as MLflow's own are)."""
    name, scale = renamed(key, _SYSTEM) or (metric_name(key), 1.0)
    return "system/" + name, scale


def metric_name(key: str) -> str:
    return _INVALID.sub("_", key)[:250]


class MLflowBackend:
    name = "mlflow"

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str | None = None,
        timeout: float = 15.0,
        retries: int = 2,
    ) -> None:
        """``tracking_uri``/``experiment`` default to ``MLFLOW_TRACKING_URI`` and
        ``MLFLOW_EXPERIMENT_NAME``, then the run's project. ``timeout`` and ``retries`` bound each
        request, so a server that is down disables this mirror in seconds rather than holding its
        thread through MLflow's default minutes of retries; they are applied through MLflow's own
        ``MLFLOW_HTTP_REQUEST_*`` variables (read by MLflow on every request) around this backend's
        calls only, unless the user set those."""
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        #: MLflow's own request settings, applied around this backend's calls unless the user set them
        self._limits = request_limits(timeout, retries)
        self._client: Any = None
        self.run_id: str | None = None
        self._params: dict[str, str] = {}
        self._run: RunInfo | None = None
        self._experiment_id: str | None = None
        #: a checkpoint's location -> its logged model's id (MLflow 3)
        self._models: dict[str, str] = {}
        #: checkpoint events waiting for the rows of their step (events may arrive before them)
        self._pending: list[dict[str, Any]] = []
        #: when each key of each recent step was logged: a checkpoint's metrics are those very points
        self._times: dict[int, dict[str, float]] = {}

    # -- lifecycle ---------------------------------------------------------------------------------
    @_bounded
    def start(self, run: RunInfo) -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ImportError(
                "the mlflow backend needs the MLflow client: pip install 'tunetrack[mlflow]'"
            ) from None
        self._run = run
        client = self._client = MlflowClient(
            tracking_uri=self.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        )
        name = self.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or run.project or "Default"
        experiment = client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment else client.create_experiment(name)
        self._experiment_id = experiment_id
        found = client.search_runs([experiment_id], f"tags.`{names.RUN_ID}` = '{run.id}'", max_results=1)
        if found:  # a resume, or a replay: the same MLflow run goes on
            self.run_id = found[0].info.run_id
            self._params = dict(found[0].data.params)
            client.update_run(self.run_id, status="RUNNING")
        else:
            tags = {names.RUN_ID: run.id, **{tag: "true" for tag in run.tags}}
            self.run_id = client.create_run(experiment_id, run_name=run.name, tags=tags).info.run_id

    @_bounded
    def finish(self, state: str) -> None:
        """A run that ends ``crashed`` (only a replay sees that state) is marked FAILED with the tag
        ``tunetrack.state=crashed``: MLflow has no status for a run whose process died."""
        if self._client is None or self.run_id is None:
            return
        self._release(None)
        if state not in _STATUS:
            self._client.set_tag(self.run_id, names.STATE, state)
        if state == State.RUNNING:  # a replay of a run still being recorded: it stays RUNNING
            return
        self._client.set_terminated(self.run_id, status=_STATUS.get(state, "FAILED"))

    # -- data --------------------------------------------------------------------------------------
    @_bounded
    def log_config(self, config: dict[str, Any]) -> None:
        """MLflow's params cannot change once logged: new keys are added; a changed value is kept as
        it was first logged, with a one-time warning (the local store has the new one)."""
        from mlflow.entities import Param

        new: list[Any] = []
        for key, value in flatten(config).items():
            name, text = metric_name(key), _param_text(value)
            if name not in self._params:
                self._params[name] = text
                new.append(Param(name, text))
            elif self._params[name] != text:
                warn_once(
                    f"mlflow-param:{self.run_id}:{name}",
                    f"MLflow params cannot change: {name!r} stays {self._params[name]!r} in MLflow "
                    f"(now {text!r}; the local run has it)",
                )
        for lo in range(0, len(new), MAX_PARAMS):
            self._client.log_batch(self.run_id, params=new[lo : lo + MAX_PARAMS])

    @_bounded
    def log(self, rows: Sequence[Row]) -> None:
        self._metrics(
            (
                (step, when, metric_name(key), value)
                for step, when, values in rows
                for key, value in values.items()
            )
        )
        for step, when, values in rows:
            self._times.setdefault(step, {}).update(dict.fromkeys(values, when))
        if rows:
            self._release(rows[-1][0])

    @_bounded
    def log_system(self, rows: Sequence[Row]) -> None:
        self._metrics(
            (step, when, name, value)
            for step, when, values in rows
            for name, value in converted(values, system_name).items()
        )

    def _metrics(self, points: Any) -> None:
        from mlflow.entities import Metric

        batch: list[Any] = []
        for step, when, name, value in points:
            if _numeric(value):
                batch.append(Metric(name, float(value), int(when * 1000), int(step)))
                if len(batch) == MAX_METRICS:
                    self._client.log_batch(self.run_id, metrics=batch)
                    batch = []
        if batch:
            self._client.log_batch(self.run_id, metrics=batch)

    @_bounded
    def log_event(self, event: dict[str, Any]) -> None:
        """Text samples as a JSON artifact per key and step; images as image artifacts. A rewind is
        recorded as the tag ``tunetrack.rewound_to``: MLflow cannot delete points, so the steps logged
        again after it stand beside the old ones in a metric's history (MLflow draws both)."""
        kind, step = event.get("kind"), int(event.get("step") or 0)
        if kind == "rewind":
            self._client.set_tag(self.run_id, names.REWOUND_TO, str(step))
        elif kind == "text":
            rows = event.get("rows") or []
            key = metric_name(str(event.get("key") or "text"))
            self._client.log_text(
                self.run_id, json.dumps(rows, default=str, indent=1), f"text/{key}/{step}.json"
            )
        elif kind in ("checkpoint", "checkpoint_files", "checkpoint_deleted"):
            self._pending.append(event)
        elif kind == "image" and self._run is not None and isinstance(self._run.dir, Path):
            path = self._run.dir / str(event.get("path"))
            if path.is_file():
                self._client.log_artifact(
                    self.run_id, str(path), f"images/{metric_name(str(event.get('key')))}"
                )

    def _release(self, through: int | None) -> None:
        """Send the checkpoint events of the steps up to ``through`` (all: None), in order."""
        while self._pending and (through is None or int(self._pending[0].get("step") or 0) <= through):
            event = self._pending.pop(0)
            self._checkpoint(str(event["kind"]), int(event.get("step") or 0), event)
        if len(self._times) > 64:  # only the recent steps are asked for
            for old in sorted(self._times)[:-64]:
                del self._times[old]

    def _checkpoint(self, kind: str, step: int, event: dict[str, Any]) -> None:
        """A checkpoint as an MLflow 3 logged model of the run: a reference (its path in a tag; the
        weights are never uploaded unasked), the metrics at its step linked to it (the run's own
        points of that step: same time, so MLflow holds each once), its size once hashed, and a tag
        once rotation deleted it. MLflow 2 has no logged models: nothing is sent."""
        if not hasattr(self._client, "create_logged_model"):
            return
        from mlflow.entities import Metric

        path = str(event.get("path"))
        if kind == "checkpoint":
            model = self._client.create_logged_model(
                self._experiment_id,
                name=f"checkpoint-{step}",
                source_run_id=self.run_id,
                tags={names.CHECKPOINT_PATH: path, names.CHECKPOINT_STEP: str(step)},
                model_type=event.get("type"),
            )
            self._models[path] = model.model_id
            logged, at = self._times.get(step, {}), float(event.get("time") or 0)
            metrics = [
                Metric(
                    metric_name(k),
                    float(v),
                    int(logged.get(k, at) * 1000),
                    step,
                    model_id=model.model_id,
                    run_id=self.run_id,
                )
                for k, v in (event.get("metrics") or {}).items()
                if _numeric(v)
            ]
            if metrics:
                self._client.log_batch(self.run_id, metrics=metrics)
            self._client.finalize_logged_model(model.model_id, "READY")
        elif (model_id := self._models.get(path)) is not None:
            tag = (
                {names.CHECKPOINT_DELETED: "true"}
                if kind == "checkpoint_deleted"
                else {names.CHECKPOINT_BYTES: str(event.get("bytes"))}
            )
            self._client.set_logged_model_tags(model_id, tag)

    # -- replay ------------------------------------------------------------------------------------
    @_bounded
    def held(self, keys: Collection[str], system: bool = False) -> Mapping[str, Collection[int]]:
        """For each of tunetrack's ``keys`` (system keys when ``system``), the steps the MLflow run
        already holds (one history request per metric it has), so a replay sends only the rest."""
        present = set(self._client.get_run(self.run_id).data.metrics)
        out: dict[str, set[int]] = {}
        for key in keys:
            name = system_name(key)[0] if system else metric_name(key)
            if name in present:
                out[key] = {m.step for m in self._client.get_metric_history(self.run_id, name)}
        return out


def _numeric(value: Any) -> bool:
    """Numbers (bools as 0/1; NaN and infinities too: MLflow stores them); not strings or None."""
    return isinstance(value, (int, float))


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > MAX_VALUE:
        text = text[: MAX_VALUE - 3] + "..."
    return text
