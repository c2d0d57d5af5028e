"""Comet (online, or offline experiment archives for ``comet upload``), mirrored from a run:
``Tracker(backends=["comet"])``, ``TUNETRACK_BACKENDS=comet``, or ``CometBackend(project=..., online=False)``.

Configured by Comet's own settings (``COMET_API_KEY``, ``COMET_WORKSPACE``, ``COMET_PROJECT_NAME``,
``COMET_START_ONLINE``, ``COMET_OFFLINE_DIRECTORY``, or ``.comet.config``), opened with
``comet_ml.start`` as Comet's users open theirs. The experiment's key is derived from the tunetrack
run's id, so a resumed run, another attempt or a replay continues the same Comet experiment
(``mode="get_or_create"``; offline, each attempt is an archive of its own that ``comet upload``
appends to that experiment). Mapped the way Comet's users read an experiment: the config as nested
params (Comet's ``log_parameters``), metrics with their steps, system metrics under the names Comet's
own monitor uses (``sys.gpu.0.gpu_utilization``), text samples and images in Comet's Text and Graphics
tabs, the run's name and tags, and what Comet has no field for (the tunetrack run id, how the run
ended) as "Others". Needs ``pip install 'tunetrack[comet]'``, imported when the run starts.

The archive reader (``read_archive``) is here too: the importer and a replay (``held``) read archives
the same way.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import math
import threading
import zipfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Row, RunInfo
from .names import comet as names
from .system_names import converted, renamed

#: tunetrack's system keys -> (the name Comet's own system monitor uses, the factor to its unit)
_SYSTEM = {
    "cpu.percent": ("sys.cpu.percent.avg", 1.0),
    "mem.used_bytes": ("sys.ram.used", 1.0),
    "mem.total_bytes": ("sys.ram.total", 1.0),
    "mem.percent": ("sys.ram.percent.used", 1.0),
    "disk.used_percent": ("sys.disk.root.percent.used", 1.0),
    "disk.read_bytes_per_s": ("sys.disk.read_bps", 1.0),
    "disk.write_bytes_per_s": ("sys.disk.write_bps", 1.0),
    "gpu.{i}.util": ("sys.gpu.{i}.gpu_utilization", 1.0),
    "gpu.{i}.memory.used_bytes": ("sys.gpu.{i}.used_memory", 1.0),
    "gpu.{i}.memory.total_bytes": ("sys.gpu.{i}.total_memory", 1.0),
    "gpu.{i}.power_w": ("sys.gpu.{i}.power_usage", 1000.0),  # Comet's monitor reports NVML's milliwatts
    "gpu.{i}.power_limit_w": ("sys.gpu.{i}.power_limit", 1000.0),
    "gpu.{i}.temp_c": ("sys.gpu.{i}.temperature", 1.0),
}
#: the longest the process's exit waits for an ``end()`` under way on the backend's thread (comet_ml's
#: own exit waits as long for an offline experiment's messages)
EXIT_WAIT = 120.0
#: how Comet writes the floats JSON has no spelling for
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def system_name(key: str) -> tuple[str, float]:
    """Comet's name for a tunetrack system metric and the factor to its unit; keys Comet's monitor has
    no name for go under ``sys.`` with tunetrack's name."""
    return renamed(key, _SYSTEM) or (names.SYSTEM + key, 1.0)


def experiment_key(run_id: str) -> str:
    """The Comet experiment key of a tunetrack run: the same for every attempt, process and replay of
    the run, and shaped as Comet requires (32 to 50 letters and digits)."""
    return "tunetrack" + hashlib.sha256(run_id.encode()).hexdigest()[:32]


@contextlib.contextmanager
def _aside() -> Iterator[None]:
    """comet_ml keeps one current experiment per process and ends it when another one starts: the
    backend's experiment is started aside, so an experiment of the user's (``comet_ml.start()``,
    Transformers' ``CometCallback``) stays the current one and keeps running."""
    from comet_ml.config import get_global_experiment, set_global_experiment

    current = get_global_experiment()
    set_global_experiment(None)
    try:
        yield
    finally:
        set_global_experiment(current)


class CometBackend:
    name = "comet"

    def __init__(
        self,
        project: str | None = None,
        workspace: str | None = None,
        online: bool | None = None,
        offline_directory: str | None = None,
    ) -> None:
        """Each argument left out is Comet's own setting: ``COMET_PROJECT_NAME`` (then the run's
        project), ``COMET_WORKSPACE``, ``COMET_START_ONLINE`` (online unless it is false),
        ``COMET_OFFLINE_DIRECTORY``. The API key is Comet's (``COMET_API_KEY``, ``comet login``) and never
        stored in the run."""
        self.project, self.workspace, self.online = project, workspace, online
        self.offline_directory = offline_directory
        self.key: str | None = None
        self._info: RunInfo | None = None
        self._experiment: Any = None
        self._config: dict[str, Any] = {}
        #: the step of the last training row sent
        self._step: int | None = None
        #: a replay found this run's points in Comet already (then an empty replay writes nothing)
        self._held = False
        #: held while the experiment ends, and whether it has (see ``_at_exit``)
        self._ending = threading.Lock()
        self._ended = False

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self, run: RunInfo) -> None:
        try:
            import comet_ml  # noqa: F401 - fail at the start, not at the first row
        except ImportError:
            raise ImportError("the comet backend needs comet_ml: pip install 'tunetrack[comet]'") from None
        self._info = run
        self.key = experiment_key(run.id)

    def _open(self) -> Any:
        """The Comet experiment, started at the first thing to send: a replay with nothing new to send
        starts none (offline: writes no archive)."""
        if self._experiment is None:
            import comet_ml

            assert self._info is not None
            settings = comet_ml.ExperimentConfig(
                name=self._info.name,
                tags=list(self._info.tags) or None,
                offline_directory=self.offline_directory,
                # tunetrack records the rest itself (and samples the machine): Comet's own collection
                # would cost training time, and its stdout capture wraps the whole process's output
                log_code=False,
                log_graph=False,
                parse_args=False,
                log_env_details=False,
                log_git_metadata=False,
                log_git_patch=False,
                auto_output_logging="",
                auto_param_logging=False,
                auto_metric_logging=False,
                auto_log_co2=False,
                display_summary_level=0,
            )
            with _aside():
                self._experiment = comet_ml.start(
                    workspace=self.workspace,
                    project_name=self._project(),
                    experiment_key=self.key,
                    mode="get_or_create",
                    online=self.online,
                    experiment_config=settings,
                )
            atexit.register(self._at_exit)
            self._experiment.log_other(names.RUN_ID, self._info.id)
            if self._config:
                self._experiment.log_parameters(self._config)
        return self._experiment

    def _project(self) -> str | None:
        """The argument, else Comet's setting (``COMET_PROJECT_NAME``, ``.comet.config``), else the run's
        project (else Comet's ``Uncategorized``)."""
        from comet_ml.config import get_config

        assert self._info is not None
        return self.project or get_config()["comet.project_name"] or self._info.project

    def finish(self, state: str) -> None:
        """The end state as the Other ``tunetrack.state`` (an offline archive has no status; online,
        Comet shows a run as ended once it stops hearing from it), then Comet's ``end()``, which writes
        the offline archive."""
        if self._experiment is None and self._held:
            return  # a replay that had nothing new to send
        experiment = self._open()
        experiment.log_other(names.STATE, state)
        self._end()

    def _end(self) -> None:
        with self._ending:
            if not self._ended:
                try:
                    self._experiment.end()
                finally:
                    self._ended = True
                    atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        """At the process's exit, an experiment not yet ended is ended, and an ``end()`` under way on
        the backend's thread is waited for: comet_ml writes an offline archive in ``end()``, and its own
        exit hook runs only on the thread that started the experiment (the backend's, a daemon that
        dies at exit). Without this, a backend cut off by the run's ``backend_timeout`` (its rows
        counted as missed) would leave a zip that cannot be uploaded, or none. The wait costs the
        process's exit, never training, as comet_ml's own exit does for its users' experiments."""
        if self._ending.acquire(timeout=EXIT_WAIT):
            self._ending.release()
            with contextlib.suppress(Exception):  # at exit: nothing left to report an error to
                self._end()

    # -- data --------------------------------------------------------------------------------------
    def log_config(self, config: dict[str, Any]) -> None:
        """Nested params, as Comet's ``log_parameters`` keeps a nested config (keys joined with ``|``,
        shown as a tree); a value logged again replaces the old one."""
        self._config = dict(config)
        if self._experiment is not None:
            self._experiment.log_parameters(config)

    def log(self, rows: Sequence[Row]) -> None:
        experiment = self._open()
        for step, _, values in rows:
            numbers = {k: _metric(v) for k, v in values.items() if isinstance(v, (int, float))}
            if numbers:
                experiment.log_metrics(numbers, step=step)
                self._step = step

    def log_system(self, rows: Sequence[Row]) -> None:
        """At the step training was at when each sample was taken. Comet takes a step given with a
        metric as the step the experiment is at (its ``curr_step``, shown in its experiments table): the
        step of the last training row is set back afterwards, so system samples, sent on their own
        schedule, never move it."""
        experiment = self._open()
        for step, _, values in rows:
            mapped = converted(values, system_name)
            if mapped:
                experiment.log_metrics(mapped, step=step)
        if self._step is not None and experiment.curr_step != self._step:
            experiment.set_step(self._step)

    def log_event(self, event: dict[str, Any]) -> None:
        """Text samples as Comet text samples (its Text tab), one per sample, with the tunetrack key in
        their metadata; images as Comet images (its Graphics tab); a rewind as the Other
        ``tunetrack.rewound_to`` (Comet keeps the points logged before it); a checkpoint as a remote
        model ``checkpoint-<step>`` pointing at its location, the metrics of its step as metadata."""
        kind, step = event.get("kind"), int(event.get("step") or 0)
        if kind not in ("text", "image", "rewind", "checkpoint"):
            return
        experiment = self._open()
        if kind == "checkpoint":
            # a remote model: Comet records where the checkpoint is, never uploads it (no listing either)
            where = str(event.get("path"))
            uri = where if "://" in where else Path(where).absolute().as_uri()
            metadata = {"step": step, "kind": event.get("type"), **(event.get("metrics") or {})}
            experiment.log_remote_model(f"checkpoint-{step}", uri, metadata=metadata, sync_mode=False)
            return
        key = str(event.get("key") or kind)
        if kind == "rewind":
            experiment.log_other(names.REWOUND_TO, step)
        elif kind == "text":
            for sample in event.get("rows") or []:
                text, metadata = _text_sample(sample)
                experiment.log_text(text, step=step, metadata={names.TEXT_KEY: key, **metadata})
        elif self._info is not None and isinstance(self._info.dir, Path):
            path = self._info.dir / str(event.get("path"))
            if path.is_file():
                experiment.log_image(str(path), name=key, step=step)

    # -- replay ------------------------------------------------------------------------------------
    def held(self, keys: Collection[str], system: bool = False) -> Mapping[str, Collection[int]]:
        """For each of tunetrack's ``keys`` (system keys when ``system``), the steps Comet holds for this
        run: offline, read from the archives of this experiment in the offline directory; online, from
        Comet's REST API (``APIExperiment.get_metrics``; not tested here: it needs Comet's servers)."""
        by_name = {system_name(key)[0] if system else key: key for key in keys}
        out: dict[str, set[int]] = {}
        for name, step in self._held_points():
            if name in by_name and step is not None:
                out.setdefault(by_name[name], set()).add(int(step))
        self._held = self._held or bool(out)
        return out

    def _held_points(self) -> Iterator[tuple[str, int | None]]:
        from comet_ml.config import get_config

        config = get_config()
        online = config.get_bool(self.online, "comet.start.online", default=True, not_set_value=True)
        if online:
            import comet_ml

            found = comet_ml.API().get_experiment_by_key(self.key)
            for metric in found.get_metrics() if found is not None else []:
                yield metric["metricName"], metric.get("step")
            return
        folder = Path(self.offline_directory or config["comet.offline_directory"])
        for path in sorted(folder.glob(f"{self.key}*.zip")):
            with contextlib.suppress(ValueError):  # an archive Comet left unfinished holds nothing
                archive = read_archive(path)
                if archive.key == self.key:
                    yield from ((name, step) for _, step, name, _ in archive.metrics)


def _metric(value: int | float) -> int | float:
    """A value as Comet charts it: bools as 0/1."""
    return int(value) if isinstance(value, bool) else value


def _text_sample(sample: Any) -> tuple[str, dict[str, Any]]:
    """A Comet text sample from one of tunetrack's: its ``text`` field as the text and the other fields
    as metadata, or (without one) the whole sample as JSON."""
    if isinstance(sample, dict) and isinstance(sample.get("text"), str):
        rest = {k: v for k, v in sample.items() if k != "text"}
        return sample["text"], json.loads(json.dumps(rest, default=str))
    return json.dumps(sample, default=str), {}


# -- offline archives ----------------------------------------------------------------------------------
@dataclass
class Archive:
    """One offline experiment archive, as comet_ml wrote it (an attempt of an experiment: a resumed or
    replayed experiment has one archive per attempt, with the same key)."""

    path: Path
    key: str
    project: str | None
    workspace: str | None
    #: unix seconds
    started: float
    stopped: float | None
    tags: list[str]
    others: dict[str, Any] = field(default_factory=dict)
    #: as Comet names them (a nested config's keys joined with ``|``; a context's name in front)
    params: dict[str, Any] = field(default_factory=dict)
    #: ``(unix time, step or None, name, value)`` in the order they were logged
    metrics: list[tuple[float, int | None, str, Any]] = field(default_factory=list)
    #: the error comet_ml recorded for the experiment (an uncaught exception), if any
    error: str | None = None
    host: str | None = None


def read_archive(path: str | Path) -> Archive:
    """Read an offline archive with comet_ml's own pieces: its file names, its schema for the
    experiment file (what ``comet upload`` checks), and its message classes, which parse each line of
    the messages file as ``comet upload`` does before sending it. Raises ``ValueError`` (one line) for
    a file that is not such an archive."""
    from comet_ml.config import OFFLINE_EXPERIMENT_JSON_FILE_NAME, OFFLINE_EXPERIMENT_MESSAGES_JSON_FILE_NAME
    from comet_ml.schemas import get_experiment_file_validator

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zipped:
            meta = json.loads(zipped.read(OFFLINE_EXPERIMENT_JSON_FILE_NAME))
            get_experiment_file_validator().validate(meta)
            archive = Archive(
                path=path,
                key=str(meta.get("offline_id") or ""),
                project=meta.get("project_name"),
                workspace=meta.get("workspace"),
                started=meta["start_time"] / 1000,
                stopped=meta["stop_time"] / 1000 if meta.get("stop_time") else None,
                tags=[str(tag) for tag in meta.get("tags") or []],
                error=meta.get("customer_error_message") if meta.get("customer_error_reported") else None,
            )
            with zipped.open(OFFLINE_EXPERIMENT_MESSAGES_JSON_FILE_NAME) as lines:
                for line in lines:
                    if line.strip():
                        _read_message(archive, json.loads(line))
    except Exception as exc:  # a zip, JSON or schema error (jsonschema's), a message comet_ml refuses
        raise ValueError(f"not a Comet offline archive: {path} ({_reason(exc)})") from None
    return archive


def _reason(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _read_message(archive: Archive, message: dict[str, Any]) -> None:
    """One line of the messages file into ``archive``: metrics, params, Others and the host (what
    else Comet records, files, code, packages, output, is not read). The message types are dispatched
    as comet_ml's ``OfflineSender`` dispatches them (``ws_msg`` is the older form of each)."""
    from comet_ml.messages import (
        LogOtherMessage,
        MetricMessage,
        ParameterMessage,
        SystemDetailsMessage,
        WebSocketMessage,
    )

    kind, payload = message.get("type"), message.get("payload") or {}
    if kind in (MetricMessage.type, WebSocketMessage.type) and payload.get(MetricMessage.metric_key):
        metric = MetricMessage.from_message_dict(payload)
        point = metric.metric or {}
        value = point["metricValue"]
        archive.metrics.append(
            (
                metric.local_timestamp / 1000,
                point.get("step"),
                _in_context(metric.context, point["metricName"]),
                _SPECIAL.get(value, value) if isinstance(value, str) else value,
            )
        )
    elif kind == ParameterMessage.type or (
        kind == WebSocketMessage.type and ("param" in payload or "params" in payload)
    ):
        param = ParameterMessage.from_message_dict(payload)
        found = param.param or param.params
        if found is not None:
            archive.params[_in_context(param.context, found["paramName"])] = found["paramValue"]
    elif kind == LogOtherMessage.type:
        other = LogOtherMessage.from_db_message_dict(payload)
        archive.others[str(other.key)] = other.value
    elif kind == SystemDetailsMessage.type:
        archive.host = SystemDetailsMessage.from_db_message_dict(payload).hostname or archive.host
    elif kind == WebSocketMessage.type:
        ws = WebSocketMessage.from_message_dict(payload)
        if ws.log_other is not None:
            archive.others[str(ws.log_other["key"])] = ws.log_other["val"]
        elif ws.env_details is not None:
            archive.host = ws.env_details.get("hostname") or archive.host


def _in_context(context: str | None, name: str) -> str:
    """A name logged inside a Comet context (``experiment.train()``) as Comet shows it."""
    return f"{context}_{name}" if context else name
