"""DDPO and AlignProp log through the Accelerate tracker: rewards (a NumPy array) as statistics,
images through the image hook, and the run ends finished although they never call end_training()."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support.helpers import EXAMPLES_DIR, SRC
from tunetrack.reader import open_run


@pytest.mark.parametrize("trainer", ["ddpo", "alignprop"])
def test_trainer_is_recorded(root, trainer):
    proc = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES_DIR, "ddpo.py"), trainer, "--dir", str(root)],
        env={**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = open_run(f"{trainer}-example", dir=root)
    assert run.state == "finished" and run.project == trainer
    keys = set(run.keys())
    if trainer == "ddpo":
        assert {
            "reward/mean",
            "reward/std",
            "reward/min",
            "reward/max",
            "reward/count",
            "reward_mean",
        } <= keys
        assert run.series("reward/count").values.tolist() == [2]
    else:
        assert {"reward_mean", "reward_std", "loss"} <= keys
    images = [e for e in run.events() if e["kind"] == "image"]
    assert images and all((run.path / e["path"]).is_file() for e in images)
    assert (
        run.config["ddpo_trainer_config" if trainer == "ddpo" else "alignprop_trainer_config"][
            "sample_num_steps"
        ]
        == 2
    )
