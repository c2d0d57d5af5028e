"""Forks on the dashboard: the run page of a fork says where it branched, linked to its parent, and
the parent's lists its forks, linked; the series routes read the fork's whole history."""

from __future__ import annotations

from fastapi.testclient import TestClient

from support.helpers import Server
from tunetrack import Tracker
from tunetrack.ui.app import create_app


def _two_runs(root) -> tuple[str, str]:
    with Tracker(dir=root, name="parent", config={"lr": 1e-3}, system=False) as parent:
        for step in range(1, 21):
            parent.log({"loss": float(step)}, step=step)
    with Tracker(dir=root, name="child", config={"lr": 1e-4}, fork_from="parent@8", system=False) as child:
        for step in range(9, 13):
            child.log({"loss": -float(step)}, step=step)
    assert parent.id is not None and child.id is not None
    return parent.id, child.id


def test_the_api_gives_a_forks_branch_point_its_parents_forks_and_the_merged_series(root):
    parent_id, child_id = _two_runs(root)
    with TestClient(create_app(root, None), base_url="http://test") as c:
        child = c.get(f"/api/runs/{child_id}").json()
        assert child["fork"] == {"run": parent_id, "step": 8}
        facts = dict(map(tuple, child["overview"]["facts"]))
        assert facts["forked from"] == f"{parent_id}@8 (parent)"
        assert facts["changed from parent"] == "lr: 0.001 -> 0.0001"
        parent = c.get(f"/api/runs/{parent_id}").json()
        assert parent["forks"] == [{"id": child_id, "name": "child", "step": 8}]
        data = c.get(f"/api/runs/{child_id}/series", params={"key": "loss", "width": 300}).json()
        assert data["x"] == list(range(1, 13))
        assert data["y"] == [float(s) for s in range(1, 9)] + [-float(s) for s in range(9, 13)]
        (batch,) = c.get("/api/series", params={"key": "loss", "width": 300, "run": child_id}).json()[
            "series"
        ]
        assert batch["x"] == data["x"] and batch["y"] == data["y"]


def test_the_run_pages_link_a_fork_and_its_parent(root, page):
    parent_id, child_id = _two_runs(root)
    server = Server(root)
    try:
        page.goto(f"{server.base}/run/{child_id}")
        link = page.wait_for_selector("#facts dd[data-fact='forked from'] a")
        assert link.inner_text() == f"{parent_id}@8 (parent)"
        link.click()
        page.wait_for_url(f"{server.base}/run/{parent_id}")
        child = page.wait_for_selector("#facts dd[data-fact='forks'] a")
        assert child.inner_text() == f"{child_id}@8 (child)"
        assert child.get_attribute("href") == f"/run/{child_id}"
    finally:
        server.stop()


def test_the_runs_table_summarizes_a_fork_over_its_whole_history(root):
    _two_runs(root)
    with TestClient(create_app(root, None), base_url="http://test") as c:
        rows = {r["name"]: r for r in c.get("/api/runs", params={"key": "loss"}).json()}
    assert rows["child"]["summary"]["loss"]["min"] == -12.0 and rows["child"]["summary"]["loss"]["max"] == 8.0
    assert rows["child"]["fork"]["step"] == 8
