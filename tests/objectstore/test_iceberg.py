"""The Iceberg tables ``tunetrack compact`` commits in a bucket (the loopback S3 server), read WITHOUT
tunetrack, as a Hadoop-catalog table: pyiceberg's ``StaticTable`` from the table's folder (its
``version-hint.text``), Polars' ``scan_iceberg`` on the newest ``v<N>.metadata.json``, and DuckDB over
the files pyiceberg plans (through pyarrow's S3 filesystem: DuckDB's httpfs extension cannot be
downloaded here). Their answers equal ``tunetrack query``'s, each run once: after a first compaction,
after a run resumed and compacted again, after a run deleted, and after two compactors raced for the
same table version."""

from __future__ import annotations

import os
import subprocess
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import StaticTable

from support.tables import frame
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.manage.compact import compact
from tunetrack.manage.iceberg import TABLES as ICEBERG_TABLES
from tunetrack.manage.iceberg import open_catalog
from tunetrack.reader.find import store_at
from tunetrack.sql import run_sql
from tunetrack.store.blobs import open_blobs

TABLES = ("metrics", "system", "params", "runs")


@pytest.fixture(autouse=True)
def _dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # no polars_iceberg package here


def s3_options() -> dict[str, str]:
    """What any engine is told of the loopback server (the variables the ``s3_url`` fixture set)."""
    return {
        "s3.endpoint": os.environ["AWS_ENDPOINT_URL"],
        "s3.region": os.environ["AWS_DEFAULT_REGION"],
        "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
    }


def table_url(url: str, name: str) -> str:
    return f"{url}/.warehouse/iceberg/tunetrack/{name}"


def by_engine(url: str, name: str) -> dict[str, object]:
    """``tunetrack.<name>`` as pyiceberg, Polars and DuckDB read it from the bucket, no tunetrack code."""
    table = StaticTable.from_metadata(table_url(url, name), s3_options())  # reads version-hint.text
    tasks = list(table.scan().plan_files())
    assert all(not t.delete_files for t in tasks)  # copy-on-write: plain Parquet files are the table
    s3 = pafs.S3FileSystem(
        endpoint_override=os.environ["AWS_ENDPOINT_URL"],
        region=os.environ["AWS_DEFAULT_REGION"],
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    )
    empty = table.scan().to_arrow().schema.empty_table()
    files = ds.dataset([t.file.file_path.removeprefix("s3://") for t in tasks], filesystem=s3)
    return {
        "pyiceberg": table.scan().to_arrow(),
        "polars": pl.scan_iceberg(table.metadata_location, storage_options=s3_options()).collect(),
        "duckdb": duckdb.connect().register("files", files).sql("SELECT * FROM files").to_arrow_table()
        if tasks
        else empty,
    }


def same_as_query(url: str) -> None:
    for name in TABLES:
        want = frame(run_sql(f"SELECT * FROM {name}", url))
        for engine, got in by_engine(url, name).items():
            got = frame(got)
            assert list(got.columns) == list(want.columns), (name, engine)
            pd.testing.assert_frame_equal(got, want, check_dtype=False, obj=f"{engine} {name}")


def record(url: str, n: int = 3) -> list[str]:
    ids = []
    for i in range(n):
        with Tracker(dir=url, name=f"r{i}", project=f"p{i % 2}", system=False, config={"lr": i}) as t:
            for step in range(1, 21):
                t.log({"loss": 3.0 - step / 10 + i}, step=step)
        ids.append(t.id)
    return ids


def versions(url: str, name: str) -> list[str]:
    blobs = open_blobs(url)
    found = blobs.list_blobs(f".warehouse/iceberg/tunetrack/{name}/metadata/")
    return sorted(b.key.rsplit("/", 1)[1] for b in found if b.key.endswith(".metadata.json"))


def test_bucket_tables_equal_query_each_run_once(s3_url: str):
    ids = record(s3_url)
    result = CliRunner().invoke(cli, ["compact", "--dir", s3_url])
    assert result.exit_code == 0, result.output
    assert "iceberg: 4 commits applied to the tables, 3 snapshots" in result.output  # system: none
    same_as_query(s3_url)
    assert versions(s3_url, "metrics") == ["v1.metadata.json", "v2.metadata.json"]  # no stray file
    hint = open_blobs(s3_url).get(".warehouse/iceberg/tunetrack/metrics/metadata/version-hint.text")
    assert hint == b"2"

    result = CliRunner().invoke(cli, ["compact", "--dir", s3_url])
    assert (
        result.output == "nothing new to compact\n" and versions(s3_url, "metrics")[-1] == "v2.metadata.json"
    )

    # a run resumed after compaction, a new one, and a run deleted: the next compaction rewrites the
    # files that held the first's rows, adds the new rows and drops the deleted run's
    with Tracker(dir=s3_url, resume=ids[2], system=False) as t:
        t.log({"loss": -1.0}, step=21)
    with Tracker(dir=s3_url, name="new", project="p0", system=False, config={"lr": 1.0}) as t:
        t.log({"loss": 0.5}, step=1)
    result = CliRunner().invoke(cli, ["rm", ids[0], "--dir", s3_url, "--yes"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["compact", "--dir", s3_url])
    assert result.exit_code == 0 and "iceberg: 4 commits applied" in result.output, result.output
    same_as_query(s3_url)
    metrics = StaticTable.from_metadata(table_url(s3_url, "metrics"), s3_options())
    assert metrics.properties["tunetrack.commit"] == "2"
    runs = set(metrics.scan().to_arrow().column("run").to_pylist())
    assert runs == {ids[1], ids[2], t.id}
    loss = metrics.scan(row_filter=f"run == '{ids[2]}'").to_arrow()
    assert loss.num_rows == 21 and min(loss.column("value").to_pylist()) == -1.0


RACER = """
import sys
from tunetrack.manage.iceberg import publish
from tunetrack.reader.find import store_at
print(publish(store_at(sys.argv[1])).applied, flush=True)
"""


def test_compactors_racing_for_a_version_commit_each_commit_once(s3_url: str):
    """Two processes publish the same commits at once: each table version is put by one of them (the
    other's put refused and its transaction rebuilt on the newer table), and every commit is applied
    once in all, whoever applied it."""
    record(s3_url, n=2)
    assert compact(s3_url, iceberg=False).number == 1
    record(s3_url, n=1)
    assert compact(s3_url, iceberg=False).number == 2
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, s3_url], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    applied = []
    for racer in racers:
        out, _ = racer.communicate(timeout=300)
        assert racer.returncode == 0
        applied.append(int(out.strip()))
    assert sum(applied) == 8  # 2 commits x 4 tables, once each
    for name in TABLES:
        table = StaticTable.from_metadata(table_url(s3_url, name), s3_options())
        assert table.properties["tunetrack.commit"] == "2"
    same_as_query(s3_url)


def test_a_transaction_on_a_version_another_compactor_replaced_is_refused(s3_url: str):
    """The create-only put in one process: of two catalogs that loaded version N, the second to commit
    is refused, and the table holds the first's change only; loaded again, it commits as N+2."""
    record(s3_url, n=1)
    assert compact(s3_url).iceberg is not None
    assert set(ICEBERG_TABLES) == set(TABLES)
    first, second = open_catalog(store_at(s3_url)), open_catalog(store_at(s3_url))
    mine, theirs = first.load_table("tunetrack.runs"), second.load_table("tunetrack.runs")
    assert mine.metadata_location == theirs.metadata_location
    with mine.transaction() as tx:
        tx.set_properties({"owner": "first"})
    with (
        pytest.raises(CommitFailedException, match="committed by another compactor"),
        theirs.transaction() as tx,
    ):
        tx.set_properties({"owner": "second"})
    table = StaticTable.from_metadata(table_url(s3_url, "runs"), s3_options())
    assert table.properties["owner"] == "first"
    again = second.load_table("tunetrack.runs")
    with again.transaction() as tx:
        tx.set_properties({"owner": "second"})
    assert again.metadata_location.endswith("/v4.metadata.json")
    assert StaticTable.from_metadata(table_url(s3_url, "runs"), s3_options()).properties["owner"] == "second"


def test_a_deleted_runs_rows_leave_every_object_of_the_warehouse(s3_url: str, monkeypatch):
    """In a bucket: after ``tunetrack rm`` and two compactions (the deletion recorded, then purged
    once old enough), no object of the warehouse but its commits holds the run's id, and the Iceberg
    tables and ``tunetrack query`` agree without it."""
    from tunetrack.manage import purge

    ids = record(s3_url, n=4)
    assert compact(s3_url).number == 1
    gone = ids[2]
    assert CliRunner().invoke(cli, ["rm", gone, "--dir", s3_url, "--yes"]).exit_code == 0
    assert compact(s3_url).number == 2
    blobs = open_blobs(s3_url)

    def holding() -> list[str]:
        found = blobs.list_blobs(".warehouse/")
        return [
            b.key for b in found if "/commits/" not in b.key and gone.encode() in (blobs.get(b.key) or b"")
        ]

    assert holding()
    monkeypatch.setattr(purge, "PURGE_AFTER", 0.0)
    done = compact(s3_url)
    assert done.purged is not None and done.purged.files >= 2 and done.purged.iceberg_files > 0
    assert holding() == []
    same_as_query(s3_url)
