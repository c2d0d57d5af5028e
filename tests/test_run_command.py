"""``tunetrack run``: any command recorded as one run, its exit code kept and passed through, and a
stop request acted on, with commands that use no framework (the adapters attaching themselves inside
a command are tested with each framework's real training: tests/e2e/)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from support.helpers import SRC, wait_until
from tunetrack.reader import list_runs, open_run


def tunetrack(store, *args, env=None, **kwargs):
    """The ``tunetrack`` command in a process of its own, as a user runs it."""
    full = {**os.environ, "PYTHONPATH": SRC, "TUNETRACK_DIR": str(store), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tunetrack", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_a_command_that_succeeds_is_one_finished_run(tmp_path):
    done = tunetrack(
        tmp_path, "run", "--project", "p", "--name", "hello", "--tag", "a", "--", *python("print('hello')")
    )
    assert done.returncode == 0, done.stderr
    [run] = list_runs(tmp_path)
    assert (run.name, run.project, run.tags, run.state, run.exit_code) == ("hello", "p", ["a"], "finished", 0)
    assert run.config["command"] == shlex.join(python("print('hello')"))
    assert [e["kind"] for e in run.events()] == ["command", "exit"]
    assert run.ended is not None and run.ended >= run.created
    shown = tunetrack(tmp_path, "show", "hello")
    assert "exit code  0" in shown.stdout and shlex.join(python("print('hello')")) in shown.stdout


def test_the_exit_code_is_kept_and_passed_through(tmp_path):
    done = tunetrack(tmp_path, "run", "--", *python("import sys; print('x'); sys.exit(3)"))
    assert done.returncode == 3
    [run] = list_runs(tmp_path)
    assert (run.state, run.exit_code, run.error) == ("failed", 3, "the command exited with code 3")


def test_a_command_killed_by_a_signal_exits_as_a_shell_says(tmp_path):
    done = tunetrack(
        tmp_path, "run", "--", *python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    )
    assert done.returncode == 128 + signal.SIGKILL
    [run] = list_runs(tmp_path)
    assert (run.state, run.exit_code) == ("failed", -signal.SIGKILL)
    assert run.error == "the command was killed by SIGKILL"
    assert "exit code  137 (SIGKILL)" in tunetrack(tmp_path, "show", run.id).stdout


def test_a_failing_script_s_traceback_is_the_run_s_error(tmp_path):
    """A script with no adapter: the traceback it printed is the run's error, its exception the cause."""
    code = "def train():\n    raise ValueError('bad batch size')\ntrain()"
    done = tunetrack(tmp_path, "run", "--", *python(code), env={"TUNETRACK_CONSOLE": "1"})
    assert done.returncode == 1
    assert "ValueError: bad batch size" in done.stderr  # the terminal is unchanged
    [run] = list_runs(tmp_path)
    assert run.cause == "ValueError: bad batch size"
    assert run.error.startswith("Traceback (most recent call last):")


def test_the_console_of_the_command_and_its_children_is_the_run_s(tmp_path):
    code = """
        import subprocess, sys
        print('from the command', flush=True)
        subprocess.run([sys.executable, '-c', 'print("from its child")'], check=True)
    """
    done = tunetrack(tmp_path, "run", "--", *python(code), env={"TUNETRACK_CONSOLE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["from the command", "from its child"]
    [run] = list_runs(tmp_path)
    first, *printed = [line.text for line in run.console()]
    assert first == f"tunetrack: recording as run {run.id} ({run.name}) in {tmp_path}"  # on stderr
    assert printed == ["from the command", "from its child"]


def test_a_process_of_the_command_joins_its_run(tmp_path):
    """The first Tracker a process of the command starts records into the command's run, whatever
    it was named; a second one is a run of its own."""
    code = """
        from tunetrack import Tracker
        with Tracker(project="elsewhere", name="mine") as first:
            first.log({"loss": 1.0}, step=1)
        with Tracker(project="elsewhere", name="second") as second:
            second.log({"loss": 2.0}, step=1)
    """
    done = tunetrack(tmp_path, "run", "--project", "p", "--name", "cmd", "--", *python(code))
    assert done.returncode == 0, done.stderr
    runs = {r.name: r for r in list_runs(tmp_path)}
    assert set(runs) == {"cmd", "second"}
    assert runs["cmd"].series("loss").values.tolist() == [1.0]
    assert len(runs["cmd"].processes) == 2 and runs["cmd"].state == "finished"
    assert runs["second"].project == "elsewhere"


def test_a_missing_command_is_one_line(tmp_path):
    done = tunetrack(tmp_path, "run", "--", "no-such-command-xyz")
    assert done.returncode == 1
    assert done.stderr.strip() == "Error: command not found: no-such-command-xyz"
    assert list_runs(tmp_path) == []


@pytest.mark.parametrize("attached", [False, True])
def test_tunetrack_stop_ends_the_command(tmp_path, attached):
    """A command with nothing attached is sent SIGTERM at once; one whose loop reads should_stop
    stops by itself, and exits 0. Both runs end stopped."""
    code = (
        """
        import time
        from tunetrack import Tracker
        run = Tracker()
        step = 0
        while not run.should_stop:
            step += 1
            run.log({"loss": 1.0 / step}, step=step)
            time.sleep(0.02)
        print("stopped cleanly at", step, flush=True)
    """
        if attached
        else "import time\nwhile True: time.sleep(0.05)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "TUNETRACK_DIR": str(tmp_path),
        "TUNETRACK_CONTROL_INTERVAL": "0.1",
    }
    command = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "run", "--name", "live", "--", *python(code)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(
        lambda: list_runs(tmp_path) and (not attached or len(open_run("live", dir=tmp_path).processes) == 2)
    )
    if attached:
        wait_until(lambda: open_run("live", dir=tmp_path).last_step)
    stopped = tunetrack(tmp_path, "stop", "live", "--reason", "enough", "--wait", "60")
    assert stopped.returncode == 0, stopped.stderr
    out, err = command.communicate(timeout=60)
    run = open_run("live", dir=tmp_path)
    assert run.state == "stopped" and run.stop_request["reason"] == "enough"
    assert stopped.stdout.strip().endswith("live): stopped: by " + run.stop_request["by"] + ", enough")
    if attached:
        assert command.returncode == 0 and "stopped cleanly at" in out
        assert run.exit_code == 0
    else:
        assert command.returncode == 128 + signal.SIGTERM
        assert run.exit_code == -signal.SIGTERM


def test_sigterm_to_tunetrack_run_is_passed_on_and_the_run_reads_killed(tmp_path):
    code = "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\nprint('up', flush=True)\ntime.sleep(60)"
    env = {**os.environ, "PYTHONPATH": SRC, "TUNETRACK_DIR": str(tmp_path)}
    command = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "run", "--", *python(code)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert command.stdout.readline().strip() == "up"
    started = time.monotonic()
    command.send_signal(signal.SIGTERM)
    assert command.wait(timeout=30) == 143
    assert time.monotonic() - started < 20  # the command got it: it did not sleep its minute out
    [run] = list_runs(tmp_path)
    assert (run.state, run.exit_code) == ("killed", 143)


TRAIN = """
import argparse, time
from tunetrack import Tracker

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
lr = parser.parse_args().lr
run = Tracker(config={"lr": lr})
step = 0
while not run.should_stop:
    step += 1
    run.log({"loss": 1.0 / step, "eval_loss": 2.0 if step < 5 else 50.0}, step=step)
    time.sleep(0.02)
"""


def test_the_skill_s_steering_commands_as_written(tmp_path):
    """The block of the agent skill that launches and stops runs, run as an agent runs it, in a
    project whose train.py trains until it is asked to stop."""
    from tunetrack.cli.skills import skill_text

    lines = (
        skill_text().split("<!-- steering -->", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    )
    launch, stop = (shlex.split(line) for line in lines)
    assert launch[:2] == ["tunetrack", "run"] and stop[:2] == ["tunetrack", "stop"]
    (tmp_path / "train.py").write_text(TRAIN)
    bin_first = f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"  # `python` is this one
    env = {**os.environ, "PYTHONPATH": SRC, "PATH": bin_first, "TUNETRACK_CONTROL_INTERVAL": "0.1"}
    launch = [
        sys.executable,
        "-m",
        *("tunetrack" if a == "tunetrack" else a.replace("PROJECT", "p") for a in launch),
    ]
    running = subprocess.Popen(launch, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    name = launch[launch.index("--name") + 1]
    store = tmp_path / "tunetrack_runs"
    wait_until(lambda: store.exists() and list_runs(store) and len(open_run(name, dir=store).processes) == 2)
    stop = [sys.executable, "-m", *(name if a == "RUN" else a for a in stop)]
    assert subprocess.run(stop, cwd=tmp_path, env=env, capture_output=True, text=True).returncode == 0
    assert running.wait(timeout=60) == 0
    run = open_run(name, dir=store)
    assert (run.project, run.state, run.flat_config["lr"]) == ("p", "stopped", 3e-4)
    assert run.stop_request["reason"] == "eval loss diverged"


def test_rules_given_to_tunetrack_run_act_in_the_training_it_runs(tmp_path):
    """--rules: the file reaches the process that trains; its threshold rule stops the run."""
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nname = "diverged"\nmetric = "eval/loss"\nabove = 10\nstop = true\n')
    (tmp_path / "train.py").write_text(TRAIN)
    done = tunetrack(
        tmp_path / "runs",
        "run",
        "--rules",
        str(rules),
        "--",
        sys.executable,
        str(tmp_path / "train.py"),
        "--lr",
        "0.1",
        env={"TUNETRACK_CONTROL_INTERVAL": "0.1"},
    )
    assert done.returncode == 0, done.stderr
    [run] = list_runs(tmp_path / "runs")
    assert run.state == "stopped" and run.stop_request["by"] == "rule"
    [fired] = [e for e in run.events() if e["kind"] == "rule"]
    assert fired["step"] == 5 and run.last_step < 100
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rule]]\nname = "x"\n')
    refused = tunetrack(tmp_path / "runs", "run", "--rules", str(bad), "--", sys.executable, "-c", "pass")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "rule 'x'" in refused.stderr
    assert len(list_runs(tmp_path / "runs")) == 1  # nothing ran


def test_the_command_s_memory_is_its_process_tree_s(tmp_path):
    """The system metrics of `tunetrack run` count the command's processes, not only its own."""
    code = "import time\nblock = bytearray(300 * 2**20)\nfor i in range(len(block) // 4096): block[i * 4096] = 1\ntime.sleep(3)"
    done = tunetrack(
        tmp_path,
        "run",
        "--",
        *python(code),
        env={"TUNETRACK_SYSTEM_INTERVAL": "0.5", "TUNETRACK_SYSTEM": "1"},
    )
    assert done.returncode == 0, done.stderr
    [run] = list_runs(tmp_path)
    [rss] = run.system_series("proc.rss_bytes").values()  # one node
    assert max(rss.values) > 300 * 2**20  # the child's 300 MB block counted
