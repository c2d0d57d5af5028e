"""`tune run` with the tunetrack metric logger chosen on the command line; assertions on the stored run."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from support.helpers import SRC, assert_hashed_as_on_disk, checkpoints_cli, wait_until
from tunetrack.reader import list_runs
from tunetrack.reader.names import config_key
from tunetrack.store.artifacts import ArtifactStore

COMPONENT = "tunetrack.integrations.torchtune.TunetrackLogger"
LOGGED = ("loss", "lr", "tokens_per_second_per_gpu", "perf/tokens_per_s")
TUNE = Path(sys.executable).with_name("tune")


def tune_command(recipe: str, config: Path, out: Path, *overrides: str) -> list[str]:
    return [
        str(TUNE),
        "run",
        recipe,
        "--config",
        str(config),
        f"metric_logger._component_={COMPONENT}",
        "metric_logger.project=tt",
        f"output_dir={out}",
        *overrides,
    ]


def tune_env(config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TUNETRACK_DIR"}
    env.update(
        PYTHONPATH=SRC,
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HOME=str(config.parent / "hf"),  # the data set cache stays in the test's folder
    )
    env.update(extra)
    return env


def tune_run(
    recipe: str, config: Path, out: Path, *overrides: str, **env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        tune_command(recipe, config, out, *overrides),
        env=tune_env(config, **env),
        cwd=out.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )


def assert_recorded(run, out: Path, steps: int = 8) -> None:
    """What every successful recipe stores: rows, the resolved config, the YAML text, the end."""
    assert run.project == "tt"
    assert run.state == "finished" and run.error is None and run.ended is not None
    for key in LOGGED:
        assert run.series(key).steps.tolist() == list(range(1, steps + 1)), key
    loss = run.series("loss").values.astype(float)
    assert all(math.isfinite(v) and v > 0 for v in loss)
    assert all(v > 0 for v in run.series("tokens_per_second_per_gpu").values.astype(float))
    assert (  # one device: the total rate is the per-device rate
        run.series("perf/tokens_per_s").values.tolist()
        == run.series("tokens_per_second_per_gpu").values.tolist()
    )
    config = run.config
    assert config["model"]["embed_dim"] == 64
    assert config["output_dir"] == str(out)  # the command-line override...
    assert config["checkpointer"]["output_dir"] == str(out)  # ...resolved into the interpolations
    assert config["metric_logger"]["_component_"] == COMPONENT
    assert config["metric_logger"]["log_dir"] == f"{out}/logs"
    (yaml,) = run.texts("torchtune_config.yaml")
    assert yaml["step"] == 0
    text = yaml["rows"][0]["text"]
    assert "${output_dir}" in text  # the YAML as the recipe received it: interpolations intact
    original = OmegaConf.create(text)
    assert original.model.embed_dim == 64 and original.output_dir == str(out)
    assert run.meta["processes"][0]["versions"]["torchtune"] == "0.6.1"


def test_logger_fits_the_protocol_without_importing_torchtune():
    """Same method names and parameters as torchtune's Protocol (read from its source, not imported)."""
    code = """
import sys
from tunetrack.integrations.torchtune import TunetrackLogger
loaded = {"torch", "torchtune", "omegaconf", "numpy"} & set(sys.modules)
assert not loaded, loaded
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    from tunetrack.integrations.torchtune import TunetrackLogger

    (package,) = importlib.util.find_spec("torchtune").submodule_search_locations
    tree = ast.parse((Path(package) / "training" / "metric_logging.py").read_text())
    (protocol,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MetricLoggerInterface"]
    methods = {f.name: [a.arg for a in f.args.args] for f in protocol.body if isinstance(f, ast.FunctionDef)}
    assert set(methods) == {"log", "log_dict", "log_config", "close"}
    for method, parameters in methods.items():
        assert list(inspect.signature(getattr(TunetrackLogger, method)).parameters) == parameters, method


def test_full_finetune(tiny, root, tmp_path):
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    proc = tune_run(
        "full_finetune_single_device",
        tiny["tiny_full"],
        out,
        f"metric_logger.dir={root}",
        "metric_logger.name=full",
        "metric_logger.tags=tiny,full",
        "metric_logger.api_key=sekrit",  # left over from CometLogger: warned about, and redacted
        TUNETRACK_DIR=str(elsewhere),  # metric_logger.dir wins
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "TunetrackLogger ignored unknown arguments: ['api_key']" in proc.stderr
    (run,) = list_runs(root)
    assert run.name == "full" and run.tags == ["tiny", "full"]
    assert_recorded(run, out)
    assert run.config["metric_logger"]["api_key"] == "***REDACTED***"
    assert "sekrit" not in run.texts("torchtune_config.yaml")[0]["rows"][0]["text"]
    assert run.series("lr").values.tolist() == [1e-3] * 8
    assert not elsewhere.exists() and not (out / "logs").exists()


#: the loss as trackio's own storage API returns it: [steps, values]
TRACKIO_LOSS = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage
logs = [e for e in SQLiteStorage.get_logs(sys.argv[1], sys.argv[2]) if "loss" in e]
print(json.dumps([[e["step"] for e in logs], [e["loss"] for e in logs]]))
"""


def test_lora_finetune_lands_in_log_dir(tiny, tmp_path, mlflow_server):
    """No `dir`, no $TUNETRACK_DIR: the run is stored under the config's `log_dir` (`${output_dir}/logs`);
    mirrored into all four trackers at once, each read back with its own reader."""
    out = tmp_path / "out"
    proc = tune_run(
        "lora_finetune_single_device",
        tiny["tiny_lora"],
        out,
        "metric_logger.tags=[tiny,lora]",
        "metric_logger.backends=[tensorboard,trackio,mlflow,wandb]",
        TRACKIO_DIR=str(tmp_path / "trackio"),
        MLFLOW_TRACKING_URI=mlflow_server.url,
        WANDB_MODE="offline",
        WANDB_DIR=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = list_runs(out / "logs")
    trackio = subprocess.run(
        [sys.executable, "-c", TRACKIO_LOSS, run.project or "tunetrack", run.name],
        env={**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio")},
        capture_output=True,
        text=True,
        check=True,
    )
    steps, values = json.loads(trackio.stdout)
    assert steps == run.series("loss").steps.tolist()
    assert values == pytest.approx(run.series("loss").values.tolist(), rel=1e-6)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run.path / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss")] == run.series("loss").steps.tolist()
    assert [e.value for e in acc.Scalars("loss")] == pytest.approx(
        run.series("loss").values.tolist(), rel=1e-6
    )
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server.url)
    (mirror,) = client.search_runs([client.get_experiment_by_name("tt").experiment_id])
    history = sorted(client.get_metric_history(mirror.info.run_id, "loss"), key=lambda m: m.step)
    assert [m.step for m in history] == run.series("loss").steps.tolist()
    assert [m.value for m in history] == pytest.approx(run.series("loss").values.tolist(), rel=1e-6)
    assert mirror.info.status == "FINISHED" and mirror.data.params["model.lora_rank"] == "4"
    (wandb_file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    records = subprocess.run(
        [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(wandb_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    rows = [json.loads(line)["history"] for line in records if '"type":"history"' in line]
    losses = [(r["step"]["num"], r["item"]["loss"]) for r in rows if "loss" in r["item"]]
    assert [step for step, _ in losses] == run.series("loss").steps.tolist()
    assert [v for _, v in losses] == pytest.approx(run.series("loss").values.tolist(), rel=1e-6)
    assert run.name.startswith("tt-") and run.tags == ["tiny", "lora"]
    assert_recorded(run, out)
    assert run.config["model"]["lora_rank"] == 4
    flat = run.flat_config  # the short names find torchtune's keys (docs/names.md)
    assert (config_key(flat, "lr"), config_key(flat, "lora.r")) == ("optimizer.lr", "model.lora_rank")
    assert run.series("train/loss").values.tolist() == run.series("loss").values.tolist()
    lr = run.series("lr").values.tolist()
    assert lr[0] < lr[1] <= 1e-3  # the warm-up schedule, step by step
    assert (out / "epoch_0" / "adapter_model.safetensors").exists()


def test_each_epoch_s_checkpoint_is_recorded_with_its_files(tiny, root, tmp_path):
    """Two epochs of four steps: torchtune's checkpointer saves epoch_0 and epoch_1 (the LoRA adapter
    and the merged model); each is recorded at the last step of its epoch, with the loss logged there
    and every file hashed as written. A folder left in output_dir by an earlier run is not this run's."""
    out = tmp_path / "out"
    (out / "epoch_7").mkdir(parents=True)
    (out / "epoch_7" / "adapter_model.safetensors").write_bytes(b"an earlier run's")
    proc = tune_run(
        "lora_finetune_single_device",
        tiny["tiny_lora"],
        out,
        f"metric_logger.dir={root}",
        "metric_logger.name=epochs",
        "epochs=2",
        "max_steps_per_epoch=4",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = list_runs(root)
    assert_recorded(run, out)
    found = checkpoints_cli(run.id, root)
    loss = dict(zip(run.series("loss").steps.tolist(), run.series("loss").values.tolist()))
    assert [(c["step"], c["path"], c["kind"], c["deleted"]) for c in found] == [
        (4, str(out / "epoch_0"), "adapter", False),
        (8, str(out / "epoch_1"), "adapter", False),
    ]
    assert [c["metrics"]["loss"] for c in found] == pytest.approx([loss[4], loss[8]])
    for saved in found:
        assert_hashed_as_on_disk(saved)
        names = {f["name"] for f in saved["files"]}
        assert {"adapter_model.safetensors", "adapter_config.json"} <= names
        assert any(n.startswith("model-") and n.endswith(".safetensors") for n in names)  # merged weights
    assert [c.path for c in run.checkpoints()] == [c["path"] for c in found]  # the read API agrees
    # what the recipe was made from, from its config: the base model, its tokenizer and its data
    used = {e["type"]: e for e in run.events() if e["kind"] == "artifact_used"}
    art = Path(run.config["checkpointer"]["checkpoint_dir"]).parent
    assert {k: e["reference"] for k, e in used.items()} == {
        "model": str(art / "model"),
        "tokenizer": str(art / "tok.model"),
        "dataset": str(art / "data.json"),
    }
    data = hashlib.sha256((art / "data.json").read_bytes()).hexdigest()
    (stored,) = ArtifactStore(root).resolve("data.json").files
    assert stored.sha256 == data  # the data file hashed, never copied


def test_failure_mid_training_ends_failed(tiny, broken_data, root, tmp_path):
    out = tmp_path / "out"
    proc = tune_run(
        "full_finetune_single_device",
        tiny["tiny_full"],
        out,
        f"dataset.data_files={broken_data}",
        "shuffle=False",
        TUNETRACK_DIR=str(root),
    )
    assert proc.returncode != 0
    (run,) = list_runs(root)
    assert run.state == "failed", proc.stderr[-3000:]
    assert run.series("loss").steps.tolist() == [1, 2, 3]  # what was trained before the fault is kept
    assert "Traceback" in run.error and "content must be of type" in run.error
    assert run.ended is not None
    assert run.config["dataset"]["data_files"] == str(broken_data)
    assert not (out / "logs").exists()  # $TUNETRACK_DIR wins over log_dir


def test_sigkill_reads_crashed(tiny, root, tmp_path):
    """A recipe killed with SIGKILL runs no Python at all: the run reads `crashed`, not `running`."""
    out = tmp_path / "out"
    out.mkdir()
    with (tmp_path / "tune.log").open("w") as log:
        proc = subprocess.Popen(
            tune_command(
                "full_finetune_single_device",
                tiny["tiny_full"],
                out,
                f"metric_logger.dir={root}",
                "epochs=50",
            ),
            env=tune_env(tiny["tiny_full"]),
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:

            def logged_three() -> bool:
                runs = list_runs(root) if root.exists() else []
                return bool(runs) and len(runs[0].series("loss")) >= 3

            wait_until(logged_three, timeout=240, interval=0.5)
            assert list_runs(root)[0].state == "running"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    (run,) = list_runs(root)
    assert run.state == "crashed"
    assert run.error is None and len(run.series("loss")) >= 3


def _tunetrack_run(root: Path, config: Path, out: Path, *command: str, **env: str) -> subprocess.Popen:
    """``tunetrack run -- tune run ...`` with the recipe's own config: its metric logger untouched."""
    return subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "run", "--project", "tt", "--name", "tune", "--", *command],
        env=tune_env(config, TUNETRACK_DIR=str(root), **env),
        cwd=out.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_recipe_under_tunetrack_run_is_recorded_beside_its_own_logger(tiny, root, tmp_path):
    """No metric_logger override: the recipe's DiskLogger still writes its log, and tunetrack's logger,
    teed beside it, records the rows, the config and the YAML as when it is named in the config."""
    out = tmp_path / "out"
    recipe = [
        str(TUNE),
        "run",
        "lora_finetune_single_device",
        "--config",
        str(tiny["tiny_lora"]),
        f"output_dir={out}",
    ]
    command = _tunetrack_run(root, tiny["tiny_lora"], out, *recipe)
    _, err = command.communicate(timeout=600)
    assert command.returncode == 0, err[-3000:]
    (run,) = list_runs(root)
    assert (run.name, run.state, run.exit_code) == ("tune", "finished", 0)
    for key in LOGGED:
        assert run.series(key).steps.tolist() == list(range(1, 9)), key
    assert run.config["model"]["embed_dim"] == 64
    assert run.config["metric_logger"]["_component_"] == "torchtune.training.metric_logging.DiskLogger"
    (yaml,) = run.texts("torchtune_config.yaml")
    assert "${output_dir}" in yaml["rows"][0]["text"]
    (disk_log,) = (out / "logs").glob("log_*.txt")  # the recipe's own logger wrote its rows too
    assert "Step 8 | loss:" in disk_log.read_text()
    assert [c.step for c in run.checkpoints()] == [8]
    assert any("Checkpoint saved" in line.text or "checkpoint" in line.text.lower() for line in run.console())


def test_tunetrack_stop_ends_a_recipe_s_training_with_a_checkpoint(tiny, root, tmp_path):
    """A stop request found mid-epoch: the recipe leaves its loop after that step, saves that
    epoch's checkpoint and returns, as at the end of training."""
    out = tmp_path / "out"
    recipe = [
        str(TUNE), "run", "lora_finetune_single_device", "--config", str(tiny["tiny_lora"]), f"output_dir={out}",
        "epochs=200", "max_steps_per_epoch=8",
    ]  # fmt: skip
    command = _tunetrack_run(root, tiny["tiny_lora"], out, *recipe, TUNETRACK_CONTROL_INTERVAL="0.2")
    try:
        wait_until(lambda: list_runs(root) and (list_runs(root)[0].last_step or 0) >= 3, timeout=300)
        (live,) = list_runs(root)
        stop = subprocess.run(
            [sys.executable, "-m", "tunetrack", "stop", live.id, "--reason", "enough"],
            env=tune_env(tiny["tiny_lora"], TUNETRACK_DIR=str(root)),
            capture_output=True,
            text=True,
        )
        assert stop.returncode == 0, stop.stderr
        _, err = command.communicate(timeout=300)
    finally:
        command.kill()
    assert command.returncode == 0, err[-3000:]
    (run,) = list_runs(root)
    assert run.state == "stopped" and run.last_step < 1600
    (stopped,) = [e for e in run.events() if e["kind"] == "stop"]
    assert run.last_step - stopped["step"] <= 1  # the loop left after the step that saw the request
    (checkpoint,) = [c for c in run.checkpoints() if c.step == run.last_step]
    assert Path(checkpoint.path).is_dir()
