"""Every library behind the same small interface, each used the way its users use it.

A *writer* is built in a fresh process inside a fresh temporary folder (``tmp``), offline, with the
library's default settings otherwise:

- ``writer.log`` is the callable the benchmark loop calls as ``log(metrics, step)``; where the
  library's own function has that shape it *is* the library's function (no wrapper in the timing);
- ``writer.finish()`` ends the run and returns when the library says the data is written;
- ``writer.handle()`` is what a reader needs to find the run again (JSON-safe).

A *reader* (``READERS[name]``) is built in another fresh process on the same folder: ``prepare()``
imports the library's read API (not timed), ``read(key)`` returns one metric's full series through
that API (timed by the caller). Libraries without a local read API have no reader.

The environment variables that keep every library offline and inside ``tmp`` are set by
``run_all.py`` (``library_env``) before the process starts, so they apply to imports too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PROJECT = "bench"
RUN_NAME = "bench-run"


# -- writers --------------------------------------------------------------------------------------
class Null:
    """No tracker: ``log`` does nothing. Its row shows what the benchmark loop itself costs."""

    def __init__(self, tmp: Path) -> None:
        self.log: Callable[[Any, int], None] = lambda metrics, step: None

    def finish(self) -> None:
        pass

    def handle(self) -> dict[str, Any]:
        return {}


class Floor:
    def __init__(self, tmp: Path) -> None:
        from floor import FloorLogger

        self.path = tmp / "floor.jsonl"
        self.logger = FloorLogger(self.path)
        self.log = self.logger.log

    def finish(self) -> None:
        self.logger.finish()

    def handle(self) -> dict[str, Any]:
        return {"path": str(self.path)}


class Tunetrack:
    def __init__(self, tmp: Path) -> None:
        from tunetrack import Tracker

        self.root = tmp / "tunetrack"
        self.tracker = Tracker(project=PROJECT, name=RUN_NAME, dir=self.root).start()
        self.log = self.tracker.log

    def finish(self) -> None:
        self.tracker.finish()

    def handle(self) -> dict[str, Any]:
        return {"id": self.tracker.id, "dir": str(self.root)}


class Trackio:
    """Local SQLite store (``TRACKIO_DIR``), no Space."""

    def __init__(self, tmp: Path) -> None:
        import trackio

        self.trackio = trackio
        trackio.init(project=PROJECT, name=RUN_NAME)
        self.log = trackio.log

    def finish(self) -> None:
        self.trackio.finish()

    def handle(self) -> dict[str, Any]:
        return {"project": PROJECT, "run": RUN_NAME}


class Wandb:
    """``mode="offline"``: the run is written to a local ``.wandb`` file by the wandb-core service."""

    def __init__(self, tmp: Path) -> None:
        import wandb

        self.run = wandb.init(project=PROJECT, name=RUN_NAME, dir=str(tmp), mode="offline")
        self.log = self.run.log

    def finish(self) -> None:
        self.run.finish()

    def handle(self) -> dict[str, Any]:
        return {"id": self.run.id}


class SwanLab:
    """``mode="offline"``: the maintained local store (a ``.swanlab`` record log, synced later with
    ``swanlab sync``). ``mode="local"`` needs the deprecated ``swanboard`` dashboard package."""

    def __init__(self, tmp: Path) -> None:
        import swanlab

        self.swanlab = swanlab
        swanlab.init(project=PROJECT, name=RUN_NAME, mode="offline", log_dir=str(tmp / "swanlog"))
        self.log = swanlab.log

    def finish(self) -> None:
        self.swanlab.finish()

    def handle(self) -> dict[str, Any]:
        return {}


class TensorBoard:
    """``torch.utils.tensorboard.SummaryWriter`` with one ``add_scalar`` per metric, as training
    scripts (and the Transformers/Accelerate TensorBoard integrations) use it; default
    ``max_queue=10``, ``flush_secs=120``."""

    def __init__(self, tmp: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.dir = tmp / "tb"
        self.writer = SummaryWriter(str(self.dir))
        add_scalar = self.writer.add_scalar

        def log(metrics: dict[str, float], step: int) -> None:
            for key, value in metrics.items():
                add_scalar(key, value, step)

        self.log = log

    def finish(self) -> None:
        self.writer.close()

    def handle(self) -> dict[str, Any]:
        return {"dir": str(self.dir)}


class MLflow:
    """``mlflow.log_metrics(metrics, step=...)`` into a SQLite tracking store (``MLFLOW_TRACKING_URI``,
    the default backend since MLflow 3.7), synchronous as by default."""

    def __init__(self, tmp: Path) -> None:
        import mlflow

        self.mlflow = mlflow
        mlflow.set_experiment(PROJECT)
        self.run = mlflow.start_run(run_name=RUN_NAME)
        self.log = mlflow.log_metrics

    def bulk(self, rows: Sequence[Sequence[float]], keys: Sequence[str]) -> float:
        """Only to fill the read benchmark's run quickly: the same rows through ``log_batch``
        (1,000 metrics per request, MLflow's limit). Returns the seconds it took."""
        import time

        from mlflow.entities import Metric
        from mlflow.tracking import MlflowClient

        client, run_id = MlflowClient(), self.run.info.run_id
        start = time.perf_counter()
        batch: list[Metric] = []
        ms = int(time.time() * 1000)
        for step, values in enumerate(rows):
            batch.extend(Metric(k, v, ms + step, step) for k, v in zip(keys, values))
            if len(batch) >= 1000:
                client.log_batch(run_id, metrics=batch)
                batch = []
        if batch:
            client.log_batch(run_id, metrics=batch)
        return time.perf_counter() - start

    def finish(self) -> None:
        self.mlflow.end_run()

    def handle(self) -> dict[str, Any]:
        return {"run_id": self.run.info.run_id}


class TunetrackInto:
    """tunetrack mirroring the run into one other tracker (``Tracker(backends=[name])``), the bridge
    of ``benchmarks/bridges_bench.py``. ``log`` is tunetrack's own; the backend drains on a thread of
    its own. ``finish()`` returns once the backend holds everything: ``backend_timeout`` is raised so
    that it never gives up here, which makes the finish time "until the other tracker has it all"."""

    backend = ""

    def __init__(self, tmp: Path) -> None:
        from tunetrack import Tracker

        self.root = tmp / "tunetrack"
        self.tracker = Tracker(
            project=PROJECT, name=RUN_NAME, dir=self.root, backends=[self.backend], backend_timeout=3600
        ).start()
        self.log = self.tracker.log
        # Set-up, as the direct peers' (``mlflow.start_run``, ``wandb.init``) is: the backend has
        # imported its library and opened its run before the loop (that once-per-run start is reported
        # as the set-up time, not spread over the calls). Reaches into the writer: a benchmark's view.
        import time

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            runners = self.tracker._writer._runners if self.tracker._writer is not None else []
            if runners and all(runner.started.is_set() for runner in runners):
                break
            time.sleep(0.02)

    def finish(self) -> None:
        self.tracker.finish()

    def handle(self) -> dict[str, Any]:
        # what the target's reader needs: TensorBoard's folder, trackio's project and run, MLflow's run
        return {
            "id": self.tracker.id,
            "dir": str(Path(str(self.tracker.run_dir)) / "tensorboard"),
            "project": PROJECT,
            "run": RUN_NAME,
        }


def _into(backend: str) -> type[TunetrackInto]:
    return type(f"TunetrackInto_{backend}", (TunetrackInto,), {"backend": backend})


#: the trackers tunetrack mirrors into, each measured directly and through tunetrack
BRIDGED = ("mlflow", "wandb", "tensorboard", "trackio")


# -- readers --------------------------------------------------------------------------------------
class FloorReader:
    """Not a peer: the floor has no read API; this only verifies what reached the disk."""

    timed = False

    def __init__(self, tmp: Path, handle: dict[str, Any]) -> None:
        self.path = handle["path"]

    def prepare(self) -> None:
        from floor import read_series

        self._read = read_series

    def read(self, key: str) -> Sequence[Any]:
        return self._read(self.path, key)


class TunetrackReader:
    """``open_run(id, dir).series(key)``: opens the run (merging its files) and decodes one column."""

    timed = True

    def __init__(self, tmp: Path, handle: dict[str, Any]) -> None:
        self.id, self.dir = handle["id"], handle["dir"]

    def prepare(self) -> None:
        import numpy  # noqa: F401 - the reader's own import, not the read

        from tunetrack import open_run

        self.open_run = open_run

    def read(self, key: str) -> Sequence[Any]:
        return self.open_run(self.id, dir=self.dir).series(key).values


class TrackioReader:
    """``SQLiteStorage.get_metric_values(project, run, key)``: trackio's one-metric read (what its CLI
    ``trackio get metric`` and its MCP server use). It parses every row's JSON blob of metrics."""

    timed = True

    def __init__(self, tmp: Path, handle: dict[str, Any]) -> None:
        self.project, self.run = handle["project"], handle["run"]

    def prepare(self) -> None:
        from trackio.sqlite_storage import SQLiteStorage

        self.storage = SQLiteStorage

    def read(self, key: str) -> Sequence[Any]:
        rows = self.storage.get_metric_values(self.project, self.run, key)
        return [row["value"] for row in rows]


class TensorBoardReader:
    """``EventAccumulator(dir, size_guidance={"scalars": 0}).Reload().Scalars(key)``. The default
    size guidance keeps a 10,000-point reservoir sample per tag; ``0`` keeps every point."""

    timed = True

    def __init__(self, tmp: Path, handle: dict[str, Any]) -> None:
        self.dir = handle["dir"]

    def prepare(self) -> None:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        self.accumulator = EventAccumulator

    def read(self, key: str) -> Sequence[Any]:
        acc = self.accumulator(self.dir, size_guidance={"scalars": 0})
        acc.Reload()
        return [event.value for event in acc.Scalars(key)]


class MLflowReader:
    """``MlflowClient().get_metric_history(run_id, key)`` on the same SQLite tracking store. A run
    mirrored by tunetrack is found by its ``tunetrack.run_id`` tag."""

    timed = True

    def __init__(self, tmp: Path, handle: dict[str, Any]) -> None:
        self.run_id = handle.get("run_id")
        self.tunetrack_id = handle.get("id")

    def prepare(self) -> None:
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient()
        if self.run_id is None:
            experiments = [e.experiment_id for e in self.client.search_experiments()]
            found = self.client.search_runs(experiments, f"tags.`tunetrack.run_id` = '{self.tunetrack_id}'")
            self.run_id = found[0].info.run_id
        self.client.get_run(self.run_id)  # connects and checks the schema: setup, not the read

    def read(self, key: str) -> Sequence[Any]:
        return [m.value for m in self.client.get_metric_history(self.run_id, key)]


WRITERS: dict[str, Callable[[Path], Any]] = {
    "null": Null,
    "floor": Floor,
    "tunetrack": Tunetrack,
    "trackio": Trackio,
    "wandb": Wandb,
    "swanlab": SwanLab,
    "tensorboard": TensorBoard,
    "mlflow": MLflow,
    **{f"tunetrack+{name}": _into(name) for name in BRIDGED},
}
READERS: dict[str, Callable[[Path, dict[str, Any]], Any]] = {
    "floor": FloorReader,
    "tunetrack": TunetrackReader,
    "trackio": TrackioReader,
    "tensorboard": TensorBoardReader,
    "mlflow": MLflowReader,
    # what a mirrored run holds in the other tracker, counted (not timed)
    **{
        f"tunetrack+{name}": type(f"{reader.__name__}Count", (reader,), {"timed": False})
        for name, reader in (
            ("mlflow", MLflowReader),
            ("tensorboard", TensorBoardReader),
            ("trackio", TrackioReader),
        )
    },
}
#: why a library has no reader (shown instead of a time)
NO_READER = {
    "null": "n/a",
    "wandb": "n/a (offline runs have no local read API)",
    "swanlab": "n/a (no local read API; swanlab.Api reads the cloud)",
}
#: the modules whose absence means "not installed" rather than a failure
MODULES: dict[str, tuple[str, ...]] = {
    "tunetrack": ("tunetrack",),
    "trackio": ("trackio",),
    "wandb": ("wandb",),
    "swanlab": ("swanlab",),
    "tensorboard": ("torch", "tensorboard"),
    "mlflow": ("mlflow",),
    **{f"tunetrack+{name}": ("tunetrack", name) for name in BRIDGED},
}
#: the distributions whose versions go into the results
DISTRIBUTIONS = {
    "tunetrack": "tunetrack",
    "trackio": "trackio",
    "wandb": "wandb",
    "swanlab": "swanlab",
    "tensorboard": "tensorboard",
    "mlflow": "mlflow",
}
