"""trackio (local, a self-hosted trackio server, or a Hugging Face Space: trackio's own settings),
mirrored from a run: ``Tracker(backends=["trackio"])``, or ``TrackioBackend(project=...)``.

trackio keeps its current run per thread (a context variable), so the backend's run, opened on the
backend's own thread, never disturbs a ``trackio.init`` of the user's. The backend opens it with no
dashboard (``embed=False``) and without trackio's own GPU/CPU sampling: tunetrack's system metrics
go to trackio's system log instead, under trackio's names where it has them (``gpu/0/utilization``).
Needs ``pip install 'tunetrack[trackio]'``, imported when the run starts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from ..states import State
from .base import Row, RunInfo
from .names import trackio as names
from .system_names import converted, renamed

#: tunetrack's per-GPU keys -> (trackio's name, scale): trackio's GPU monitor reports GiB and watts
_SYSTEM = {
    "gpu.{i}.util": ("gpu/{i}/utilization", 1.0),
    "gpu.{i}.mem_util": ("gpu/{i}/memory_utilization", 1.0),
    "gpu.{i}.memory.used_bytes": ("gpu/{i}/allocated_memory", 1 / 2**30),
    "gpu.{i}.memory.total_bytes": ("gpu/{i}/total_memory", 1 / 2**30),
    "gpu.{i}.power_w": ("gpu/{i}/power", 1.0),
    "gpu.{i}.power_limit_w": ("gpu/{i}/power_limit", 1.0),
    "gpu.{i}.temp_c": ("gpu/{i}/temp", 1.0),
}


def system_name(key: str) -> tuple[str, float]:
    """trackio's name for a tunetrack system metric (``gpu/0/utilization``), and the factor to its
    unit; other keys keep tunetrack's name."""
    return renamed(key, _SYSTEM) or (key, 1.0)


class TrackioBackend:
    name = "trackio"

    def __init__(self, project: str | None = None) -> None:
        """``project`` defaults to the run's project, then ``tunetrack``. Where trackio writes (local
        ``TRACKIO_DIR``, ``TRACKIO_SERVER_URL``, ``TRACKIO_SPACE_ID``) is trackio's own setting."""
        self.project = project
        self._info: RunInfo | None = None
        self._config: dict[str, Any] = {}
        self._run: Any = None

    def start(self, run: RunInfo) -> None:
        try:
            import trackio  # noqa: F401 - fail at the start, not at the first row
        except ImportError:
            raise ImportError("the trackio backend needs trackio: pip install 'tunetrack[trackio]'") from None
        self._info = run

    def _trackio_run(self) -> Any:
        """Opened at the first data, with the config known by then (trackio takes the config when a
        run opens; tunetrack's adapters log theirs before the first step)."""
        if self._run is None:
            import trackio

            assert self._info is not None
            self._run = trackio.init(
                project=self.project or self._info.project or "tunetrack",
                name=self._info.name,
                config=self._config or None,
                resume="allow" if self._info.resumed else "never",
                embed=False,
                auto_log_gpu=False,
                auto_log_cpu=False,
            )
        return self._run

    def log_config(self, config: dict[str, Any]) -> None:
        self._config = dict(config)
        if self._run is not None and isinstance(self._run.config, dict):
            self._run.config.update(config)  # trackio sends it with the next records, if not yet sent

    def log(self, rows: Sequence[Row]) -> None:
        run = self._trackio_run()
        for step, _, values in rows:
            numbers = {k: v for k, v in values.items() if isinstance(v, (int, float))}
            if numbers:
                run.log(numbers, step=step)

    def log_system(self, rows: Sequence[Row]) -> None:
        run = self._trackio_run()
        for _, _, values in rows:
            mapped = converted(values, system_name)
            if mapped:
                run.log_system(mapped)

    def log_event(self, event: dict[str, Any]) -> None:
        """A checkpoint as a version of the run's ``checkpoint-<run id>`` model artifact holding
        references to its files (``checksum=False``: trackio lists them, never reads nor copies them), aliased
        ``step-<N>``, the metrics of its step as metadata. trackio resolves ``file://`` and ``hf://``
        references itself; a checkpoint elsewhere (``s3://``) is said once and passed by."""
        if event.get("kind") != "checkpoint":
            return
        import trackio

        path, step = str(event.get("path")), int(event.get("step") or 0)
        if "://" in path and not path.startswith("hf://"):
            warn_once(
                f"trackio-checkpoint:{path.split('://')[0]}", f"trackio cannot reference {path}: not sent"
            )
            return
        if "://" not in path and not Path(path).exists():  # trackio lists a folder it references
            warn_once(
                f"trackio-checkpoint-gone:{path}",
                f"checkpoint {path} was removed before trackio was told of it (the local run has it)",
            )
            return
        uri = path if "://" in path else Path(path).absolute().as_uri()
        assert self._info is not None
        metadata = {"step": step, "kind": event.get("type"), "metrics": event.get("metrics") or {}}
        art = trackio.Artifact(f"checkpoint-{self._info.id}", type="model", metadata=metadata)
        art.add_reference(uri, name=f"checkpoint-{step}", checksum=False)
        self._trackio_run().log_artifact(art, aliases=[f"step-{step}"])

    def held(self, keys: Collection[str], system: bool = False) -> Mapping[str, Collection[int]]:
        """For a replay: the steps trackio's store holds for each metric of this run (system metrics
        have no steps in trackio: none are reported held, and a replay sends them again)."""
        if system:
            return {}
        from trackio.sqlite_storage import SQLiteStorage

        assert self._info is not None
        project = self.project or self._info.project or "tunetrack"
        logs = SQLiteStorage.get_logs(project, self._info.name)
        wanted = set(keys)
        out: dict[str, set[int]] = {}
        for entry in logs:
            for key in wanted.intersection(entry):
                out.setdefault(key, set()).add(int(entry["step"]))
        return out

    def finish(self, state: str) -> None:
        """trackio has no run status: a run that did not finish gets a trackio alert (shown in its
        dashboard and sent to its webhooks) saying how it ended."""
        if self._run is None and state == State.FINISHED:
            return
        run = self._trackio_run()
        if state != State.FINISHED:
            from trackio import AlertLevel

            run.alert(
                names.end_alert(state),
                f"tunetrack run {self._info.id if self._info else ''} ended {state}",
                AlertLevel.ERROR,
            )
        run.finish()
