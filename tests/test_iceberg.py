"""The Iceberg tables ``tunetrack compact`` commits over its files, read WITHOUT tunetrack: pyiceberg's
own SQL catalog opened on the store's SQLite file, Polars' ``scan_iceberg`` and DuckDB over the files
pyiceberg's scan plans. Their answers must equal ``tunetrack query``'s, each run once: after a first
compaction, after a run resumed and compacted again, after two compactors raced, and after a
compaction that skipped the tables; a compaction with nothing new makes no snapshot."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import duckdb
import pandas as pd
import polars as pl
import pytest
from click.testing import CliRunner
from pyiceberg.catalog.sql import SqlCatalog

from support.tables import frame
from test_compact import record
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.manage.compact import clean, commit, compact, write_files
from tunetrack.reader.find import store_at
from tunetrack.sql import run_sql
from tunetrack.store.warehouse import warehouse_of

TABLES = ("metrics", "system", "params", "runs")


@pytest.fixture(autouse=True)
def _pyiceberg_plans_for_polars(monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # no polars_iceberg package here


def catalog(root) -> SqlCatalog:
    """The catalog as any pyiceberg user opens it: the SQLite file, by path (docs/compact.md)."""
    ice = root.resolve() / ".warehouse" / "iceberg"
    return SqlCatalog("tunetrack", uri=f"sqlite:///{ice}/catalog.db", warehouse=str(ice))


def by_engine(root, name: str) -> dict[str, object]:
    """``tunetrack.<name>`` as pyiceberg, Polars and DuckDB read it, no tunetrack code involved."""
    table = catalog(root).load_table(f"tunetrack.{name}")
    tasks = list(table.scan().plan_files())
    assert all(not t.delete_files for t in tasks)  # copy-on-write: plain Parquet files are the table
    files = [t.file.file_path for t in tasks]
    duck = duckdb.connect()
    empty = table.scan().to_arrow().schema.empty_table()
    return {
        "pyiceberg": table.scan().to_arrow(),
        "polars": pl.scan_iceberg(table).collect(),
        "duckdb": duck.sql(
            f"SELECT * FROM read_parquet({files!r}, hive_partitioning = false)"
        ).to_arrow_table()
        if files
        else empty,
    }


def same_as_query(root) -> None:
    for name in TABLES:
        want = frame(run_sql(f"SELECT * FROM {name}", root))
        for engine, got in by_engine(root, name).items():
            got = frame(got)
            assert len(got) == len(want), (name, engine)
            assert list(got.columns) == list(want.columns), (name, engine)
            pd.testing.assert_frame_equal(got, want, check_dtype=False, obj=f"{engine} {name}")


def snapshots(root) -> dict[str, list[int]]:
    cat = catalog(root)
    return {n: [s.snapshot_id for s in cat.load_table(f"tunetrack.{n}").snapshots()] for n in TABLES}


def test_iceberg_tables_equal_query_each_run_once(root, monkeypatch):
    ids = record(root, monkeypatch)
    done = compact(root)
    assert done.number == 1 and done.iceberg is not None
    assert done.iceberg.applied == 4 and done.iceberg.snapshots == 4  # one append per table
    assert catalog(root).list_tables("tunetrack") == [("tunetrack", n) for n in sorted(TABLES)]
    same_as_query(root)
    warehouse = warehouse_of(store_at(root))
    assert clean(warehouse, orphan_age=0) == 0  # the Iceberg files are nobody's orphans
    first = snapshots(root)

    result = CliRunner().invoke(cli, ["compact", "--dir", str(root)])
    assert result.exit_code == 0 and result.output == "nothing new to compact\n", result.output
    assert snapshots(root) == first  # nothing new: no snapshot

    # a run resumed after compaction, and a new one: the next compaction replaces the resumed run's
    # rows (deleted from the files that held them, then its new rows added): still counted once
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    with Tracker(dir=root, resume=ids[2], system=False) as t:
        t.log({"loss": -1.0}, step=21)
    with Tracker(dir=root, name="new", project="p0", system=False, config={"lr": 1.0}) as t:
        t.log({"loss": 0.5}, step=1)
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "iceberg: 4 commits applied to the tables" in result.output
    same_as_query(root)
    metrics = catalog(root).load_table("tunetrack.metrics")
    assert metrics.properties["tunetrack.commit"] == "2"
    ops = [s.summary.operation.value for s in metrics.snapshots()]
    assert ops == ["append", "overwrite", "append"]  # a file rewritten without the resumed run's rows
    loss = pl.scan_iceberg(metrics).filter((pl.col("run") == ids[2]) & (pl.col("key") == "loss")).collect()
    assert loss.height == 21 and loss["value"].min() == -1.0
    files = [t.file.file_path for t in metrics.scan().plan_files()]
    where = f"run = '{ids[2]}' AND key = 'loss'"
    sql = f"SELECT count(*) FROM read_parquet({files!r}, hive_partitioning = false) WHERE {where}"
    assert duckdb.sql(sql).fetchall() == [(21,)]


def test_commits_the_tables_lack_are_applied_later(root, monkeypatch):
    """A compaction without the tables (killed before them, or ``--no-iceberg``), and two compactors
    racing (the second's file also holds a run only the first counts): the next one catches up."""
    ids = record(root, monkeypatch, n=3)
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root), "--no-iceberg"])
    assert result.exit_code == 0 and "iceberg" not in result.output, result.output
    assert not (root / ".warehouse" / "iceberg").exists()
    store = store_at(root)
    warehouse = warehouse_of(store)
    with Tracker(dir=root, resume=ids[0], system=False) as t:
        t.log({"loss": 7.0}, step=30)
    first = write_files(store, warehouse)
    with Tracker(dir=root, name="late", project="p0", system=False, config={"lr": 2.0}) as t:
        t.log({"loss": 0.25}, step=1)
    second = write_files(store, warehouse)
    assert commit(warehouse, first) == 2 and commit(warehouse, second) == 3
    assert set(second.runs) == {t.id}  # its file also holds ids[0]'s rows, which do not count
    assert [f["runs"] for f in second.files if f["table"] == "metrics"] == [sorted([ids[0], t.id])]

    done = compact(root, iceberg=True)
    assert done.number is None and done.iceberg is not None and done.iceberg.applied == 12
    same_as_query(root)
    assert all(len(s) >= 2 for n, s in snapshots(root).items() if n != "system")


def test_nothing_compacted_makes_no_catalog(root):
    done = compact(root, iceberg=True)
    assert done.number is None and done.iceberg is not None and done.iceberg.applied == 0
    assert not (root / ".warehouse" / "iceberg").exists()


def test_a_store_pyiceberg_cannot_write_is_refused_by_name(monkeypatch):
    """A ``memory://`` store (fsspec's, no FileIO of pyiceberg's): compacted, its tables skipped with
    the reason by default, and ``--iceberg`` a one-line error naming it."""
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    url = f"memory://ice-{os.getpid()}-{time.time_ns()}"
    with Tracker(dir=url, name="m", system=False) as t:
        t.log({"loss": 1.0}, step=1)
    result = CliRunner().invoke(cli, ["compact", "--dir", url])
    assert result.exit_code == 0, result.output
    assert (
        f"iceberg tables not updated: Iceberg tables are written for a folder, s3://, gs:// or abfs:// store, not {url}"
        in result.output
    )
    result = CliRunner().invoke(cli, ["compact", "--dir", url, "--iceberg"])
    assert result.exit_code == 1 and f"not {url} (docs/compact.md)" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_run_deleted_after_compaction_leaves_the_tables_at_the_next_one(root, monkeypatch):
    """``tunetrack rm`` of a compacted run: a query leaves it out at once (it is in no listing); the
    next compaction records the deletion in its commit and drops the run's rows from every Iceberg
    table, so Spark, Trino, DuckDB and Polars stop counting it too. Once recorded, nothing is new."""
    ids = record(root, monkeypatch, n=3)
    assert compact(root).number == 1
    gone = ids[1]
    result = CliRunner().invoke(cli, ["rm", gone, "--yes", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert gone in frame(by_engine(root, "metrics")["pyiceberg"])["run"].tolist()  # not yet
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root)])
    assert (
        result.exit_code == 0
        and "0 runs, 0 rows in 0 files (0 bytes); 1 deleted runs' rows dropped" in result.output
    )
    body = warehouse_of(store_at(root)).read_commit(2)
    assert body is not None and body["deleted"] == [gone] and body["runs"] == {}
    same_as_query(root)
    for name in TABLES:
        column = "id" if name == "runs" else "run"
        for engine, got in by_engine(root, name).items():
            assert gone not in frame(got)[column].tolist(), (name, engine)
    result = CliRunner().invoke(cli, ["compact", "--dir", str(root)])
    assert result.output == "nothing new to compact\n", result.output


RACER = """
import sys
from tunetrack.manage.iceberg import publish
from tunetrack.reader.find import store_at
print(publish(store_at(sys.argv[1])).applied, flush=True)
"""


def test_two_processes_publishing_at_once_apply_each_commit_once(root, monkeypatch):
    """A folder's publishes take turns (its lock): of two processes started together on two commits
    the tables lack, each commit lands once in all, and the tables equal ``tunetrack query``'s."""
    record(root, monkeypatch, n=3)
    assert compact(root, iceberg=False).number == 1
    with Tracker(dir=root, name="late", project="p0", system=False, config={"lr": 2.0}) as t:
        t.log({"loss": 0.25}, step=1)
    assert compact(root, iceberg=False).number == 2
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(root)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    applied = [int(racer.communicate(timeout=300)[0].strip() or -1) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0]
    assert sum(applied) == 8 and 0 in applied  # 2 commits x 4 tables, all by whoever went first
    same_as_query(root)
    assert (root / ".warehouse" / "iceberg" / "publish.lock").exists()
