"""Each tracker behind the same three calls (``log``, ``finish``, ``read``), used as its users use it.

Every adapter writes into its own temporary folder, offline, with the library's default settings
otherwise. ``read`` uses the library's own read API where it has one (W&B offline has none).
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Floor:
    """The reference: a pure-Python ``queue.Queue`` + thread JSONL writer, flushing every second."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "floor.jsonl"
        self.q: queue.Queue = queue.Queue()
        self.f = open(self.path, "w")  # noqa: SIM115 - closed in finish()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.q.put((step, time.time(), dict(metrics)))

    def _run(self) -> None:
        last = time.monotonic()
        while (item := self.q.get()) is not None:
            self.f.write(json.dumps({"step": item[0], "time": item[1], **item[2]}) + "\n")
            if time.monotonic() - last >= 1.0:
                self.f.flush()
                last = time.monotonic()
        self.f.flush()
        os.fsync(self.f.fileno())

    def finish(self) -> None:
        self.q.put(None)
        self.t.join()
        self.f.close()

    def read(self, key: str) -> list[float]:
        with open(self.path) as f:
            return [row[key] for line in f if key in (row := json.loads(line))]


class Tunetrack:
    def __init__(self, tmp: Path) -> None:
        from tunetrack import Tracker, open_run

        self.open_run = open_run  # imported before timing, like the other libraries' readers
        self.root = tmp / "runs"
        self.t = Tracker(project="bench", dir=self.root).start()

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.t.log(metrics, step=step)

    def finish(self) -> None:
        self.t.finish()

    def read(self, key: str) -> Any:
        return self.open_run(self.t.id, dir=self.root).series(key).values


class Trackio:
    def __init__(self, tmp: Path) -> None:
        os.environ["TRACKIO_DIR"] = str(tmp / "trackio")
        import trackio
        from trackio.sqlite_storage import SQLiteStorage

        self.trackio, self.storage = trackio, SQLiteStorage
        self.run = trackio.init(project="bench", name="run")

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.trackio.log(metrics, step=step)

    def finish(self) -> None:
        self.trackio.finish()

    def read(self, key: str) -> Any:
        return [row[key] for row in self.storage.get_logs(project="bench", run="run") if key in row]


class Wandb:
    def __init__(self, tmp: Path) -> None:
        os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(tmp))
        import wandb

        self.wandb = wandb
        self.run = wandb.init(project="bench", dir=str(tmp), mode="offline")

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics, step=step)

    def finish(self) -> None:
        self.run.finish()

    read = None  # offline runs have no local read API


class SwanLab:
    def __init__(self, tmp: Path) -> None:
        import swanlab

        self.swanlab = swanlab
        self.run = swanlab.init(project="bench", mode="local", logdir=str(tmp / "swanlog"))

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.swanlab.log(metrics, step=step)

    def finish(self) -> None:
        self.swanlab.finish()

    read = None  # the local store is read by its dashboard, not a Python API


class TensorBoard:
    """``SummaryWriter.add_scalar`` per metric: how training scripts use it."""

    def __init__(self, tmp: Path) -> None:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        from torch.utils.tensorboard import SummaryWriter

        self.accumulator = EventAccumulator
        self.dir = tmp / "tb"
        self.w = SummaryWriter(str(self.dir))

    def log(self, metrics: dict[str, float], step: int) -> None:
        for key, value in metrics.items():
            self.w.add_scalar(key, value, step)

    def finish(self) -> None:
        self.w.close()

    def read(self, key: str) -> Any:
        acc = self.accumulator(str(self.dir), size_guidance={"scalars": 0})
        acc.Reload()
        return [e.value for e in acc.Scalars(key)]


class MLflow:
    def __init__(self, tmp: Path) -> None:
        import mlflow
        from mlflow.tracking import MlflowClient

        self.mlflow, self.client = mlflow, MlflowClient
        mlflow.set_tracking_uri(f"sqlite:///{tmp / 'mlflow.db'}")
        mlflow.set_experiment("bench")
        self.run = mlflow.start_run()

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.mlflow.log_metrics(metrics, step=step)

    def bulk(self, key: str, values: list[float]) -> None:
        """The read benchmark's data, written with MLflow's batch API (per-call logging of 100k
        points would take many minutes; how the data was written does not change the read)."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        for start in range(0, len(values), 1000):
            batch = [Metric(key, v, now, start + i) for i, v in enumerate(values[start : start + 1000])]
            self.client().log_batch(self.run.info.run_id, metrics=batch)

    def finish(self) -> None:
        self.mlflow.end_run()

    def read(self, key: str) -> Any:
        return [m.value for m in self.client().get_metric_history(self.run.info.run_id, key)]


PEERS: dict[str, Callable[[Path], Any]] = {
    "floor": Floor,
    "tunetrack": Tunetrack,
    "trackio": Trackio,
    "wandb": Wandb,
    "swanlab": SwanLab,
    "tensorboard": TensorBoard,
    "mlflow": MLflow,
}
#: modules whose absence means "not installed" rather than a failure
MODULES = {
    "tunetrack": "tunetrack",
    "trackio": "trackio",
    "wandb": "wandb",
    "swanlab": "swanlab",
    "tensorboard": "tensorboard",
    "mlflow": "mlflow",
}
