"""Each run's Parquet copy (``metrics.parquet``, ``system.parquet``, ``params.parquet``): DuckDB and
Polars read the layout of a folder directly, with no tunetrack involved, and get what ``open_run``
shows, rewinds included; ``tunetrack query`` reads the copies where they are current and the records
where they are not; a process without pyarrow writes none and says nothing, and ``tunetrack parquet``
writes them afterwards."""

from __future__ import annotations

import math
import sys
import warnings

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest
from click.testing import CliRunner

import tunetrack
from support.helpers import CountingSource, run_script, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.reader import list_runs, open_run, present


def expected_points(root) -> pd.DataFrame:
    """Every visible point as the read API gives it: (run, process, step, key, value, text)."""
    rows = []
    for run in list_runs(root):
        for key in run.keys():
            for proc, s in run.process_series(key).items():
                s = present(s)
                for step, value in zip(s.steps, s.values):
                    number = isinstance(value, float | int | np.number) and not isinstance(value, bool)
                    rows.append(
                        (
                            run.id,
                            proc,
                            int(step),
                            key,
                            float(value) if number else None,
                            None if number else str(value),
                        )
                    )
    return frame(rows)


def frame(rows) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=["run", "process", "step", "key", "value", "text"])
    return out.sort_values(["run", "key", "process", "step"], ignore_index=True)


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert len(a) == len(b)
    pd.testing.assert_frame_equal(
        a.astype(object).where(a.notna(), None), b.astype(object).where(b.notna(), None)
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """first: system metrics, NaN, None and text; resumed: a second attempt rewound to step 50."""
    root = tmp_path_factory.mktemp("pq") / "runs"
    source = CountingSource()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TUNETRACK_PARQUET", "1")  # the tests' default is off (conftest.parquet_off)
        record(root, source)
    return root


def record(root, source) -> None:
    with Tracker(
        dir=root,
        name="first",
        config={"lr": 1e-3, "lora": {"r": 16}},
        system_sources=[source],
        system_interval=0.05,
    ) as t:
        for step in range(1, 101):
            t.log({"loss": 3.0 - step / 100, "grad_norm": step % 7}, step=step)
        t.log({"odd": math.nan, "none": None, "note": "done"}, step=100)
        wait_until(lambda: source.samples >= 3)
    with Tracker(dir=root, name="resumed", system=False, config={"lr": 3e-4, "lora": {"r": 8}}) as t:
        run_id = t.id
        for step in range(1, 101):
            t.log({"loss": 2.0 - step / 100}, step=step)
    with Tracker(dir=root, resume=run_id, resume_step=50, system=False) as t:
        for step in range(51, 81):
            t.log({"loss": 9.0 + step}, step=step)


def test_duckdb_and_polars_read_the_folder_as_open_run_shows_it(store):
    glob = f"{store}/*/metrics.parquet"
    want = expected_points(store)
    resumed = open_run("resumed", dir=store).history(["loss"])
    assert (
        len(resumed) == 80 and resumed.loss.max() == 89.0
    )  # the rewind hid steps 51..100 of the first attempt
    got = duckdb.sql(f"SELECT run, process, step, key, value, text FROM read_parquet('{glob}')").df()
    same(frame(got.values.tolist()), want)
    got = pl.read_parquet(glob).select("run", "process", "step", "key", "value", "text").to_pandas()
    same(frame(got.values.tolist()), want)
    # system metrics and params, the same way
    first = open_run("first", dir=store)
    system = pl.read_parquet(f"{store}/*/system.parquet")
    assert system.height == sum(len(s) for k in first.system_keys() for s in first.system_series(k).values())
    params = duckdb.sql(
        f"SELECT run, key, value, number FROM read_parquet('{store}/**/params*.parquet')"
    ).df()
    assert {(r.run, r.key, r.number) for r in params.itertuples()} == {
        (run.id, k, float(v)) for run in list_runs(store) for k, v in run.flat_config.items()
    }


def test_query_reads_current_copies_and_the_records_of_the_rest(store, tmp_path, monkeypatch):
    from tunetrack.sql import schema as tables

    built = []
    builder = tables.BUILDERS["metrics"]
    monkeypatch.setitem(tables.BUILDERS, "metrics", lambda runs: (built.append(len(runs)), builder(runs))[1])
    q = "SELECT run, key, count(*) n, min(value) lo FROM metrics GROUP BY ALL ORDER BY ALL"
    from_copies = tunetrack.query(q, dir=store)
    assert built == [0]  # every run's copy is current: no run's records were read
    # a copy whose run has more records since (a run synced in, resumed without pyarrow) is stale
    monkeypatch.setenv("TUNETRACK_PARQUET", "0")
    with Tracker(dir=store, resume=open_run("first", dir=store).id, system=False) as t:
        t.log({"loss": -1.0}, step=101)
    built.clear()
    after = tunetrack.query(q, dir=store)
    assert built == [1]
    loss = after[(after.run == open_run("first", dir=store).id) & (after.key == "loss")]
    assert loss.n.iloc[0] == 101 and loss.lo.iloc[0] == -1.0
    assert len(after) == len(from_copies)
    # `tunetrack parquet` brings it up to date; the query then reads copies only again
    result = CliRunner().invoke(cli, ["parquet", "--dir", str(store)])
    assert result.exit_code == 0, result.output
    assert "first): wrote" in result.output and "resumed): current" in result.output
    built.clear()
    pd.testing.assert_frame_equal(tunetrack.query(q, dir=store), after)
    assert built == [0]


def test_without_pyarrow_nothing_is_written_and_nothing_said(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Tracker(dir=tmp_path, system=False, config={"lr": 0.1}) as t:
            t.log({"loss": 1.0}, step=1)
    assert not caught
    assert not list(tmp_path.glob("*/*.parquet"))
    monkeypatch.delitem(sys.modules, "pyarrow")
    result = CliRunner().invoke(cli, ["parquet", t.id, "--dir", str(tmp_path)])
    assert result.exit_code == 0 and "wrote" in result.output
    assert sorted(p.name for p in tmp_path.glob("*/*.parquet")) == [
        "metrics.parquet",
        "params.parquet",
        "system.parquet",
    ]
    assert duckdb.sql(f"SELECT key, value FROM '{tmp_path}/*/metrics.parquet'").fetchall() == [("loss", 1.0)]


def test_a_process_without_pyarrow_loaded_leaves_the_copy_to_a_child_it_does_not_wait_for(root):
    done = run_script(
        f"""
        import sys
        from tunetrack import Tracker
        with Tracker(dir={str(root)!r}, system=False, config={{"lr": 0.1}}) as t:
            for step in range(1, 51):
                t.log({{"loss": 1.0 / step}}, step=step)
        print(t.id, "pyarrow" in sys.modules, "numpy" in sys.modules)
        """,
        env={"TUNETRACK_PARQUET": "1"},
    )
    run_id, pyarrow, numpy = done.stdout.split()
    assert (pyarrow, numpy) == ("False", "False")  # finishing loaded neither into the training process
    copy = root / run_id / "metrics.parquet"
    wait_until(copy.exists)
    frame = pl.read_parquet(copy)
    assert frame["step"].to_list() == list(range(1, 51))
    assert frame["value"].to_list() == pytest.approx([1.0 / s for s in range(1, 51)])
