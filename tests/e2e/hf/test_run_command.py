"""An unmodified TRL script recorded with no change to its code: under ``tunetrack run``, with
``--report_to tunetrack``, and both; stopped from another process with ``tunetrack stop``. The
script (``examples/trl_sft_plain.py``) imports nothing of tunetrack: the callback attaches itself
through the import hook that installing tunetrack puts in site-packages."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.helpers import EXAMPLES_DIR, SRC, wait_until
from tunetrack.reader import list_runs, open_run

EXAMPLES = Path(EXAMPLES_DIR)
SCRIPT = str(EXAMPLES / "trl_sft_plain.py")
#: six steps, a row every two, a checkpoint every three
TRAIN = ["--max_steps", "6", "--logging_steps", "2", "--save_steps", "3", "--use_cpu"]


def environment(store, **more: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "TUNETRACK_DIR": str(store), **more}


def tunetrack(store, *args: str, **more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tunetrack", *args],
        env=environment(store, **more),
        capture_output=True,
        text=True,
        timeout=600,
    )


def recorded(run) -> tuple[list[int], set[str], int]:
    """What the callback gives a run: the loss's steps, the config's TrainingArguments keys, and the
    checkpoints' steps' count."""
    config = {k for k in run.flat_config if k.startswith("args.")}
    return run.series("loss").steps.tolist(), config, len(run.checkpoints())


def test_an_unmodified_script_under_tunetrack_run_is_recorded_as_the_callback_records_it(tmp_path):
    done = tunetrack(
        tmp_path,
        "run",
        "--project",
        "sft",
        "--",
        sys.executable,
        SCRIPT,
        "--output_dir",
        str(tmp_path / "a"),
        *TRAIN,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [run] = list_runs(tmp_path)
    assert (run.project, run.state, run.exit_code) == ("sft", "finished", 0)
    steps, config, checkpoints = recorded(run)
    assert steps == [2, 4, 6] and checkpoints == 2
    assert {"args.learning_rate", "args.max_steps", "args.output_dir"} <= config
    assert run.flat_config["args.max_steps"] == 6
    assert any("train_runtime" in line.text for line in run.console())  # what the Trainer printed
    # the same script with the callback named by --report_to alone records the same things
    alone = subprocess.run(
        [sys.executable, SCRIPT, "--output_dir", str(tmp_path / "b"), *TRAIN, "--report_to", "tunetrack"],
        env=environment(tmp_path / "alone", TUNETRACK_PROJECT="sft"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert alone.returncode == 0, alone.stderr[-3000:]
    [other] = list_runs(tmp_path / "alone")
    assert other.project == "sft" and other.state == "finished" and other.exit_code is None
    assert recorded(other)[0] == steps and recorded(other)[2] == checkpoints
    assert recorded(other)[1] == config


def test_report_to_under_tunetrack_run_records_once(tmp_path):
    done = tunetrack(
        tmp_path,
        "run",
        "--",
        sys.executable,
        SCRIPT,
        "--output_dir",
        str(tmp_path / "a"),
        *TRAIN,
        "--report_to",
        "tunetrack",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [run] = list_runs(tmp_path)
    assert recorded(run)[0] == [2, 4, 6]  # one callback: no row twice
    assert len(run.processes) == 2  # the command, and the training that joined it


def test_a_callback_of_the_user_s_own_wins_over_report_to(tmp_path):
    code = f"""
        import sys
        sys.path.insert(0, {str(EXAMPLES)!r})
        from _tiny import build_model, build_tokenizer
        from transformers import Trainer, TrainingArguments
        from tunetrack.integrations.transformers import TunetrackCallback

        tok = build_tokenizer()
        args = TrainingArguments({str(tmp_path / "out")!r}, report_to=["tunetrack"], use_cpu=True)
        mine = TunetrackCallback(project="mine")
        trainer = Trainer(model=build_model(tok), args=args, callbacks=[mine])
        ours = [c for c in trainer.callback_handler.callbacks if isinstance(c, TunetrackCallback)]
        print(len(ours), ours[0] is mine)
    """
    for command in ([], ["-m", "tunetrack", "run", "--", sys.executable]):
        done = subprocess.run(
            [sys.executable, *command, "-c", textwrap.dedent(code)],
            env=environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.split()[-2:] == ["1", "True"]


def test_tunetrack_stop_stops_a_live_trainer_with_a_checkpoint(tmp_path):
    """From another process, as a user types it: the Trainer stops within a few steps of the request
    being found, saves a checkpoint there, and ends; the run reads stopped, the command exits 0."""
    env = environment(tmp_path, TUNETRACK_CONTROL_INTERVAL="0.2")
    command = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tunetrack",
            "run",
            "--name",
            "live",
            "--",
            sys.executable,
            SCRIPT,
            "--output_dir",
            str(tmp_path / "out"),
            "--max_steps",
            "2000",
            "--logging_steps",
            "1",
            "--save_steps",
            "5000",
            "--use_cpu",
            "--step_seconds",
            "0.05",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: list_runs(tmp_path) and (open_run("live", dir=tmp_path).last_step or 0) >= 3, timeout=300
        )
        stop = tunetrack(tmp_path, "stop", "live", "--reason", "loss plateaued", "--wait", "120")
        assert stop.returncode == 0, stop.stderr
        command.wait(timeout=120)
    finally:
        command.kill()
    assert command.returncode == 0
    run = open_run("live", dir=tmp_path)
    assert (run.state, run.exit_code, run.stop_request["reason"]) == ("stopped", 0, "loss plateaued")
    [stopped] = [e for e in run.events() if e["kind"] == "stop"]
    last = run.last_step
    assert last < 2000 and last - stopped["step"] <= 5  # within a few steps of the request being found
    [checkpoint] = run.checkpoints()
    assert checkpoint.step == last and checkpoint.files


ACCELERATE = [
    sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
    "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
    str(EXAMPLES / "accelerate_plain.py"),
]  # fmt: skip


def test_accelerate_launch_of_two_processes_under_tunetrack_run_is_one_run(tmp_path):
    done = tunetrack(
        tmp_path, "run", "--project", "acc", "--", *ACCELERATE, "--steps", "8", OMP_NUM_THREADS="1"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [run] = list_runs(tmp_path)
    assert (run.project, run.state, run.exit_code) == ("acc", "finished", 0)
    assert run.series("loss").steps.tolist() == list(range(1, 9))  # rank 0 only, once
    assert run.flat_config["lr"] == 0.05 and run.flat_config["steps"] == 8
    printed = [line.text for line in run.console()]
    assert "step 8 loss" in " ".join(printed)  # accelerator.print: the main process's output


def test_tunetrack_stop_reaches_an_accelerate_loop_through_its_trigger(tmp_path):
    """Both ranks leave the loop at the same step (check_trigger agrees across them) and the command
    exits 0 well before its last step."""
    env = environment(tmp_path, OMP_NUM_THREADS="1", TUNETRACK_CONTROL_INTERVAL="0.2")
    command = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "run", "--name", "acc-live", "--", *ACCELERATE,
         "--steps", "3000", "--step-seconds", "0.05"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_until(
            lambda: list_runs(tmp_path) and (open_run("acc-live", dir=tmp_path).last_step or 0) >= 3,
            timeout=300,
        )
        assert tunetrack(tmp_path, "stop", "acc-live", "--wait", "120").returncode == 0
        command.wait(timeout=120)
    finally:
        command.kill()
    assert command.returncode == 0
    run = open_run("acc-live", dir=tmp_path)
    assert run.state == "stopped" and run.last_step < 3000
    assert any("stopping early at step" in line.text for line in run.console())
