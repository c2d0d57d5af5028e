"""The W&B backend in offline mode, read back from the run files W&B writes (``offline-run-*/run-*.wandb``,
what ``wandb sync`` uploads) with W&B's own protobuf schema (tests/support/wandb_files.py): config, name, tags,
history with steps, a text table, exit codes, and a resume continuing the same W&B run."""

from __future__ import annotations

import pytest

from support.helpers import run_script
from support.wandb_files import read_run, run_files
from tunetrack import Histogram, Tracker
from tunetrack.backends.wandb import WandbBackend, wandb_id


@pytest.fixture
def wandb_dir(tmp_path, monkeypatch):
    folder = tmp_path / "wandb-dir"
    folder.mkdir()
    monkeypatch.setenv("WANDB_DIR", str(folder))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    return folder


def test_a_run_mirrored_into_wandb_offline(root, wandb_dir):
    config = {"lr": 3e-4, "model": {"layers": 2}}
    t = Tracker(
        dir=root,
        project="sft",
        name="mirror",
        tags=["baseline"],
        config=config,
        system=False,
        backends=[WandbBackend()],
    ).start()
    for step in range(1, 51):
        t.log(
            {"train/loss": 2.0 / step, "eval/loss": 1.0 / step if step % 25 == 0 else None, "note": "x"},
            step=step,
        )
    t.log_text("samples", "Once upon a time", step=50)
    t.log({"grads": Histogram(counts=[1, 4, 2], edges=[-1.0, 0.0, 0.5, 2.0])}, step=50)
    t.finish()
    (path,) = run_files(wandb_dir)
    got = read_run(path)
    assert got["id"] == wandb_id(t.id) and got["name"] == "mirror" and got["tags"] == ["baseline"]
    assert got["config"]["lr"] == 3e-4 and got["config"]["model"] == {"layers": 2}
    history = got["history"]
    assert sorted(history) == list(range(1, 51))
    assert [history[s]["train/loss"] for s in range(1, 51)] == [2.0 / s for s in range(1, 51)]
    assert [s for s in history if "eval/loss" in history[s]] == [25, 50]
    assert not any("note" in row for row in history.values())
    assert history[50]["samples/_type"] == "table-file" and history[50]["samples/nrows"] == 1
    assert history[50]["grads/_type"] == "histogram"
    assert (history[50]["grads/values"], history[50]["grads/bins"]) == ([1, 4, 2], [-1.0, 0.0, 0.5, 2.0])
    assert got["exit_code"] == 0


def test_failed_and_resumed_runs_by_name(root, wandb_dir):
    """By name, with W&B's own settings from the environment; each attempt a fresh process (W&B reads
    its environment once per process)."""
    env = {"TUNETRACK_BACKENDS": "wandb", "WANDB_PROJECT": "team", "WANDB_DIR": str(wandb_dir)}
    first = run_script(
        f"""
        from tunetrack import Histogram, Tracker
        t = Tracker(dir={str(root)!r}, name="resumable", system=False).start()
        print(t.id)
        for step in range(1, 81):
            t.log({{"loss": 1.0}}, step=step)
        t.finish("failed")
        """,
        env=env,
    )
    run_id = first.stdout.split()[-1]
    run_script(
        f"""
        from tunetrack import Histogram, Tracker
        t = Tracker(dir={str(root)!r}, resume={run_id!r}, resume_step=50, system=False).start()
        for step in range(51, 101):
            t.log({{"loss": 2.0}}, step=step)
        t.finish()
        """,
        env=env,
    )
    files = run_files(wandb_dir)
    assert len(files) == 2  # W&B writes each offline attempt to a folder of its own
    one, two = (read_run(f) for f in files)
    assert one["id"] == two["id"] == wandb_id(run_id)  # one W&B run: wandb sync joins them
    assert one["exit_code"] == 1 and two["exit_code"] == 0
    assert sorted(one["history"]) == list(range(1, 81))
    assert sorted(two["history"]) == list(range(51, 101))  # offline, a new process cannot know step 80
    assert {two["history"][s]["loss"] for s in two["history"]} == {2.0}


def test_a_rewind_in_the_same_process_never_sends_a_step_backwards(root, wandb_dir):
    t = Tracker(
        dir=root, name="rewound", system=False, backends=[WandbBackend(project="p", dir=wandb_dir)]
    ).start()
    for step in range(1, 81):
        t.log({"loss": 1.0}, step=step)
    t.flush()
    t.rewind(50)  # e.g. a Trainer resumed from its checkpoint in the same process
    with pytest.warns(UserWarning, match="W&B's steps only go forward"):
        for step in range(51, 101):
            t.log({"loss": 2.0}, step=step)
        t.finish()
    (path,) = run_files(wandb_dir)
    history = read_run(path)["history"]
    assert sorted(history) == list(range(1, 101))
    # 51-79 would go backwards; 80 is W&B's current step, where the new attempt's value replaces the old
    assert [history[s]["loss"] for s in (50, 51, 79, 80, 100)] == [1.0, 1.0, 1.0, 2.0, 2.0]
