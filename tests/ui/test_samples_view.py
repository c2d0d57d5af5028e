"""The Samples view: its API (one step's rows, filtered and sorted as ``tunetrack samples`` does, one
prompt across training, a column's mean per step) and the run page in Chromium (a step slider, a
virtualized table of 1,000 rows of 4 kB, sorting and a regex filter, a row opened in full with its
conversation and image, the same prompt across steps, the distribution and the mean curve)."""

from __future__ import annotations

import time

import numpy as np
from fastapi.testclient import TestClient

from conftest import ARTIFACTS, XSS
from tunetrack import Tracker
from tunetrack.ui.app import create_app

PROMPTS = [f"Prompt {i}: " + "explain the steps of your reasoning carefully. " * 3 for i in range(8)]


def _seed(root, rows_last=1000):
    t = Tracker(dir=root, name="grpo", system=False).start()
    for step in (1, 2, 3):
        t.log({"loss": 1.0 / step}, step=step)
        n = rows_last if step == 3 else 16
        t.log_table(
            "completions",
            [
                {
                    "step": step,
                    "prompt": [
                        {"role": "system", "content": "be brief"},
                        {"role": "user", "content": PROMPTS[i % 8]},
                    ],
                    "completion": f"completion {i} at step {step}: " + "lorem ipsum dolor sit amet " * 150,
                    "reward": (i % 10) / 10 + step,
                }
                for i in range(n)
            ],
        )
    t.log_table("pictures", [{"caption": XSS, "image": np.full((4, 4), 200, dtype=np.uint8)}], step=3)
    t.finish()
    return t.id


def test_the_samples_api(root):
    run_id = _seed(root, rows_last=40)
    with TestClient(create_app(root), base_url="http://test") as client:
        meta = client.get(f"/api/runs/{run_id}").json()["samples"]
        assert meta == {"keys": ["completions", "pictures"], "rows": 16 + 16 + 40 + 1, "steps": 3}
        last = client.get(f"/api/runs/{run_id}/samples", params={"key": "completions", "last": True}).json()
        assert last["step"] == 3 and last["total"] == 40 and last["prompt_column"] == "prompt"
        assert last["keys"]["completions"] == {"steps": [1, 2, 3], "rows": 72}
        assert last["columns"] == {
            "step": "number",
            "prompt": "chat",
            "completion": "text",
            "reward": "number",
        }
        sorted_ = client.get(
            f"/api/runs/{run_id}/samples",
            params={"key": "completions", "step": 2, "sort": "reward:desc", "grep": "completion 1[01]? "},
        ).json()
        assert [s["index"] for s in sorted_["samples"]] == [1, 11, 10]
        same = client.get(
            f"/api/runs/{run_id}/samples", params={"key": "completions", "like_step": 3, "like_index": 5}
        ).json()
        assert {s["step"] for s in same["samples"]} == {1, 2, 3}
        assert all(s["row"]["prompt"][1]["content"] == PROMPTS[5] for s in same["samples"])
        curve = client.get(
            f"/api/runs/{run_id}/samples/curve", params={"key": "completions", "column": "reward"}
        )
        assert curve.json()["x"] == [1, 2, 3] and abs(curve.json()["y"][0] - 1.375) < 1e-9
        bad = client.get(f"/api/runs/{run_id}/samples", params={"grep": "("})
        assert bad.status_code == 422 and "not a regular expression" in bad.json()["detail"]
        assert client.get(f"/api/runs/{run_id}/samples", params={"key": "nope"}).status_code == 404


def test_the_samples_view(root, server_factory, page):
    run_id = _seed(root)
    server = server_factory(root)
    page.goto(f"{server.base}/run/{run_id}")
    link = page.wait_for_selector("#samples-link a")
    assert link.inner_text() == "1,033 samples at 3 steps"
    page.wait_for_selector("#sample-table .vrow")
    assert page.inner_text("#sample-step-label") == "step 3 (3 of 3)"
    assert page.inner_text("#sample-count") == "1,000 rows"
    # virtualized: a handful of rows exist, the scroll height is the whole table's
    drawn = page.locator("#sample-table .vrow").count()
    assert 5 < drawn < 40
    started = time.perf_counter()
    for top in range(0, 88_000, 4_000):
        page.eval_on_selector("#sample-table .vbody", f"b => {{ b.scrollTop = {top}; }}")
        page.wait_for_function(
            f"() => document.querySelector('#sample-table .vrow[data-index=\"{top // 88}\"]') !== null"
        )
    assert time.perf_counter() - started < 10  # 22 jumps through 4 MB of rows
    page.eval_on_selector("#sample-table .vbody", "b => { b.scrollTop = b.scrollHeight; }")
    page.wait_for_selector("#sample-table .vrow[data-index='999']")
    assert page.locator("#sample-table .vrow").count() < 40
    # sort by the reward, highest first (a second click)
    page.click("#sample-table .vhead [data-sort='reward']")
    page.wait_for_selector("#sample-table .vhead [data-sort='reward']:has-text('▲')")
    page.click("#sample-table .vhead [data-sort='reward']")
    page.wait_for_selector("#sample-table .vhead [data-sort='reward']:has-text('▼')")
    first = page.locator("#sample-table .vrow[data-index='0']")
    assert first.locator(".vcell").nth(3).inner_text() == "3.9"
    # a regex over the text
    page.fill("#sample-grep", r"completion 99\d ")
    page.wait_for_function("() => document.querySelector('#sample-count').textContent === '10 rows'")
    # the distribution of the step's rewards and the mean reward curve
    assert page.get_attribute("#sample-hist", "data-count") == "10"
    page.wait_for_selector("#sample-curve[data-points='3']")
    # a row in full: the conversation, the whole completion, then the same prompt over training
    page.click("#sample-table .vrow[data-index='0']")
    detail = page.wait_for_selector("#sample-detail")
    assert page.locator("#sample-detail .chat .msg").count() == 2
    assert "be brief" in page.inner_text("#sample-detail .chat .msg-system")
    assert page.inner_text("#sample-detail").count("lorem ipsum") == 150
    page.click("#sample-detail button")
    page.wait_for_selector("#sample-across tbody tr")
    assert (
        page.locator("#sample-across tbody tr").count() == 2 + 2 + 125
    )  # 999 % 8 = 7: prompt 7 at each step
    assert "over 3 steps" in page.inner_text("#sample-across")
    detail.screenshot(path=str(ARTIFACTS / "samples-detail.png"))
    # another step, by the slider
    page.fill("#sample-grep", "")
    page.eval_on_selector("#sample-step", "s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
    page.wait_for_function("() => document.querySelector('#sample-count').textContent === '16 rows'")
    assert page.inner_text("#sample-step-label") == "step 1 (1 of 3)"
    # another table: images inline, user text as text
    page.select_option("#sample-key", "pictures")
    page.wait_for_selector("#sample-table img.thumb")
    assert page.evaluate("() => document.querySelector('#sample-table img.thumb').naturalWidth") == 4
    assert XSS in page.inner_text("#sample-table") and page.dialogs == []
