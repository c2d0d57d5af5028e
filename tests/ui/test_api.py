"""The dashboard's JSON API in-process: downsampling keeps spikes, cursors neither repeat nor miss,
and the safety rules (token, escaping is the page's job, no path traversal, no bare 500)."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from support.helpers import seed_two_runs, wait_until
from tunetrack import Tracker, TunetrackWarning
from tunetrack.reader import m4, open_run
from tunetrack.ui.app import create_app


def client(root, token=None):
    return TestClient(create_app(root, token), base_url="http://test")


@pytest.fixture
def spiky(root):
    t = Tracker(dir=root, name="spiky", system=False).start()
    for step in range(1, 100_001):
        t.log({"loss": 100.0 if step == 77_777 else math.sin(step / 1000.0)}, step=step)
    t.finish()
    return t.id


@pytest.mark.parametrize("batch", [False, True], ids=["one series", "batch"])
def test_downsampling_keeps_a_single_step_spike_at_every_zoom(root, spiky, batch):
    with client(root) as c:
        for start, end in [(None, None), (1, 100_000), (50_000, 90_000), (77_000, 78_000), (77_770, 77_790)]:
            params = {"key": "loss", "width": 300}
            if start is not None:
                params |= {"start": start, "end": end}
            if batch:
                (data,) = c.get("/api/series", params={**params, "run": spiky}).json()["series"]
            else:
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


def test_a_rewind_resets_the_cursor_even_when_more_points_follow_than_it_hid(root):
    """A resume rewinds 80 -> 50 and the new attempt logs 40 rows before the next poll: the series is
    longer than the client's copy, but its points 51..80 are not the ones the client holds."""
    t = Tracker(dir=root, name="resumed", system=False).start()
    with client(root) as c:
        for step in range(1, 81):
            t.log({"loss": 1.0}, step=step)
        t.flush()
        first = c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": 0}).json()
        assert first["x"] == list(range(1, 81))
        t.rewind(50)
        for step in range(51, 91):
            t.log({"loss": 2.0}, step=step)
        t.flush()
        poll = c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": first["cursor"]}).json()
        assert poll["reset"] and poll["cursor"] == 0
        reload = c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": 0}).json()
        assert reload["x"] == list(range(1, 91)) and reload["y"] == [1.0] * 50 + [2.0] * 40
        assert (
            c.get(f"/api/runs/{t.id}/series", params={"key": "loss", "cursor": reload["cursor"]}).json()["x"]
            == []
        )
    t.finish()


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


def test_one_request_brings_every_chart_of_a_run(root, monkeypatch):
    from tunetrack.system.host import HostSource

    monkeypatch.delenv("TUNETRACK_SYSTEM", raising=False)
    t = Tracker(dir=root, name="sys", system_interval=0.05, system_sources=[HostSource()]).start()
    for step in range(1, 301):
        t.log({"loss": 1.0 / step, "lr": 0.1}, step=step)
    wait_until(lambda: t.flush() and open_run(t.id, dir=root).nodes, timeout=20)
    t.finish()
    with client(root) as c:
        meta = c.get(f"/api/runs/{t.id}").json()
        entries = c.get("/api/series", params={"run": t.id, "width": 50}).json()["series"]
        expected = [(k, None) for k in meta["keys"]] + [
            (k, n) for n in meta["nodes"] for k in meta["system_keys"]
        ]
        assert [(e["key"], e["node"]) for e in entries] == expected and meta["system_keys"]
        for e in entries:  # the same points as asking for each series alone
            alone = c.get(
                f"/api/runs/{t.id}/series", params={"key": e["key"], "node": e["node"], "width": 50}
            ).json()
            assert (e["x"], e["y"], e["total"]) == (alone["x"], alone["y"], alone["total"])
        assert entries[0]["downsampled"] and len(entries[0]["x"]) <= 4 * 50


def test_batched_cursors_send_every_point_once(root):
    t = Tracker(dir=root, name="live", system=False).start()
    seen: dict[str, list[int]] = {"loss": [], "eval": []}
    cursors = {"loss": 0, "eval": 0}
    with client(root) as c:
        for batch in range(6):
            for step in range(batch * 20 + 1, (batch + 1) * 20 + 1):
                t.log({"loss": float(step), **({"eval": 1.0} if step % 3 == 0 else {})}, step=step)
            t.flush()
            params = {"run": t.id, "key": list(cursors), "node": ["", ""], "cursor": list(cursors.values())}
            for entry in c.get("/api/series", params=params).json()["series"]:
                assert not entry["reset"]
                seen[entry["key"]] += entry["x"]
                cursors[entry["key"]] = entry["cursor"]
    t.finish()
    assert seen == {"loss": list(range(1, 121)), "eval": list(range(3, 121, 3))}


def test_a_key_logged_as_none_sends_only_its_values_live_and_whole(root):
    """Steps where the key was logged as None are no points, in the live answers (each point once)
    as in the whole series."""
    t = Tracker(dir=root, name="grpo", system=False).start()
    seen, cursor = [], 0
    with client(root) as c:
        for batch in range(4):
            for step in range(batch * 25 + 1, (batch + 1) * 25 + 1):
                t.log({"loss": 1.0, "eval/loss": float(step) if step % 10 == 0 else None}, step=step)
            t.flush()
            data = c.get(f"/api/runs/{t.id}/series", params={"key": "eval/loss", "cursor": cursor}).json()
            assert data["x"] == data["y"] and data["total"] == (batch + 1) * 25 // 10
            seen += data["x"]
            cursor = data["cursor"]
        whole = c.get(f"/api/runs/{t.id}/series", params={"key": "eval/loss"}).json()
    t.finish()
    assert seen == whole["x"] == list(range(10, 101, 10)) and whole["total"] == 10


def test_batch_entries_say_what_they_cannot_read(root, spiky):
    with client(root) as c:
        params = {
            "run": [spiky, "nope", spiky],
            "key": ["loss", "loss", "cpu.percent"],
            "node": ["", "", "x"],
        }
        ok, missing, no_node = c.get("/api/series", params=params).json()["series"]
        assert ok["total"] == 100_000 and "error" not in ok
        assert "no run" in missing["error"] and "x" in no_node["error"]
        bad = c.get("/api/series", params={"run": spiky, "key": ["a", "b"], "cursor": [1]})
        assert bad.status_code == 422


def test_nan_and_inf_travel_as_null(root):
    t = Tracker(dir=root, name="gaps", system=False).start()
    for step, v in enumerate([1.0, math.nan, math.inf, 2.0], start=1):
        t.log({"loss": v}, step=step)
    t.finish()
    with client(root) as c:
        assert c.get(f"/api/runs/{t.id}/series", params={"key": "loss"}).json()["y"] == [1.0, None, None, 2.0]
        assert c.get("/api/runs").json()[0]["loss"] == 2.0


def test_compare_lists_keys_and_only_the_config_that_differs(root):
    ids = []
    for i, config in enumerate(
        [{"lr": 0.1, "layers": 2}, {"lr": 0.2, "layers": 2}, {"layers": 2, "seed": 1}]
    ):
        t = Tracker(dir=root, name=f"r{i}", system=False, config=config).start()
        t.log({"loss": 1.0, f"only{i}": 1.0}, step=1)
        t.finish()
        ids.append(t.id)
    with client(root) as c:
        data = c.get("/api/compare", params={"id": ids}).json()
        assert [r["keys"] for r in data["runs"]] == [["loss", f"only{i}"] for i in range(3)]
        assert data["rows"] == [
            {"key": "lr", "values": ["0.1", "0.2", None]},
            {"key": "seed", "values": [None, None, "1"]},
        ]
        assert c.get("/api/compare", params={"id": [ids[0], "nope"]}).status_code == 404


def test_compare_and_diff_compare_configs_as_data(root):
    """The comparison of ``tunetrack diff`` (tests/test_cli.py): bool vs int differ, NaN equals NaN,
    a missing key differs from None."""
    a = Tracker(dir=root, name="a", system=False, config={"flag": True, "x": math.nan, "opt": None, "n": 1})
    b = Tracker(dir=root, name="b", system=False, config={"flag": 1, "x": math.nan, "n": 1.0})
    for t in (a.start(), b.start()):
        t.finish()
    with client(root) as c:
        rows = c.get("/api/compare", params={"id": [a.id, b.id]}).json()["rows"]
        assert rows == [{"key": "flag", "values": ["True", "1"]}, {"key": "opt", "values": ["None", None]}]
        diff = c.get("/api/diff", params={"a": a.id, "b": b.id}).json()["rows"]
        assert diff == [{"key": "flag", "a": "True", "b": "1"}, {"key": "opt", "a": "None", "b": None}]


def test_compare_prints_values_exact_where_short_would_hide_a_difference(root):
    ids = []
    for lr, wd in [(3e-4, 0.1), (0.1 * 3e-3, 0.2), (2e-4, 0.1 * 3)]:
        t = Tracker(dir=root, name=f"lr{lr}", system=False, config={"lr": lr, "wd": wd}).start()
        t.finish()
        ids.append(t.id)
    with client(root) as c:
        rows = c.get("/api/compare", params={"id": ids}).json()["rows"]
        assert rows == [
            {"key": "lr", "values": ["0.0003", "0.00030000000000000003", "0.0002"]},
            {"key": "wd", "values": ["0.1", "0.2", "0.3"]},  # 0.30000000000000004: no other 0.3 here
        ]


def test_the_runs_listing_brings_the_last_values_of_the_keys_asked_for(root):
    t = Tracker(dir=root, name="grpo", system=False).start()
    t.log({"train/loss": 0.5, "reward": 2.0, "lr": 0.1}, step=1)
    t.finish()
    with client(root) as c:
        assert c.get("/api/runs").json()[0]["last"] == {"train/loss": 0.5}  # the loss-like keys
        assert c.get("/api/runs", params={"key": ["reward", "nope"]}).json()[0]["last"] == {"reward": 2.0}
        assert c.get("/api/keys").json() == {
            "keys": ["lr", "reward", "train/loss"],
            "default": ["train/loss"],
            "lower": ["train/loss"],
        }
        page = c.get("/", params={"key": ["reward", "a&b"]}).text  # preloads what its script asks for
        assert (
            '<link rel="preload" href="/api/runs?format=table&amp;key=reward&amp;key=a%26b&amp;newest=100"'
            in page
        )
        assert (
            '<link rel="preload" href="/api/runs?format=table&amp;newest=100" as="fetch"' in c.get("/").text
        )
        sorted_page = c.get("/", params={"sort": "name:asc"}).text  # needs every run: the whole table
        assert '<link rel="preload" href="/api/runs?format=table" as="fetch"' in sorted_page
        # the page's own format: the same runs as arrays, one cell per key some run has
        table = c.get("/api/runs", params={"format": "table", "key": ["reward:best", "nope"]}).json()
        assert table["keys"] == ["reward"] and table["fields"][:2] == ["id", "name"]
        (values,) = table["rows"]
        assert values[:2] == [t.id, "grpo"] and values[-1] == [2.0, 2.0, 2.0, 2.0, 1]
        assert c.get("/api/runs", params={"format": "csv"}).status_code == 422


def test_a_poll_of_an_unchanged_runs_table_is_a_304(root):
    """The page polls the table every 3 s, and its browser sends the ETag it has: 10,000 rows are
    neither built nor sent again while no run changed."""
    t = Tracker(dir=root, name="live", system=False).start()
    t.log({"loss": 1.0}, step=1)
    t.flush()
    with client(root) as c:
        first = c.get("/api/runs")
        etag = first.headers["etag"]
        assert first.headers["cache-control"] == "no-cache"  # asked again each time, with the ETag
        same = c.get("/api/runs", headers={"If-None-Match": etag})
        assert same.status_code == 304 and same.content == b""
        t.log({"loss": 0.5}, step=2)
        t.flush()
        grown = c.get("/api/runs", headers={"If-None-Match": etag})
        assert grown.status_code == 200 and grown.json()[0]["last"] == {"loss": 0.5}
        etag = grown.headers["etag"]
        other = c.get("/api/runs", params={"key": "nope"})  # another query: its own rows
        assert other.json()[0]["last"] == {} and other.headers["etag"] == etag
        assert c.get("/api/runs").json() == grown.json()
        t.finish()
        ended = c.get("/api/runs", headers={"If-None-Match": etag})
        assert ended.status_code == 200 and ended.json()[0]["state"] == "finished"


def test_a_first_screen_is_the_newest_rows_of_the_table_without_building_it(root):
    """``newest``: what the runs page asks for first. A fresh dashboard opens only those runs (its
    table stays unbuilt), and they are the table's first rows, filters and all."""
    ids = []
    for i in range(5):
        with Tracker(dir=root, name=f"r{i}", project=f"p{i % 2}", system=False) as t:
            t.log({"loss": 1.0 / (i + 1), "reward": float(i)}, step=1)
        ids.append(t.id)
    live = Tracker(dir=root, name="live", project="p0", system=False).start()
    live.log({"loss": 0.25}, step=3)
    live.flush()
    try:
        with client(root) as c:
            app = c.app  # a fresh server before its warm-up (``ui.app.warm``) built the table
            asked = {"newest": 3, "key": ["loss", "reward"]}
            first = c.get("/api/runs", params=asked).json()
            assert not app.state.catalog._rows  # not built: only those runs were opened
            table = c.get("/api/runs", params={"key": ["loss", "reward"]}).json()
            assert [r["name"] for r in first] == ["live", "r4", "r3"]
            assert (
                first == table[:3] and first[0]["state"] == "running" and first[0]["last"] == {"loss": 0.25}
            )
            p1 = c.get("/api/runs", params={"newest": 1, "project": "p1", "format": "table"}).json()
            assert [row[1] for row in p1["rows"]] == ["r3"]
            assert c.get("/api/runs", params={"newest": 0}).status_code == 422
    finally:
        live.finish()


def test_the_runs_table_reads_no_data_file_of_an_ended_run(root):
    t = Tracker(dir=root, name="done", system=False).start()
    for step in range(1, 11):
        t.log({"loss": 1.0 / step}, step=step)
    t.finish()
    for data in (root / t.id).glob("*.ttr"):
        data.write_bytes(b"")  # the listing must not need it: the end record holds the last values
    with client(root) as c:
        (row,) = c.get("/api/runs").json()
    assert (row["state"], row["last_step"], row["loss"]) == ("finished", 10, 0.1)


def test_the_runs_table_follows_runs_that_start_write_and_end(root):
    with client(root) as c:
        assert c.get("/api/runs").json() == []
        t = Tracker(dir=root, name="growing", system=False).start()
        t.log({"loss": 1.0}, step=1)
        t.flush()
        (row,) = c.get("/api/runs").json()
        assert (row["state"], row["last_step"], row["loss"]) == ("running", 1, 1.0)
        t.log({"loss": 0.5}, step=2)
        t.flush()
        assert c.get("/api/runs").json()[0]["last_step"] == 2
        t.finish("failed")
        assert c.get("/api/runs").json()[0]["state"] == "failed"
        assert [r["state"] for r in c.get("/api/runs", params={"state": "failed"}).json()] == ["failed"]
        again = Tracker(dir=root, resume=t.id, system=False).start()  # a resumed run: new files, live again
        again.log({"loss": 0.25}, step=3)
        again.flush()
        (row,) = c.get("/api/runs").json()
        assert (row["state"], row["last_step"], row["loss"]) == ("running", 3, 0.25)
        again.finish()
        assert c.get("/api/runs").json()[0]["state"] == "finished"


def test_scripts_are_revalidated_and_uplot_is_cached_under_its_version(root, spiky):
    import re

    with client(root) as c:
        page = c.get(f"/run/{spiky}")
        assert page.headers["cache-control"] == "no-cache"
        (js,) = re.findall(r'<script defer src="(/static/vendor/uplot-[0-9a-f]+\.min\.js)"', page.text)
        (css,) = re.findall(
            r'<link rel="stylesheet" href="(/static/vendor/uplot-[0-9a-f]+\.min\.css)"', page.text
        )
        uplot = c.get(js)
        assert uplot.status_code == 200 and "immutable" in uplot.headers["cache-control"]
        assert uplot.text.startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */")  # hatch_build.py
        style = c.get(css)
        assert style.status_code == 200 and "immutable" in style.headers["cache-control"]
        assert style.headers["content-type"].startswith("text/css") and ".uplot" in style.text
        assert c.get("/static/run.js").headers["cache-control"] == "no-cache"
        assert c.get("/static/vendor/uplot-000000000000.min.js").status_code == 404
        assert c.get(js.replace(".min.js", ".min.txt")).status_code == 404


def test_without_uplot_the_pages_link_none_and_still_load(root, spiky, monkeypatch, tmp_path):
    """A build without npm: the server starts, and its pages link no charting library (their scripts
    then say that it was not built in)."""
    from tunetrack.ui import assets

    for name in ("UPLOT_JS", "UPLOT_CSS"):
        monkeypatch.setattr(assets, name, tmp_path / getattr(assets, name).name)
    monkeypatch.setattr("tunetrack._warnings._seen", set())
    with pytest.warns(TunetrackWarning, match="not built in: rebuild with npm available"), client(root) as c:
        for path in ("/", f"/run/{spiky}", f"/compare?ids={spiky}"):
            page = c.get(path)
            assert page.status_code == 200 and "/static/vendor/" not in page.text, path
            assert "<!--uplot" not in page.text, path
        assert c.get("/static/common.js").status_code == 200


def test_edits_show_in_the_runs_table_and_the_run_at_once(root):
    """The server keeps runs and rows between requests: an edit made meanwhile (by another process,
    here the read API) is shown by the next request, and the run is found by its new name."""
    from tunetrack.manage import note_run, rename_run, tag_run

    t = Tracker(dir=root, name="draft", tags=["sweep"], system=False).start()
    t.log({"loss": 1.0}, step=1)
    t.finish()
    with client(root) as c:
        (row,) = c.get("/api/runs").json()
        assert (row["name"], row["tags"], row["notes"]) == ("draft", ["sweep"], [])
        assert c.get(f"/api/runs/{t.id}").json()["name"] == "draft"
        tag_run(t.id, add=["best"], dir=root)
        assert c.get("/api/runs").json()[0]["tags"] == ["sweep", "best"]
        rename_run(t.id, "final", dir=root)  # within the same second as the edit before
        note_run(t.id, "the one to ship", dir=root)
        (row,) = c.get("/api/runs").json()
        assert (row["name"], row["tags"]) == ("final", ["sweep", "best"])
        assert [n["text"] for n in row["notes"]] == ["the one to ship"]
        run = c.get("/api/runs/final").json()
        assert (run["id"], run["name"], run["tags"]) == (t.id, "final", ["sweep", "best"])
        assert [n["text"] for n in run["notes"]] == ["the one to ship"]
        assert len(run["meta"]["edits"]) == 3
        assert c.get("/api/runs/draft").status_code == 404


def test_the_run_is_worded_as_tunetrack_show_words_it(root):
    """What the run page prints (its overview, summary, events and config values) comes from the
    server in the words of ``tunetrack show`` (reader/as_text.py), so the two cannot drift apart."""
    from click.testing import CliRunner

    from tunetrack.cli import cli
    from tunetrack.manage import note_run

    t = Tracker(dir=root, name="worded", system=False, config={"lr": 0.1 * 3e-3}).start()
    t.log({"loss": 0.5}, step=1)
    t.event("health", step=1, key="loss", value=math.nan)
    t.finish()
    note_run(t.id, "the one to ship", dir=root)
    shown = CliRunner().invoke(cli, ["show", t.id, "--dir", str(root)], catch_exceptions=False).output
    lines = [" ".join(line.split()) for line in shown.splitlines()]
    with client(root) as c:
        run = c.get(f"/api/runs/{t.id}").json()
    facts = run["overview"]["facts"]
    assert [label for label, _ in facts][:3] == ["run", "project", "state"]
    for label, text in facts:
        if label not in ("note", "command"):  # notes: a table of their own; a command: cut to a line
            assert f"{label} {text}" in lines, label
    assert dict(facts)["not kept"] == "nothing: every row logged was stored"
    ((_, note),) = [row for row in facts if row[0] == "note"]
    assert note.startswith("the one to ship (") and "the one to ship" in shown
    assert run["overview"]["summary"] == [["loss", "0.5", "0.5", "0.5", "1", "1"]]
    assert "loss │ 0.5 │ 0.5 │ 0.5 │ 1 │ 1" in lines
    (event,) = run["overview"]["events"]
    assert (event["kind"], event["details"]) == ("health", "key=loss, value=nan")
    assert any(line.startswith("1 │ health │") and line.endswith("key=loss, value=nan") for line in lines)
    assert run["flat_config"] == {"lr": "0.0003"} and "lr │ 0.0003" in lines


def test_a_fresh_dashboard_builds_its_runs_table_before_a_browser_asks(root, server_factory):
    """``tunetrack ui`` refreshes its runs table on a thread as it starts (``ui.app.warm``), so the
    first page finds the table and its default listing built (at 10,000 runs, most of the first
    screen's wait). Seen from outside: the rows kept for the next dashboard are written with no
    request for them, and the first listing holds every run."""
    ids = seed_two_runs(root)
    past = time.time() - 60  # settled folders: a stamp from the last second is not kept
    for run_id in ids:
        os.utime(root / run_id, (past, past))
    server = server_factory(root)  # it waits for a static file only
    wait_until(lambda: (root / ".rows.msgpack").exists())
    import httpx

    listed = httpx.get(server.base + "/api/runs", timeout=30).json()
    assert sorted(r["id"] for r in listed) == sorted(ids)


def test_best_is_the_usual_way_unless_the_request_turns_a_key_round(root):
    """``best=KEY:min|max`` (as ``tunetrack ls --best``) in the listing, the selection and the groups:
    a reward's best is its max, and its min where asked; /api/keys says which keys are minimized."""
    t = Tracker(dir=root, name="r", project="p", system=False, config={"lr": 0.1}).start()
    for step, (reward, loss) in enumerate([(1.0, 3.0), (3.0, 1.0), (2.0, 2.0)], start=1):
        t.log({"reward": reward, "loss": loss}, step=step)
    t.finish()
    with client(root) as c:
        (row,) = c.get("/api/runs", params={"key": ["reward:best", "loss"]}).json()
        assert (row["summary"]["reward"]["best"], row["summary"]["reward"]["best_step"]) == (3.0, 2)
        assert row["summary"]["loss"]["best"] == 1.0
        turned = {"key": ["reward:best"], "best": ["reward:min"]}
        (row,) = c.get("/api/runs", params=turned).json()
        assert (row["summary"]["reward"]["best"], row["summary"]["reward"]["best_step"]) == (1.0, 1)
        assert c.get("/api/select", params={"where": "reward:best < 2", **turned}).json()["ids"] == [t.id]
        assert c.get("/api/select", params={"where": "reward:best < 2"}).json()["ids"] == []
        (group,) = c.get("/api/groups", params={"by": "lr", **turned}).json()["groups"]
        assert group["stats"]["reward:best"]["mean"] == 1.0
        bad = c.get("/api/runs", params={"best": "reward:up"})
        assert (
            bad.status_code == 422 and bad.json()["detail"] == "best of 'reward' must be min or max, not 'up'"
        )
        keys = c.get("/api/keys").json()
        assert "loss" in keys["lower"] and "reward" not in keys["lower"]
