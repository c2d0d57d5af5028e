"""The Accelerate tracker with real accelerate (1.15) on CPU: instance, by name, images, launch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, PartialState
from accelerate.utils import ProjectConfiguration

from support.helpers import EXAMPLES_DIR, SRC, assert_hashed_as_on_disk, checkpoints_cli, run_script
from tunetrack.errors import UnknownName
from tunetrack.integrations.accelerate import TunetrackTracker
from tunetrack.reader import list_runs, open_run
from tunetrack.reader.groups import group_runs

HERE = Path(__file__).resolve().parent


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


def _train_and_save(
    accelerator: Accelerator, steps: int, save_every: int, output_dir: str | None = None
) -> None:
    """A tiny Llama trained with a scheduler, ``accelerator.save_state`` every ``save_every`` steps."""
    from _tiny import build_dataset, build_model, build_tokenizer

    tokenizer = build_tokenizer()
    model = build_model(tokenizer, hidden=32)
    batches = torch.utils.data.DataLoader(
        build_dataset(tokenizer, rows=16, length=16).with_format("torch"), batch_size=4
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.1, total_iters=steps)
    model, optimizer, batches, scheduler = accelerator.prepare(model, optimizer, batches, scheduler)
    step = 0
    while step < steps:
        for batch in batches:
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            accelerator.log({"loss": loss.detach(), "lr": scheduler.get_last_lr()[0]}, step=step)
            if step % save_every == 0:
                accelerator.save_state(output_dir)
            if step == steps:
                return


def test_save_state_is_recorded_as_a_checkpoint_with_its_files(root, tmp_path):
    """Automatic checkpoint naming with a total limit: each save a checkpoint at its step, with the
    loss logged there, every file hashed as written; the one Accelerate rotated away marked deleted."""
    project = tmp_path / "project"
    accelerator = Accelerator(
        log_with=TunetrackTracker(project="acc", run_name="saves", dir=root),
        cpu=True,
        project_config=ProjectConfiguration(
            project_dir=str(project), automatic_checkpoint_naming=True, total_limit=2
        ),
    )
    accelerator.init_trackers("acc")
    _train_and_save(accelerator, steps=6, save_every=2)
    accelerator.end_training()
    run = open_run("saves", dir=root)
    found = checkpoints_cli(run.id, root)
    folders = [str(project / "checkpoints" / f"checkpoint_{i}") for i in range(3)]
    assert [(c["step"], c["path"], c["kind"], c["deleted"]) for c in found] == [
        (2, folders[0], "model", True),  # the third save made room for itself
        (4, folders[1], "model", False),
        (6, folders[2], "model", False),
    ]
    losses = dict(zip(run.series("loss").steps.tolist(), run.series("loss").values.tolist()))
    assert [c["metrics"]["loss"] for c in found] == pytest.approx([losses[2], losses[4], losses[6]])
    for kept in found[1:]:
        assert_hashed_as_on_disk(kept)
        assert {"model.safetensors", "optimizer.bin", "scheduler.bin"} <= {f["name"] for f in kept["files"]}
    assert [c.step for c in run.checkpoints()] == [2, 4, 6]  # the read API agrees


def test_save_state_by_name_is_recorded_when_the_process_exits(root, tmp_path):
    """log_with="tunetrack", a save into a folder of the user's as the script's last act, and no
    end_training() (as DDPO): the checkpoint is still recorded, with its files complete."""
    out = tmp_path / "state"
    run_script(
        f"""
        import sys
        sys.path[:0] = [{EXAMPLES_DIR!r}, {str(HERE)!r}, {str(HERE.parents[1])!r}]  # _tiny, this file, support
        import tunetrack.integrations.accelerate
        from accelerate import Accelerator
        from test_accelerate import _train_and_save
        acc = Accelerator(log_with="tunetrack", cpu=True)
        acc.init_trackers("byname", init_kwargs={{"tunetrack": {{"run_name": "exit", "dir": sys.argv[1]}}}})
        _train_and_save(acc, steps=3, save_every=3, output_dir=sys.argv[2])
        """,
        str(root),
        str(out),
        timeout=300,
    )
    run = open_run("exit", dir=root)
    assert run.state == "finished"
    (saved,) = checkpoints_cli(run.id, root)
    assert (saved["step"], saved["path"], saved["kind"], saved["deleted"]) == (3, str(out), "model", False)
    assert_hashed_as_on_disk(saved)
