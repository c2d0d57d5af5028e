"""The dashboard's Stop button: ``POST /api/runs/{run}/stop`` asks a live run to stop as ``tunetrack
stop`` does, only from the dashboard's own pages (JSON, this server's Origin and Host) and never on a
read-only server; the run page offers it for a running run, says who asked, and then how it ended."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from conftest import ARTIFACTS, XSS
from support.helpers import wait_until
from tunetrack import Tracker
from tunetrack.manage import stop_run
from tunetrack.reader import open_run
from tunetrack.ui.app import create_app

#: where the test client's requests go: a loopback address, as the browser's do
BASE = "http://127.0.0.1:8477"
JSON = {"content-type": "application/json"}


@pytest.fixture(autouse=True)
def _quick_control(monkeypatch):
    """A live run of the test process looks for requests to stop it every 50 ms."""
    monkeypatch.setenv("TUNETRACK_CONTROL_INTERVAL", "0.05")


def client(root, **kw) -> TestClient:
    return TestClient(create_app(root, **kw), base_url=BASE)


def live(root, name: str = "live") -> Tracker:
    run = Tracker(dir=root, name=name, console=False, system=False).start()
    run.log({"loss": 1.0}, step=1)
    return run


def test_stop_asks_a_live_run_and_says_who_asked(tmp_path):
    run = live(tmp_path)
    try:
        with client(tmp_path) as c:
            assert c.get("/api/server").json() == {"read_only": False, "person": None}
            answer = c.post(
                f"/api/runs/{run.id}/stop", json={"reason": "loss diverged"}, headers={"origin": BASE}
            )
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert (body["id"], body["name"], body["state"]) == (run.id, "live", "running")
            assert (
                body["stop"]["by"] == "dashboard (testclient)" and body["stop"]["reason"] == "loss diverged"
            )
            wait_until(lambda: run.should_stop, timeout=10)
            shown = c.get(f"/api/runs/{run.id}").json()  # what the run page shows, at its next refresh
            assert shown["stop"] == body["stop"]
            assert (
                dict(shown["overview"]["facts"])["state"]
                == "running: stop asked by dashboard (testclient), loss diverged"
            )
            again = c.post(f"/api/runs/{run.id}/stop", json={"reason": "again"})  # no Origin: a script's
            assert again.status_code == 200 and again.json()["stop"] == body["stop"]  # the first counts
            run.finish()
            assert dict(c.get(f"/api/runs/{run.id}").json()["overview"]["facts"])["state"] == (
                "stopped: by dashboard (testclient), loss diverged"
            )
            ended = c.post(f"/api/runs/{run.id}/stop", json={})
            assert ended.status_code == 409
            assert ended.json() == {"detail": f"run {run.id} (live) is stopped: there is nothing to stop"}
            unknown = c.post("/api/runs/nope/stop", json={})
            assert unknown.status_code == 404 and unknown.json()["detail"].startswith("no run 'nope'")
    finally:
        run.finish()


def test_a_change_from_another_site_is_refused(tmp_path):
    run = live(tmp_path)
    try:
        with client(tmp_path) as c:
            url = f"/api/runs/{run.id}/stop"
            evil = c.post(url, json={}, headers={"origin": "http://evil.example"})
            assert evil.status_code == 403
            assert (
                evil.json()["detail"]
                == "refused a change asked by another site's page (Origin: http://evil.example)"
            )
            assert c.post(url, json={}, headers={"origin": "null"}).status_code == 403  # a sandboxed page
            # what a form of any site can send without asking first: refused before it is read
            form = c.post(url, data={"reason": "x"}, headers={"origin": BASE})
            assert form.status_code == 415
            assert form.json()["detail"] == "a change is sent as JSON (Content-Type: application/json)"
            plain = c.post(url, content='{"reason": "x"}', headers={"content-type": "text/plain"})
            assert plain.status_code == 415
            # a name of another site pointed at this machine (DNS rebinding): its Origin matches its Host
            rebound = c.post(
                url, json={}, headers={"host": "evil.example:8477", "origin": "http://evil.example:8477"}
            )
            assert rebound.status_code == 403 and "without --token" in rebound.json()["detail"]
            assert c.post(url, json={"reason": "two\nlines"}).status_code == 422
        assert open_run(run.id, dir=tmp_path).stop_request is None
        with TestClient(create_app(tmp_path, token="s3cret"), base_url="http://gpu1.lab:8477") as c:
            # with a token the server may be reached by any name: the token says who may change it
            asked = c.post(
                url, json={}, headers={"authorization": "Bearer s3cret", "origin": "http://gpu1.lab:8477"}
            )
            assert asked.status_code == 200, asked.text
            assert c.post(url, json={}).status_code == 401
    finally:
        run.finish()


def test_a_read_only_server_changes_nothing(tmp_path):
    run = live(tmp_path)
    try:
        with client(tmp_path, read_only=True) as c:
            assert c.get("/api/server").json() == {"read_only": True, "person": None}
            refused = c.post(f"/api/runs/{run.id}/stop", json={"reason": "x"}, headers={"origin": BASE})
            assert refused.status_code == 403
            assert (
                refused.json()["detail"]
                == "this dashboard is read-only (tunetrack ui --read-only): it changes nothing"
            )
            assert c.get(f"/api/runs/{run.id}/stop").status_code == 405
        assert open_run(run.id, dir=tmp_path).stop_request is None
    finally:
        run.finish()


# -- the run page, in a real browser ----------------------------------------------------------------


def training(root) -> Tracker:
    """A live run with curves to draw, as a fine-tuning run's page shows them."""
    run = Tracker(
        dir=root,
        project="sft",
        name="qwen2.5-0.5b-lr2e-4",
        console=False,
        system=False,
        config={"lr": 2e-4, "lora": {"r": 16, "alpha": 32}, "model": "Qwen/Qwen2.5-0.5B"},
    ).start()
    for step in range(1, 61):
        run.log({"loss": 2.5 / step**0.3, "lr": 2e-4 * min(1.0, step / 10)}, step=step)
    run.flush()
    return run


def state_text(page) -> str:
    return page.inner_text("#state")


def shoot(page, name: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    page.screenshot(path=str(ARTIFACTS / f"stop-{name}-{width}.png"))


def test_the_run_page_stops_a_live_run(tmp_path, server_factory, page):
    root = tmp_path / "runs"
    run = training(root)
    try:
        server = server_factory(root)
        page.goto(f"{server.base}/run/{run.id}")
        page.wait_for_selector("#stop:not([hidden])")  # a running run: Stop is offered
        page.wait_for_selector("#charts .chart[data-points]")
        assert state_text(page) == "running" and page.is_hidden("#stop-form")
        for width in (1024, 1440):
            shoot(page, "offered", width)
        page.click("#stop")
        page.wait_for_selector("#stop-form:not([hidden])")
        page.fill("#stop-reason", "loss diverged")
        for width in (1024, 1440):
            shoot(page, "asking", width)
        page.click("#stop-form button[type=submit]")
        asked = "running: stop asked by dashboard (127.0.0.1), loss diverged"
        wait_until(lambda: state_text(page) == asked, timeout=20)
        assert page.is_hidden("#stop") and page.is_hidden("#stop-form")
        assert page.inner_text("dd[data-fact='state']") == asked
        wait_until(lambda: run.should_stop, timeout=20)  # the request reached the run's process
        assert run.stop_request["reason"] == "loss diverged"
        for width in (1024, 1440):
            shoot(page, "asked", width)
        run.finish()
        stopped = "stopped: by dashboard (127.0.0.1), loss diverged"
        wait_until(lambda: state_text(page) == stopped, timeout=20)
        assert page.inner_text("dd[data-fact='state']") == stopped and page.is_hidden("#stop")
        for width in (1024, 1440):
            shoot(page, "stopped", width)
        assert page.dialogs == []
    finally:
        run.finish()


def test_read_only_offers_no_stop_and_who_asked_renders_as_text(tmp_path, server_factory, page):
    root = tmp_path / "runs"
    run = live(root)
    try:
        server = server_factory(root, read_only=True)
        page.goto(f"{server.base}/run/{run.id}")
        wait_until(lambda: state_text(page) == "running", timeout=20)
        assert page.is_hidden("#stop")  # the server said it changes nothing
        stop_run(run.id, XSS, dir=root, by=XSS)  # asked elsewhere (tunetrack stop), with markup
        wait_until(lambda: state_text(page) == f"running: stop asked by {XSS}, {XSS}", timeout=20)
        run.finish()
        wait_until(lambda: state_text(page) == f"stopped: by {XSS}, {XSS}", timeout=20)
        assert page.query_selector("img[src='x']") is None and page.dialogs == []
    finally:
        run.finish()
