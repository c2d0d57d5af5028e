"""``tunetrack ui --dir s3://...``: a team points one dashboard at a bucket. The runs table, a run page
with its charts, and a chart that grows while another process logs into the bucket, in Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.helpers import Server, spawn_script, wait_until
from tunetrack import Tracker

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "objectstore"


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def page():
    from playwright import sync_api as playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        yield browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        browser.close()


@pytest.fixture
def dashboard(s3_url: str):
    servers: list[Server] = []

    def start() -> Server:
        servers.append(Server(s3_url))  # type: ignore[arg-type]  # a URL, as `--dir` takes it
        return servers[-1]

    yield start
    for server in servers:
        if server.proc.poll() is None:
            server.stop()


def test_the_runs_table_and_a_run_page_over_a_bucket(s3_url: str, dashboard, page) -> None:
    a = Tracker(dir=s3_url, name="alpha", project="p", system=False, config={"lr": 0.1}).start()
    for step in range(1, 51):
        a.log({"loss": 2.0 / step, "lr": 0.1}, step=step)
    a.event("checkpoint", step=25, path="ckpt-25")
    a.finish()
    b = Tracker(dir=s3_url, name="beta", project="p", system=False).start()
    b.log({"loss": 1.0}, step=1)
    b.finish("failed")
    server = dashboard()
    page.goto(server.base + "/")
    page.wait_for_selector("#runs tbody tr")
    rows = {tr.get_attribute("data-run"): tr.inner_text() for tr in page.query_selector_all("#runs tbody tr")}
    assert set(rows) == {a.id, b.id}
    assert "finished" in rows[a.id] and "failed" in rows[b.id]
    page.screenshot(path=str(ARTIFACTS / "runs.png"))
    page.click("text=alpha")
    wait_until(
        lambda: len(page.query_selector_all("#charts .chart[data-drawn] .uplot canvas")) >= 2, timeout=30
    )
    assert len(page.query_selector_all("#charts .chart")) == 2  # loss, lr
    assert page.inner_text("#events").count("checkpoint") == 1
    page.screenshot(path=str(ARTIFACTS / "run.png"), full_page=True)


def test_a_chart_grows_while_another_process_logs_into_the_bucket(s3_url: str, dashboard, page) -> None:
    writer = spawn_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="live", system=False, upload_interval=0.5).start()
        print(t.id, flush=True)
        for step in range(1, 200):
            t.log({"loss": 1.0 / step}, step=step)
            time.sleep(0.05)
        t.finish()
    """,
        s3_url,
    )
    try:
        run_id = writer.stdout.readline().strip()
        server = dashboard()
        page.goto(f"{server.base}/run/{run_id}")
        wait_until(lambda: page.query_selector("#charts .chart[data-drawn]"), timeout=30)
        first = int(page.get_attribute("#charts .chart", "data-points") or 0)
        wait_until(
            lambda: int(page.get_attribute("#charts .chart", "data-points") or 0) > first + 20, timeout=30
        )
    finally:
        writer.kill()
        writer.wait(timeout=10)
