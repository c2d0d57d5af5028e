"""accelerate 1.10 (no ``register_tracker_class``): the instance path records everything, importing
the integration does not fail, and ``register()`` says which version is needed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from accelerate import tracking as accelerate_tracking
from accelerate.state import AcceleratorState, PartialState

from tunetrack.integrations.accelerate import TunetrackTracker, register
from tunetrack.reader import open_run


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    yield
    AcceleratorState._reset_state(True)
    PartialState._reset_state()


def test_instance_path(root):
    tracker = TunetrackTracker(project="old", run_name="r110", dir=root)
    accelerator = Accelerator(log_with=tracker, cpu=True)
    accelerator.init_trackers("ignored", config={"lr": 0.1, "ddpo_trainer_config": {"log_with": tracker}})
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    losses = []
    for step in range(1, 5):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        accelerator.log({"loss": loss.detach(), "reward": np.array([1.0, 3.0]) * step}, step=step)
    accelerator.get_tracker("tunetrack").log_images({"sample": torch.rand(1, 3, 4, 4)}, step=4)
    accelerator.end_training()

    run = open_run("r110", dir=root)
    assert (run.project, run.state) == ("old", "finished")
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]
    assert run.series("loss").values.tolist() == losses
    assert run.series("reward/mean").values.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert run.series("reward/count").values.tolist() == [2] * 4
    assert run.config == {"lr": 0.1, "ddpo_trainer_config": {"log_with": "tunetrack"}}
    (image,) = [e for e in run.events() if e["kind"] == "image"]
    assert (image["step"], image["key"], image["path"]) == (4, "sample", "media/images/sample/4_0.png")
    assert (run.path / image["path"]).is_file()


def test_register_names_the_version():
    assert not hasattr(accelerate_tracking, "register_tracker_class")  # this environment pins 1.10
    assert "tunetrack" not in accelerate_tracking.LOGGER_TYPE_TO_CLASS  # the import did not fail either
    with pytest.raises(RuntimeError, match=r"accelerate 1\.\d+\.\d+ .*accelerate 1\.15"):
        register()
