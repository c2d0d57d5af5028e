"""``tunetrack tui`` driven headless by Textual's own test pilot, on runs real Trackers wrote: a live
run's step advances on screen, a filter narrows the runs, a picked run's metric is charted, a crashed
run's console shows its last line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest


from support.helpers import SRC  # noqa: E402
from tunetrack import Tracker  # noqa: E402
from tunetrack.tui.app import TunetrackApp  # noqa: E402
from tunetrack.tui.model import Model  # noqa: E402


async def until(pilot, condition, timeout: float = 20.0) -> None:
    """Let the app run until ``condition()`` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await pilot.pause(0.05)


def cells(app: TunetrackApp) -> list[list[str]]:
    table = app.query_one("#runs")
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_a_live_run_s_step_advances_on_screen_and_a_filter_narrows(tmp_path):
    done = Tracker(project="p", name="done", dir=tmp_path, console=False, system=False)
    with done:
        for step in range(1, 4):
            done.log({"loss": 3.0 - step}, step=step)
    live = Tracker(project="p", name="live", dir=tmp_path, console=False, system=False).start()
    live.log({"loss": 5.0}, step=1)
    live.flush()

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: any(r[2] == "live" and r[4] == "1" for r in cells(app)))
            for step in range(2, 8):
                live.log({"loss": 5.0 / step}, step=step)
            live.flush()
            await until(pilot, lambda: any(r[2] == "live" and r[4] == "7" for r in cells(app)))
            await pilot.press("slash")
            for key in "state = 'finished'":
                await pilot.press("space" if key == " " else key)
            await pilot.press("enter")
            await until(pilot, lambda: [r[2] for r in cells(app)] == ["done"])

    asyncio.run(drive())
    live.finish()


def test_a_picked_run_s_metric_is_charted_with_its_extremes(tmp_path):
    with Tracker(name="spiky", dir=tmp_path, console=False, system=False) as run:
        for step in range(1, 5001):
            run.log({"loss": 100.0 if step == 2500 else 1.0, "eval/acc": 0.5}, step=step)
    model = Model(tmp_path)
    model.poll()
    model.pick(run.id)
    [(label, steps, values)] = model.points(width=40)
    assert label == "spiky" and len(steps) <= 4 * 40 + 4 and 100.0 in values and steps[-1] == 5000
    model.metric = "acc$"
    assert model.key() == "eval/acc"
    model.metric = "nothing-like-it"
    assert model.key() is None and "no key of the picked runs matches" in model.problem


def test_a_crashed_run_s_console_shows_its_last_line(tmp_path):
    code = """
import os, signal, sys
from tunetrack import Tracker
run = Tracker(name="crashy", dir=sys.argv[1], system=False, console=True).start()
run.log({"loss": 1.0}, step=1)
print("the last words", flush=True)
run.flush()
import time; time.sleep(0.5)
os.kill(os.getpid(), signal.SIGKILL)
"""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: any(r[1] == "crashed" for r in cells(app)))
            console = app.query_one("#console")
            await until(pilot, lambda: any("the last words" in str(line.text) for line in console.lines))

    asyncio.run(drive())
