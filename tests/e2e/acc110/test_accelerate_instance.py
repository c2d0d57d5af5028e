"""accelerate 1.10: instances work; registering by name says why it cannot."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from accelerate import Accelerator

from tunetrack.integrations.accelerate import TunetrackTracker, register
from tunetrack.reader import open_run


def test_instance_path(root):
    accelerator = Accelerator(log_with=TunetrackTracker(project="old", run_name="r110", dir=root), cpu=True)
    accelerator.init_trackers("old", config={"lr": 0.1})
    for step in range(1, 4):
        accelerator.log({"loss": torch.tensor(float(step)), "reward": np.array([1.0, 3.0])}, step=step)
    accelerator.end_training()
    run = open_run("r110", dir=root)
    assert run.series("loss").values.tolist() == [1.0, 2.0, 3.0]
    assert run.series("reward/mean").values.tolist() == [2.0] * 3
    assert run.config == {"lr": 0.1} and run.state == "finished"


def test_register_explains_the_version():
    import accelerate

    if accelerate.__version__ >= "1.15":
        pytest.skip("this environment has register_tracker_class")
    with pytest.raises(RuntimeError, match="needs ≥ 1.15"):
        register()
