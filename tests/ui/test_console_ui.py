"""The console on the dashboard: ``/api/runs/{id}/logs`` selects lines as ``tunetrack logs`` does, and
the run page shows them, follows a running run, and scrolls to the time picked on a wall-time chart."""

from __future__ import annotations

from fastapi.testclient import TestClient

from conftest import ARTIFACTS
from support.helpers import run_script, spawn_script, wait_until
from tunetrack.reader import list_runs
from tunetrack.ui.app import create_app

ON = {"TUNETRACK_CONSOLE": "1"}


def test_the_logs_api_selects_by_tail_pattern_rank_and_time(root):
    run_script(
        """
        import os, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        for i in range(10):
            os.write(1 + i % 2, f"line {i}\\n".encode())
        t.finish()
        """,
        str(root),
        env=ON,
    )
    (run,) = list_runs(root)
    with TestClient(create_app(root), base_url="http://test") as c:
        url = f"/api/runs/{run.id}/logs"
        every = c.get(url).json()
        assert sorted(x["text"] for x in every["lines"]) == [f"line {i}" for i in range(10)]
        assert every["ranks"] == [0] and every["failure"] is None
        assert {x["stream"] for x in every["lines"] if x["text"] == "line 1"} == {"stderr"}
        assert [x["text"] for x in c.get(url, params={"grep": "line [37]"}).json()["lines"]] == [
            "line 3",
            "line 7",
        ]
        assert len(c.get(url, params={"tail": 3}).json()["lines"]) == 3
        assert c.get(url, params={"rank": 1}).json()["lines"] == []
        last = max(x["time"] for x in every["lines"])
        assert all(x["time"] >= last for x in c.get(url, params={"since": last}).json()["lines"])
        bad = c.get(url, params={"grep": "("})
        assert bad.status_code == 400 and "regular expression" in bad.json()["detail"]
        assert c.get("/api/runs/nosuchrun/logs").status_code == 404


def test_the_run_page_follows_the_console_and_jumps_to_a_picked_time(root, server_factory, page):
    writer = spawn_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="printing", system=False).start()
        print(t.id, flush=True)
        for step in range(1, 2000):
            t.log({"loss": 1.0 / step}, step=step)
            print(f"step {step}", flush=True)
            if step % 10 == 0:
                print(f"warning at step {step}", file=sys.stderr, flush=True)
            time.sleep(0.02)
        t.finish()
        """,
        str(root),
        env=ON,
    )
    run_id = writer.stdout.readline().strip()
    server = server_factory(root)
    try:
        page.goto(f"{server.base}/run/{run_id}")
        page.wait_for_selector("#logs-section:not([hidden]) #logs .line")
        first = page.locator("#logs .line").count()
        wait_until(lambda: page.locator("#logs .line").count() > first + 20, timeout=30)  # followed live
        assert page.locator("#logs .line.stderr .text").first.inner_text().startswith("warning at step")
        page.select_option("#xaxis", "time")
        page.wait_for_selector("#charts .chart[data-x='time']")  # drawn again on the time axis
        box = page.locator("#charts .chart .u-over").first.bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
        page.wait_for_selector("#logs .line.here")
        page.fill("#loggrep", "warning")
        page.dispatch_event("#loggrep", "change")
        wait_until(
            lambda: (
                page.locator("#logs .line").count() > 0
                and all(t.startswith("warning") for t in page.locator("#logs .line .text").all_inner_texts())
            )
        )
        page.screenshot(path=str(ARTIFACTS / "console.png"))
    finally:
        writer.kill()
