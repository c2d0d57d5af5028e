"""The Samples view of token-level samples and agent trajectories (issue 35): a row in full from the
server carries its tokens and values per token (``reader.tokens.tokens_of``), which the page colours
on the viridis scale by the value chosen; a trajectory reads as turns, its tool calls with their
results and a reward badge per turn, long ones folded; run text is only ever text."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from fastapi.testclient import TestClient

from conftest import XSS
from test_tokens import TRAJECTORY, completion
from tunetrack import Tracker
from tunetrack.reader.tokens import tokens_of
from tunetrack.ui.app import create_app

SCRIPT = "<script>alert(2)</script>"
#: a trajectory whose every text is markup: the user's message, a tool call's arguments, its result
HOSTILE = [
    {"role": "user", "content": f"{SCRIPT} and {XSS}"},
    {
        "role": "assistant",
        "content": XSS,
        "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": XSS, "arguments": f'{{"q": "{SCRIPT}"}}'}}
        ],
        "reward": 0.5,
    },
    {"role": "tool", "tool_call_id": "x1", "content": SCRIPT},
    {"role": "assistant", "content": f"done {XSS}", "reward": -1.0},
]


def long_trajectory() -> list[dict]:
    """33 turns: a system prompt, ten tool calls each answered, then ten long exchanges, an answer."""
    out: list[dict] = [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Go."},
    ]
    for i in range(10):
        out.append(
            {
                "role": "assistant",
                "content": f"step {i}",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "search", "arguments": f'{{"n": {i}}}'},
                    }
                ],
                "reward": 0.0,
            }
        )
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"found {i}"})
    for i in range(10):
        out.append({"role": "user", "content": f"and then {i}?"})
        out.append({"role": "assistant", "content": f"answer {i}: " + "words of a long answer " * 40})
    out.append({"role": "assistant", "content": "The end.", "reward": 1.0})
    return out


def _seed(root):
    edge = {
        **completion(1, 3),
        "tokens": ["a", XSS, "c"],
        "logprob": [float("-inf"), -1.0, float("nan")],
        "entropy": [0.1, 0.2, 0.3],
    }
    with Tracker(dir=root, name="tokens", system=False, console=False) as run:
        run.log_table("completions", [completion(1, i) for i in range(3)] + [edge], step=1)
        run.log_table("completions", [completion(2, i) for i in range(2)], step=2)
        run.log_table("completions", [completion(3, 0)], step=2)  # a second table at the step
        run.log_table(
            "rollouts",
            [
                {"prompt": "What is 17 * 23?", "trajectory": TRAJECTORY, "reward": 1.0},
                {"prompt": "hostile", "trajectory": HOSTILE, "reward": 0.0},
                {"prompt": "long", "trajectory": long_trajectory(), "reward": 1.0},
            ],
            step=1,
        )
    return run.id


def test_a_row_in_full_carries_its_tokens(root):
    run_id = _seed(root)
    with TestClient(create_app(root), base_url="http://test") as client:
        base = f"/api/runs/{run_id}/samples"
        step1 = client.get(base, params={"key": "completions", "step": 1}).json()
        assert step1["columns"]["tokens"] == "sequence" and step1["columns"]["logprob"] == "sequence"
        for sample in step1["samples"][:3]:
            got = client.get(
                f"{base}/row", params={"key": "completions", "step": 1, "index": sample["index"]}
            )
            full = got.json()
            assert full["row"] == completion(1, sample["index"])
            assert full["tokens"] == asdict(tokens_of(full["row"]))
        # -inf and NaN per token travel as null, in the table and in the row (JSON has neither)
        assert step1["samples"][3]["row"]["logprob"] == [None, -1.0, None]
        edge = client.get(f"{base}/row", params={"key": "completions", "step": 1, "index": 3}).json()
        assert edge["tokens"] == {
            "column": "tokens",
            "tokens": ["a", XSS, "c"],
            "values": {"logprob": [None, -1.0, None], "entropy": [0.1, 0.2, 0.3]},
        }
        # two tables at one step: the one logged at the time asked for
        step2 = client.get(base, params={"key": "completions", "step": 2}).json()["samples"]
        second = step2[-1]
        assert second["row"] == completion(3, 0) and second["index"] == 0
        got = client.get(
            f"{base}/row", params={"key": "completions", "step": 2, "index": 0, "time": second["time"]}
        ).json()
        assert got["row"] == completion(3, 0) and got["tokens"]["tokens"] == completion(3, 0)["tokens"]
        first = client.get(f"{base}/row", params={"key": "completions", "step": 2, "index": 0}).json()
        assert first["row"] == completion(2, 0)
        # a trajectory has no tokens; a row that is not there is a 404
        rollout = client.get(f"{base}/row", params={"key": "rollouts", "step": 1, "index": 0}).json()
        assert rollout["tokens"] is None and rollout["row"]["trajectory"] == TRAJECTORY
        assert client.get(f"{base}/row", params={"key": "rollouts", "step": 1, "index": 9}).status_code == 404
        assert client.get(f"{base}/row", params={"key": "nope", "step": 1, "index": 0}).status_code == 404


def _texts(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def _colour(page, selector: str) -> str:
    return page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")


def _open_row(page, index: int) -> None:
    page.click(f"#sample-table .vrow[data-index='{index}']")
    page.wait_for_function(
        f"() => document.querySelector('#sample-detail h3')?.textContent.endsWith('row {index + 1}')"
    )


@pytest.mark.parametrize("width", [1024, 1440])
def test_tokens_coloured_and_a_trajectory_as_turns(root, server_factory, page, width):
    run_id = _seed(root)
    server = server_factory(root)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{server.base}/run/{run_id}")
    page.wait_for_selector("#sample-table .vrow")
    page.eval_on_selector("#sample-step", "s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
    page.wait_for_function("() => document.querySelector('#sample-count').textContent === '4 rows'")
    # the table's cells keep lists short: their length and first items
    cells = page.locator("#sample-table .vrow[data-index='0'] .vcell")
    names = _texts(page, "#sample-table .vhead .vcell")
    assert cells.nth(names.index("tokens")).inner_text().startswith('[3] "t1.0.0", "t1.0.1"')
    assert cells.nth(names.index("logprob")).inner_text() == "[3] -0.1, -0.2, -0.3"

    # a row in full: its tokens in order, each on the colour of its logprob, the exact value on hover
    row = completion(1, 2)  # logprobs fall along the tokens: the first the highest, the last the lowest
    _open_row(page, 2)
    page.wait_for_selector("#sample-tokens[data-by='logprob'] .tok")
    tokens = page.locator("#sample-tokens .tok")
    assert _texts(page, "#sample-tokens .tok") == row["tokens"]
    low, high = _colour(page, "#sample-tokens .scale-low"), _colour(page, "#sample-tokens .scale-high")
    assert low == "rgb(68, 1, 84)" and high == "rgb(253, 231, 37)"  # viridis' ends
    last = f"#sample-tokens .tok >> nth={len(row['tokens']) - 1}"
    assert _colour(page, "#sample-tokens .tok >> nth=0") == high and _colour(page, last) == low
    middle = {_colour(page, f"#sample-tokens .tok >> nth={i}") for i in range(1, len(row["tokens"]) - 1)}
    assert not middle & {low, high}
    assert f"logprob {row['logprob'][-1]!r}" in tokens.last.get_attribute("title")
    assert f"entropy {row['entropy'][-1]!r}" in tokens.last.get_attribute("title")
    assert page.inner_text("#sample-tokens .tokens-head").startswith("tokens")
    assert page.inner_text("#sample-tokens .token-legend").split() == [
        "logprob",
        "low",
        "-0.5",
        "-0.1",
        "high",
    ]
    page.screenshot(path=f"/tmp/dash-tokens-{width}-logprob.png", full_page=True)
    page.locator("#sample-tokens").screenshot(path=f"/tmp/dash-tokens-{width}-tokens.png")
    # by entropy, which rises along the tokens: the colours turn round
    page.select_option("#token-by", "entropy")
    page.wait_for_selector("#sample-tokens[data-by='entropy']")
    assert _colour(page, "#sample-tokens .tok >> nth=0") == low and _colour(page, last) == high
    assert page.inner_text("#sample-tokens .token-legend").split() == ["entropy", "low", "0.5", "4.5", "high"]
    # the next row opened is coloured by the value chosen; a token that is markup is text, a value of
    # -inf or NaN (null from the server) no colour
    _open_row(page, 3)
    page.wait_for_selector("#sample-tokens[data-by='entropy'] .tok")
    page.select_option("#token-by", "logprob")
    page.wait_for_selector("#sample-tokens[data-by='logprob']")
    assert page.locator("#sample-tokens .tok").nth(1).text_content() == XSS
    assert page.locator("#sample-tokens .tok.no-value").count() == 2
    assert page.locator("#sample-detail img").count() == 0

    # another table: a trajectory as turns, the tool call with its result, a reward badge per turn
    page.select_option("#sample-key", "rollouts")
    page.wait_for_selector("#sample-table .vhead [data-sort='trajectory']")
    brief = page.locator("#sample-table .vrow[data-index='0'] .chat").inner_text()
    assert "→ calc(" in brief
    _open_row(page, 0)
    page.wait_for_selector("#sample-detail .chat details.msg")
    chat = "#sample-detail .cell-full.chat"  # the trajectory: the table's one conversation
    turns = page.locator(f"{chat} > details.msg")
    assert turns.count() == 4  # the tool's result is under its call, not a turn of its own
    assert [turns.nth(i).locator("summary b").inner_text() for i in range(4)] == [
        "system",
        "user",
        "assistant",
        "assistant",
    ]
    assert all(turns.nth(i).evaluate("d => d.open") for i in range(4))  # short: all open
    call = turns.nth(2).locator(".tool-call")
    assert call.locator(".tool-name").inner_text() == "calc"
    assert call.locator(".tool-args").inner_text() == '{"x": "17*23"}'
    assert "mono" in call.locator(".tool-args").evaluate("e => getComputedStyle(e).fontFamily")
    assert call.locator(".tool-result .tool-output").inner_text() == "391"
    badges = _texts(page, f"{chat} .reward-badge")
    assert badges == ["0", "1"]
    assert "17 * 23 = 391." in turns.nth(3).inner_text()
    assert page.locator("#sample-tokens").count() == 0  # no tokens in this table
    page.locator("#sample-detail").screenshot(path=f"/tmp/dash-tokens-{width}-trajectory.png")

    # every text of the hostile trajectory shown as text: no element made of it, no dialog
    _open_row(page, 1)
    page.wait_for_selector(f"{chat} .tool-output")
    text = page.inner_text("#sample-detail")
    for markup in (SCRIPT, XSS, f'{{"q": "{SCRIPT}"}}'):
        assert markup in text
    assert page.locator(f"{chat} .tool-name").inner_text() == XSS
    assert page.locator("#sample-detail img, #sample-detail script").count() == 0
    assert _texts(page, f"{chat} .reward-badge") == ["0.5", "-1"]
    page.locator("#sample-detail").screenshot(path=f"/tmp/dash-tokens-{width}-hostile.png")

    # a trajectory of 33 turns: the first and last open, the rest folded to a line each that says
    # its role and first words; every turn there; open all shows every text
    _open_row(page, 2)
    page.wait_for_selector(f"{chat} .chat-bar")
    turns = page.locator(f"{chat} > details.msg")
    assert turns.count() == 33
    opened = page.eval_on_selector_all(f"{chat} > details.msg", "ds => ds.map(d => d.open)")
    assert opened == [True] + [False] * 31 + [True]
    heads = page.eval_on_selector_all(
        f"{chat} > details.msg > summary", "ss => ss.map(s => s.getBoundingClientRect().height)"
    )
    assert max(heads) < 40  # a folded turn is one line however long it is
    assert "33 turns, 10 tool calls" in page.inner_text(f"{chat} .chat-bar")
    assert "answer 3: words of a long" in turns.nth(2 + 10 + 7).locator(".turn-preview").inner_text()
    wide = page.eval_on_selector(
        "#sample-detail",
        """d => { const r = d.getBoundingClientRect().right;
                 return [...d.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > r + 1)
                   .map(e => e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right + '>' + r).slice(0, 5); }""",
    )
    assert wide == []
    page.locator("#sample-detail").screenshot(path=f"/tmp/dash-tokens-{width}-long-folded.png")
    page.click(f"{chat} .chat-bar button:text-is('open all')")
    page.wait_for_function(f"() => [...document.querySelectorAll('{chat} > details.msg')].every(d => d.open)")
    text = page.inner_text("#sample-detail")
    for i in range(10):
        assert f"found {i}" in text and f"and then {i}?" in text
    assert text.count("words of a long answer") >= 400
    assert page.dialogs == []


def test_the_compare_page_words_values_per_token_briefly(root, server_factory, page):
    """Side by side, a row's lists read as their length and first items (a 1,000-token completion's
    values used to be printed whole, as JSON)."""
    ids = []
    for name in ("a", "b"):
        with Tracker(dir=root, name=name, system=False, console=False) as run:
            run.log_table("completions", [completion(1, i) for i in range(2)], step=1)
        ids.append(run.id)
    server = server_factory(root)
    page.set_viewport_size({"width": 1024, "height": 900})
    page.goto(f"{server.base}/compare?ids={','.join(ids)}&key=completions&step=1&row=0#samples")
    page.wait_for_selector(".pairs .side .side-meta")
    meta = page.locator(".pairs .side[data-pair='0'][data-side='a'] .side-meta").inner_text()
    assert "logprob [3] -0.1, -0.2, -0.3" in meta and 'tokens [3] "t1.0.0", "t1.0.1", "t1.0.2"' in meta
    assert "[-0.1" not in meta
