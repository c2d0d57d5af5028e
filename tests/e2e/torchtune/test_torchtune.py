"""`tune run` with the tunetrack metric logger chosen on the command line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import SRC
from tunetrack.reader import list_runs

LOGGER = "metric_logger._component_=tunetrack.integrations.torchtune.TunetrackLogger"


def tune_run(recipe, config, root, *overrides):
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torchtune._cli.tune",
            "run",
            recipe,
            "--config",
            str(config),
            LOGGER,
            "metric_logger.project=tt",
            f"metric_logger.dir={root}",
            *overrides,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "recipe, config",
    [("full_finetune_single_device", "tiny_full"), ("lora_finetune_single_device", "tiny_lora")],
)
def test_recipe_is_recorded(tiny, root, recipe, config):
    proc = tune_run(recipe, tiny[config], root, f"metric_logger.name={config}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = list_runs(root, project="tt")
    assert run.name == config and run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 9))
    assert set(run.keys()) >= {"loss", "lr", "tokens_per_second_per_gpu", "perf/tokens_per_s"}
    assert run.config["model"]["embed_dim"] == 64
    assert run.config["output_dir"] == str(
        tiny[config].parent / ("out_full" if "full" in config else "out_lora")
    )
    assert run.config["checkpointer"]["output_dir"] == run.config["output_dir"]  # interpolation resolved
    assert "${output_dir}" in run.config["_yaml"]  # and the original text kept


def test_a_failing_recipe_ends_failed(tiny, root):
    proc = tune_run(
        "full_finetune_single_device",
        tiny["tiny_full"],
        root,
        "metric_logger.name=broken",
        "max_steps_per_epoch=3",
        "optimizer.lr=-1",
    )
    assert proc.returncode != 0
    (run,) = list_runs(root, project="tt")
    assert run.state == "failed", proc.stderr[-2000:]
    assert "Invalid learning rate" in run.error
