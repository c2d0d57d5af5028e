"""``tunetrack tui`` at scale (issue 34), driven headless by Textual's own pilot.

    python benchmarks/tui_bench.py [--runs 1000] [--points 1000000]

Run it in a venv with the ``tui`` extra (the tests session's: ``.nox/tests/bin/python``). A store of
``--runs`` finished runs of 20 steps each and one run of ``--points`` points of its loss; then:

- **first screen**: seconds from the app's start until the runs pane holds every run and the chart
  is drawn (target ≤ 1 s);
- **chart of the big run**: seconds to pick it and draw its loss (``--points`` points thinned to the
  terminal's width);
- **a look**: seconds one look at the store takes, when nothing changed and after a live run logged a
  step (on a thread of its own: the keys never wait for it);
- **redraw**: seconds the screen's thread spends drawing what a look found after the live run's new
  step: the panes' update and Textual's layout and render of what they changed (target ≤ 50 ms;
  measured around the screen's layout and render, ``Screen._refresh_layout`` and
  ``_compositor_refresh``, as no public hook times them);
- **CPU**: the share of one core the app uses over 10 s, polling every 2 s, while nothing changes
  (target ≤ 2%), and while it follows a live run (another process logging 10 steps a second, the run
  picked and its console tab in view);
- **bytes to the terminal**: what ``tunetrack tui`` itself, started in a pseudo-terminal of 120×36,
  writes to it per second over 10 s, while nothing changes and while it follows the live run: what an
  SSH link carries.

Medians of ``--reps``; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

os.environ.setdefault("TUNETRACK_CONSOLE", "0")
os.environ.setdefault("TUNETRACK_PARQUET", "0")


def seed(root: Path, runs: int, points: int) -> str:
    from tunetrack import Tracker

    for i in range(runs):
        with Tracker(dir=root, name=f"run-{i}", project=f"p{i % 7}", system=False) as t:
            for step in range(1, 21):
                t.log({"loss": 1.0 / step + i * 1e-3}, step=step)
    with Tracker(dir=root, name="big", system=False) as t:
        for step in range(1, points + 1):
            t.log({"loss": 1.0 / step}, step=step)
    return str(t.id)


LIVE = """
import sys, time
from tunetrack import Tracker
run = Tracker(dir=sys.argv[1], name="following", system=False, console=True).start()
for step in range(1, 10_000):
    run.log({"loss": 1.0 / step}, step=step)
    print(f"step {step}", flush=True)
    time.sleep(0.1)
"""


async def measure(root: Path, big: str, runs: int) -> dict[str, float]:
    from tunetrack import Tracker
    from tunetrack.tui.app import TunetrackApp

    out: dict[str, float] = {}
    start = time.perf_counter()
    app = TunetrackApp(dir=root, interval=2.0)
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.query_one("#runs")
        while table.row_count < runs + 1 or not app.query_one("#chart")._lines:
            await pilot.pause(0.01)
        out["first_screen_s"] = time.perf_counter() - start
        start = time.perf_counter()
        app.model.picked = [big]
        app.draw()
        await pilot.pause()
        out["big_chart_s"] = time.perf_counter() - start
        app.model.picked = [app.model.rows[-1].id]  # a small run
        app.draw()
        await pilot.pause()
        start = time.perf_counter()
        changed = app.model.poll()
        out["look_unchanged_s"] = time.perf_counter() - start
        assert not changed

        rendering = [0.0]
        screen = app.screen
        originals = {name: getattr(screen, name) for name in ("_refresh_layout", "_compositor_refresh")}

        def timed(name: str) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                began = time.perf_counter()
                try:
                    return originals[name](*args, **kwargs)
                finally:
                    rendering[0] += time.perf_counter() - began

            return call

        for name in originals:
            setattr(screen, name, timed(name))
        live = Tracker(dir=root, name="live", system=False).start()
        live.log({"loss": 1.0}, step=1)
        live.flush()
        app.model.poll()
        app.draw()
        await pilot.pause()
        live.log({"loss": 0.5}, step=2)
        live.flush()
        start = time.perf_counter()
        app.model.poll()
        out["look_new_step_s"] = time.perf_counter() - start
        await pilot.pause()
        rendering[0] = 0.0
        start = time.perf_counter()
        app.draw()
        drawn = time.perf_counter() - start
        await pilot.pause()
        out["redraw_new_step_s"] = drawn + rendering[0]
        for name, original in originals.items():
            setattr(screen, name, original)
        live.finish()
        app.action_look()
        await pilot.pause(0.5)
        cpu, wall = time.process_time(), time.perf_counter()
        await pilot.pause(10.0)
        out["idle_cpu_percent"] = 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)

        following = subprocess.Popen(
            [sys.executable, "-c", LIVE, str(root)],
            env={**os.environ, "PYTHONPATH": str(HERE.parent / "src"), "TUNETRACK_CONSOLE": "1"},
            stdout=subprocess.DEVNULL,
        )
        try:
            while not any(r.name == "following" for r in app.model.rows):
                await pilot.pause(0.1)
            rid = next(r.id for r in app.model.rows if r.name == "following")
            app.model.picked = [rid]
            app.query_one("#runs").move_cursor(row=0)
            await pilot.press("2")
            await pilot.pause(2.5)
            cpu, wall = time.process_time(), time.perf_counter()
            await pilot.pause(10.0)
            out["following_cpu_percent"] = 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)
        finally:
            following.kill()
            following.wait()
    return out


def terminal_bytes(root: Path, follow: bool, seconds: float = 10.0) -> float:
    """Bytes a second ``tunetrack tui`` writes to a pseudo-terminal of 120×36 over ``seconds``, after
    its first screen; ``follow``: a live run logs and prints beside it, under the cursor with its
    console tab in view."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src"), "TERM": "xterm-256color"}
    following = None
    if follow:
        stop = root.parent / "stop-following"
        stop.unlink(missing_ok=True)
        following = subprocess.Popen(
            [sys.executable, "-c", LIVE, str(root)],
            env={**env, "TUNETRACK_CONSOLE": "1"},
            stdout=subprocess.DEVNULL,
        )
        time.sleep(2.0)  # the newest run when the view starts: picked, under the cursor
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    view = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "tui", "--dir", str(root)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)

    def drain(duration: float) -> int:
        count, end = 0, time.monotonic() + duration
        while (left := end - time.monotonic()) > 0:
            if select.select([master], [], [], left)[0]:
                try:
                    count += len(os.read(master, 65536))
                except OSError:
                    break
        return count

    try:
        drain(6.0)  # the first screen, and a look or two
        if follow:
            os.write(master, b"2")
            drain(2.0)
        return drain(seconds) / seconds
    finally:
        os.write(master, b"q")
        drain(1.0)
        view.kill()
        view.wait()
        os.close(master)
        if following is not None:
            following.kill()
            following.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "runs"
        seeded = time.perf_counter()
        big = seed(root, args.runs, args.points)
        print(
            f"store: {args.runs} runs + one of {args.points:,} points, made in {time.perf_counter() - seeded:.0f} s"
        )
        results = [asyncio.run(measure(root, big, args.runs)) for _ in range(args.reps)]
        for result in results:
            result["terminal_bytes_idle_per_s"] = terminal_bytes(root, follow=False)
            result["terminal_bytes_following_per_s"] = terminal_bytes(root, follow=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    targets = {"first_screen_s": 1.0, "redraw_new_step_s": 0.05, "idle_cpu_percent": 2.0}
    for key in results[0]:
        value = statistics.median(r[key] for r in results)
        target = targets.get(key)
        verdict = "" if target is None else (" (met)" if value <= target else f" (MISSED: target {target:g})")
        print(f"{key}: {value:.3f}{verdict}")


if __name__ == "__main__":
    main()
