"""ms-swift 4.6, end to end on CPU: ``swift sft``/``swift rlhf`` with tunetrack's plugin
(``--external_plugins <path> --callbacks tunetrack``) and the drop-in
``python -m tunetrack.integrations.swift``, each run read back from the store."""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path

import pytest
from swift_run import BIN, COMMON, run_swift

from tunetrack import open_run
from tunetrack.reader import list_runs
from tunetrack.reader.names import config_key

DROP_IN = [sys.executable, "-m", "tunetrack.integrations.swift"]


def test_sft_lora_with_eval_through_the_plugin(tmp_path, root, assets, plugin):
    """`swift sft` as users write it, with the file `--plugin-path` prints; ms-swift's perf_log
    callback listed after ours still lands (MFU); an eval set evaluated during and after training."""
    assert plugin.endswith("tunetrack_swift.py")
    run_swift(
        [
            str(BIN / "swift"), "sft", "--model", str(assets["model"]), "--dataset", str(assets["chat"]),
            *COMMON, "--output_dir", str(tmp_path / "out"), "--add_version", "false",
            "--max_steps", "4", "--split_dataset_ratio", "0.25", "--eval_steps", "2", "--save_steps", "2",
            "--external_plugins", plugin, "--callbacks", "tunetrack", "perf_log",
            "--hub_token", "hf_secret_value", "--swanlab_token", "sw_secret_value",
        ],
        env={"TUNETRACK_DIR": str(root), "TUNETRACK_NAME": "sft-lora"},
    )  # fmt: skip
    (listed,) = list_runs(root)
    run = open_run(listed.id, dir=root)
    assert (run.name, run.project, run.state) == ("sft-lora", "swift", "finished")

    config = run.config
    assert {"args", "model_config", "peft_config", "swift", "num_parameters", "trainable_parameters"} <= set(
        config
    )
    groups = config["swift"]
    assert {"model_args", "data_args", "template_args", "tuner_args", "sft_args", "base_args"} <= set(groups)
    assert groups["model_args"]["model_type"] == "qwen2" and groups["template_args"]["template"] == "qwen"
    assert groups["tuner_args"]["lora_rank"] == 4 and config["args"]["tuner_type"] == "lora"
    assert "learning_rate" not in groups.get("sft_args", {})  # the trainer's own arguments are under args
    assert config["args"]["learning_rate"] == 1e-3 and config["args"]["max_steps"] == 4
    assert config["model_config"]["model_type"] == "qwen2" and config["model_config"]["hidden_size"] == 32
    assert config["peft_config"]["default"]["r"] == 4
    assert config["trainable_parameters"] < config["num_parameters"]
    flat = run.flat_config
    assert "hf_secret_value" not in str(config) and "sw_secret_value" not in str(config)
    assert flat["args.hub_token"] == "***REDACTED***" and "hub_token" not in groups["base_args"]
    assert flat["swift.swanlab_args.swanlab_token"] == "***REDACTED***"
    # the short names find ms-swift's keys (docs/names.md)
    found = {name: config_key(flat, name) for name in ("lr", "lora.r", "lora.alpha", "max_steps", "model")}
    assert found == {
        "lr": "args.learning_rate",
        "lora.r": "peft_config.default.r",
        "lora.alpha": "peft_config.default.lora_alpha",
        "max_steps": "args.max_steps",
        "model": "model_config._name_or_path",
    }

    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]
    assert run.series("eval_loss").steps.tolist() == [2, 4]  # the last one after the last step
    assert run.series("MFU").steps.tolist()[:2] == [1, 2]  # from perf_log, listed after tunetrack
    rows = [r for r in run.rows() if "loss" in r]
    assert all(type(r["elapsed_time"]) is float and type(r["remaining_time"]) is float for r in rows)
    assert [r["global_step/max_steps"] for r in rows] == ["1/4", "2/4", "3/4", "4/4"]  # progress, as text
    final = run.latest()["values"]
    assert type(final["train_runtime"]) is float and math.isfinite(final["train_loss"])
    assert final["perf/tflops"] > 0 and final["total_flos"] > 0
    events = [(e["kind"], e["step"]) for e in run.events() if e["kind"] in ("evaluation", "checkpoint")]
    assert events == [("evaluation", 2), ("checkpoint", 2), ("evaluation", 4), ("checkpoint", 4)]
    paths = [e["path"] for e in run.events() if e["kind"] == "checkpoint"]
    assert paths == [str(tmp_path / "out" / "checkpoint-2"), str(tmp_path / "out" / "checkpoint-4")]
    # the checkpoints as `tunetrack checkpoints` lists them: the LoRA adapter, the eval before each save,
    # every file hashed as it is on disk
    found = run.checkpoints()
    evals = dict(zip(run.series("eval_loss").steps.tolist(), run.series("eval_loss").values.tolist()))
    assert [(c.step, c.kind, c.deleted, c.metrics["eval_loss"]) for c in found] == [
        (2, "adapter", False, evals[2]),
        (4, "adapter", False, evals[4]),
    ]
    weights = {f["name"]: f for f in found[-1].files or []}["adapter_model.safetensors"]
    on_disk = Path(found[-1].path) / "adapter_model.safetensors"
    assert weights["sha256"] == hashlib.sha256(on_disk.read_bytes()).hexdigest()
    # the model and data set swift loaded, recorded by the callback as the run's inputs
    used = {e["type"]: e["reference"] for e in run.events() if e["kind"] == "artifact_used"}
    assert used["model"] == str(Path(assets["model"]).resolve()) and used["dataset"].startswith("datasets://")


def test_dpo_through_the_drop_in(tmp_path, root, assets):
    """`python -m tunetrack.integrations.swift rlhf --rlhf_type dpo ...`: every swift argument, a
    --callbacks of the user's kept beside ours, tunetrack's options as tunetrack.KEY=VALUE."""
    out = run_swift(
        [
            *DROP_IN, "rlhf", "--rlhf_type", "dpo", "--model", str(assets["model"]),
            "--dataset", str(assets["pairs"]), *COMMON, "--output_dir", str(tmp_path / "out"),
            "--max_steps", "3", "--split_dataset_ratio", "0", "--save_strategy", "no",
            "--callbacks", "perf_log", f"tunetrack.dir={root}", "tunetrack.project=dpo", "tunetrack.tags=a,b",
        ]
    )  # fmt: skip
    assert "--callbacks perf_log tunetrack" in out  # swift's CLI prints the command it runs
    (run,) = list_runs(root)
    assert (run.project, run.tags, run.state) == ("dpo", ["a", "b"], "finished")
    assert run.series("loss").steps.tolist() == [1, 2, 3]
    assert {"rewards/chosen", "rewards/accuracies", "logps/chosen", "MFU"} <= set(run.keys())
    assert run.config["swift"]["rlhf_args"]["rlhf_type"] == "dpo"


def test_grpo_rewards_and_completions(tmp_path, root, assets):
    """GRPO on CPU (generation through transformers, no vLLM): rewards as metrics, the completions
    ms-swift appends to completions.jsonl as text samples at their steps."""
    run_swift(
        [
            *DROP_IN, "rlhf", "--rlhf_type", "grpo", "--model", str(assets["model"]),
            "--dataset", str(assets["prompts"]), *COMMON, "--output_dir", str(tmp_path / "out"),
            "--max_steps", "2", "--num_generations", "2", "--max_completion_length", "8",
            "--reward_funcs", "format", "--log_completions", "true", "--split_dataset_ratio", "0",
            "--save_strategy", "no", f"tunetrack.dir={root}",
        ]
    )  # fmt: skip
    (run,) = list_runs(root)
    assert run.state == "finished" and run.series("loss").steps.tolist() == [1, 2]
    assert {"reward", "reward_std", "rewards/Format/mean", "completions/mean_length", "kl"} <= set(run.keys())
    texts = run.texts("completions")
    assert [t["step"] for t in texts][:2] == [1, 2]
    first = texts[0]["rows"]
    assert len(first) == 2 and {"prompt", "completion", "Format", "advantages"} <= set(first[0])
    # the total reward beside the one function's column (weight 1), its mean the trainer's own metric
    assert list(first[0])[list(first[0]).index("Format") + 1] == "reward"
    logged = run.series("reward")
    for table in texts[:2]:
        totals = [row["reward"] for row in table["rows"]]
        assert totals == [row["Format"] for row in table["rows"]]
        assert sum(totals) / len(totals) == pytest.approx(logged.values[logged.steps == table["step"]][0])
    assert (
        run.config["args"]["num_generations"] == 2 and run.config["swift"]["rlhf_args"]["rlhf_type"] == "grpo"
    )


def test_resume_from_a_checkpoint_is_one_run_with_a_rewind(tmp_path, root, assets, plugin):
    """ms-swift writes each attempt to a new versioned folder (output/v0-..., output/v1-...): the
    resumed attempt finds the run beside the checkpoint it resumes from and rewinds it."""
    common = [
        str(BIN / "swift"), "sft", "--model", str(assets["model"]), "--dataset", str(assets["chat"]),
        *COMMON, "--output_dir", str(tmp_path / "out"), "--max_steps", "4", "--save_steps", "2",
        "--split_dataset_ratio", "0", "--external_plugins", plugin, "--callbacks", "tunetrack",
    ]  # fmt: skip
    env = {"TUNETRACK_DIR": str(root)}
    run_swift(common, env=env)
    (first,) = (tmp_path / "out").glob("v0-*")
    run_swift([*common, "--resume_from_checkpoint", str(first / "checkpoint-2")], env=env)
    assert len(list((tmp_path / "out").glob("v1-*"))) == 1
    (run,) = list_runs(root)
    assert run.state == "finished" and run.rewinds == 1
    assert [e["step"] for e in run.events() if e["kind"] == "rewind"] == [2]
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]  # the first attempt's 3 and 4 superseded
    checkpoints = [(e["step"], e["path"]) for e in run.events() if e["kind"] == "checkpoint"]
    assert [step for step, _ in checkpoints] == [2, 4]
    assert "v1-" in checkpoints[-1][1]  # the resumed attempt's


def test_two_processes_are_one_run(tmp_path, root, assets):
    """NPROC_PER_NODE=2: swift's CLI starts torchrun (gloo on CPU); the options reach both processes
    through the environment, world rank 0 records, the job is one run."""
    out = run_swift(
        [
            *DROP_IN, "sft", "--model", str(assets["model"]), "--dataset", str(assets["chat"]), *COMMON,
            "--output_dir", str(tmp_path / "out"), "--max_steps", "3", "--split_dataset_ratio", "0",
            "--save_strategy", "no", "--ddp_backend", "gloo", f"tunetrack.dir={root}", "tunetrack.name=ddp",
        ],
        env={"NPROC_PER_NODE": "2", "MASTER_PORT": "29561"},
    )  # fmt: skip
    assert "torch.distributed.run --nproc_per_node 2" in out
    (run,) = list_runs(root)
    assert (run.name, run.state) == ("ddp", "finished")
    assert run.series("loss").steps.tolist() == [1, 2, 3]


def test_swift_sft_under_tunetrack_run_attaches_ms_swift_s_callback(tmp_path, root, assets):
    """`swift sft` with no plugin and no --callbacks: ms-swift's callback attaches itself in the child
    process ms-swift trains in, so the run has what `--callbacks tunetrack` gives (ms-swift's argument
    groups, its values as numbers), in the run `tunetrack run` made."""
    run_swift(
        [
            sys.executable, "-m", "tunetrack", "run", "--project", "sw", "--name", "attached", "--",
            str(BIN / "swift"), "sft", "--model", str(assets["model"]), "--dataset", str(assets["chat"]),
            *COMMON, "--output_dir", str(tmp_path / "out"), "--add_version", "false", "--max_steps", "4",
            "--save_steps", "4",
        ],
        env={"TUNETRACK_DIR": str(root)},
    )  # fmt: skip
    (run,) = list_runs(root)
    assert (run.name, run.project, run.state, run.exit_code) == ("attached", "sw", "finished", 0)
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]
    assert run.config["swift"]["tuner_args"]["lora_rank"] == 4  # SwiftCallback's own config groups
    assert [c.step for c in run.checkpoints()] == [4]
    assert any("train_runtime" in line.text for line in run.console())


def test_callbacks_tunetrack_needs_no_plugin_where_tunetrack_is_installed(tmp_path, root, assets):
    run_swift(
        [
            str(BIN / "swift"), "sft", "--model", str(assets["model"]), "--dataset", str(assets["chat"]),
            *COMMON, "--output_dir", str(tmp_path / "out"), "--add_version", "false", "--max_steps", "2",
            "--callbacks", "tunetrack",
        ],
        env={"TUNETRACK_DIR": str(root), "TUNETRACK_NAME": "no-plugin"},
    )  # fmt: skip
    (run,) = list_runs(root)
    assert (run.name, run.project, run.state) == ("no-plugin", "swift", "finished")
    assert run.series("loss").steps.tolist() == [1, 2]
