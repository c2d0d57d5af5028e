"""What runs made and were made from, on the dashboard: the run page's Checkpoints tab (the best marked,
deleted ones labelled, files behind a click), its Lineage tab, and the artifacts page; the API says what
``tunetrack checkpoints``, ``lineage`` and ``artifacts`` say.

The store is recorded once for the module through the public API on real folders of files (the ui
session has no transformers; ``tests/e2e/hf/real_runs.py`` records a real Trainer's): a fine-tuning
run with a data set and a base model as inputs, three checkpoints (the first rotated away once hashed),
the best one kept as an artifact; an evaluation run that starts from that checkpoint; a fork.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from conftest import ARTIFACTS, XSS
from support.helpers import Server, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.reader import open_run
from tunetrack.ui.app import create_app
from tunetrack.ui.routes import produced

EVAL = {2: 0.9, 4: 0.5, 6: 0.7}  # the evaluation loss at each save: step 4's is the best


def _folder(path, files):
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The module's store and its runs' ids: ``sft``, ``eval`` (its input is sft's step-4 checkpoint),
    ``fork`` (of sft at step 4), ``bare`` (no checkpoint, no input)."""
    tmp = tmp_path_factory.mktemp("produced")
    root = tmp / "runs"
    data = _folder(tmp / "alpaca-mini", {"train.jsonl": b'{"text": "hi"}\n' * 50})
    out = tmp / "out"
    with Tracker(dir=root, name="sft", project="p", system=False) as t:
        t.log_input(data, name="alpaca-mini", kind="dataset").result()
        t.log_input(
            "hf://Qwen/Qwen2.5-0.5B", name="Qwen/Qwen2.5-0.5B", kind="model", digest="a" * 64
        ).result()
        for step in range(1, 7):
            t.log({"loss": 2.0 / step}, step=step)
            if step in EVAL:
                t.log({"eval_loss": EVAL[step], "eval_accuracy": 1 - EVAL[step]}, step=step)
                ckpt = _folder(
                    out / f"checkpoint-{step}",
                    {"adapter_model.safetensors": bytes([step]) * 4000, "adapter_config.json": b"{}"},
                )
                t.log_checkpoint(ckpt, metrics={"eval_loss": EVAL[step], "eval_accuracy": 1 - EVAL[step]})
            if step == 2:  # rotated away once hashed, as save_total_limit does: seen at the next save
                wait_until(lambda: any(c.files for c in open_run(t.id, dir=root).checkpoints()))
                shutil.rmtree(out / "checkpoint-2")
        t.log_artifact(out / "checkpoint-4", name="sft-adapter", aliases=["best"]).result()
        t.log_artifact(data / "train.jsonl", name=XSS, kind="dataset").result()
    with Tracker(dir=root, name="eval", project="p", system=False) as e:
        e.log_input(out / "checkpoint-4", name="sft-checkpoint-4", kind="model").result()
        e.log({"eval_loss": 0.5}, step=1)
    with Tracker(dir=root, name="sft-fork", project="p", fork_from="sft@4", system=False) as f:
        f.log({"loss": 0.3}, step=5)
    with Tracker(dir=root, name="bare", project="p", system=False) as b:
        b.log({"loss": 1.0}, step=1)
    return root, {"sft": t.id, "eval": e.id, "fork": f.id, "bare": b.id}


@pytest.fixture(scope="module")
def client(store):
    with TestClient(create_app(store[0], None), base_url="http://test") as c:
        yield c


@pytest.fixture(scope="module")
def dashboard(store):
    server = Server(store[0])
    yield server
    server.stop()


def _cli(root, *args):
    result = CliRunner().invoke(cli, [*args, "--dir", str(root)])
    assert result.exit_code == 0, result.output
    return result.output


# -- the API --------------------------------------------------------------------------------------
def test_the_checkpoints_api_marks_the_best_by_the_evaluation_loss_as_the_cli_does(store, client):
    root, ids = store
    body = client.get(f"/api/runs/{ids['sft']}/checkpoints").json()
    found = body["checkpoints"]
    assert [(c["step"], c["state"], c["best"]) for c in found] == [
        (2, "deleted", False),
        (4, "kept", True),
        (6, "kept", False),
    ]
    assert body["best"]["key"] == "eval_loss" and body["best"]["minimize"] and body["best"]["step"] == 4
    assert body["keys"][0] == "eval_loss" and set(body["metrics"]) == {"eval_loss", "eval_accuracy"}
    four = found[1]
    assert four["kind"] == "adapter" and four["size"] == "3.9 KB" and four["texts"]["eval_loss"] == "0.5"
    assert {(f["name"], f["size_text"], len(f["hash"])) for f in four["files"]} == {
        ("adapter_model.safetensors", "3.9 KB", 12),
        ("adapter_config.json", "2 B", 12),
    }
    said = json.loads(_cli(root, "checkpoints", ids["sft"], "--best", "eval_loss", "--json"))
    assert [(c["step"], c["deleted"], c["best"], c["bytes"]) for c in said] == [
        (c["step"], c["deleted"], c["best"], c["bytes"]) for c in found
    ]


def test_the_best_follows_the_metric_and_direction_asked_for_and_a_bad_one_says_why(store, client):
    sft = store[1]["sft"]
    url = f"/api/runs/{sft}/checkpoints"
    assert client.get(url, params={"best": "eval_accuracy"}).json()["best"]["step"] == 4  # highest
    assert client.get(url, params={"best": "eval/loss:max"}).json()["best"]["step"] == 2  # deleted counts
    nope = client.get(url, params={"best": "nope"})
    assert nope.status_code == 422
    assert nope.json()["detail"] == "no checkpoint has 'nope'; their metrics: eval_accuracy, eval_loss"
    assert client.get(url, params={"best": "eval_loss:sideways"}).status_code == 422
    bare = client.get(f"/api/runs/{store[1]['bare']}/checkpoints").json()
    assert bare == {"best": None, "keys": [], "metrics": [], "checkpoints": []}
    assert client.get("/api/runs/nosuchrun/checkpoints").status_code == 404


def _tree(cli_output: str, side: str) -> list[str]:
    """One side of ``tunetrack lineage``'s trees as ``depth|line`` strings, the tree's glyphs read as
    depth."""
    lines = cli_output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(side))
    out = []
    for line in lines[start + 1 :]:
        m = re.match(r"^([│├└─ ]*)(.*)$", line)
        assert m is not None
        if not m.group(1):
            break
        out.append(f"{len(m.group(1)) // 4 - 1}|{m.group(2)}")
    return out


def test_the_lineage_api_says_what_tunetrack_lineage_says_with_each_node_linked(store, client):
    root, ids = store
    body = client.get(f"/api/runs/{ids['sft']}/lineage").json()
    nodes = body["nodes"]
    said = _cli(root, "lineage", ids["sft"])
    for side, title in (("made_from", "made from"), ("made_into", "made into")):
        rows = [
            f"{r['depth']}|{r['words']} {nodes[r['node']]['type']} {nodes[r['node']]['label']}{nodes[r['node']]['note']}"
            for r in body[side]
        ]
        assert rows == _tree(said, title)
    assert [nodes[r["node"]]["href"] for r in body["made_from"]] == [
        "/artifacts?name=Qwen%2FQwen2.5-0.5B#v1",
        "/artifacts?name=alpaca-mini#v1",
    ]
    into = {nodes[r["node"]]["label"]: (r["words"], nodes[r["node"]]) for r in body["made_into"]}
    assert into["sft@2"][0] == "saved" and into["sft@2"][1]["deleted"] is True
    assert into["sft@4"][1]["href"] == f"/run/{ids['sft']}?step=4#checkpoints"
    assert into["eval"] == ("used by", into["eval"][1]) and into["eval"][1]["href"] == f"/run/{ids['eval']}"
    assert into["sft-fork"][0] == "forked into" and into["sft-adapter:v1"][0] in {"kept as", "logged"}


def test_the_lineage_graph_is_built_once_until_the_store_changes(store, tmp_path, monkeypatch):
    root, ids = store
    built = []
    real = produced.build
    monkeypatch.setattr(produced, "build", lambda *a: built.append(1) or real(*a))
    with TestClient(create_app(root, None), base_url="http://test") as c:
        for _ in range(3):
            assert c.get(f"/api/runs/{ids['sft']}/lineage").status_code == 200
        assert len(built) == 1
        with Tracker(dir=root, name="later", project="q", system=False) as t:
            t.log_input(
                "hf://Qwen/Qwen2.5-0.5B", name="Qwen/Qwen2.5-0.5B", kind="model", digest="a" * 64
            ).result()
        up = c.get(f"/api/runs/{t.id}/lineage").json()
        assert len(built) == 2 and [up["nodes"][r["node"]]["label"] for r in up["made_from"]] == [
            "Qwen/Qwen2.5-0.5B:v1"
        ]
    shutil.rmtree(root / t.id)  # the other tests' store as they expect it


def test_the_artifacts_api_lists_latest_versions_with_their_runs_and_one_artifacts_versions(store, client):
    root, ids = store
    listed = {a["name"]: a for a in client.get("/api/artifacts").json()["artifacts"]}
    assert set(listed) == {"alpaca-mini", "Qwen/Qwen2.5-0.5B", "sft-adapter", "sft-checkpoint-4", XSS}
    data = listed["alpaca-mini"]
    assert (data["kind"], data["size"], data["run"], data["aliases"]) == (
        "dataset",
        "reference",
        None,
        ["latest"],
    )
    assert data["used_by"] == [{"id": ids["sft"], "name": "sft"}]
    adapter = listed["sft-adapter"]
    assert adapter["aliases"] == ["latest", "best"] and adapter["size"] == "3.9 KB" and adapter["files"] == 2
    assert adapter["run"] == {"id": ids["sft"], "name": "sft"}
    datasets = client.get("/api/artifacts", params={"kind": "dataset"}).json()["artifacts"]
    assert [a["name"] for a in datasets] == [XSS, "alpaca-mini"]  # by name
    cli_said = {v["name"]: v for v in json.loads(_cli(root, "artifacts", "--json"))}
    assert {n: (v["version"], v["aliases"], v["used_by"]) for n, v in cli_said.items()} == {
        n: (a["version"], a["aliases"], [u["id"] for u in a["used_by"]]) for n, a in listed.items()
    }
    versions = client.get("/api/artifacts/versions", params={"name": "sft-adapter"}).json()["versions"]
    assert [(v["spec"], [f["name"] for f in v["file_list"]]) for v in versions] == [
        ("sft-adapter:v1", ["adapter_config.json", "adapter_model.safetensors"])
    ]
    missing = client.get("/api/artifacts/versions", params={"name": "nope"})
    assert missing.status_code == 404 and missing.json()["detail"].startswith(
        "no artifact 'nope'; artifacts: "
    )
    page = client.get("/artifacts")
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]


# -- in the browser -------------------------------------------------------------------------------
def test_the_checkpoints_tab_marks_the_best_labels_the_deleted_and_opens_the_files(store, dashboard, page):
    sft = store[1]["sft"]
    page.goto(f"{dashboard.base}/run/{sft}")
    tab = page.wait_for_selector("#tabs a[data-tab='checkpoints']:text('checkpoints (3)')")
    tab.click()
    page.wait_for_url(f"**/run/{sft}#checkpoints")
    rows = page.locator("#checkpoints tr.checkpoint")
    assert rows.count() == 3 and page.locator("#charts").is_hidden()
    assert page.locator("#checkpoints tr.best").get_attribute("data-step") == "4"
    assert page.inner_text("#checkpoints tr.best .ckpt-best") == "best"
    assert page.inner_text("#checkpoints tr[data-step='2'] .ckpt-state") == "deleted"
    assert page.inner_text("#ckpt-best") == "best: step 4 (lowest eval_loss)"
    headers = page.locator("#checkpoints > thead th").all_inner_texts()
    assert headers[:3] == ["step", "kind", "eval_loss"] and headers[-3:] == ["size", "files", "state"]
    page.click("#checkpoints tr[data-step='4'] .expand")
    files = page.locator("#checkpoints tr.ckpt-detail:visible .ckpt-files tbody tr")
    assert files.count() == 2 and "adapter_model.safetensors" in files.all_inner_texts()[1]
    page.screenshot(path=str(ARTIFACTS / "checkpoints-tab.png"), full_page=True)
    page.select_option("#ckpt-way", "max")  # the worst evaluation loss: the deleted checkpoint
    page.wait_for_selector("#checkpoints tr.best[data-step='2']")
    assert "best=eval_loss%3Amax" in page.url
    page.select_option("#ckpt-key", "eval_accuracy")
    page.wait_for_selector("#checkpoints tr.best[data-step='4']")
    assert page.inner_text("#ckpt-best") == "best: step 4 (highest eval_accuracy)"
    page.reload()  # the tab and the choice are in the URL
    page.wait_for_selector("#checkpoints tr.best[data-step='4']")
    assert (
        page.locator("#checkpoints-panel").is_visible() and page.input_value("#ckpt-key") == "eval_accuracy"
    )
    assert page.dialogs == []


def test_the_lineage_tab_shows_the_data_set_and_what_was_made_linked(store, dashboard, page):
    ids = store[1]
    page.goto(f"{dashboard.base}/run/{ids['sft']}#lineage")
    data = page.wait_for_selector("#made-from li[data-node='artifact:alpaca-mini:v1']")
    assert data.inner_text() == "input: artifact alpaca-mini:v1 (dataset)"
    assert data.query_selector("a").get_attribute("href") == "/artifacts?name=alpaca-mini#v1"
    made = page.locator("#made-into li").all_inner_texts()
    assert "used by run eval (finished)" in made and "forked into run sft-fork (finished)" in made
    assert "saved checkpoint sft@2 (adapter, deleted)" in made
    page.screenshot(path=str(ARTIFACTS / "lineage-tab.png"), full_page=True)
    page.click(f"#made-into li[data-node='checkpoint:{ids['sft']}@4'] a")  # to the run's checkpoint
    page.wait_for_selector("#checkpoints tr.here[data-step='4']")
    assert page.locator("#checkpoints-panel").is_visible()
    page.goto(f"{dashboard.base}/run/{ids['bare']}")  # nothing saved: no Checkpoints tab
    page.wait_for_selector("#facts dd")
    page.click("#tabs a[data-tab='lineage']")
    page.wait_for_selector("#made-from li.muted:text('nothing recorded')")
    assert page.locator("#tabs a[data-tab='checkpoints']").is_hidden()


def test_the_artifacts_page_lists_artifacts_and_links_their_runs(store, dashboard, page):
    ids = store[1]
    page.goto(f"{dashboard.base}/run/{ids['sft']}")
    page.click("header a.nav:text('artifacts')")
    page.wait_for_selector("#artifacts tbody tr[data-name='alpaca-mini']")
    names = page.locator("#artifacts tbody tr[data-name]").evaluate_all(
        "rows => rows.map(r => r.dataset.name)"
    )
    assert sorted(names) == sorted(
        ["alpaca-mini", "Qwen/Qwen2.5-0.5B", "sft-adapter", "sft-checkpoint-4", XSS]
    )
    adapter = page.locator("#artifacts tr[data-name='sft-adapter']")
    assert adapter.locator(".alias").all_inner_texts() == ["latest", "best"]
    assert adapter.locator("td").nth(6).locator("a").get_attribute("href") == f"/run/{ids['sft']}"
    page.click("#artifacts tr[data-name='alpaca-mini'] .expand")  # used by: 1
    user = page.wait_for_selector("#artifacts tr.users-row:visible a")
    assert user.inner_text() == "sft" and user.get_attribute("href") == f"/run/{ids['sft']}"
    page.click("#artifacts tr[data-name='sft-adapter'] td.name a")
    page.wait_for_selector("#versions tbody tr#v1")
    assert "name=sft-adapter" in page.url and page.inner_text("#versions-title") == "sft-adapter: versions"
    page.click("#versions tr#v1 .expand")
    assert "adapter_model.safetensors" in page.inner_text("#versions tr.files-row:visible")
    page.screenshot(path=str(ARTIFACTS / "artifacts.png"), full_page=True)
    page.goto(f"{dashboard.base}/artifacts?name=nope")
    page.wait_for_selector("#versions-error:text('no artifact')")
    assert page.locator(f"#artifacts tr[data-name='{XSS}'] td.name a").inner_text() == XSS  # as text
    assert page.dialogs == [] and page.locator("main img").count() == 0


def test_a_live_runs_checkpoints_tab_follows_its_saves(store, dashboard, page, tmp_path):
    root = store[0]
    live = Tracker(dir=root, name="live", project="live", system=False).start()
    try:
        live.log({"loss": 1.0}, step=1)
        live.log_checkpoint(_folder(tmp_path / "checkpoint-1", {"model.safetensors": b"m" * 10}), step=1)
        wait_until(lambda: open_run(live.id, dir=root).checkpoints())
        page.goto(f"{dashboard.base}/run/{live.id}#checkpoints")
        page.wait_for_selector("#checkpoints tr.checkpoint[data-step='1']")
        live.log({"loss": 0.5, "eval_loss": 0.4}, step=2)
        second = _folder(tmp_path / "checkpoint-2", {"model.safetensors": b"n" * 10})
        live.log_checkpoint(second, step=2, metrics={"eval_loss": 0.4})
        page.wait_for_selector("#checkpoints tr.best[data-step='2']")  # the page's poll brought it
        assert page.inner_text("#tabs a[data-tab='checkpoints']") == "checkpoints (2)"
    finally:
        live.finish()
    shutil.rmtree(root / live.id)  # the other tests' store as they expect it


def test_an_evaluation_attached_later_shows_on_its_checkpoint_and_can_mark_the_best(tmp_path):
    """``tunetrack.log_evaluation`` after the run: its scores are metrics of the checkpoint in the API
    (the Checkpoints tab's columns and expanded view), and the best can be picked by one of them."""
    import tunetrack
    from tunetrack import Tracker

    root = tmp_path / "runs"
    with Tracker(dir=root, name="scored", system=False) as t:
        for step in (2, 4):
            folder = tmp_path / f"checkpoint-{step}"
            folder.mkdir()
            (folder / "model.safetensors").write_bytes(b"m" * step)
            t.log({"loss": 1.0 / step}, step=step)
            t.log_checkpoint(folder)
    tunetrack.log_evaluation("scored@2", {"mmlu": {"acc": 0.40}}, suite="lm-eval", dir=root)
    tunetrack.log_evaluation("scored@4", {"mmlu": {"acc": 0.35}}, suite="lm-eval", dir=root)
    with TestClient(create_app(root, None), base_url="http://test") as c:
        run_id = open_run("scored", dir=root).id
        got = c.get(f"/api/runs/{run_id}/checkpoints", params={"best": "lm-eval/mmlu/acc:max"}).json()
    assert "lm-eval/mmlu/acc" in got["metrics"]
    assert [(c["step"], c["texts"]["lm-eval/mmlu/acc"], c["best"]) for c in got["checkpoints"]] == [
        (2, "0.4", True),
        (4, "0.35", False),
    ]
