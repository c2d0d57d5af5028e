"""Stopping a live run from outside it: ``tunetrack stop`` (``manage.stop_run``) leaves a request in
the store, the run's process finds it, ``Tracker.should_stop`` turns true, and the run ends
``stopped`` with who asked and why, as every reader shows it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tunetrack import Tracker
from tunetrack.errors import RunNotRunning
from tunetrack.manage import stop_run
from tunetrack.reader import open_run


@pytest.fixture(autouse=True)
def _quick_control(monkeypatch):
    monkeypatch.setenv("TUNETRACK_CONTROL_INTERVAL", "0.05")


def _until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_a_stop_request_reaches_the_loop_and_the_run_ends_stopped(tmp_path):
    run = Tracker(project="p", dir=tmp_path, console=False, system=False).start()
    steps = 0
    stop_run(run.id, "loss diverged", dir=tmp_path, by="ana@gpu1")
    while not run.should_stop:
        run.log({"loss": 1.0})
        steps += 1
        assert steps < 10_000
        time.sleep(0.001)
    assert run.stop_request["by"] == "ana@gpu1" and run.stop_request["reason"] == "loss diverged"
    run.finish()
    read = open_run(run.id, dir=tmp_path)
    assert read.state == "stopped"
    assert read.stop_request["by"] == "ana@gpu1"
    [event] = [e for e in read.events() if e["kind"] == "stop"]
    assert event["reason"] == "loss diverged" and event["by"] == "ana@gpu1"


def test_an_ended_run_is_refused_and_a_second_request_changes_nothing(tmp_path):
    run = Tracker(dir=tmp_path, console=False, system=False).start()
    first = stop_run(run.id, "first", dir=tmp_path)
    stop_run(run.id, "second", dir=tmp_path)
    assert first.stop_request["reason"] == "first"
    _until(lambda: run.should_stop)
    assert run.stop_request["reason"] == "first"
    run.finish()
    with pytest.raises(RunNotRunning, match="stopped: there is nothing to stop"):
        stop_run(run.id, dir=tmp_path)
    assert open_run(run.id, dir=tmp_path).stop_request["reason"] == "first"


def test_request_stop_from_inside_is_stored_like_tunetrack_stop(tmp_path):
    with Tracker(dir=tmp_path, console=False, system=False) as run:
        run.log({"loss": 1.0})
        run.request_stop("early stopping", by="rule: loss")
        assert run.should_stop
    read = open_run(run.id, dir=tmp_path)
    assert read.state == "stopped"
    assert read.stop_request == {
        "time": read.stop_request["time"],
        "by": "rule: loss",
        "reason": "early stopping",
    }


def test_a_failure_after_the_request_still_reads_failed(tmp_path):
    run = Tracker(dir=tmp_path, console=False, system=False).start()
    run.request_stop("x")
    run.finish("failed", "Traceback ...\nValueError: boom")
    assert open_run(run.id, dir=tmp_path).state == "failed"


def test_tunetrack_stop_from_another_process(tmp_path):
    """The command a user types, in a process of its own; ``--wait`` prints how the run ended."""
    env = {**os.environ, "TUNETRACK_DIR": str(tmp_path)}
    run = Tracker(name="live", console=False, system=False, dir=tmp_path).start()
    cli = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "stop", "live", "--reason", "enough", "--wait", "30"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _until(lambda: run.should_stop, timeout=30)
    run.finish()
    out, err = cli.communicate(timeout=30)
    assert cli.returncode == 0, err
    assert f"{run.id} (live): asked to stop" in out
    assert out.strip().splitlines()[-1].endswith(", enough") and "stopped: by " in out
    shown = subprocess.run(
        [sys.executable, "-m", "tunetrack", "ls", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    [listed] = json.loads(shown.stdout)
    assert listed["state"] == "stopped" and listed["stop"]["reason"] == "enough"
    again = subprocess.run(
        [sys.executable, "-m", "tunetrack", "stop", "live"], env=env, capture_output=True, text=True
    )
    assert again.returncode == 1 and again.stderr.strip().endswith("is stopped: there is nothing to stop")
