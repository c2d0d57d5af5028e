"""``tunetrack import``: runs written with each tracker's own library (TensorBoard's ``SummaryWriter``,
``mlflow`` into a real ``mlflow server``, ``wandb`` offline, ``trackio`` locally, ``comet_ml`` offline),
imported through the real command, and compared point by point with what the source holds, read back
with the source's own reader: every step, value and wall time, the config, tags, name and state. A
second import creates nothing new; a missing source or an unreachable server is a one-line error."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support.comet_files import comet_others, comet_points, started
from support.helpers import SRC, run_script
from tunetrack import Tracker
from tunetrack.backends.mlflow import MLflowBackend
from tunetrack.reader import list_runs, open_run, provenance


def tunetrack(
    *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "tunetrack", *args],
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tunetrack {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def points(run, key: str) -> list[tuple[int, float, float]]:
    """``(step, time, value)`` of every point of ``key`` in a tunetrack run."""
    return [(r["step"], r["time"], r[key]) for r in run.rows() if r.get(key) is not None]


def imported_twice(kind: str, *args: str, root: Path, env: dict[str, str] | None = None) -> str:
    """Import, check a second import creates nothing, and return the first import's output."""
    first = tunetrack("import", kind, *args, "--dir", str(root), env=env).stdout
    before = sorted(r.id for r in list_runs(root))
    second = tunetrack("import", kind, *args, "--dir", str(root), env=env).stdout
    assert "already imported" in second and ": imported" not in second, second
    assert sorted(r.id for r in list_runs(root)) == before
    return first


def f32(value: float) -> float:
    """A value as TensorBoard keeps a scalar (32-bit)."""
    return struct.unpack("f", struct.pack("f", value))[0]


def test_tensorboard_round_trip(root, tmp_path):
    logdir = tmp_path / "tb"
    run_script(
        f"""
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams

        w = SummaryWriter({str(logdir / "sft")!r})
        for summary in hparams({{"lr": 3e-4, "optim": "adamw", "packing": True}}, {{}}):
            w.file_writer.add_summary(summary)
        for step in range(1, 301):
            w.add_scalar("train/loss", 2.0 / step, step)
            if step % 100 == 0:
                w.add_scalars("eval", {{"loss": 1.0 / step, "acc": step / 400}}, step)
        w.close()
        w = SummaryWriter({str(logdir / "dpo" / "seed1")!r})
        w.add_scalar("loss", 0.5, 7)
        w.close()
        """
    )
    out = imported_twice("tensorboard", str(logdir), root=root)
    assert out.count(": imported") == 4, out  # sft, dpo/seed1, and add_scalars' two sub-runs

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir / "sft"), size_guidance={"scalars": 0})
    acc.Reload()
    run = open_run("sft", dir=root)
    assert run.state == "finished"
    assert provenance(run)["imported"] == f"from tensorboard {(logdir / 'sft').resolve()}"  # show, the page
    assert run.config == {"lr": 3e-4, "optim": "adamw", "packing": True}
    got = points(run, "train/loss")
    assert got == [(e.step, e.wall_time, e.value) for e in acc.Scalars("train/loss")]
    assert [v for _, _, v in got] == [f32(2.0 / s) for s in range(1, 301)]
    assert [(s, v) for s, _, v in points(open_run("dpo/seed1", dir=root), "loss")] == [(7, 0.5)]
    eval_loss = open_run("sft/eval_loss", dir=root)  # add_scalars writes one folder per key
    assert [(s, v) for s, _, v in points(eval_loss, "eval")] == [(s, f32(1.0 / s)) for s in (100, 200, 300)]


def test_a_tunetrack_run_back_from_its_tensorboard_mirror(root, tmp_path):
    t = Tracker(
        dir=tmp_path / "origin",
        name="m",
        config={"lr": 0.5, "model": {"layers": 2}},
        system=False,
        backends=["tensorboard"],
    ).start()
    for step in range(1, 21):
        t.log({"loss": 1.0 / step, "acc": step / 20}, step=step)
    t.finish("failed")
    imported_twice("tensorboard", str(Path(t.run_dir) / "tensorboard"), root=root)
    (run,) = list_runs(root)
    assert run.state == "failed"
    assert run.config == {"lr": 0.5, "model": {"layers": 2}}
    original = open_run(t.id, dir=tmp_path / "origin")
    assert [(s, f32(v)) for s, _, v in points(original, "acc")] == [(s, v) for s, _, v in points(run, "acc")]
    # one row per logged row, with its time: the mirror's rows come back whole
    assert [r["step"] for r in run.rows()] == list(range(1, 21))
    assert [r["time"] for r in run.rows()] == [r["time"] for r in original.rows()]


def test_mlflow_round_trip(root, mlflow_server):
    """A server of its own (``mlflow_server``, not the session's): the first import reads every
    experiment the server holds and counts what it imported. The source run logs each step with
    MLflow's own asynchronous logging (``synchronous=False``, its queue merging what a second brings:
    ``MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS``): 3 requests carry the 2,403 points, where one request
    per call took 30-45 s on CI's 2-core machine; each point keeps the step, value and time of its own
    call, and the run holds the same points."""
    env = {"MLFLOW_TRACKING_URI": mlflow_server.url, "MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS": "1"}
    run_script(
        """
        import mlflow
        mlflow.set_experiment("sweep")
        with mlflow.start_run(run_name="good") as run:
            mlflow.log_params({"lr": 3e-4, "epochs": 3, "optim": "adamw", "model.layers": 2, "fp16": True})
            mlflow.set_tags({"team": "nlp", "best": "true"})
            for step in range(1, 1201):
                mlflow.log_metrics({"train/loss": 2.0 / step, "lr": 3e-4}, step=step, synchronous=False)
                if step % 400 == 0:
                    mlflow.log_metric("eval/loss", 1.0 / step, step=step, synchronous=False)
        with mlflow.start_run(run_name="bad"):
            mlflow.log_metric("loss", 9.0, step=1)
            mlflow.end_run(status="FAILED")
        """,
        env=env,
    )
    # a run tunetrack itself mirrored into the same server is already in the store: not imported again
    mirrored = Tracker(
        dir=root,
        name="mirrored",
        system=False,
        backends=[MLflowBackend(mlflow_server.url, "sweep")],
    ).start()
    mirrored.log({"loss": 1.0}, step=1)
    mirrored.finish()
    out = imported_twice("mlflow", "--tracking-uri", mlflow_server.url, root=root)
    assert out.count(": imported") == 2 and f"{mirrored.id}  mirrored: already in the store" in out, out

    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server.url)
    (source,) = client.search_runs(
        [client.get_experiment_by_name("sweep").experiment_id], "attributes.run_name = 'good'"
    )
    good = open_run("good", dir=root)
    assert good.project == "sweep" and good.state == "finished"
    assert good.config == {"lr": 3e-4, "epochs": 3, "optim": "adamw", "model": {"layers": 2}, "fp16": True}
    assert sorted(good.tags) == ["best", "team=nlp"]
    for key in ("train/loss", "lr", "eval/loss"):
        history = sorted(
            client.get_metric_history(source.info.run_id, key), key=lambda m: (m.timestamp, m.step)
        )
        assert points(good, key) == [(m.step, m.timestamp / 1000, m.value) for m in history], key
    assert len(points(good, "train/loss")) == 1200
    assert good.created == source.info.start_time / 1000 and good.ended == source.info.end_time / 1000
    assert open_run("bad", dir=root).state == "failed"
    shown = tunetrack("show", "good", "--dir", str(root)).stdout
    assert f"imported   from mlflow {mlflow_server.url}" in shown

    # --experiment, --project: only that experiment's runs, into the project given
    other = root.parent / "other"
    tunetrack(
        "import",
        "mlflow",
        "--tracking-uri",
        mlflow_server.url,
        "--experiment",
        "sweep",
        "--project",
        "p",
        "--dir",
        str(other),
    )
    assert sorted((r.name, r.project) for r in list_runs(other)) == [
        ("bad", "p"),
        ("good", "p"),
        ("mirrored", "p"),
    ]
    missing = tunetrack(
        "import",
        "mlflow",
        "--tracking-uri",
        mlflow_server.url,
        "--experiment",
        "nope",
        "--dir",
        str(other),
        check=False,
    )
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"Error: no MLflow experiment named 'nope' at {mlflow_server.url}"


def wandb_records(file: Path) -> list[str]:
    command = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(file)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()


def test_wandb_offline_round_trip(root, tmp_path):
    env = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(tmp_path)}
    run_script(
        """
        import numpy as np
        import torch
        import wandb
        run = wandb.init(project="sft", name="good", config={"lr": 3e-4, "model": {"layers": 2}}, tags=["a", "b"])
        model = torch.nn.Linear(4, 2)
        run.watch(model, log="gradients", log_freq=1)  # W&B's own gradient histograms
        for step in range(500):
            row = {"train/loss": 2.0 / (step + 1), "note": "text"}
            if step % 100 == 0:
                row["eval/acc"] = step / 500
                row["weights"] = wandb.Histogram(np.random.default_rng(step).normal(size=1000))
                row["counted"] = wandb.Histogram(np_histogram=([1, 2, 3], [0.0, 0.5, 1.5, 3.0]))
                model(torch.randn(8, 4)).pow(2).sum().backward()
            run.log(row, step=step)
        run.finish()
        run = wandb.init(project="sft", name="bad", config={"lr": 1.0})
        run.log({"loss": float("nan")}, step=0)
        run.finish(exit_code=1)
        """,
        env=env,
    )
    out = imported_twice("wandb", str(tmp_path / "wandb"), root=root)
    assert out.count(": imported") == 2, out

    history = {}  # the good run's rows, read back with W&B's own reader
    for file in (tmp_path / "wandb").glob("offline-run-*/run-*.wandb"):
        records = [json.loads(line) for line in wandb_records(file)]
        if any(r["type"] == "run" and r["run"]["display_name"] == "good" for r in records):
            history = {
                r["history"]["step"]["num"]: r["history"]["item"] for r in records if r["type"] == "history"
            }
    assert len(history) == 500
    good = open_run("good", dir=root)
    assert good.project == "sft" and good.state == "finished" and sorted(good.tags) == ["a", "b"]
    assert good.config == {"lr": 3e-4, "model": {"layers": 2}}
    assert points(good, "train/loss") == [
        (s, item["_timestamp"], 2.0 / (s + 1)) for s, item in sorted(history.items())
    ]
    assert [(s, v) for s, _, v in points(good, "eval/acc")] == [(s, s / 500) for s in range(0, 500, 100)]
    assert {r["note"] for r in good.rows()} == {"text"}
    # histograms, as W&B's reader has them: wandb.Histogram's, and wandb.watch's of the gradients
    assert not [k for k in good.keys() if "._type" in k or k.endswith((".values", ".bins"))]
    grads = sorted(
        k[: -len("._type")] for k in history[0] if k.startswith("gradients/") and k.endswith("._type")
    )
    assert grads == ["gradients/bias", "gradients/weight"]
    ours = good.histograms()
    assert sorted(ours) == sorted(["weights", "counted", *grads])
    for key in ["weights", "counted", *grads]:
        theirs = {s: item for s, item in history.items() if f"{key}.values" in item}
        assert [h.step for h in ours[key]] == sorted(theirs) and len(theirs) >= 5
        for h in ours[key]:
            item = theirs[h.step]
            assert h.counts.tolist() == item[f"{key}.values"]
            assert h.edges.tolist() == item[f"{key}.bins"]
    assert good.system_keys(), "W&B's system samples come along"
    assert good.hosts == [socket.gethostname()]
    bad = open_run("bad", dir=root)
    assert bad.state == "failed"
    assert str(points(bad, "loss")[0][2]) == "nan"


def test_trackio_round_trip(root, tmp_path):
    env = {"TRACKIO_DIR": str(tmp_path / "trackio")}
    run_script(
        """
        import trackio
        trackio.init(project="sft", name="good", config={"lr": 3e-4, "model": {"layers": 2}}, embed=False, auto_log_gpu=False, auto_log_cpu=False)
        for step in range(1, 301):
            trackio.log({"train/loss": 2.0 / step}, step=step)
        trackio.finish()
        trackio.init(project="dpo", name="other", embed=False, auto_log_gpu=False, auto_log_cpu=False)
        trackio.log({"loss": 1.0}, step=1)
        trackio.finish()
        """,
        env=env,
    )
    out = imported_twice("trackio", "sft", root=root, env=env)
    assert out.count(": imported") == 1, out
    logs = json.loads(
        run_script(
            "import json; from trackio.sqlite_storage import SQLiteStorage as S; "
            "print(json.dumps(S.get_logs('sft', 'good'), default=str))",
            env=env,
        ).stdout.splitlines()[-1]
    )
    from datetime import datetime

    good = open_run("good", dir=root)
    assert good.project == "sft" and good.state == "finished"
    assert good.config == {"lr": 3e-4, "model": {"layers": 2}}
    assert points(good, "train/loss") == [
        (e["step"], datetime.fromisoformat(e["timestamp"]).timestamp(), e["train/loss"]) for e in logs
    ]
    assert len(points(good, "train/loss")) == 300
    tunetrack("import", "trackio", "--dir", str(root), env=env)  # every project
    assert sorted(r.name for r in list_runs(root)) == ["good", "other"]


def test_comet_offline_archives_round_trip(root, tmp_path):
    """Archives written by comet_ml itself (``comet_ml.start`` offline), imported and compared value by
    value with what comet_ml's message classes read from them; a run tunetrack mirrored into Comet is
    already in the store."""
    offline = tmp_path / "comet"
    env = {"COMET_START_ONLINE": "false", "COMET_OFFLINE_DIRECTORY": str(offline)}
    run_script(
        """
        import comet_ml
        exp = comet_ml.start(project_name="sweep", experiment_config=comet_ml.ExperimentConfig(name="good", tags=["a", "b"]))
        exp.log_parameters({"lr": 3e-4, "epochs": 3, "optim": "adamw", "model": {"layers": 2}, "fp16": True, "ids": [1, 2]})
        exp.log_other("team", "nlp")
        exp.log_other("best", True)
        for step in range(1, 1201):
            exp.log_metrics({"train/loss": 2.0 / step, "lr": 3e-4}, step=step)
            if step % 400 == 0:
                exp.log_metric("eval/loss", 1.0 / step, step=step)
        exp.end()
        exp = comet_ml.start(project_name="sweep", experiment_config=comet_ml.ExperimentConfig(name="stepless"))
        for value in (1.0, float("nan"), 3.0):
            exp.log_metric("loss", value)
        exp.end()
        """,
        env=env,
    )
    mirrored = run_script(  # a training script whose run tunetrack mirrored into Comet
        f"""
        from tunetrack import Tracker
        from tunetrack.backends.comet import CometBackend
        t = Tracker(dir={str(root)!r}, name="mirrored", system=False, backends=[CometBackend()]).start()
        t.log({{"loss": 1.0}}, step=1)
        t.finish()
        print(t.id)
        """,
        env=env,
    ).stdout.split()[-1]
    out = imported_twice("comet", str(offline), root=root)
    assert out.count(": imported") == 2 and f"{mirrored}  mirrored: already in the store" in out, out

    (source,) = [a for a in offline.glob("*.zip") if comet_others(a).get("Name") == "good"]
    good = open_run("good", dir=root)
    assert good.project == "sweep" and good.state == "finished"
    assert good.config == {
        "lr": 3e-4,
        "epochs": 3,
        "optim": "adamw",
        "model": {"layers": 2},
        "fp16": True,
        "ids": [1, 2],
    }
    assert sorted(good.tags) == ["a", "b", "best", "team=nlp"]
    history = comet_points(source, times=True)
    for key in ("train/loss", "lr", "eval/loss"):
        assert points(good, key) == sorted(history[key], key=lambda p: p[1]), key
    assert len(points(good, "train/loss")) == 1200
    assert "process duration" not in good.keys()  # Comet's own
    assert good.created == started(source) / 1000
    assert provenance(good)["imported"] == f"from comet {source.resolve()}"
    stepless = open_run("stepless", dir=root)
    got = [(s, v) for s, _, v in points(stepless, "loss")]
    assert [s for s, _ in got] == [0, 0, 0] and got[0][1] == 1.0 and str(got[1][1]) == "nan"

    one = root.parent / "one"  # one archive named, into a project given
    tunetrack("import", "comet", str(source), "--project", "p", "--dir", str(one))
    assert [(r.name, r.project) for r in list_runs(one)] == [("good", "p")]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["tensorboard", "{tmp}/nope"], "Error: no such folder: {tmp}/nope"),
        (["tensorboard", "{tmp}"], "Error: no TensorBoard event files under {tmp}"),
        (["wandb", "{tmp}/nope"], "Error: no such file or folder: {tmp}/nope"),
        (["wandb", "{tmp}"], "Error: no W&B run files (run-*.wandb) under {tmp}"),
        (["trackio", "nope"], "Error: no trackio project named 'nope' in {tmp}/trackio"),
        (
            ["mlflow", "--tracking-uri", "http://127.0.0.1:9"],
            "Error: cannot read MLflow at http://127.0.0.1:9: ",
        ),
        (["comet", "{tmp}/nope.zip"], "Error: no such file or folder: {tmp}/nope.zip"),
        (["comet", "{tmp}/trackio"], "Error: no Comet offline archives (*.zip) in {tmp}/trackio"),
        (
            ["comet", "{tmp}/corrupt.zip"],
            "Error: not a Comet offline archive: {tmp}/corrupt.zip (File is not a zip",
        ),
        (
            ["comet", "{tmp}/other.zip"],
            "Error: not a Comet offline archive: {tmp}/other.zip (\"There is no item named 'experiment.json'",
        ),
    ],
)
def test_a_missing_source_is_one_line(tmp_path, args, error):
    (tmp_path / "trackio").mkdir()
    (tmp_path / "corrupt.zip").write_bytes(b"PK\x03\x04 cut short")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as other:  # a zip, but not Comet's
        other.writestr("readme.txt", "hello")
    proc = tunetrack(
        "import",
        *[a.format(tmp=tmp_path) for a in args],
        "--dir",
        str(tmp_path / "runs"),
        env={"TRACKIO_DIR": str(tmp_path / "trackio")},
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(error.format(tmp=tmp_path)) and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "runs").exists()
