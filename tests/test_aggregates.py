"""Aggregates per metric (last, min, max, best and its step): the writer's, stored at finish, equal what
a reader computes from the data, in every case where readers trust them; and the cases where they
must not (a rewind) fall back to the data."""

from __future__ import annotations

import json
import math
from array import array

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from support.helpers import run_script
from tunetrack import Tracker, aggregates
from tunetrack.cli import cli
from tunetrack.reader import open_run
from tunetrack.reader.series import aggregate


@pytest.fixture(scope="module")
def sweep(sweep_store):
    return sweep_store


def from_data(run) -> dict:
    return {key: aggregate(run.series(key)) for key in run.keys()}


def truth(points: list[tuple[int, float]], lower: bool) -> dict:
    """What the summary of these points must be, by pandas."""
    frame = pd.DataFrame(points, columns=["step", "value"])
    at = frame["value"].idxmin() if lower else frame["value"].idxmax()
    return {
        "last": frame["value"].iloc[-1],
        "min": frame["value"].min(),
        "max": frame["value"].max(),
        "best": frame["value"][at],
        "best_step": int(frame["step"][at]),
        "step": int(frame["step"].iloc[-1]),
        "count": len(frame),
    }


def test_the_sweep_summaries_are_stored_and_right(sweep):
    root, runs = sweep
    assert sum(r.state == "failed" for r in runs) == 1
    assert sum(len(r.points["train/loss"]) < 60 for r in runs) == 9  # 8 early-stopped, 1 failed
    for made in runs:
        run = open_run(made.id, dir=root)
        assert run.stored_aggregates() is not None  # an ended run: no data read for its summary
        assert run.stored_aggregates() == from_data(run)
        summary = run.summary()
        for key, points in made.points.items():
            assert summary[key] == truth(points, lower=key != "reward"), (made.name, key)


def test_mixed_values_nan_inf_none_bools_and_text(root):
    rows = [
        {"a": math.nan, "b": None, "c": True, "d": "x", "e": 3},
        {"a": 2.0, "b": 1.5, "c": False, "d": 1, "e": 1},
        {"a": -math.inf, "b": None, "d": None, "e": 1},
        {"a": 1.0, "b": 0.5, "c": True, "d": 4.0, "e": 7},
        {"a": math.inf, "b": 0.5, "d": "y"},
        {"a": 1.0, "e": -2},
    ]
    with Tracker(dir=root, system=False, health=False) as t:
        for step, row in enumerate(rows, 1):
            t.log(row, step=step)
            if step == 3:
                t.flush()  # two blocks: their aggregates are merged
    run = open_run(t.id, dir=root)
    stored = run.stored_aggregates()
    assert stored == from_data(run)
    s = run.summary()
    assert s["a"] == {"last": 1.0, "min": 1.0, "max": 2.0, "best": 2.0, "best_step": 2, "step": 6, "count": 6}
    assert s["b"] == {"last": 0.5, "min": 0.5, "max": 1.5, "best": 1.5, "best_step": 2, "step": 5, "count": 3}
    assert s["c"] == {
        "last": True,
        "min": None,
        "max": None,
        "best": None,
        "best_step": None,
        "step": 4,
        "count": 3,
    }
    assert s["d"] == {"last": "y", "min": 1, "max": 4.0, "best": 4.0, "best_step": 4, "step": 5, "count": 4}
    assert s["e"] == {"last": -2, "min": -2, "max": 7, "best": 7, "best_step": 4, "step": 6, "count": 5}
    assert run.summary({"a": True})["a"]["best"] == 1.0 and run.summary({"a": True})["a"]["best_step"] == 4


@pytest.mark.parametrize("seed", range(20))
def test_chunks_merged_equal_the_whole_and_python_equals_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    values = rng.choice([0.5, 1.0, 2.0, -1.0, np.nan, np.inf, -np.inf], n)
    steps, times = np.arange(n) * 2, np.arange(n) / 10
    whole = aggregates.chunk(steps, times, values)
    python = aggregates.chunk(
        array("q", steps.tolist()), array("d", times.tolist()), array("d", values.tolist())
    )
    assert json.dumps(whole) == json.dumps(python)  # NaN == NaN as text
    cut = int(rng.integers(1, n)) if n > 1 else 1
    parts = [aggregates.chunk(steps[a:b], times[a:b], values[a:b]) for a, b in ((0, cut), (cut, n))]
    merged = None
    for part in parts:
        if part is not None:
            merged = aggregates.merge(merged, part)
    assert json.dumps(merged) == json.dumps(whole)


def test_a_rewound_run_is_summarized_from_its_visible_points(root):
    with Tracker(dir=root, system=False, health=False) as t:
        for step in range(1, 11):
            t.log({"loss": 1.0 / step}, step=step)  # reaches 0.1 at step 10 ...
        t.rewind(5)  # ... which a resume from the checkpoint at step 5 supersedes
        for step in range(6, 9):
            t.log({"loss": 0.5}, step=step)
    run = open_run(t.id, dir=root)
    assert run.stored_aggregates() is None  # the end record says it rewound: its aggregates count hidden rows
    assert run.summary()["loss"] == {
        "last": 0.5, "min": 0.2, "max": 1.0, "best": 0.2, "best_step": 5, "step": 8, "count": 8
    }  # fmt: skip


def test_a_resumed_run_merges_both_attempts(root):
    with Tracker(dir=root, system=False, health=False) as t:
        for step in range(1, 6):
            t.log({"loss": 1.0 / step, "acc": step / 10}, step=step)
    with Tracker(dir=root, resume=t.id, system=False, health=False) as t2:
        for step in range(6, 9):
            t2.log({"loss": 0.3, "acc": 0.1}, step=step)
    run = open_run(t.id, dir=root)
    assert run.stored_aggregates() == from_data(run)
    assert run.summary()["loss"]["best"] == 0.2 and run.summary()["loss"]["last"] == 0.3
    assert run.summary()["acc"] == {
        "last": 0.1, "min": 0.1, "max": 0.5, "best": 0.5, "best_step": 5, "step": 8, "count": 8
    }  # fmt: skip


def test_ls_json_has_each_runs_summary_and_best_can_be_told(sweep):
    root, runs = sweep
    cli_runner = CliRunner()
    out = cli_runner.invoke(cli, ["ls", "--dir", str(root), "--json"])
    assert out.exit_code == 0, out.output
    listed = {r["id"]: r for r in json.loads(out.stdout)}
    assert len(listed) == 60
    made = runs[7]
    assert listed[made.id]["summary"]["reward"] == truth(made.points["reward"], lower=False)
    flipped = cli_runner.invoke(cli, ["ls", "--dir", str(root), "--json", "--best", "reward:min"])
    listed = {r["id"]: r for r in json.loads(flipped.stdout)}
    assert listed[made.id]["summary"]["reward"] == truth(made.points["reward"], lower=True)
    bad = cli_runner.invoke(cli, ["ls", "--dir", str(root), "--best", "reward:most"])
    assert bad.exit_code == 2 and "best of 'reward' must be min or max" in bad.output


def test_the_runs_table_rows_carry_the_stored_summaries(sweep):
    from tunetrack.reader import Catalog

    root, runs = sweep
    rows = {r["id"]: r for r in Catalog(root).rows(keys=["eval/loss", "reward"])}
    for made in runs[:10]:
        summary = rows[made.id]["summary"]
        assert summary["eval/loss"] == truth(made.points["eval/loss"], lower=True)
        assert summary["reward"] == truth(made.points["reward"], lower=False)
        assert "aggregates" not in rows[made.id]


@pytest.mark.parametrize("seed", range(12))
def test_the_matrix_fold_equals_chunks_merged(seed):
    """The writer folds its float matrix blocks with NumPy (``MatrixFold``): block by block, wide, with
    NaN, ±inf, ties and columns without a finite number, it gives each key what ``chunk`` and
    ``merge`` give."""
    rng = np.random.default_rng(seed)
    keys = [f"k{i}" for i in range(int(rng.integers(1, 6)))]
    fold, expected = aggregates.MatrixFold(keys), {}
    step = 0
    for _ in range(int(rng.integers(1, 5))):
        n = int(rng.integers(1, 20))
        block = rng.choice([0.5, 1.0, 2.0, -1.0, np.nan, np.inf, -np.inf], (n, len(keys)))
        block[:, 0] = np.nan if seed % 3 == 0 else block[:, 0]  # a column with no number at all
        steps = list(range(step, step + n))
        times = [s / 10 for s in steps]
        step += n
        fold.add(steps, times, block.astype("<f8").tobytes())
        for j, key in enumerate(keys):
            part = aggregates.chunk(np.array(steps), np.array(times), block[:, j])
            expected[key] = aggregates.merge(expected.get(key), part)
    assert json.dumps(fold.aggregates(), sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_a_process_without_numpy_stores_the_same_aggregates(root):
    """The writer folds float matrices with NumPy only where a process already loaded it: a script that
    never did stores the same figures, key by key, and NumPy stays unloaded."""
    out = run_script(
        """
        import json, math, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        for step in range(1, 301):
            t.log({"loss": 1.0 / step if step % 7 else math.nan, "reward": (step % 11) - 5.0}, step=step)
            if step % 100 == 0:
                t.flush()  # three blocks
        t.finish()
        print(json.dumps([t.id, "numpy" in sys.modules]))
        """,
        str(root),
    )
    run_id, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded is False
    run = open_run(run_id, dir=root)
    (stored,) = [p["end"]["aggregates"] for p in run.meta["processes"]]
    for key in ("loss", "reward"):
        assert json.dumps(stored[key]) == json.dumps(aggregate(run.series(key)))
