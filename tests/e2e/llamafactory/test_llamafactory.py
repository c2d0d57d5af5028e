"""`python -m tunetrack.integrations.llamafactory train cfg.yaml`: LLaMA Factory's own training,
recorded with its argument groups; evaluation after training lands in the same run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.helpers import SRC, assert_hashed_as_on_disk, checkpoints_cli
from tunetrack.reader import list_runs
from tunetrack.reader.names import config_key

STUBS = os.path.join(os.path.dirname(__file__), "stubs")


def _config(tmp_path, assets, **overrides):
    cfg = dict(
        stage="sft",
        do_train=True,
        model_name_or_path=str(assets["model"]),
        dataset="tiny",
        dataset_dir=str(assets["data"]),
        template="default",
        finetuning_type="lora",
        lora_target="all",
        lora_rank=4,
        output_dir=str(tmp_path / "out"),
        overwrite_output_dir=True,
        per_device_train_batch_size=2,
        max_steps=5,
        logging_steps=1,
        learning_rate=1e-3,
        cutoff_len=64,
        report_to="none",
        save_strategy="no",
        plot_loss=False,
        bf16=False,
        fp16=False,
        dataloader_num_workers=0,
    )
    cfg.update(overrides)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _run(cmd, root, *extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, STUBS]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [*cmd, *extra, f"tunetrack.dir={root}"], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


WRAPPER = [sys.executable, "-m", "tunetrack.integrations.llamafactory", "train"]


@pytest.mark.parametrize("finetuning_type", ["lora", "full"])
def test_sft(tmp_path, root, assets, finetuning_type):
    """A save every 2 steps (and the Trainer's at the end) with save_total_limit=1: each checkpoint
    recorded at its step with the loss logged there; the two rotated away marked deleted, never lost;
    the one kept hashed file by file."""
    cfg = _config(
        tmp_path,
        assets,
        finetuning_type=finetuning_type,
        save_strategy="steps",
        save_steps=2,
        save_total_limit=1,
    )
    _run([*WRAPPER, str(cfg), "learning_rate=0.002"], root, "tunetrack.name=sft", "tunetrack.tags=a,b")
    (run,) = list_runs(root)
    assert run.name == "sft" and run.project == "llamafactory" and run.tags == ["a", "b"]
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4, 5]
    config = run.config
    assert config["finetuning_args"]["finetuning_type"] == finetuning_type
    assert config["model_args"]["model_name_or_path"] == str(assets["model"])
    assert config["data_args"]["cutoff_len"] == 64 and "generating_args" in config
    assert config["llamafactory"]["learning_rate"] == 0.002  # the key=value override
    assert config["args"]["learning_rate"] == 0.002
    # the short names find LLaMA Factory's keys (docs/names.md); its learning rate recorded twice, equal
    flat = run.flat_config
    assert (
        config_key(flat, "lr") == "args.learning_rate"
        and config_key(flat, "model") == "model_args.model_name_or_path"
    )
    if finetuning_type == "lora":
        assert flat[config_key(flat, "lora.r")] == config["finetuning_args"]["lora_rank"]
    found = checkpoints_cli(run.id, root)
    kind = "adapter" if finetuning_type == "lora" else "model"
    out = tmp_path / "out"
    assert [(c["step"], c["path"], c["kind"], c["deleted"]) for c in found] == [
        (2, str(out / "checkpoint-2"), kind, True),
        (4, str(out / "checkpoint-4"), kind, True),
        (5, str(out / "checkpoint-5"), kind, False),
    ]
    loss = dict(zip(run.series("loss").steps.tolist(), run.series("loss").values.tolist()))
    assert [c["metrics"]["loss"] for c in found] == pytest.approx([loss[2], loss[4], loss[5]])
    assert_hashed_as_on_disk(found[-1])
    weights = "adapter_model.safetensors" if finetuning_type == "lora" else "model.safetensors"
    assert weights in {f["name"] for f in found[-1]["files"]}
    assert [c.step for c in run.checkpoints() if not c.deleted] == [5]  # the read API agrees
    # the model LLaMA Factory loaded and the data set it built, recorded by the callback as inputs
    used = {e["type"]: e for e in run.events() if e["kind"] == "artifact_used"}
    assert set(used) == {"model", "dataset", "tokenizer"}
    assert used["model"]["reference"] == str(Path(assets["model"]).resolve())
    assert used["dataset"]["reference"].startswith("datasets://")


def test_dpo(tmp_path, root, assets):
    cfg = _config(tmp_path, assets, stage="dpo", dataset="pairs", max_steps=3)
    _run([*WRAPPER, str(cfg)], root)
    (run,) = list_runs(root)
    assert run.series("loss").steps.tolist() == [1, 2, 3]
    assert {"rewards/chosen", "rewards/accuracies"} <= set(run.keys())


def test_eval_after_train_lands_in_the_same_run(tmp_path, root, assets):
    cfg = _config(
        tmp_path, assets, do_eval=True, val_size=0.25, eval_strategy="no", per_device_eval_batch_size=2
    )
    _run([*WRAPPER, str(cfg)], root)
    (run,) = list_runs(root)
    assert run.series("eval_loss").steps.tolist() == [5]
    assert [e["kind"] for e in run.events()].count("evaluation") == 1


def test_torchrun_two_processes(tmp_path, root, assets):
    cfg = _config(tmp_path, assets, ddp_backend="gloo", max_steps=3)
    _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "tunetrack.integrations.llamafactory",
            "train",
            str(cfg),
        ],
        root,
    )
    (run,) = list_runs(root)
    assert run.series("loss").steps.tolist() == [1, 2, 3] and run.state == "finished"


def test_example_config(tmp_path, root, assets):
    example = os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "examples", "llamafactory", "sft_lora.yaml"
    )
    _run(
        [
            *WRAPPER,
            example,
            f"model_name_or_path={assets['model']}",
            f"dataset_dir={assets['data']}",
            f"output_dir={tmp_path / 'out'}",
        ],
        root,
        "tunetrack.project=example",
    )
    (run,) = list_runs(root, project="example")
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4, 5]


CLI = [str(Path(sys.executable).with_name("llamafactory-cli")), "train"]


def _environment(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([SRC, STUBS]),
        "OMP_NUM_THREADS": "1",
        "TUNETRACK_DIR": str(root),
    }


def test_llamafactory_cli_under_tunetrack_run(tmp_path, root, assets):
    """`llamafactory-cli train` itself, with no tunetrack option: the callback attaches itself."""
    cfg = _config(tmp_path, assets, save_strategy="steps", save_steps=5)
    proc = subprocess.run(
        [sys.executable, "-m", "tunetrack", "run", "--project", "lf", "--", *CLI, str(cfg)],
        env=_environment(root),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    (run,) = list_runs(root)
    assert (run.project, run.state, run.exit_code) == ("lf", "finished", 0)
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4, 5]
    assert run.flat_config["args.max_steps"] == 5 and run.flat_config["args.learning_rate"] == 1e-3
    assert [c.step for c in run.checkpoints()] == [5]
    assert any("train_runtime" in line.text for line in run.console())


def test_report_to_tunetrack_in_a_llamafactory_config(tmp_path, root, assets):
    """`report_to: tunetrack` in the YAML, `llamafactory-cli train` alone: the run's options come from
    TUNETRACK_* variables."""
    cfg = _config(tmp_path, assets, report_to="tunetrack")
    proc = subprocess.run(
        [*CLI, str(cfg)],
        env={**_environment(root), "TUNETRACK_PROJECT": "lf-report", "TUNETRACK_NAME": "yaml"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    (run,) = list_runs(root)
    assert (run.project, run.name, run.state) == ("lf-report", "yaml", "finished")
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4, 5]
