"""The terminal view's samples and events tabs, driven headless by Textual's pilot on runs real
Trackers wrote: the step slider goes through the logged steps, sorting orders the rows, a pinned prompt
shows its rows at every step, a live run's new steps join the slider without moving the step shown;
checkpoints (one deleted by rotation) and a loss spike are listed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from support.tui import tab_key, until
from tunetrack import Tracker
from tunetrack.tui.app import TunetrackApp
from tunetrack.tui.panes.samples import Samples

PROMPTS = ("what is 2+2?", "name a colour", "count to three", "say hello")
#: a completion longer than any column: the detail below the table shows it whole
LONG = "and so on " * 40


def completions(step: int) -> list[dict]:
    """One step of a GRPO-like table: four prompts, a reward that puts them in another order at each step."""
    return [
        {
            "prompt": prompt,
            "completion": f"step {step} answer {i} {LONG}",
            "reward": float((i * 3 + step) % 4),
        }
        for i, prompt in enumerate(PROMPTS)
    ]


def rows(app: TunetrackApp) -> list[list[str]]:
    table = app.query_one("#samples-table", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def text_of(app: TunetrackApp, widget_id: str) -> str:
    return str(app.query_one(widget_id, Static).render())


def log_step(run: Tracker, step: int) -> None:
    run.log({"loss": 1.0 / step}, step=step)
    run.log_table("completions", completions(step), step=step)
    run.flush()


def test_the_slider_sorts_pins_a_prompt_and_follows_a_live_run(tmp_path):
    live = Tracker(project="p", name="grpo", dir=tmp_path, console=False, system=False).start()
    for step in range(1, 6):
        log_step(live, step)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            pane = app.query_one(Samples)
            bar = lambda: text_of(app, "#samples-bar")  # noqa: E731
            await until(pilot, lambda: app.model.current is not None)
            await pilot.press(tab_key("samples"))
            await until(pilot, lambda: "step 5 (5 of 5)" in bar())
            app.query_one("#samples-table").focus()
            header = list(pane.shown.columns)
            assert header == ["prompt", "completion", "reward"]
            assert [r[0] for r in rows(app)] == list(PROMPTS)
            assert all(r[1].startswith("step 5 answer") and r[1].endswith("…") for r in rows(app))

            # the slider, step by step: each step's own rows
            for step in (4, 3, 2, 1):
                await pilot.press("comma")
                await until(pilot, lambda s=step: f"step {s} ({s} of 5)" in bar())
                assert all(r[1].startswith(f"step {step} answer") for r in rows(app))
            await pilot.press("comma")  # no step before the first
            assert "step 1 (1 of 5)" in bar()
            await pilot.press("greater_than_sign")
            await until(pilot, lambda: "step 5 (5 of 5)" in bar())
            await pilot.press("less_than_sign", "full_stop")
            await until(pilot, lambda: "step 2 (2 of 5)" in bar())

            # the row under the cursor, whole, below the table
            await pilot.press("down")
            await until(pilot, lambda: f"step 2 answer 1 {LONG}".strip() in text_of(app, "#samples-text"))

            # sorted by reward (o goes through the columns), then the other way
            await pilot.press("o", "o", "o")
            await until(pilot, lambda: "sorted by reward" in bar())
            expected = sorted(r["reward"] for r in completions(2))
            assert [float(r[2]) for r in rows(app)] == expected
            await pilot.press("O")
            await until(pilot, lambda: [float(r[2]) for r in rows(app)] == expected[::-1])
            await pilot.press("o")  # past the last column: the order logged
            await until(pilot, lambda: [r[0] for r in rows(app)] == list(PROMPTS))

            # one prompt across steps: its row at each of the five steps, in step order
            app.query_one("#samples-table", DataTable).move_cursor(row=2)
            await pilot.press("p")
            await until(pilot, lambda: "prompt at 5 steps" in bar())
            assert [r[0] for r in rows(app)] == ["1", "2", "3", "4", "5"]
            assert all(r[1] == PROMPTS[2] for r in rows(app))
            assert [r[2].split(" ", 3)[:3] for r in rows(app)] == [
                ["step", str(s), "answer"] for s in range(1, 6)
            ]
            assert [float(r[3]) for r in rows(app)] == [completions(s)[2]["reward"] for s in range(1, 6)]
            log_step(live, 6)  # a pinned prompt is followed too
            await until(pilot, lambda: "prompt at 6 steps" in bar() and len(rows(app)) == 6)
            await pilot.press("p")  # back to one step: the one it was pinned at
            await until(pilot, lambda: "step 2 (2 of 6)" in bar())

            # a live run: at the last step, the newest is followed; elsewhere, the step stays
            await pilot.press("greater_than_sign")
            await until(pilot, lambda: "step 6 (6 of 6)" in bar())
            log_step(live, 7)
            await until(pilot, lambda: "step 7 (7 of 7)" in bar())
            assert all(r[1].startswith("step 7 answer") for r in rows(app))
            await pilot.press("comma", "comma")
            await until(pilot, lambda: "step 5 (5 of 7)" in bar())
            live.log_table("completions", completions(8), step=8)  # no metric: the runs pane is unchanged
            live.flush()
            await until(pilot, lambda: "step 5 (5 of 8)" in bar())
            assert all(r[1].startswith("step 5 answer") for r in rows(app))

    asyncio.run(drive())
    live.finish()


def test_a_run_without_samples_says_how_to_log_them(tmp_path):
    with Tracker(name="plain", dir=tmp_path, console=False, system=False) as run:
        run.log({"loss": 1.0}, step=1)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.model.current is not None)
            await pilot.press(tab_key("samples"))
            await until(pilot, lambda: "plain has no samples" in text_of(app, "#samples-bar"))
            assert "log_table" in text_of(app, "#samples-bar")
            assert app.query_one("#samples-table", DataTable).row_count == 0

    asyncio.run(drive())


def _save(folder: Path, size: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(b"w" * size)
    return folder


@pytest.mark.filterwarnings("ignore:.*training health")
def test_checkpoints_and_events_are_listed_a_rotated_checkpoint_marked(tmp_path):
    out = tmp_path / "out"
    run = Tracker(name="saves", dir=tmp_path / "store", console=False, system=False).start()
    for step in range(1, 41):
        run.log({"loss": 9.0 if step == 30 else 2.0, "eval_loss": 1.5}, step=step)
    first = _save(out / "checkpoint-10", 100)
    run.log_checkpoint(first, step=10)
    (first / "adapter_model.safetensors").unlink()  # rotation (save_total_limit) removes it
    first.rmdir()
    run.log_checkpoint(_save(out / "checkpoint-20", 2000), step=20, metrics={"loss": 2.0, "eval_loss": 1.5})
    run.flush()

    def table(app: TunetrackApp, which: str) -> list[list[str]]:
        found = app.query_one(f"#{which}-table", DataTable)
        return [[str(c) for c in found.get_row_at(i)] for i in range(found.row_count)]

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path / "store", interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.model.current is not None)
            await pilot.press(tab_key("events"))
            # the second one's kind and size come from its files, once hashed in a process of their own
            # (the first one's, removed at once, are known or not depending on which came first)
            expected = [
                ["10", "deleted", str(out / "checkpoint-10")],
                ["20", "adapter", "1.5", "2", "2.0 KB", "kept", str(out / "checkpoint-20")],
            ]

            def saves() -> list[list[str]]:
                first, *rest = table(app, "checkpoints")
                return [[first[0], *first[5:]], *rest]

            await until(pilot, lambda: saves() == expected)
            header = [str(c.label) for c in app.query_one("#checkpoints-table", DataTable).columns.values()]
            assert header == ["step", "kind", "eval_loss", "loss", "size", "state", "where"]
            assert "1 deleted by rotation" in text_of(app, "#checkpoints-title")
            spikes = [r for r in table(app, "events") if r[1] == "health"]
            assert [(r[0], "problem=loss_spike" in r[3]) for r in spikes] == [("30", True)]
            assert not any(r[1].startswith("checkpoint") for r in table(app, "events"))
            run.log_checkpoint(_save(out / "checkpoint-40", 10), step=40)  # a live run's new save
            run.flush()
            await until(pilot, lambda: [r[0] for r in table(app, "checkpoints")] == ["10", "20", "40"])

    asyncio.run(drive())
    run.finish()
