"""The ms-swift adapter's own translation, without training: values ms-swift formats as text, the
command line the drop-in builds, the names of argument groups."""

from __future__ import annotations

import dataclasses

from tunetrack.integrations.swift import NAME, PLUGIN, argument_groups, command_line, translate


def test_text_values_land_as_what_they_are():
    row = translate(
        {"loss": 1.5, "train_loss": "0.25", "elapsed_time": "1h 2m 5s", "remaining_time": "0s",
         "global_step/max_steps": "3/12", "note": "warmup", "step_time": "1e-3"}
    )  # fmt: skip
    assert row == {
        "loss": 1.5, "train_loss": 0.25, "elapsed_time": 3725.0, "remaining_time": 0.0,
        "global_step/max_steps": "3/12", "note": "warmup", "step_time": 0.001,
    }  # fmt: skip
    assert translate({"elapsed_time": "1d 0h 0m 1s"})["elapsed_time"] == 86401.0


def test_the_drop_in_merges_its_plugin_and_callback_into_the_users_lists():
    argv = ["--model", "m", "--callbacks", "perf_log", "--external_plugins=my.py", "--lora_rank", "4"]
    assert command_line(argv) == [
        "--model", "m", "--lora_rank", "4", "--external_plugins", "my.py", str(PLUGIN),
        "--callbacks", "perf_log", NAME,
    ]  # fmt: skip
    assert command_line(command_line(argv)) == command_line(argv)  # nothing added twice


def test_argument_groups_are_named_after_the_dataclass_that_declares_each_field():
    @dataclasses.dataclass
    class TrainingArguments:
        learning_rate: float = 1e-4

    @dataclasses.dataclass
    class ModelArguments:
        model: str = "m"

    @dataclasses.dataclass
    class RLHFArguments(ModelArguments, TrainingArguments):
        rlhf_type: str = "dpo"
        learning_rate: float = 5e-5  # a default changed: still the trainer's argument

    groups = argument_groups(RLHFArguments(), skip=[TrainingArguments])
    assert groups == {"rlhf_args": {"rlhf_type": "dpo"}, "model_args": {"model": "m"}}
    assert argument_groups(object()) == {}
