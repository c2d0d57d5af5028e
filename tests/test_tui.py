"""``tunetrack tui`` driven headless by Textual's own test pilot, on runs real Trackers wrote: a live
run's step advances on screen, a filter narrows the runs, a picked run's metric is charted, a crashed
run's console shows its last line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

from support.helpers import SRC, wait_until  # noqa: E402
from tunetrack import Tracker  # noqa: E402
from tunetrack.tui.app import TunetrackApp  # noqa: E402
from tunetrack.tui.model import Model  # noqa: E402
from tunetrack.tui.panes.chart import keys_of, lines, thinned  # noqa: E402


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
    [line] = lines(model, "loss", "tableau")
    steps, values = thinned(line, 40, None, log=False)
    assert line.label == "spiky" and len(steps) <= 4 * 40 + 4 and 100.0 in values and steps[-1] == 5000
    steps, values = thinned(line, 40, (2000.0, 3000.0), log=False)
    assert steps[0] >= 2000 and steps[-1] <= 3000 and 100.0 in values
    assert keys_of(model.picked_runs()) == ["loss", "eval/acc"]


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
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == -signal.SIGKILL

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: any(r[1] == "crashed" for r in cells(app)))
            await pilot.press("2")
            console = app.query_one("#console-log")
            await until(pilot, lambda: any("the last words" in str(line.text) for line in console.lines))

    asyncio.run(drive())


def test_in_a_real_terminal(tmp_path):
    """``tunetrack tui`` as a user starts it, in tmux: the runs show, a filter typed on the keyboard
    narrows them, q quits."""
    for name, loss in (("alpha", 1.0), ("beta", 2.0)):
        with Tracker(project="p", name=name, dir=tmp_path, console=False, system=False) as run:
            run.log({"loss": loss}, step=1)
    session = f"tt-{os.getpid()}"
    command = f"PYTHONPATH={SRC} {sys.executable} -m tunetrack tui --dir {tmp_path} --interval 0.3"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "110", "-y", "32", command], check=True)

    def screen() -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True
        ).stdout

    def shows(condition) -> None:
        try:
            wait_until(lambda: condition(screen()), timeout=30)
        except AssertionError:
            raise AssertionError(f"the screen does not show it:\n{screen()}") from None

    try:
        shows(lambda text: "alpha" in text and "beta" in text and "finished" in text)
        subprocess.run(["tmux", "send-keys", "-t", session, "/"], check=True)
        # typed only once the filter has the focus (its border takes the accent colour), as a person
        # types after seeing it: keys sent sooner would reach the runs pane, where m is a binding
        coloured = ["tmux", "capture-pane", "-t", session, "-p", "-e"]
        try:
            wait_until(
                lambda: _focused_filter(subprocess.run(coloured, capture_output=True, text=True).stdout)
            )
        except AssertionError:
            shown = subprocess.run(coloured, capture_output=True, text=True).stdout
            raise AssertionError(f"the filter has no focus:\n{shown!r}") from None
        subprocess.run(["tmux", "send-keys", "-t", session, "-l", "name = 'beta'"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        shows(lambda text: "beta" in text and "alpha" not in text.split("\n", 4)[-1])
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        wait_until(
            lambda: (
                subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode != 0
            ),
            timeout=30,
        )
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _focused_filter(screen: str) -> bool:
    """Whether the filter has the focus: its cursor (blinking) sits on the placeholder's first letter,
    which is then drawn apart from the rest (``f``, escape codes, ``ilter: state``)."""
    line = next((line for line in screen.splitlines() if "ilter: state" in line), "")
    return bool(line) and "filter: state" not in line
