"""Tables of samples (``Tracker.log_table``, ``log_text``): typed columns read back as logged, long
strings that repeat stored once, odd input stored with one warning and never raised, the caller paying
for a reference only, and ``Run.samples`` reading old ``text`` events the same way."""

from __future__ import annotations

import json
import math
import re
import threading
import warnings
from types import SimpleNamespace

import msgpack
import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.reader.samples import select
from tunetrack.store import codec
from tunetrack.writer.samples import MAX_TEXT

PROMPT = "Solve the following problem and explain each step of your reasoning: what is 17 times 23?"


def completions(step: int, n: int = 4) -> list[dict]:
    return [
        {
            "step": step,
            "prompt": PROMPT,
            "completion": f"step {step} answer {i}: " + "seventeen times twenty-three " * 8,
            "accuracy_reward": float(i % 2),
            "advantage": (i - 1.5) / 2,
            "correct": i % 2 == 1,
        }
        for i in range(n)
    ]


def test_a_table_reads_back_typed_with_its_step(root):
    t = Tracker(dir=root, system=False).start()
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": PROMPT}]
    with pytest.warns(UserWarning, match="rows with different columns") as caught:
        for step in (1, 2):
            t.log({"loss": 1.0 / step}, step=step)
            rows = completions(step)
            rows[0]["messages"] = chat  # the other rows have none: their cells are None, one warning
            t.log_table("completions", rows)
        t.flush()
    assert len(caught) == 1
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.sample_index() == {"completions": {1: 4, 2: 4}}
    got = run.samples("completions", step=2)
    assert [(s["key"], s["step"], s["index"]) for s in got] == [("completions", 2, i) for i in range(4)]
    expected = completions(2)
    expected[0]["messages"] = chat
    assert [s["row"] for s in got] == [{**r, "messages": r.get("messages")} for r in expected]
    assert run.sample_tables("completions")[0].columns() == {
        "step": "number",
        "prompt": "text",
        "completion": "text",
        "accuracy_reward": "number",
        "advantage": "number",
        "correct": "bool",
        "messages": "chat",
    }
    assert len(run.samples()) == 8 and run.samples(step=3) == []


def test_a_dataframe_is_read_on_the_writer_thread(root):
    readers = []

    class Frame(pd.DataFrame):
        @property
        def _constructor(self):
            return Frame

        @property
        def iloc(self):  # how the writer reads a frame's columns
            readers.append(threading.current_thread().name)
            return super().iloc

    t = Tracker(dir=root, system=False).start()
    frame = Frame({"prompt": ["a", "b"], "reward": [np.float32(0.5), np.nan], "n": [1, 2]})
    t.log_table("frame", frame, step=3)
    assert readers == []  # the caller handed over a reference
    t.finish()
    assert readers and all(name.startswith("tunetrack-writer") for name in readers)
    rows = [s["row"] for s in open_run(t.id, dir=root).samples("frame")]
    assert rows[0] == {"prompt": "a", "reward": 0.5, "n": 1}
    assert rows[1]["prompt"] == "b" and math.isnan(rows[1]["reward"]) and rows[1]["n"] == 2


def test_log_text_is_a_table_and_old_text_events_read_the_same(root):
    t = Tracker(dir=root, system=False).start()
    t.log_text("story", "Once upon a time", step=1)
    t.log_text("story", {"text": "and then", "score": 2}, step=2)
    t.event("text", step=3, key="story", rows=[{"text": "the end"}])  # as tunetrack wrote them before
    t.finish()
    run = open_run(t.id, dir=root)
    assert [(s["step"], s["row"]) for s in run.samples("story")] == [
        (1, {"text": "Once upon a time"}),
        (2, {"text": "and then", "score": 2}),
        (3, {"text": "the end"}),
    ]
    assert run.sample_index() == {"story": {1: 1, 2: 1, 3: 1}}
    assert [e["rows"] for e in run.texts("story")][0] == [{"text": "Once upon a time"}]


def test_a_repeated_long_prompt_is_stored_once_and_tables_are_compressed(root):
    t = Tracker(dir=root, system=False).start()
    for step in range(1, 51):
        t.log_table("completions", completions(step, n=16), step=step)
    t.finish()
    payloads = _table_records(t.run_dir)
    assert len(payloads) == 50
    tables = [codec.unpack(msgpack.packb(p, use_bin_type=True))[1] for p in payloads]
    defined = [table.body()[1] for table in tables]
    assert sum(d.count(PROMPT) for d in defined) == 1  # defined once, referred to by id afterwards
    raw = sum(len(r["prompt"]) + len(r["completion"]) for s in range(1, 51) for r in completions(s, 16))
    data = sum(p.stat().st_size for p in t.run_dir.glob("*.ttr"))
    assert data < 0.2 * raw
    run = open_run(t.id, dir=root)
    assert [s["row"] for s in run.samples(step=50)] == completions(50, n=16)


def _table_records(run_dir):
    from tunetrack.store.framing import ScanReport, scan

    (data,) = run_dir.glob("*.ttr")
    records = [msgpack.unpackb(p, raw=False) for p in scan(data.read_bytes(), ScanReport())]
    return [r for r in records if r["k"] == codec.TABLE]


def test_odd_input_is_stored_with_one_warning_each_and_never_raises(root):
    t = Tracker(dir=root, system=False, strict=True).start()
    long_text = "x" * (10 * 1024 * 1024)
    rows = [
        {"prompt": "a", "reward": float("nan")},
        {"prompt": "b", "extra": object()},
        {"prompt": long_text, "reward": 1.0},
        {"prompt": "bad \udc80 surrogate", "reward": np.float16(2.0)},
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.log_table("odd", rows, step=1)
        t.log_table("odd", rows, step=2)
        t.log_table("odd", 42, step=3)  # not a table at all: one row
        t.log_table("odd", [{"a": 1}], step="not a step")  # strict mode, yet the table is only read later
        t.log({"loss": 1.0}, step=4)
        t.finish()
    messages = [str(w.message) for w in caught]
    assert sum("different columns" in m for m in messages) == 1
    assert sum("not text, numbers" in m for m in messages) == 1
    assert sum("longer than" in m for m in messages) == 1
    run = open_run(t.id, dir=root)
    got = [s["row"] for s in run.samples("odd", step=1)]
    assert math.isnan(got[0]["reward"]) and got[0]["extra"] is None and got[1]["reward"] is None
    assert got[1]["extra"].startswith("<object object")
    assert len(got[2]["prompt"]) < MAX_TEXT + 100 and got[2]["prompt"].endswith(
        "10,485,760 characters in all]"
    )
    assert got[3] == {"prompt": "bad \ufffd surrogate", "reward": 2.0, "extra": None}
    assert run.samples("odd", step=3)[0]["row"] == {"text": 42}
    assert run.series("loss").values.tolist() == [1.0]


def test_images_in_a_table_are_pngs_in_the_run(root):
    t = Tracker(dir=root, system=False).start()
    rows = [
        {"caption": "red", "image": Image.new("RGB", (4, 4), (255, 0, 0))},
        {"caption": "gray", "image": torch.full((3, 2, 2), 0.5)},
        {"caption": "none", "image": None},
    ]
    t.log_table("pictures", rows, step=7)
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.sample_tables("pictures")[0].columns() == {"caption": "text", "image": "image"}
    cells = [s["row"]["image"] for s in run.samples("pictures")]
    assert cells[2] is None and all(c.startswith("media/samples/pictures/7_") for c in cells[:2])
    pixels = np.asarray(Image.open(t.run_dir / cells[0]))
    assert pixels.shape == (4, 4, 3) and (pixels[..., 0] == 255).all()
    assert (np.asarray(Image.open(t.run_dir / cells[1])) == 128).all()
    assert run.read_media(cells[1])[:4] == b"\x89PNG"


def test_a_rewind_hides_the_tables_it_superseded(root):
    t = Tracker(dir=root, system=False).start()
    for step in (1, 2, 3):
        t.log_table("c", completions(step, 1), step=step)
    t.rewind(1)
    t.log_table("c", completions(2, 1), step=2)
    t.finish()
    assert open_run(t.id, dir=root).sample_index() == {"c": {1: 1, 2: 1}}


def test_a_resumed_run_and_a_refreshed_reader_resolve_every_string(root):
    t = Tracker(dir=root, system=False).start()
    t.log_table("c", completions(1), step=1)
    t.flush()
    run = open_run(t.id, dir=root)
    assert [s["row"] for s in run.samples()] == completions(1)
    t.log_table("c", completions(2), step=2)  # refers to the prompt the first table defined
    t.flush()
    run.refresh()
    assert [s["row"] for s in run.samples(step=2)] == completions(2)
    t.finish()
    again = Tracker(dir=root, resume=t.id, system=False).start()  # ids are per process
    again.log_table("c", completions(3), step=3)
    again.finish()
    run.refresh()
    assert [s["row"] for s in run.samples()] == completions(1) + completions(2) + completions(3)


def test_a_string_whose_record_was_lost_reads_as_a_marker():
    shared = codec.SharedStrings()
    first = codec.encode_table("c", 1, 1.0, [("prompt", codec.TEXT, [PROMPT])], shared)
    second = codec.encode_table("c", 2, 2.0, [("prompt", codec.TEXT, [PROMPT, "short"])], shared)
    assert first[codec.STRING_COUNT] == 1 and second[codec.STRING_COUNT] == 0
    index = codec.StringIndex()
    _, table = codec.unpack(codec.pack(second))
    index.add(table)  # the first record is missing (skipped as corrupt)
    assert table.rows() == [{"prompt": codec.MISSING_TEXT}, {"prompt": "short"}]
    _, earlier = codec.unpack(codec.pack(first))
    both = codec.StringIndex()
    both.add(earlier)
    both.add(table)
    assert table.rows() == [{"prompt": PROMPT}, {"prompt": "short"}]


def test_older_readers_skip_a_table_record():
    record = codec.encode_table("c", 1, 1.0, [("x", codec.INT, [1])], codec.SharedStrings())
    assert record[codec.KIND] not in (codec.ROWS, codec.SYSTEM, codec.CONFIG, codec.EVENT)


def test_select_filters_by_prompt_and_regex_and_sorts_by_any_column():
    samples = [
        {"key": "c", "step": s, "time": 0.0, "index": i, "row": row}
        for s in (1, 2)
        for i, row in enumerate(
            [
                {"prompt": "add 2 and 2", "completion": "four", "reward": 1.0 * s},
                {
                    "prompt": [{"role": "user", "content": "name a color"}],
                    "completion": "Blue",
                    "reward": None,
                },
                {"prompt": "add 3 and 3", "completion": "six", "reward": float("nan")},
            ]
        )
    ]
    assert [s["row"]["completion"] for s in select(samples, prompt="color")] == ["Blue", "Blue"]
    assert len(select(samples, same_prompt="user: name a color")) == 2
    assert [s["row"]["completion"] for s in select(samples, grep=r"(?i)^b")] == ["Blue", "Blue"]
    ordered = select(samples, sort="reward:desc")
    assert [s["row"]["reward"] for s in ordered[:2]] == [2.0, 1.0]  # None and NaN last
    assert [s["step"] for s in select(samples, sort="step:desc", limit=3)] == [2, 2, 2]
    with pytest.raises(re.error):
        select(samples, grep="(")


# -- where samples come from -------------------------------------------------------------------------
def test_trl_completion_files_land_as_typed_tables(root, tmp_path):
    from tunetrack.integrations.support.completions import CompletionFiles, Rewards

    folder = tmp_path / "completions"
    folder.mkdir()
    chat = [{"role": "user", "content": "what is two plus two?"}]
    frame = pd.DataFrame(
        {
            "step": [4, 4],
            "prompt": [chat, chat],
            "completion": ["four", "five"],
            "accuracy": [1.0, 0.0],
            "advantage": [0.5, -0.5],
        }
    )
    frame.to_parquet(folder / "completions_00004.parquet")
    t = Tracker(dir=root, system=False).start()
    rewards = Rewards()
    rewards.learn({"loss": 0.1, "rewards/accuracy/mean": 0.5, "reward": 0.5})  # the trainer's on_log
    CompletionFiles().collect(folder, t, rewards, SimpleNamespace(reward_weights=None))
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.sample_tables("completions")[0].columns() == {
        "step": "number",
        "prompt": "chat",
        "completion": "text",
        "accuracy": "number",
        "reward": "number",  # the total, beside the reward functions' columns
        "advantage": "number",
    }
    want = [
        {
            **{k: v for k, v in r.items() if k != "advantage"},
            "reward": r["accuracy"],
            "advantage": r["advantage"],
        }
        for r in frame.to_dict("records")
    ]
    assert [s["row"] for s in run.samples("completions", step=4)] == want


def test_swift_completion_lines_land_as_tables(root, tmp_path):
    from tunetrack.integrations.support.completions import CompletionLog, Rewards

    path = tmp_path / "completions.jsonl"
    line = {
        "step": ["3", "3"],
        "prompt": ["p", "p"],
        "completion": ["a", "b"],
        "Format": [1.0, 0.0],
        "Len": [None, 1.0],
        "advantages": [0.5, -0.5],
    }
    path.write_text(json.dumps(line) + "\n")
    t = Tracker(dir=root, system=False).start()
    rewards = Rewards()
    rewards.learn({"rewards/Format/mean": 0.5, "rewards/Len/mean": 1.0})
    CompletionLog().collect(path, t, rewards, SimpleNamespace(reward_weights=[1.0, 0.5]))
    t.finish()
    got = open_run(t.id, dir=root).samples("completions")
    # the total as ms-swift weighs its functions (--reward_weights 1 0.5), a missing value counting nothing
    assert [(s["step"], s["row"]) for s in got] == [
        (3, {**{k: v[0] for k, v in line.items() if k != "advantages"}, "reward": 1.0, "advantages": 0.5}),
        (3, {**{k: v[1] for k, v in line.items() if k != "advantages"}, "reward": 0.5, "advantages": -0.5}),
    ]


def test_a_wandb_table_is_a_typed_table_with_its_images(root, monkeypatch):
    import tunetrack.wandb as wandb

    monkeypatch.setenv("TUNETRACK_DIR", str(root))
    monkeypatch.setenv("TUNETRACK_SYSTEM", "0")
    run = wandb.init(project="p", name="w")
    table = wandb.Table(columns=["prompt", "score", "picture"])
    table.add_data("hello", 3, wandb.Image(np.zeros((2, 2), dtype=np.uint8)))
    wandb.log({"samples": table, "loss": 1.0}, step=5)
    run.finish()
    got = open_run("w", dir=root).samples("samples")
    (sample,) = got
    assert sample["step"] == 5 and sample["row"]["score"] == 3 and sample["row"]["prompt"] == "hello"
    assert sample["row"]["picture"].endswith(".png")


def test_one_element_arrays_are_sequences_beside_longer_ones(tmp_path):
    """A completion of one token has a value list of one (pandas reads TRL's Parquet list columns as
    arrays): still a sequence, so the column keeps its kind; a 0-d array or tensor is a number."""
    with Tracker(dir=tmp_path, name="one", system=False, console=False) as t:
        t.log_table(
            "completions",
            [
                {
                    "tokens": np.array(["a", "b"], dtype=object),
                    "logprob": np.array([-0.1, -0.2]),
                    "r": np.float32(1),
                },
                {
                    "tokens": np.array(["c"], dtype=object),
                    "logprob": np.array([-0.4]),
                    "r": torch.tensor(0.5),
                },
                {"tokens": ["d"], "logprob": torch.tensor([-0.3]), "r": np.array(2.0)},
            ],
            step=1,
        )
    (table,) = open_run("one", tmp_path).sample_tables("completions")
    assert table.columns() == {"tokens": "sequence", "logprob": "sequence", "r": "number"}
    assert [row["logprob"] for row in table.rows()] == [[-0.1, -0.2], [-0.4], [pytest.approx(-0.3)]]
    assert [row["tokens"] for row in table.rows()] == [["a", "b"], ["c"], ["d"]]
    assert [row["r"] for row in table.rows()] == [1.0, 0.5, 2.0]
