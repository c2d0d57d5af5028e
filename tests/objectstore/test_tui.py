"""``tunetrack tui`` on a bucket (moto's S3 server on 127.0.0.1, through the fault proxy): the runs
show, a live run's step advances on screen, its console shows; the keys answer at once while a look
at a distant bucket is under way (the store is looked at on a thread of its own); a look that finds
nothing changed costs a few requests, whatever the number of runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.helpers import SRC
from support.tui import cells, until
from tunetrack import Tracker
from tunetrack.tui.app import TunetrackApp


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


LIVE = """
import sys, time
from pathlib import Path
from tunetrack import Tracker
run = Tracker(dir=sys.argv[1], project="p", name="live", system=False, console=True, upload_interval=0.3).start()
print("hello from the live run", flush=True)
step = 0
while not Path(sys.argv[2]).exists() and step < 600:
    step += 1
    run.log({"loss": 5.0 / step}, step=step)
    time.sleep(0.2)
run.finish()
"""


def test_the_terminal_view_follows_a_live_run_in_a_bucket(s3_proxy, tmp_path) -> None:
    url, proxy = s3_proxy
    for i in range(6):
        with Tracker(dir=url, project="p", name=f"done-{i}", system=False, console=False) as run:
            run.log({"loss": 1.0 + i}, step=1)
    stop = tmp_path / "stop"
    live = subprocess.Popen(
        [sys.executable, "-c", LIVE, url, str(stop)], env={**os.environ, "PYTHONPATH": SRC}
    )

    def live_step(app: TunetrackApp) -> int:
        return next((int(r[4]) for r in cells(app) if r[2] == "live" and r[4].isdigit()), 0)

    async def drive() -> None:
        app = TunetrackApp(dir=url, interval=0.3)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: len(cells(app)) == 7 and live_step(app) > 0)
            seen = live_step(app)
            await until(pilot, lambda: live_step(app) >= seen + 3)  # it advances on screen
            # the cursor stayed on the run it was on when the live run came in above it: up to the live run
            await pilot.press("home", "2")
            log = app.query_one("#console-log")
            await until(pilot, lambda: any("hello from the live run" in str(line.text) for line in log.lines))

            # a distant bucket: each request waits 2 s; the keys still answer while the look waits on it
            # (a condition, not a time: the filter has the focus before the look is over)
            proxy.latency = 2.0
            await until(pilot, lambda: app._looking is None or app._looking.is_finished, timeout=60)
            app.action_look()  # a look of its own, every request of it slow
            slow = app._looking
            assert slow is not None and not slow.is_finished
            await pilot.press("slash")
            await until(pilot, lambda: app.focused is app.query_one("#filter"), timeout=5)
            assert not slow.is_finished, "a key waited for the bucket"
            proxy.latency = 0.0

    try:
        asyncio.run(drive())
    finally:
        stop.touch()
        live.wait(timeout=60)


def test_an_idle_look_at_a_bucket_costs_a_few_requests(s3_proxy) -> None:
    url, proxy = s3_proxy
    for i in range(20):
        with Tracker(dir=url, project="p", name=f"r{i}", system=False, console=False) as run:
            run.log({"loss": float(i)}, step=1)

    async def drive() -> dict[str, int]:
        app = TunetrackApp(dir=url, interval=3600)  # looks only when asked
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: len(cells(app)) == 20)
            await pilot.pause(0.5)
            before = proxy.count()
            for _ in range(3):
                worker = app._look()
                await worker.wait()
            return {"per_look": (proxy.count() - before) // 3}

    found = asyncio.run(drive())
    assert found["per_look"] <= 4, found  # a listing (and a stat), never one request per run


def test_a_bucket_out_of_reach_is_said_and_the_view_goes_on(s3_proxy) -> None:
    """The bucket refuses connections: the runs shown stay, the line under them says how long the store
    has not answered, the keys answer; once it is back, the view goes on where it was."""
    url, proxy = s3_proxy
    with Tracker(dir=url, project="p", name="before", system=False, console=False) as run:
        run.log({"loss": 1.0}, step=1)

    async def drive() -> None:
        app = TunetrackApp(dir=url, interval=1.0)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: [r[2] for r in cells(app)] == ["before"])
            problem = app.query_one("#problem")
            proxy.close("refuse")  # said when the client gives up, or while it retries (for minutes)
            said = ("the store has not answered for", "could not read the store")
            await until(pilot, lambda: any(s in str(problem.render()) for s in said), timeout=30)
            assert [r[2] for r in cells(app)] == ["before"]  # what was shown stays
            await pilot.press("slash")  # the keys still answer
            await until(pilot, lambda: app.focused is app.query_one("#filter"), timeout=5)
            await pilot.press("escape")
            proxy.reopen()
            with Tracker(dir=url, project="p", name="after", system=False, console=False) as again:
                again.log({"loss": 0.5}, step=1)
            await until(pilot, lambda: [r[2] for r in cells(app)] == ["after", "before"], timeout=240)
            assert not any(s in str(problem.render()) for s in said)

    asyncio.run(drive())
