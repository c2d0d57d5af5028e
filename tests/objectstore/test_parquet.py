"""Runs' Parquet copies in a bucket (the loopback S3 server): written by each run's last process as it
ends, read straight from the bucket by Polars and by DuckDB (through Arrow's S3 client: the DuckDB
wheel has no httpfs offline), with no tunetrack involved, and equal to what ``open_run`` shows; and
``tunetrack query --dir s3://...`` gives the rows of the same runs in a folder."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.reader import list_runs


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")  # the tests' default is off (conftest.parquet_off)


def record(dir: str | Path) -> None:
    """The same two runs (one resumed with a rewind) into ``dir``."""
    with Tracker(dir=dir, name="a", system=False, config={"lr": 0.1, "lora": {"r": 16}}) as t:
        for step in range(1, 41):
            t.log({"loss": 4.0 - step / 10, "acc": step / 40}, step=step)
    with Tracker(dir=dir, name="b", system=False, config={"lr": 0.01}) as t:
        run_id = t.id
        for step in range(1, 31):
            t.log({"loss": 2.0 - step / 100}, step=step)
    with Tracker(dir=dir, resume=run_id, resume_step=10, system=False) as t:
        for step in range(11, 21):
            t.log({"loss": 5.0 + step}, step=step)


def points(frame: pd.DataFrame) -> list[tuple]:
    return sorted(zip(frame["step"], frame["key"], frame["value"]))


def test_engines_read_the_bucket_and_agree_with_open_run(s3_url: str):
    record(s3_url)
    bucket_prefix = s3_url[len("s3://") :]
    runs = {r.name: r for r in list_runs(s3_url)}
    assert runs["b"].history(["loss"]).loss.max() == 25.0  # rewound: steps 11..30 of the first attempt hidden

    options = {
        "aws_endpoint_url": os.environ["AWS_ENDPOINT_URL"],
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }
    from_polars = pl.read_parquet(f"{s3_url}/*/metrics.parquet", storage_options=options).to_pandas()
    s3 = pafs.S3FileSystem(
        endpoint_override=os.environ["AWS_ENDPOINT_URL"],
        access_key="testing",
        secret_key="testing",
        region="us-east-1",
    )
    files = [
        f.path
        for f in s3.get_file_info(pafs.FileSelector(bucket_prefix, recursive=True))
        if f.base_name == "metrics.parquet"
    ]
    assert len(files) == 2
    metrics = ds.dataset(files, filesystem=s3, format="parquet")  # noqa: F841 - DuckDB finds it by name
    from_duckdb = duckdb.sql("SELECT * FROM metrics").df()

    for name, run in runs.items():
        history = run.history()
        want = sorted(
            (int(row.step), key, float(getattr(row, key)))
            for row in history.itertuples()
            for key in ("loss", "acc")
            if key in history.columns and pd.notna(getattr(row, key))
        )
        for got in (from_polars, from_duckdb):
            assert points(got[got.run == run.id]) == want, name


def test_query_over_the_bucket_gives_the_folder_s_rows(s3_url: str, tmp_path: Path, monkeypatch):
    from tunetrack.sql import schema as tables

    record(s3_url)
    record(tmp_path / "runs")
    built: list[int] = []
    builder = tables.BUILDERS["metrics"]
    monkeypatch.setitem(tables.BUILDERS, "metrics", lambda runs: (built.append(len(runs)), builder(runs))[1])
    q = (
        "SELECT r.name, p.number AS lr, min(m.value) AS lo, count(*) AS n FROM metrics m "
        "JOIN runs r ON r.id = m.run JOIN params p ON p.run = m.run AND p.key = 'lr' "
        "WHERE m.key = 'loss' GROUP BY ALL ORDER BY r.name"
    )
    answers = []
    for dir in (s3_url, str(tmp_path / "runs")):
        result = CliRunner().invoke(cli, ["query", q, "--dir", dir, "--format", "csv"])
        assert result.exit_code == 0, result.output
        answers.append(result.output)
    assert built == [0, 0]  # both stores' runs read from their Parquet copies
    assert answers[0] == answers[1]
    assert answers[0].splitlines() == ["name,lr,lo,n", "a,0.1,0.0,40", "b,0.01,1.9,20"]
