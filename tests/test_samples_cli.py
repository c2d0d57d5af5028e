"""``tunetrack samples``: a run's tables of samples in the terminal and as JSON, at a step or the last,
filtered by prompt and regex, sorted by any column; user errors in one line."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from tunetrack import Tracker
from tunetrack.cli import cli

PROMPTS = ["What is 17 times 23? Explain each step of your reasoning carefully please.", "Name a color."]


def rows(step: int) -> list[dict]:
    return [
        {
            "step": step,
            "prompt": PROMPTS[i % 2],
            "completion": f"completion {i} at step {step}",
            "reward": float("nan") if i == 3 else i / 4 + step,
        }
        for i in range(4)
    ]


@pytest.fixture
def run(root):
    t = Tracker(dir=root, name="grpo", system=False).start()
    for step in (1, 2, 3):
        t.log({"loss": 1.0 / step}, step=step)
        t.log_table("completions", rows(step))
    t.log_text("notes", "a note", step=2)
    t.finish()
    return root


def invoke(root, *args, code=0):
    result = CliRunner().invoke(cli, ["samples", "grpo", *args, "--dir", str(root)])
    assert result.exit_code == code, result.output
    return result


def as_json(root, *args):
    return json.loads(invoke(root, *args, "--json").stdout)


def test_json_holds_every_row_with_its_step(run):
    got = as_json(run, "completions")
    assert [(s["key"], s["step"], s["index"]) for s in got] == [
        ("completions", s, i) for s in (1, 2, 3) for i in range(4)
    ]
    first = [s["row"] for s in got[:4]]
    assert first[:3] == rows(1)[:3] and math.isnan(first[3]["reward"])
    assert {s["key"] for s in as_json(run)} == {"completions", "notes"}


def test_a_step_the_last_step_and_the_filters(run):
    assert {s["step"] for s in as_json(run, "completions", "--last")} == {3}
    assert {s["step"] for s in as_json(run, "completions", "--step", "2")} == {2}
    assert [s["row"]["prompt"] for s in as_json(run, "--prompt", "color")] == [PROMPTS[1]] * 6
    assert [s["row"]["completion"] for s in as_json(run, "--grep", r"completion [12] at step 3")] == [
        "completion 1 at step 3",
        "completion 2 at step 3",
    ]
    ordered = as_json(run, "completions", "--sort", "reward:desc", "--limit", "3")
    assert [s["row"]["reward"] for s in ordered] == [3.5, 3.25, 3.0]
    assert [s["step"] for s in as_json(run, "--sort", "step:desc", "--limit", "2")] == [3, 3]


def test_the_terminal_table(run):
    out = invoke(run, "completions", "--last").stdout
    assert "completion 2 at step 3" in out and "completion 0 at step 2" not in out
    assert PROMPTS[0][:30] in out and "3.5" in out
    out = invoke(run, "completions", "--limit", "2").stdout
    assert "2 of 12 rows shown" in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["missing"], 1, "no samples under 'missing' (keys: completions, notes)"),
        (["completions", "--step", "9"], 1, "no samples at step 9 (steps 1 to 3, 3 in all)"),
        (["--grep", "("], 2, "not a regular expression"),
        (["--step", "1", "--last"], 2, "give --step or --last, not both"),
    ],
)
def test_user_errors_are_one_line(run, args, code, message):
    result = invoke(run, *args, code=code)
    assert message in result.output and "Traceback" not in result.output


def test_a_run_without_samples(root):
    Tracker(dir=root, name="grpo", system=False).start().finish()
    assert "has no samples" in invoke(root, code=1).output
