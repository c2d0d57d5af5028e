"""Every backend with the settings a user has: a training script in a fresh process, mirrored by name
(``TUNETRACK_BACKENDS``) with no timeout raised, a short run (2,000 rows, which once arrived in MLflow
as no run at all) and a long one; read back complete with each tracker's own reader, and nothing
warned about. ``finish()`` waits for a backend as long as it makes progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.helpers import run_script
from support.wandb_files import read_run, run_files

TRAIN = """
import sys
from tunetrack import Tracker

rows = int(sys.argv[2])
t = Tracker(dir=sys.argv[1], project="defaults", name="mirror", system=False).start()
for step in range(1, rows + 1):
    t.log({"train/loss": 1.0 / step, "lr": 3e-4}, step=step)
t.finish()
print(t.id)
"""

SIZES = [pytest.param(2_000, id="short"), pytest.param(20_000, id="long")]


def train(root: Path, rows: int, env: dict[str, str]) -> str:
    """The run's id, after checking that the script warned about nothing."""
    done = run_script(TRAIN, str(root), str(rows), env=env, timeout=600)
    assert "backend" not in done.stderr and "did not" not in done.stderr, done.stderr
    return done.stdout.strip().splitlines()[-1]


def expected(rows: int) -> list[float]:
    return [1.0 / step for step in range(1, rows + 1)]


@pytest.mark.parametrize("rows", SIZES)
def test_mlflow_with_defaults(root, shared_mlflow_server, rows):
    from mlflow.tracking import MlflowClient

    run_id = train(
        root, rows, {"TUNETRACK_BACKENDS": "mlflow", "MLFLOW_TRACKING_URI": shared_mlflow_server.url}
    )
    client = MlflowClient(shared_mlflow_server.url)
    experiments = [e.experiment_id for e in client.search_experiments()]
    (found,) = client.search_runs(experiments, f"tags.`tunetrack.run_id` = '{run_id}'")
    assert found.info.status == "FINISHED"
    history = sorted(client.get_metric_history(found.info.run_id, "train/loss"), key=lambda m: m.step)
    assert [m.step for m in history] == list(range(1, rows + 1))
    assert [m.value for m in history] == expected(rows)


@pytest.mark.parametrize("rows", SIZES)
def test_wandb_offline_with_defaults(root, tmp_path, rows):
    wandb_dir = tmp_path / "wandb-dir"
    wandb_dir.mkdir()
    env = {"TUNETRACK_BACKENDS": "wandb", "WANDB_DIR": str(wandb_dir), "WANDB_MODE": "offline"}
    train(root, rows, env)
    (path,) = run_files(wandb_dir)
    got = read_run(path)
    assert sorted(got["history"]) == list(range(1, rows + 1))
    assert [got["history"][s]["train/loss"] for s in range(1, rows + 1)] == expected(rows)
    assert got["exit_code"] == 0


@pytest.mark.parametrize("rows", SIZES)
def test_tensorboard_with_defaults(root, rows):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_id = train(root, rows, {"TUNETRACK_BACKENDS": "tensorboard"})
    acc = EventAccumulator(str(root / run_id / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    loss = acc.Scalars("train/loss")
    assert [e.step for e in loss] == list(range(1, rows + 1))
    assert [e.value for e in loss] == pytest.approx(expected(rows), rel=1e-6)  # stored as float32
    assert acc.Tensors("tunetrack/state")[0].tensor_proto.string_val[0] == b"finished"


READ_TRACKIO = """
import json
from trackio.sqlite_storage import SQLiteStorage as S
print(json.dumps([[e["step"], e["train/loss"]] for e in S.get_logs("defaults", "mirror")]))
"""


@pytest.mark.parametrize("rows", SIZES)
def test_trackio_with_defaults(root, tmp_path, rows):
    env = {"TUNETRACK_BACKENDS": "trackio", "TRACKIO_DIR": str(tmp_path / "trackio")}
    train(root, rows, env)
    logs = json.loads(run_script(READ_TRACKIO, env=env).stdout.strip().splitlines()[-1])
    assert [step for step, _ in logs] == list(range(1, rows + 1))
    assert [value for _, value in logs] == expected(rows)
