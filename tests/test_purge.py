"""``tunetrack compact`` removing what no reader reads any more, in a folder: a deleted run's rows leave
every file of the warehouse (its neighbours in a file compacted again, the file purged, the Iceberg
tables' older snapshots expired and their files removed), a resumed run's old rows likewise, and
only ``PURGE_AFTER`` seconds after the commit that superseded them. Every answer is held to the
tables built from the runs' records, and the Iceberg tables to ``tunetrack query``'s."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from support.tables import answers, read_from, same, truth
from test_compact import record
from test_iceberg import same_as_query
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.manage import purge
from tunetrack.reader.compacted import commits
from tunetrack.reader.find import store_at
from tunetrack.store.warehouse import warehouse_of


@pytest.fixture(autouse=True)
def _pyiceberg_plans_for_polars(monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # no polars_iceberg package here


def holding(root: Path, text: str) -> list[str]:
    """The warehouse's files (its commits aside) whose bytes hold ``text`` anywhere."""
    warehouse = root / ".warehouse"
    return [
        str(p.relative_to(warehouse))
        for p in warehouse.rglob("*")
        if p.is_file() and p.parent.name != "commits" and text.encode() in p.read_bytes()
    ]


def compact_cli(root: Path, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root), *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_deleted_runs_rows_leave_every_file_once_its_commit_is_old_enough(root, monkeypatch):
    ids = record(root, monkeypatch, n=5)  # p0: 0, 2, 4; p1: 1, 3 (one file per table and project)
    compact_cli(root)
    gone = ids[2]
    assert holding(root, gone)
    assert CliRunner().invoke(cli, ["rm", gone, "--yes", "--dir", str(root)]).exit_code == 0

    out = compact_cli(root)  # the deletion recorded, its neighbours in p0 compacted again
    assert "commit 2: 2 runs" in out and "1 deleted runs' rows dropped" in out, out
    assert "purged" not in out  # superseded a moment ago: a query that read commit 1 may still run
    assert set(warehouse_of(store_at(root)).read_commit(2)["runs"]) == {ids[0], ids[4]}
    assert holding(root, gone)
    same(answers(root), truth(root))
    same_as_query(root)

    monkeypatch.setattr(purge, "PURGE_AFTER", 0.0)
    out = compact_cli(root)
    # p0's files of metrics, system and params; the Iceberg files of the snapshots before commit 2
    assert out.startswith("nothing new to compact\npurged 3 superseded files"), out
    assert holding(root, gone) == []
    same(answers(root), truth(root))
    assert read_from(root)[1] > 0  # still read from the compacted files
    same_as_query(root)
    assert compact_cli(root) == "nothing new to compact\n"  # nothing left to purge


def test_a_resumed_runs_old_rows_are_purged_after_it_is_compacted_again(root, monkeypatch):
    ids = record(root, monkeypatch, n=3)
    compact_cli(root, "--no-iceberg")
    before = {p.name for p in (root / ".warehouse").rglob("*.parquet")}
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    for run in (ids[0], ids[2]):  # p0's two runs: their file counts neither once they are compacted again
        with Tracker(dir=root, resume=run, system=False) as t:
            t.log({"loss": -1.0}, step=99)
    monkeypatch.setattr(purge, "PURGE_AFTER", 0.0)
    out = compact_cli(root, "--no-iceberg")
    assert "commit 2: 2 runs" in out and "purged" in out, out
    after = {p.name for p in (root / ".warehouse").rglob("*.parquet")}
    assert before - after and after - before  # p0's old files gone, the new ones there
    warehouse = warehouse_of(store_at(root))
    named = {f["path"].rsplit("/", 1)[1] for c in commits(warehouse) for f in c["files"]}
    assert after <= named  # nothing uncommitted, and what is left is what readers may read
    same(answers(root), truth(root))


def test_files_are_kept_while_the_iceberg_tables_lack_commits(root, monkeypatch):
    """Their older snapshots name the files: with the tables left as they were (a compaction with
    --no-iceberg), nothing is purged, and the user is told why; the next one that updates them purges."""
    ids = record(root, monkeypatch, n=3)
    compact_cli(root)
    assert CliRunner().invoke(cli, ["rm", ids[0], "--yes", "--dir", str(root)]).exit_code == 0
    monkeypatch.setattr(purge, "PURGE_AFTER", 0.0)
    out = compact_cli(root, "--no-iceberg")
    assert "kept 3 superseded files: the Iceberg tables were not updated" in out, out
    assert holding(root, ids[0])
    out = compact_cli(root)
    assert "iceberg: 4 commits applied" in out and "purged" in out, out
    assert holding(root, ids[0]) == []
    same_as_query(root)
