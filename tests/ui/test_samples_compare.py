"""Two runs' samples side by side (issue 22): the same step, the same prompt, the i-th completion of
each, the words one has and the other not marked. Its API (``/api/samples/compare``, the reader's
``word_diff``) and the pages in Chromium: from the run's Samples view to the compare page, then
another step and another prompt there."""

from __future__ import annotations

from fastapi.testclient import TestClient

from conftest import ARTIFACTS, XSS
from tunetrack import Tracker
from tunetrack.reader.samples import word_diff
from tunetrack.ui.app import create_app

PROMPTS = ["What is six times seven?", "Name a prime above 10.", XSS]


def _grpo(root, name: str, answer: str) -> str:
    """A run with TRL's completions table (its own step column, chat prompts, two reward columns and the
    advantage), two generations per prompt, at steps 1 and 2; ``answer`` is what differs."""
    t = Tracker(dir=root, name=name, system=False).start()
    for step in (1, 2):
        t.log({"loss": 1.0 / step}, step=step)
        rows = []
        for p, prompt in enumerate(PROMPTS):
            for g in range(2):
                rows.append(
                    {
                        "step": step,
                        "prompt": [{"role": "user", "content": prompt}],
                        "completion": f"<think>step {step}, try {g}</think>\nThe answer is {answer} because {p}.",
                        "accuracy_reward": 1.0 if answer == "42" else 0.0,
                        "format_reward": 0.5,
                        "advantage": g - 0.5,
                    }
                )
        t.log_table("completions", rows, step=step)
    t.finish()
    return t.id


def test_the_words_that_changed():
    a, b = word_diff("The answer is 42.\nDone", "The answer is 41.\nDone now")
    assert a == [("The answer is ", False), ("42.\n", True), ("Done", False)]
    assert b == [("The answer is ", False), ("41.\n", True), ("Done ", False), ("now", True)]
    assert "".join(t for t, _ in a) == "The answer is 42.\nDone"  # the segments join back to the text


def test_the_side_by_side_api(root):
    a = _grpo(root, "right", "42")
    b = _grpo(root, "wrong", "41")
    with TestClient(create_app(root), base_url="http://test") as client:
        got = client.get("/api/samples/compare", params={"id": [a, b]}).json()
        assert (got["keys"], got["key"], got["steps"], got["step"]) == (
            ["completions"],
            "completions",
            [1, 2],
            2,
        )
        assert got["prompts"] == [f"user: {p}" for p in PROMPTS] and got["prompt"] == f"user: {PROMPTS[0]}"
        assert (got["completion_column"], got["total"], len(got["pairs"])) == ("completion", [2, 2], 2)
        first = got["pairs"][0]
        assert first["a"]["row"]["accuracy_reward"] == 1.0 and first["b"]["row"]["accuracy_reward"] == 0.0
        assert [t for t, changed in first["diff"]["a"] if changed] == ["42 "]
        assert [t for t, changed in first["diff"]["b"] if changed] == ["41 "]
        # the prompt of the first run's row 5 (the third prompt), at step 1
        third = client.get("/api/samples/compare", params={"id": [a, b], "step": 1, "like_index": 5}).json()
        assert third["prompt"] == f"user: {XSS}" and [p["a"]["index"] for p in third["pairs"]] == [4, 5]
        assert client.get("/api/samples/compare", params={"id": [a]}).status_code == 422
        assert client.get("/api/samples/compare", params={"id": [a, b], "step": 9}).status_code == 404
        assert client.get("/api/samples/compare", params={"id": [a, b], "key": "x"}).status_code == 404


def test_two_runs_side_by_side_in_chromium(root, server_factory, page):
    a = _grpo(root, "right", "42")
    b = _grpo(root, "wrong", "41")
    server = server_factory(root)
    # from the run's Samples view: a row at step 1, then "side by side with another run"
    page.goto(f"{server.base}/run/{a}")
    page.wait_for_selector("#sample-table .vrow")
    page.eval_on_selector("#sample-step", "s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
    page.wait_for_function(
        "() => document.querySelector('#sample-step-label').textContent.startsWith('step 1 ')"
    )
    page.click("#sample-table .vrow[data-index='2']")  # the second prompt's first generation
    page.wait_for_selector("#sample-other option:nth-child(2)", state="attached")
    page.select_option("#sample-other", b)
    page.wait_for_url(f"**/compare?ids={a}%2C{b}&key=completions&step=1&row=2#samples")
    page.wait_for_selector(".pairs .side mark")
    assert page.input_value("#sample-step") == "1"
    assert page.inner_text("#sample-prompt-text") == f"user: {PROMPTS[1]}"
    assert page.locator(".pairs .pair-head").all_inner_texts() == [f"right ({a})", f"wrong ({b})"]
    left = page.locator(".side[data-pair='0'][data-side='a']")
    right = page.locator(".side[data-pair='0'][data-side='b']")
    assert (
        left.locator(".diff-text").inner_text() == "<think>step 1, try 0</think>\nThe answer is 42 because 1."
    )
    assert (
        right.locator(".diff-text").inner_text()
        == "<think>step 1, try 0</think>\nThe answer is 41 because 1."
    )
    assert left.locator("mark.changed").all_inner_texts() == ["42 "]
    assert right.locator("mark.changed").all_inner_texts() == ["41 "]
    assert "accuracy_reward 1" in left.inner_text() and "accuracy_reward 0" in right.inner_text()
    assert page.locator(".side").count() == 4  # two generations of this prompt in each run
    # another step, another prompt: user text stays text
    page.select_option("#sample-step", "2")
    page.wait_for_function("() => document.querySelector('.side .diff-text').textContent.includes('step 2')")
    page.select_option("#sample-prompt", "2")
    page.wait_for_function(
        f"() => document.querySelector('#sample-prompt-text').textContent === {f'user: {XSS}'!r}"
    )
    assert page.locator(".side[data-pair='1'][data-side='b'] mark.changed").all_inner_texts() == ["41 "]
    assert "try 1" in page.locator(".side[data-pair='1'][data-side='a']").inner_text()
    assert page.dialogs == [] and page.query_selector("#samples-section img") is None
    page.locator("#samples-section").screenshot(path=str(ARTIFACTS / "samples-side-by-side.png"))
