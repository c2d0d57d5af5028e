"""The dashboard's JSON API in-process: downsampling keeps spikes, cursors neither repeat nor miss,
and the safety rules (token, escaping is the page's job, no path traversal, no bare 500)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tunetrack import Tracker
from tunetrack.ui.app import create_app
from tunetrack.ui.downsample import m4


def client(root, token=None):
    return TestClient(create_app(root, token), base_url="http://test")


@pytest.fixture
def spiky(root):
    t = Tracker(dir=root, name="spiky", system=False).start()
    for step in range(1, 100_001):
        t.log({"loss": 100.0 if step == 77_777 else math.sin(step / 1000.0)}, step=step)
    t.finish()
    return t.id


def test_downsampling_keeps_a_single_step_spike_at_every_zoom(root, spiky):
    with client(root) as c:
        for start, end in [(None, None), (1, 100_000), (50_000, 90_000), (77_000, 78_000), (77_770, 77_790)]:
            params = {"key": "loss", "width": 300}
            if start is not None:
                params |= {"start": start, "end": end}
            data = c.get(f"/api/runs/{spiky}/series", params=params).json()
            assert len(data["x"]) <= 4 * 300
            assert 100.0 in data["y"] and data["x"][data["y"].index(100.0)] == 77_777, (start, end)
            assert data["total"] == 100_000


def test_m4_bounds_and_extremes():
    x = np.arange(1_000_000)
    y = np.random.default_rng(0).normal(size=x.size)
    y[123_456], y[654_321] = 50.0, -50.0
    keep = m4(x, y, 1000)
    assert len(keep) <= 4000 and 123_456 in keep and 654_321 in keep
    assert np.all(np.diff(keep) > 0)
    assert m4(x[:10], y[:10], 1000).tolist() == list(range(10))  # small series: every point


def test_cursor_sends_every_point_once(root):
    t = Tracker(dir=root, name="live", system=False).start()
    seen, cursor = [], 0
    with client(root) as c:
        for batch in range(5):
            for step in range(batch * 37 + 1, (batch + 1) * 37 + 1):
                t.log({"loss": float(step)}, step=step)
            t.flush()
            data = c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": cursor}).json()
            assert not data["reset"]
            seen += data["x"]
            cursor = data["cursor"]
        again = c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": cursor}).json()
        assert again["x"] == []
        t.rewind(100)  # superseded points: the client is told to start over
        t.flush()
        assert c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": cursor}).json()["reset"]
    t.finish()
    assert seen == list(range(1, 186))


def test_token_required_everywhere_when_set(root, spiky):
    with client(root, token="s3cret") as c:
        for path in ("/", f"/run/{spiky}", "/api/runs", "/static/run.js", "/openapi.json"):
            assert c.get(path).status_code == 401, path
        assert c.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        first = c.get("/", params={"token": "s3cret"})
        assert first.status_code == 200 and "tunetrack_token" in first.headers.get("set-cookie", "")
        assert c.get("/api/runs").status_code == 200  # the cookie now carries it
    with client(root, token="s3cret") as c:
        assert c.get("/api/runs", params={"token": "wrong"}).status_code == 401


def test_headers_traversal_and_missing_runs(root, spiky):
    with client(root) as c:
        page = c.get("/")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "<script>" not in page.text.replace('<script src="', "")  # no inline script in our pages
        assert c.get(f"/api/runs/{spiky}/media/../run.json").status_code == 404
        assert c.get(f"/api/runs/{spiky}/media/media/../../../etc/passwd").status_code == 404
        missing = c.get("/api/runs/nope")
        assert missing.status_code == 404 and "no run" in missing.json()["detail"]
        assert c.get("/openapi.json").json()["info"]["title"] == "tunetrack"


def test_a_deleted_run_and_a_torn_file_are_not_500s(root, spiky):
    import shutil

    data = next((root / spiky).glob("*.ttr"))
    with open(data, "ab") as f:
        f.write(b"\x00\x01garbage")
    with client(root) as c:
        assert c.get(f"/api/runs/{spiky}/series", params={"key": "loss", "width": 10}).status_code == 200
        shutil.rmtree(root / spiky)
        assert c.get(f"/api/runs/{spiky}").status_code == 404
        assert c.get("/api/runs").json() == []
