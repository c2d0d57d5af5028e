"""Token-level samples and trajectories (issue 35): a completion's tokens with a value per token
(log-probability, entropy, advantage) stored as lists and read back aligned, after a resume too; a
multi-turn conversation with tool calls, tool results and a reward per turn, read back whole."""

from __future__ import annotations

import pytest

from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.reader.samples import SEQUENCE
from tunetrack.reader.tokens import tokens_of


def completion(step: int, i: int) -> dict:
    tokens = [f"t{step}.{i}.{j}" for j in range(3 + i)]
    return {
        "prompt": f"prompt {i}",
        "completion": "".join(tokens),
        "tokens": tokens,
        "logprob": [-0.1 * (j + 1) * step for j in range(len(tokens))],
        "entropy": [0.5 + j for j in range(len(tokens))],
        "reward": float(i),
    }


def test_values_per_token_read_back_aligned_after_a_resume(tmp_path):
    with Tracker(dir=tmp_path, name="tokens", system=False, console=False) as run:
        for step in range(1, 5):
            run.log({"loss": 1.0 / step}, step=step)
            run.log_table("completions", [completion(step, i) for i in range(3)], step=step)
        run.rewind(2)  # resumed from the checkpoint of step 2: steps 3 and 4 again, otherwise
        for step in (3, 4):
            run.log({"loss": 2.0 / step}, step=step)
            run.log_table("completions", [completion(10 * step, i) for i in range(2)], step=step)
    read = open_run(run.id, tmp_path)
    (table,) = read.sample_tables("completions", step=1)
    assert table.columns()["tokens"] == SEQUENCE and table.columns()["logprob"] == SEQUENCE
    for step, made in ((1, 1), (2, 2), (3, 30), (4, 40)):
        rows = [s["row"] for s in read.samples("completions", step=step)]
        assert rows == [completion(made, i) for i in range(3 if step < 3 else 2)]
        for row in rows:
            found = tokens_of(row)
            assert found is not None and found.column == "tokens" and found.tokens == row["tokens"]
            assert found.values == {"logprob": row["logprob"], "entropy": row["entropy"]}


def test_no_tokens_or_values_of_another_length(tmp_path):
    assert tokens_of({"completion": "hi", "reward": 1.0}) is None
    assert tokens_of({"tokens": ["a", "b"], "logprob": [-1.0]}) is None  # not aligned: no values
    mixed = tokens_of({"words": ["a"], "completion_tokens": ["x", "y"], "adv": [0.1, 0.2], "ids": [5.0]})
    assert mixed is not None and mixed.column == "completion_tokens" and mixed.values == {"adv": [0.1, 0.2]}


TRAJECTORY = [
    {"role": "system", "content": "You can call tools."},
    {"role": "user", "content": "What is 17 * 23?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"x": "17*23"}'}}
        ],
        "reward": 0.0,
    },
    {"role": "tool", "tool_call_id": "c1", "content": "391"},
    {"role": "assistant", "content": "17 * 23 = 391.", "reward": 1.0},
]


@pytest.mark.parametrize("turns", [2, 5])
def test_a_multi_turn_trajectory_round_trips(tmp_path, turns):
    rows = [{"prompt": "What is 17 * 23?", "trajectory": TRAJECTORY[:turns], "reward": 1.0}]
    with Tracker(dir=tmp_path, name="agent", system=False, console=False) as run:
        run.log_table("rollouts", rows, step=1)
    (sample,) = open_run(run.id, tmp_path).samples("rollouts")
    assert sample["row"] == rows[0]


def test_the_terminal_view_colours_a_completion_by_its_values_per_token(tmp_path):
    import asyncio

    from support.tui import tab_key, until
    from tunetrack.tui.app import TunetrackApp
    from tunetrack.tui.palette import heat_colour

    with Tracker(dir=tmp_path, name="tokens", system=False, console=False) as run:
        run.log_table("completions", [completion(1, i) for i in range(2)], step=1)
        run.log_table("rollouts", [{"prompt": "17 * 23?", "trajectory": TRAJECTORY}], step=1)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(140, 44)) as pilot:
            await until(pilot, lambda: app.model.current == run.id)
            await pilot.press(tab_key("samples"))
            detail = app.query_one("#samples-text")
            await until(pilot, lambda: "tokens by logprob" in str(detail.render()))
            shown = detail.render()
            dark = app.current_theme.dark
            spans = {shown.plain[s.start : s.end]: str(s.style) for s in shown.spans}
            row = completion(1, 0)  # its logprobs fall along the tokens: the first the highest
            assert spans[row["tokens"][0]].endswith("on rgb({},{},{})".format(*heat_colour(1.0, dark)))
            assert spans[row["tokens"][-1]].endswith("on rgb({},{},{})".format(*heat_colour(0.0, dark)))
            await pilot.press("v")
            await until(pilot, lambda: "tokens by entropy" in str(detail.render()))
            await pilot.press("n")  # the other table: the trajectory as a conversation, its tools and rewards
            await until(pilot, lambda: "→ calc(" in str(detail.render()))
            text = str(detail.render())
            assert "tool: 391" in text and "assistant: 17 * 23 = 391.  [reward 1.0]" in text

    asyncio.run(drive())
