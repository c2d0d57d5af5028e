"""``tunetrack tui`` driven headless by Textual's own test pilot, on runs real Trackers wrote: a live
run's step advances on screen, a filter narrows the runs, a picked run's metric is charted, a crashed
run's console shows its last line."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys

import pytest

from support.helpers import SRC, wait_until  # noqa: E402
from support.tui import cells, until  # noqa: E402
from tunetrack import Tracker  # noqa: E402
from tunetrack.tui.app import TunetrackApp  # noqa: E402
from tunetrack.tui.model import Model  # noqa: E402
from tunetrack.tui.panes.plotting import keys_of, lines, thinned  # noqa: E402


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


#: a run that prints its last words and is killed (SIGKILL: no end record, no traceback)
CRASH = """
import os, signal, sys
from tunetrack import Tracker
run = Tracker(name="crashy", dir=sys.argv[1], system=False, console=True).start()
run.log({"loss": 1.0}, step=1)
print("the last words", flush=True)
run.flush()
import time; time.sleep(0.5)
os.kill(os.getpid(), signal.SIGKILL)
"""

#: a run that logs a step (and prints it) five times a second until ``sys.argv[2]`` exists
LIVE = """
import sys, time
from pathlib import Path
from tunetrack import Tracker
run = Tracker(name="live", dir=sys.argv[1], system=False, console=True).start()
step = 0
while not Path(sys.argv[2]).exists() and step < 3000:
    step += 1
    run.log({"loss": 1.0 / step}, step=step)
    print(f"step {step}", flush=True)
    time.sleep(0.2)
run.finish()
"""


def test_a_crashed_run_s_console_shows_its_last_line(tmp_path):
    code = CRASH
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
    """``tunetrack tui`` as a user starts it, in tmux's 80x24 (a terminal's default size): the runs
    show with every column, the chart and the keys below them, a filter typed on the keyboard narrows
    them, ? lists the keys, q quits."""
    for name, loss in (("alpha", 1.0), ("beta", 2.0)):
        with Tracker(project="p", name=name, dir=tmp_path, console=False, system=False) as run:
            run.log({"loss": loss}, step=1)
    session = f"tt-{os.getpid()}"
    command = f"PYTHONPATH={SRC} {sys.executable} -m tunetrack tui --dir {tmp_path} --interval 0.3"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command], check=True)

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
        shows(
            lambda text: all(w in text.splitlines()[1] for w in ("state", "name", "project", "step", "loss"))
        )
        shows(lambda text: "step" in text.splitlines()[-3] and "? help" in text and "q quit" in text)
        assert len(screen().splitlines()) <= 24 and max(len(line) for line in screen().splitlines()) <= 80
        subprocess.run(["tmux", "send-keys", "-t", session, "?"], check=True)
        shows(lambda text: "pick the run under the cursor" in text)
        subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)
        shows(lambda text: "pick the run under the cursor" not in text)
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
        shows(lambda text: "beta" in text and "alpha" not in text)  # the newest, beta, is on the chart
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        try:
            wait_until(
                lambda: (
                    subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode
                    != 0
                ),
                timeout=30,
            )
        except AssertionError:
            raise AssertionError(f"q did not quit:\n{screen()}") from None
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_a_live_run_and_a_crashed_one_in_a_real_terminal(tmp_path):
    """In tmux: a live run's step advances on screen; the crashed run's console shows its last words."""
    env = {**os.environ, "PYTHONPATH": SRC}
    crashed = subprocess.run([sys.executable, "-c", CRASH, str(tmp_path)], env=env, capture_output=True)
    assert crashed.returncode == -signal.SIGKILL
    stop = tmp_path / "stop"
    live = subprocess.Popen(
        [sys.executable, "-c", LIVE, str(tmp_path), str(stop)], env=env, stdout=subprocess.DEVNULL
    )
    session = f"tt-live-{os.getpid()}"
    command = f"PYTHONPATH={SRC} {sys.executable} -m tunetrack tui --dir {tmp_path} --interval 0.3"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30", command], check=True)

    def screen() -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True
        ).stdout

    def live_step() -> int:
        found = re.search(r"running\s+live\s+\S+\s+(\d+)", screen())
        return int(found[1]) if found else 0

    def shows(condition, what: str) -> None:
        try:
            wait_until(condition, timeout=40)
        except AssertionError:
            raise AssertionError(f"the screen does not show {what}:\n{screen()}") from None

    try:
        shows(lambda: live_step() > 0 and "crashed" in screen(), "the live run and the crashed one")
        seen = live_step()
        shows(lambda: live_step() >= seen + 5, "the live run's step advancing")
        subprocess.run(["tmux", "send-keys", "-t", session, "Down"], check=True)  # live is the newest
        shows(lambda: re.search(r"crashy \w+ · crashed", screen()), "the crashed run under the cursor")
        subprocess.run(["tmux", "send-keys", "-t", session, "2"], check=True)
        shows(lambda: "the last words" in screen(), "the crashed run's last words in its console")
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        stop.touch()
        live.wait(timeout=60)


def _focused_filter(screen: str) -> bool:
    """Whether the filter has the focus: its cursor (blinking) sits on the placeholder's first letter,
    which is then drawn apart from the rest (``f``, escape codes, ``ilter: state``)."""
    line = next((line for line in screen.splitlines() if "ilter: state" in line), "")
    return bool(line) and "filter: state" not in line


def sweep(root) -> dict[str, str]:
    """Four finished runs of a little sweep: ``{name: id}``; lr and a loss that ends lower for a larger lr."""
    ids = {}
    for name, lr, end in (("a", 1e-4, 0.9), ("b", 3e-4, 0.5), ("c", 1e-3, 0.2), ("d", 3e-3, 0.7)):
        with Tracker(project="s", name=name, dir=root, console=False, system=False, config={"lr": lr}) as run:
            for step in range(1, 101):
                run.log(
                    {"loss": end + (2.0 - end) * (100 - step) / 99, "eval/acc": step / 100 * lr * 1e3},
                    step=step,
                )
        ids[name] = run.id
    return ids


def test_columns_sort_and_several_picked_runs(tmp_path):
    sweep(tmp_path)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2, columns=["config.lr"], sort="loss:min")
        async with app.run_test(size=(140, 36)) as pilot:
            await until(pilot, lambda: [r[2] for r in cells(app)] == ["c", "b", "d", "a"])
            table = app.query_one("#runs")
            assert table.labels[-2:] == ["lr", "loss:min ▲"]
            assert [r[6] for r in cells(app)] == ["0.001", "0.0003", "0.003", "0.0001"]
            assert [r[7] for r in cells(app)] == ["0.2", "0.5", "0.7", "0.9"]
            await pilot.press("S")  # the other way
            await until(pilot, lambda: [r[2] for r in cells(app)] == ["a", "d", "b", "c"])
            await pilot.click("#runs", offset=(5, 0))  # the state column's header: sorted by state
            await until(pilot, lambda: app.model.sort == "state")
            await pilot.press("a")  # every run shown picked, each with its colour
            await until(pilot, lambda: len(app.model.picked) == 4 and all(r[0] == "●" for r in cells(app)))
            chart = app.query_one("#chart")
            await until(pilot, lambda: len(chart._lines) == 4)
            assert {line.label for line in chart._lines} == {"a", "b", "c", "d"}
            assert len({line.colour for line in chart._lines}) == 4
            await pilot.press("x")
            await until(pilot, lambda: not app.model.picked and not chart._lines)
            # a column no run has: one line naming the closest names, the other runs still shown
            await pilot.press("c")
            for key in ["ctrl+a", "ctrl+k", *"los:min"]:
                await pilot.press(key)
            await pilot.press("enter")
            await until(pilot, lambda: "los:min" in str(app.query_one("#problem").render()))
            assert "did you mean" in str(app.query_one("#problem").render()) and len(cells(app)) == 4

    asyncio.run(drive())


def test_the_chart_s_keys_crosshair_zoom_and_log_scale(tmp_path):
    ids = sweep(tmp_path)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, runs=[ids["b"], ids["c"]], interval=0.2)
        async with app.run_test(size=(140, 40)) as pilot:
            chart = app.query_one("#chart")
            await until(pilot, lambda: len(chart._lines) == 2 and chart.key == "loss")
            # the key list, searched by a regular expression: the highlighted key is drawn
            await pilot.press("m")
            for key in "acc$":
                await pilot.press(key)
            await until(pilot, lambda: chart.key == "eval/acc")
            options = app.query_one("#key-list")
            assert [options.get_option_at_index(i).id for i in range(options.option_count)] == ["eval/acc"]
            for _ in range(4):
                await pilot.press("backspace")
            await pilot.press("enter")  # to the list, then down to the next key
            await until(pilot, lambda: options.option_count == 2)
            await pilot.press("up")
            await until(pilot, lambda: chart.key == "loss")
            # the crosshair reads each run's value at its step, as logged
            app.query_one("#plot").focus()
            await pilot.press("left")
            await until(pilot, lambda: chart.cross is not None)
            at = int(chart.cross)
            for line in chart._lines:
                want = {"b": 0.5, "c": 0.2}[line.label]
                assert line.at(at) == (at, pytest.approx(want + (2.0 - want) * (100 - at) / 99))
            readout = str(app.query_one("#readout").render())
            assert f"step {at}" in readout and "b 0." in readout and "c 0." in readout
            # a click on the plot puts the crosshair at the step under it
            plot = app.query_one("#plot")
            await until(pilot, lambda: plot.canvas is not None)
            first, last = plot.canvas
            await pilot.click("#plot", offset=(first, 5))
            await until(pilot, lambda: chart.cross == 1.0)
            await pilot.click("#plot", offset=(last, 5))
            await until(pilot, lambda: chart.cross == 100.0)
            # zoomed around the crosshair: half the span, then the whole run again
            await pilot.press("left", "left", "left")
            await until(pilot, lambda: chart.cross < 100.0)
            centre = chart.cross
            await pilot.press("plus")
            await until(pilot, lambda: chart.window is not None)
            lo, hi = chart.window
            assert hi - lo == pytest.approx(99 / 2) and (lo + hi) / 2 == centre
            steps, _ = thinned(chart._lines[0], 100, chart.window, log=False)
            assert lo <= steps[0] and steps[-1] <= hi
            await pilot.press("0")
            await until(pilot, lambda: chart.window is None)
            await pilot.press("l")
            await until(pilot, lambda: "log scale" in str(app.query_one("#readout").render()))

    asyncio.run(drive())


def test_log_scale_leaves_out_what_it_cannot_draw(tmp_path):
    with Tracker(name="signs", dir=tmp_path, console=False, system=False) as run:
        for step, value in enumerate([4.0, 0.0, -1.0, 2.0, float("nan"), 1.0], start=1):
            run.log({"reward": value}, step=step)
    model = Model(tmp_path)
    model.poll()
    model.pick(run.id)
    [line] = lines(model, "reward", "colorblind")
    assert thinned(line, 40, None, log=True) == ([1.0, 4.0, 6.0], [4.0, 2.0, 1.0])
    assert line.colour == (0x00, 0x72, 0xB2)  # the colour-blind palette's first


def test_the_console_greps_and_follows(tmp_path):
    code = """
import sys, time
from pathlib import Path
from tunetrack import Tracker
run = Tracker(name="chatty", dir=sys.argv[1], system=False, console=True).start()
for i in range(1, 200):
    print(f"step {i} loss {1 / i:.3f}", flush=True)
    if i % 10 == 0:
        print(f"checkpoint-{i} saved", flush=True)
    run.log({"loss": 1 / i}, step=i)
    while i >= 30 and not Path(sys.argv[2]).exists():
        time.sleep(0.05)
run.finish()
"""
    go = tmp_path / "go"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "runs"), str(go)], env={**os.environ, "PYTHONPATH": SRC}
    )

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path / "runs", interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("2")
            log = app.query_one("#console-log")
            text = lambda: [str(line.text) for line in log.lines]  # noqa: E731
            await until(pilot, lambda: any("step 30 loss" in t for t in text()))
            await pilot.press("g")
            for key in "saved$":
                await pilot.press(key)
            await pilot.press("enter")
            await until(
                pilot, lambda: text() and all(t.endswith("saved") for t in text()) and len(text()) == 3
            )
            go.touch()  # the run goes on: the lines it prints after are added, nothing twice
            await until(pilot, lambda: any("checkpoint-190 saved" in t for t in text()), timeout=60)
            assert len(text()) == 19 and len(set(text())) == 19

    try:
        asyncio.run(drive())
    finally:
        proc.wait(timeout=60)


@pytest.mark.slow
def test_the_console_shows_one_rank(tmp_path):
    from test_console import ON, TORCHRUN

    script = tmp_path / "train.py"
    script.write_text(TORCHRUN)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(script),
            str(tmp_path / "runs"),
        ],
        env={**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", **ON},
        capture_output=True,
        timeout=180,
    )

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path / "runs", interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: bool(cells(app)))
            await pilot.press("2")
            log = app.query_one("#console-log")
            text = lambda: [str(line.text) for line in log.lines]  # noqa: E731
            await until(pilot, lambda: any("[rank 1] hello from rank 1" in t for t in text()), timeout=30)
            assert any("[rank 0] hello from rank 0" in t for t in text())
            app.query_one("#console-log").focus()
            await pilot.press("right_square_bracket", "right_square_bracket")  # all, rank 0, rank 1
            await until(pilot, lambda: str(app.query_one("#rank").render()) == "rank 1")
            await until(pilot, lambda: text() and all("rank 0" not in t for t in text()))
            assert any("hello from rank 1" in t for t in text())

    asyncio.run(drive())


def test_light_theme_and_a_narrow_terminal(tmp_path):
    sweep(tmp_path)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: len(cells(app)) == 4)
            main, runs, tabs = app.query_one("#main"), app.query_one("#left"), app.query_one("#tabs")
            assert main.has_class("narrow") and runs.region.bottom <= tabs.region.y  # runs above the tabs
            # the chart's key list hides in a chart this narrow, once the chart is laid out
            await until(
                pilot,
                lambda: not app.query_one("#keys").display and app.query_one("#plot").region.width >= 70,
            )
            assert app.query_one("#runs").virtual_size.width <= 80  # every column fits
            await pilot.press("m")  # the key list comes for a search
            await until(pilot, lambda: app.query_one("#keys").display)
            await pilot.press("escape")
            app.query_one("#runs").focus()
            await pilot.press("t")
            await until(pilot, lambda: not app.current_theme.dark)
            row = app.query_one("#runs")._cells(app.model.rows[0].id)
            assert row[1].style == "dark_green"  # finished, darker on a light background
            await pilot.press("f")  # the runs pane fills the screen, then back
            await until(pilot, lambda: app.screen.maximized is not None)
            await pilot.press("f")
            await until(pilot, lambda: app.screen.maximized is None)

    asyncio.run(drive())


def test_the_docs_command_lines(tmp_path, monkeypatch):
    """Every ``tunetrack tui`` line of docs/tui.md, as the CLI parses it, starts the view it says."""
    import shlex
    from pathlib import Path

    from click.testing import CliRunner

    from tunetrack.cli import cli

    started: list[TunetrackApp] = []
    monkeypatch.setattr(TunetrackApp, "run", lambda self: started.append(self))
    page = (Path(SRC).parent / "docs" / "tui.md").read_text()
    lines = [line.split("  #")[0].strip() for line in page.splitlines() if line.startswith("tunetrack tui")]
    assert len(lines) == 5
    for line in lines:  # the bucket's line on a folder (the objectstore session has the bucket's test)
        args = shlex.split(line.replace("s3://team-bucket/runs", str(tmp_path / "bucket")))[2:]
        done = CliRunner().invoke(cli, ["tui", *args], env={"TUNETRACK_DIR": str(tmp_path)})
        assert done.exit_code == 0, (line, done.output)
    plain, bucket, sweep_view, picked, colours = started
    assert bucket.model.project == "sft" and bucket.model.where == "state = 'running'"
    assert sweep_view.model.columns == ["config.learning_rate", "eval/loss:min"]
    assert (sweep_view.model.sort, sweep_view.model.descending) == ("eval/loss:min", False)
    assert picked._wanted == ["5r0", "lora-r16"]
    assert colours.palette == "colorblind" and colours.theme == "textual-light"
    wrong = CliRunner().invoke(cli, ["tui", "--theme", "nope"], env={"TUNETRACK_DIR": str(tmp_path)})
    assert (
        wrong.exit_code == 2 and "no theme 'nope'; one of" in wrong.output and "textual-light" in wrong.output
    )


def test_the_cursor_stays_on_its_run_when_a_run_comes_in_above(tmp_path):
    with Tracker(name="first", dir=tmp_path, console=False, system=False) as run:
        run.log({"loss": 1.0}, step=1)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.model.current == run.id)
            with Tracker(name="second", dir=tmp_path, console=False, system=False) as newer:
                newer.log({"loss": 2.0}, step=1)
            await until(pilot, lambda: [r[2] for r in cells(app)] == ["second", "first"])
            assert app.model.current == run.id and app.query_one("#runs").cursor_row == 1
            assert "first" in str(app.query_one("#detail").render())

    asyncio.run(drive())


def test_the_band_and_the_heatmap_across_the_listed_keys(tmp_path):
    """``b`` and ``h`` on a mixture-of-experts run: the band's lines are the percentiles of the listed
    keys (``reader.across``), the heatmap's cells the max over a row's keys of their mean over a
    column's steps; a hot expert's row is the hottest."""
    import numpy as np

    from tunetrack.reader import open_run
    from tunetrack.reader.across import BAND, heat

    def value(layer: int, expert: int, step: int) -> float:
        return float((layer * 7 + expert * 3 + step) % 11) + (
            50.0 if (layer, expert) == (4, 6) and step > 20 else 0.0
        )

    with Tracker(dir=tmp_path, name="moe", console=False, system=False) as run:
        for step in range(1, 41):
            row = {f"moe/layer{i}/expert{e}/load": value(i, e, step) for i in range(6) for e in range(8)}
            run.log({**row, "loss": 1.0 / step}, step=step)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(140, 40)) as pilot:
            chart = app.query_one("#chart")
            await until(pilot, lambda: chart.key == "loss")
            await pilot.press("m", *"load$", "enter")
            await until(pilot, lambda: len(chart.listed) == 48)
            assert chart.listed[:3] == [
                "moe/layer0/expert0/load",
                "moe/layer0/expert1/load",
                "moe/layer0/expert2/load",
            ]
            await pilot.press("b")
            await until(pilot, lambda: [line.label for line in chart._lines] == [name for name, _ in BAND])
            band = app.model.picked_runs()[0].across(chart.listed).band()
            for line in chart._lines:
                assert np.array_equal(line.values, band[line.label])
            assert line.values[-1] == value(4, 6, 40)  # the max: the hot expert
            await pilot.press("h")
            await until(
                pilot,
                lambda: chart.has_class("heat") and "48 keys of moe" in str(app.query_one("#heat").render()),
            )
            await pilot.press("h")
            await until(
                pilot, lambda: chart.mode == "line" and [line.label for line in chart._lines] == ["moe"]
            )

    asyncio.run(drive())

    view = open_run(run.id, tmp_path).across("moe/*/load")
    found = heat(view, columns=10, lines=12, window=None)  # 48 keys: 4 a row; 40 steps: 4 a column
    assert [count for _, count in found.rows] == [4] * 12 and found.grid.shape == (12, 10)
    means = view.values.reshape(48, 10, 4).mean(axis=2)
    assert np.allclose(found.grid, means.reshape(12, 4, 10).max(axis=1))
    hot = [i for i, (first, _) in enumerate(found.rows) if first == "moe/layer4/expert4/load"]
    assert hot and found.grid[hot[0], -1] == found.high  # the row of layer 4's experts 4 to 7 at the end
