"""The MLflow backend against a real ``mlflow server`` (SQLite store, served artifacts), read back with
``MlflowClient``: params, metric histories with steps and times, system metrics under MLflow's names,
tags, name, artifacts, status; a resume continues the same MLflow run; the server stopped mid-run
(training goes on, the local run is complete, the missed rows are counted) and ``tunetrack
sync-backend`` filling the gap, a second call sending nothing. The tests share the session's server
(``shared_mlflow_server``) and read back only their own runs; the outage test has one of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from support.helpers import SRC, run_script, wait_until
from tunetrack import Tracker
from tunetrack.backends.mlflow import MLflowBackend
from tunetrack.reader import open_run


class GpuSource:
    """System samples as the NVIDIA source names them (one GPU), so the mapping is exercised on CPU."""

    name = "fake-gpu"

    def __init__(self) -> None:
        self.n = 0

    def sample(self) -> dict[str, float]:
        self.n += 1
        return {"gpu.0.util": 50.0 + self.n % 7, "gpu.0.memory.used_bytes": 2e9, "mem.percent": 41.0}

    def close(self) -> None: ...


def mlflow_run(client: MlflowClient, tunetrack_id: str):
    """The one MLflow run mirroring ``tunetrack_id``, in whichever experiment: found by its id, so the
    runs of other tests on the session's shared server are never in the way."""
    experiments = [e.experiment_id for e in client.search_experiments()]
    (found,) = client.search_runs(experiments, f"tags.`tunetrack.run_id` = '{tunetrack_id}'")
    return found


def steps_of(client: MlflowClient, run_id: str, key: str) -> list[int]:
    return sorted(m.step for m in client.get_metric_history(run_id, key))


def test_a_run_mirrored_into_mlflow(root, shared_mlflow_server):
    config = {"lr": 3e-4, "model": {"layers": 2, "name": "llama <tiny>"}, "notes": "x" * 7000}
    gpu = GpuSource()
    t = Tracker(
        dir=root,
        project="sft",
        name="mirror",
        tags=["baseline"],
        config=config,
        backends=[MLflowBackend(tracking_uri=shared_mlflow_server.url)],
        system_sources=[gpu],
        system_interval=0.2,
    ).start()
    for step in range(1, 301):
        row = {"train/loss": 2.0 / step, "lr": 3e-4, "note": "not a number", "odd key:(x)": 1.0}
        if step % 100 == 0:
            row["eval/loss"] = 1.0 / step
        t.log(row, step=step)
    t.log_config({"extra": {"seed": 7}})  # the config grows: a new param
    t.log_text("samples", "Once upon a time", step=300)
    wait_until(lambda: gpu.n >= 2)  # a couple of system samples
    t.finish()

    client = MlflowClient(shared_mlflow_server.url)
    remote = mlflow_run(client, t.id)
    run_id = remote.info.run_id
    assert remote.info.status == "FINISHED" and remote.info.run_name == "mirror"
    assert client.get_experiment(remote.info.experiment_id).name == "sft"  # the project by default
    assert remote.data.tags["baseline"] == "true"
    params = remote.data.params
    assert (
        params["lr"] == "0.0003" and params["model.layers"] == "2" and params["model.name"] == "llama <tiny>"
    )
    assert params["extra.seed"] == "7" and len(params["notes"]) == 6000  # MLflow's limit, cut with "..."
    history = client.get_metric_history(run_id, "train/loss")
    local = open_run(t.id, dir=root).series("train/loss")
    assert sorted(m.step for m in history) == list(range(1, 301))
    by_step = {m.step: m for m in history}
    for step, value, when in zip(local.steps, local.values, local.times):
        assert by_step[step].value == pytest.approx(value) and by_step[step].timestamp == int(when * 1000)
    assert steps_of(client, run_id, "eval/loss") == [100, 200, 300]
    assert steps_of(client, run_id, "odd key__x_") == list(range(1, 301))  # renamed to what MLflow accepts
    assert "note" not in remote.data.metrics
    # system metrics under MLflow's own names and units
    util = client.get_metric_history(run_id, "system/gpu_0_utilization_percentage")
    assert util and all(50 <= m.value < 57 for m in util)
    assert {m.value for m in client.get_metric_history(run_id, "system/gpu_0_memory_usage_megabytes")} == {
        2000.0
    }
    assert client.get_metric_history(run_id, "system/system_memory_usage_percentage")[0].value == 41.0
    artifacts = {a.path for a in client.list_artifacts(run_id, "text/samples")}
    assert artifacts == {"text/samples/300.json"}
    text = client.download_artifacts(run_id, "text/samples/300.json")
    assert "Once upon a time" in Path(text).read_text()


def test_by_name_from_mlflows_environment_and_a_resume_continues_the_same_run(
    root, shared_mlflow_server, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", shared_mlflow_server.url)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "team-experiments")
    monkeypatch.setenv("TUNETRACK_BACKENDS", "mlflow")
    first = Tracker(dir=root, name="resumable", system=False).start()
    for step in range(1, 81):
        first.log({"loss": 1.0}, step=step)
    first.finish("killed")
    client = MlflowClient(shared_mlflow_server.url)
    assert mlflow_run(client, first.id).info.status == "KILLED"

    second = Tracker(dir=root, resume=first.id, resume_step=50, system=False).start()
    for step in range(51, 101):
        second.log({"loss": 2.0}, step=step)
    second.finish()
    remote = mlflow_run(client, first.id)  # one MLflow run for the whole tunetrack run
    assert client.get_experiment(remote.info.experiment_id).name == "team-experiments"
    assert remote.info.status == "FINISHED" and remote.data.tags["tunetrack.rewound_to"] == "50"
    history = client.get_metric_history(remote.info.run_id, "loss")
    # MLflow cannot delete points: steps 51-80 hold both attempts' values (documented)
    assert sorted(m.step for m in history) == sorted([*range(1, 81), *range(51, 101)])


def test_a_failed_run_is_failed_in_mlflow(root, shared_mlflow_server):
    code = f"""
        from tunetrack import Tracker
        from tunetrack.backends.mlflow import MLflowBackend
        t = Tracker(dir={str(root)!r}, name="boom", system=False, backends=[MLflowBackend({shared_mlflow_server.url!r})])
        t.log({{"loss": 1.0}}, step=1)
        raise RuntimeError("diverged")
    """
    proc = run_script(code, check=False)
    assert "diverged" in proc.stderr
    (local,) = [r for r in __import__("tunetrack").list_runs(dir=root) if r.name == "boom"]
    assert local.state == "failed"
    assert mlflow_run(MlflowClient(shared_mlflow_server.url), local.id).info.status == "FAILED"


def test_the_server_stopped_mid_run_then_sync_backend_fills_the_gap(root, mlflow_server, tmp_path):
    """A server of its own (``mlflow_server``, not the session's): the test stops it mid-run and starts
    it again on the same port and database."""
    backend = MLflowBackend(tracking_uri=mlflow_server.url, timeout=3, retries=0)
    with pytest.warns(UserWarning, match="mlflow"):
        t = Tracker(dir=root, name="outage", system=False, backends=[backend], backend_timeout=10).start()
        for step in range(1, 201):
            t.log({"loss": 1.0 / step}, step=step)
        t.flush()
        deadline = time.monotonic() + 30
        client = MlflowClient(mlflow_server.url)
        while time.monotonic() < deadline and (
            backend.run_id is None or len(client.get_metric_history(backend.run_id, "loss")) < 200
        ):
            time.sleep(0.2)  # the backend's thread starts the MLflow run and sends the first 200 steps
        mlflow_server.stop()  # the tracking server goes away mid-run
        began = time.perf_counter()
        for step in range(201, 1001):
            t.log({"loss": 1.0 / step}, step=step)
            if step % 100 == 0:
                t.flush()
        logging_s = time.perf_counter() - began
        t.finish()
    assert logging_s < 5  # 800 log() calls never waited on the dead server (they take milliseconds)
    run = open_run(t.id, dir=root)
    assert run.series("loss").steps.tolist() == list(range(1, 1001))  # the local run is complete
    missed = run.summary()["tunetrack/backend_missed/mlflow"]["last"]

    mlflow_server.start()  # back, on the same port and database
    client = MlflowClient(mlflow_server.url)
    remote = mlflow_run(client, t.id).info.run_id
    held = steps_of(client, remote, "loss")
    assert missed == 1000 - len(held) and missed >= 800  # exactly what the server lacks

    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_server.url, "PYTHONPATH": SRC}
    cmd = [sys.executable, "-m", "tunetrack", "sync-backend", t.id, "--to", "mlflow", "--dir", str(root)]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert f"{missed:,} points" in first.stdout
    assert steps_of(client, remote, "loss") == list(range(1, 1001))  # the gap is filled, nothing doubled
    assert mlflow_run(client, t.id).info.status == "FINISHED"
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and "nothing new to send" in second.stdout
    assert steps_of(client, remote, "loss") == list(range(1, 1001))


def test_sync_backend_sends_a_run_recorded_offline(root, shared_mlflow_server):
    with Tracker(dir=root, project="offline", name="no-network", config={"lr": 0.1}, system=False) as t:
        for step in range(1, 51):
            t.log({"loss": 1.0 / step, "acc": step / 50}, step=step)
    env = {**os.environ, "MLFLOW_TRACKING_URI": shared_mlflow_server.url, "PYTHONPATH": SRC}
    cmd = [
        sys.executable,
        "-m",
        "tunetrack",
        "sync-backend",
        "no-network",
        "--to",
        "mlflow",
        "--dir",
        str(root),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    client = MlflowClient(shared_mlflow_server.url)
    remote = mlflow_run(client, t.id)
    assert remote.info.run_name == "no-network" and remote.data.params == {"lr": "0.1"}
    assert steps_of(client, remote.info.run_id, "acc") == list(range(1, 51))
    unknown = subprocess.run(
        [*cmd[:4], "no-network", "--to", "nosuch", "--dir", str(root)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert unknown.returncode == 1 and "no tunetrack backend named 'nosuch'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1
