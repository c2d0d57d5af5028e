"""accelerate 1.10 (no ``register_tracker_class``): the instance path records everything, importing
the integration does not fail, and ``register()`` says which version is needed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from accelerate import tracking as accelerate_tracking
from accelerate.state import AcceleratorState, PartialState
from accelerate.utils import ProjectConfiguration

from support.helpers import assert_hashed_as_on_disk
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


def test_save_state_is_recorded_as_a_checkpoint(root, tmp_path):
    """accelerate 1.10 has the save-state hook too: each save_state() a checkpoint at its step with
    its files hashed, the one total_limit removed marked deleted."""
    accelerator = Accelerator(
        log_with=TunetrackTracker(project="old", run_name="saves110", dir=root),
        cpu=True,
        project_config=ProjectConfiguration(
            project_dir=str(tmp_path), automatic_checkpoint_naming=True, total_limit=1
        ),
    )
    accelerator.init_trackers("ignored")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    for step in range(1, 5):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        accelerator.log({"loss": loss.detach()}, step=step)
        if step % 2 == 0:
            accelerator.save_state()
    accelerator.end_training()
    found = open_run("saves110", dir=root).checkpoints()
    folders = [str(tmp_path / "checkpoints" / f"checkpoint_{i}") for i in range(2)]
    assert [(c.step, c.path, c.kind, c.deleted) for c in found] == [
        (2, folders[0], "model", True),
        (4, folders[1], "model", False),
    ]
    assert_hashed_as_on_disk(found[1].as_dict())


def test_register_names_the_version():
    assert not hasattr(accelerate_tracking, "register_tracker_class")  # this environment pins 1.10
    assert "tunetrack" not in accelerate_tracking.LOGGER_TYPE_TO_CLASS  # the import did not fail either
    with pytest.raises(RuntimeError, match=r"accelerate 1\.\d+\.\d+ .*accelerate 1\.15"):
        register()
