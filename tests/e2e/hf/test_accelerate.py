"""The Accelerate tracker with real accelerate (1.15) on CPU: instance, by name, images, launch."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, PartialState

from support.helpers import EXAMPLES_DIR, SRC, run_script
from tunetrack.errors import UnknownName
from tunetrack.integrations.accelerate import TunetrackTracker
from tunetrack.reader import list_runs, open_run
from tunetrack.reader.groups import group_runs


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    yield
    AcceleratorState._reset_state(True)
    PartialState._reset_state()


def test_construction_touches_nothing(root):
    TunetrackTracker(project="p", run_name="r", dir=root)  # what accelerate's deferred-init test checks
    assert not root.exists()
    assert not PartialState._shared_state  # no distributed state was created


def test_instance_path_records_everything(root):
    tracker = TunetrackTracker(project="acc", run_name="inst", dir=root)
    accelerator = Accelerator(log_with=tracker, cpu=True)
    accelerator.init_trackers(
        "ignored-for-instances", config={"lr": 0.1, "tracker": tracker, "nested": {"a": 1}}
    )
    for step in range(1, 6):
        accelerator.log(
            {"loss": torch.tensor(1.0 / step), "lr": 0.1, "reward": np.array([1.0, 2.0, 3.0, 4.0]) * step},
            step=step,
        )
    accelerator.get_tracker("tunetrack").log_images(
        {"samples": [np.zeros((8, 8, 3), dtype=np.uint8), torch.rand(3, 8, 8)]}, step=5
    )
    accelerator.end_training()
    run = open_run("inst", dir=root)
    assert run.state == "finished" and run.project == "acc"
    assert run.series("loss").values.tolist() == pytest.approx([1.0 / s for s in range(1, 6)])
    assert run.series("reward/mean").values.tolist() == [2.5 * s for s in range(1, 6)]
    assert run.series("reward/max").values.tolist() == [4.0 * s for s in range(1, 6)]
    assert run.series("reward/count").values.tolist() == [4] * 5
    assert run.config["lr"] == 0.1 and run.config["nested"] == {"a": 1}
    assert isinstance(run.config["tracker"], (str, dict))  # the tracker itself, captured without error
    images = [e for e in run.events() if e["kind"] == "image"]
    assert [(e["step"], e["key"]) for e in images] == [(5, "samples"), (5, "samples")]
    assert all((run.path / e["path"]).is_file() for e in images)
    # the README's names on a loop's own keys: train/loss finds its loss, lr its config lr, a typo is an error
    assert run.series("train/loss").values.tolist() == run.series("loss").values.tolist()
    (group,) = group_runs([run], "lr", "train/loss:min")[1]
    assert group.key == {"lr": 0.1} and group.min == pytest.approx(0.2)
    with pytest.raises(UnknownName, match="did you mean reward/mean"):
        group_runs([run], "lr", "reward/meen")


def test_by_name_after_import(root):
    accelerator = Accelerator(log_with="tunetrack", cpu=True)
    accelerator.init_trackers(
        "byname", config={"x": 1}, init_kwargs={"tunetrack": {"run_name": "n", "dir": str(root)}}
    )
    accelerator.log({"loss": 0.5}, step=1)
    accelerator.end_training()
    run = open_run("n", dir=root)
    assert run.project == "byname" and run.series("loss").values.tolist() == [0.5] and run.config == {"x": 1}


def test_no_end_training_still_ends_finished(root):
    run_script(
        """
        import sys
        from accelerate import Accelerator
        from tunetrack.integrations.accelerate import TunetrackTracker
        acc = Accelerator(log_with=TunetrackTracker(project="ddpo-like", run_name="noend", dir=sys.argv[1]), cpu=True)
        acc.init_trackers("x")
        acc.log({"reward": 1.0}, step=1)
        # like DDPO/AlignProp: no end_training()
    """,
        str(root),
    )
    assert open_run("noend", dir=root).state == "finished"


def test_example_script(root):
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(EXAMPLES_DIR, "accelerate_loop.py"),
            "--dir",
            str(root),
            "--steps",
            "12",
        ],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = open_run("loop", dir=root)
    assert run.series("loss").steps.tolist() == list(range(1, 13))
    assert "per_sample_loss/mean" in run.keys() and run.state == "finished"


def test_accelerate_launch_two_processes_gives_one_run(tmp_path, root):
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--multi_gpu",  # torchrun under the hood; `--cpu` alone starts a single process
            "--num_processes",
            "2",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            os.path.join(EXAMPLES_DIR, "accelerate_loop.py"),
            "--dir",
            str(root),
            "--steps",
            "8",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = list_runs(root, project="accelerate-loop")
    assert run.series("loss").steps.tolist() == list(range(1, 9))  # the main process only, once
    (primary,) = run.meta["processes"]
    assert (primary["rank"]["rank"], primary["rank"]["world_size"]) == (0, 2)  # two processes really ran
    assert run.state == "finished"
