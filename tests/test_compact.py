"""``tunetrack compact`` in a folder: ended runs' copies merged into ``.warehouse`` files by project and
month, and ``tunetrack query`` reading them and what is not compacted yet together, each row once.

The truth every answer is held to is the tables built from the runs' records (``BUILDERS`` over
``list_runs``), which compaction never touches: before compacting, after, after a run is resumed or
added, after a compactor died before its commit, and after two compactors raced for one number.
"""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from support.helpers import CountingSource, wait_until
from support.tables import answers, read_from, same, truth
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.manage.compact import clean, commit, compact, write_files
from tunetrack.reader import open_run
from tunetrack.reader.find import store_at
from tunetrack.sql import run_sql
from tunetrack.sql.engine import Tables
from tunetrack.store.warehouse import warehouse_of


def record(root, monkeypatch, n: int = 6) -> list[str]:
    """``n`` runs in two projects (NaN, None and text values); the first with system metrics, the
    second resumed with a rewind, the last recorded without a Parquet copy."""
    ids = []
    for i in range(n):
        monkeypatch.setenv("TUNETRACK_PARQUET", "0" if i == n - 1 else "1")
        source = CountingSource()
        with Tracker(
            dir=root,
            name=f"r{i}",
            project=f"p{i % 2}",
            config={"lr": 0.1 * (i + 1), "lora": {"r": 8 * i}, "opt": "adamw" if i % 2 else "sgd"},
            system=i == 0,
            system_sources=[source] if i == 0 else None,
            system_interval=0.05,
        ) as t:
            for step in range(1, 21):
                t.log({"loss": 3.0 - step / 10 + i, "acc": step / 20}, step=step)
            t.log({"odd": math.nan, "none": None, "note": f"done {i}"}, step=20)
            if i == 0:
                wait_until(lambda s=source: s.samples >= 3)
        ids.append(t.id)
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    with Tracker(dir=root, resume=ids[1], resume_step=10, system=False) as t:
        for step in range(11, 16):
            t.log({"loss": 9.0 + step}, step=step)
    return ids


def test_compacted_store_answers_as_before(root, monkeypatch):
    ids = record(root, monkeypatch)
    want = truth(root)
    same(answers(root), want)  # before: the runs' copies, and the records of the run without one
    assert read_from(root) == (5, 0, 1)

    done = compact(root)
    assert (done.number, done.runs, done.files) == (1, 6, 5)  # system metrics in p0 only
    assert sorted(p.parent.parent.name for p in (root / ".warehouse" / "metrics").glob("*/*/*.parquet")) == [
        "project=p0",
        "project=p1",
    ]
    assert (root / ids[-1] / "metrics.parquet").exists()  # the run without a copy was given one first
    same(answers(root), want)
    assert read_from(root) == (0, 2, 0)  # two compacted files, nothing else
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root)])
    assert result.exit_code == 0 and result.output == "nothing new to compact\n", result.output
    assert [p.name for p in (root / ".warehouse" / "commits").iterdir()] == ["0000000001.json"]

    # a run resumed after compaction is read from its records, the other runs still compacted
    monkeypatch.setenv("TUNETRACK_PARQUET", "0")
    with Tracker(dir=root, resume=ids[2], system=False) as t:
        t.log({"loss": -1.0}, step=21)
    with Tracker(dir=root, name="new", project="p0", system=False, config={"lr": 1.0}) as t:
        t.log({"loss": 0.5}, step=1)
    want = truth(root)
    got = answers(root)
    same(got, want)
    loss = got["metrics"][(got["metrics"].run == ids[2]) & (got["metrics"].key == "loss")]
    assert len(loss) == 21 and loss.value.min() == -1.0  # read once, all its rows
    assert read_from(root) == (0, 2, 2)
    # the next compaction covers the two; the resumed run's rows in the first files no longer count
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root)])
    assert result.exit_code == 0 and result.output.startswith("commit 2: 2 runs"), result.output
    same(answers(root), want)
    parts = Tables(root).source("metrics").parts
    assert [p.runs is None for p in parts] == [False, True, True]
    assert ids[2] not in parts[0].runs
    # a run deleted after compaction is gone from the answers too
    assert CliRunner().invoke(cli, ["rm", ids[3], "--dir", str(root), "--yes"]).exit_code == 0
    same(answers(root), truth(root))


def test_a_compactor_killed_before_its_commit_changes_nothing(root, monkeypatch):
    record(root, monkeypatch, n=4)
    want = truth(root)
    store = store_at(root)
    warehouse = warehouse_of(store)
    dead = write_files(store, warehouse)  # its files written, then killed: no commit
    assert len(dead.runs) == 4 and len(warehouse.data_files()) == len(dead.files) == 5
    same(answers(root), want)
    assert read_from(root) == (4, 0, 0)  # the uncommitted files are not read
    assert clean(warehouse) == 0  # too young: perhaps a compactor still at work

    done = compact(root)  # run again: commits files of its own
    assert (done.number, done.runs, done.removed) == (1, 4, 0)
    same(answers(root), want)
    committed = {p.path for p in Tables(root).source("metrics").parts}
    assert not committed & {str(warehouse.local_file(f["path"])) for f in dead.files}
    assert clean(warehouse, orphan_age=0) == len(dead.files)  # the dead compactor's files go
    assert len(warehouse.data_files()) == 5
    same(answers(root), want)


def test_two_compactors_racing_for_one_number(root, monkeypatch):
    ids = record(root, monkeypatch, n=3)
    store = store_at(root)
    warehouse = warehouse_of(store)
    first = write_files(store, warehouse)
    with Tracker(dir=root, name="late", project="p1", system=False, config={"lr": 2.0}) as t:
        t.log({"loss": 0.25}, step=1)
    second = write_files(store, warehouse)  # chose its runs before the first committed: the same base
    assert first.base == second.base == 0 and set(second.runs) == {*ids, t.id}
    assert commit(warehouse, first) == 1
    assert commit(warehouse, second) == 2  # number 1 taken: only the run the first did not cover
    assert set(second.runs) == {t.id}
    same(answers(root), truth(root))
    parts = Tables(root).source("metrics").parts
    assert [p.runs for p in parts] == [None, None, (t.id,)]  # the second's file counts only for "late"
    third = write_files(store, warehouse)
    assert not third.runs and not third.files


@pytest.mark.parametrize("project", ["a/b c", None])
def test_partition_names(root, monkeypatch, project):
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    with Tracker(dir=root, project=project, system=False, config={"lr": 0.1}) as t:
        t.log({"loss": 1.0}, step=1)
    assert compact(root).runs == 1
    (path,) = (root / ".warehouse" / "metrics").glob("*/*/*.parquet")
    assert path.parent.parent.name == ("project=a%2Fb%20c" if project else "project=_")
    assert run_sql("SELECT run, value FROM metrics", root).to_pylist() == [{"run": t.id, "value": 1.0}]
    assert open_run(t.id, dir=root).project == project
