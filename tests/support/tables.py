"""The query tables of a store, as ``tunetrack query`` reads them and as the runs' records give them,
compared whole (``tunetrack compact``'s tests, in a folder and in a bucket)."""

from __future__ import annotations

import pandas as pd

from tunetrack.reader import list_runs
from tunetrack.sql import run_sql
from tunetrack.sql.engine import Tables
from tunetrack.sql.schema import BUILDERS

#: the tables compared (``params_wide`` and ``summary`` as well: they are built from the others or
#: beside them, and must not change either)
TABLES = ("metrics", "system", "params", "params_wide", "summary", "runs")


def frame(table) -> pd.DataFrame:
    """A table as a DataFrame in one order (every column), lists as tuples, so two compare whole."""
    out = table.to_pandas()
    for col in out.columns:
        if out[col].map(lambda v: hasattr(v, "__len__") and not isinstance(v, str)).any():
            out[col] = out[col].map(lambda v: tuple(v) if v is not None else None)
    out = out[sorted(out.columns)]
    return out.sort_values(list(out.columns), ignore_index=True, na_position="first")


def truth(root) -> dict[str, pd.DataFrame]:
    """Every table built from the runs' records (no copy, no compacted file read)."""
    runs = list_runs(root)
    out = {name: frame(BUILDERS[name](runs)) for name in TABLES if name != "params_wide"}
    out["params_wide"] = frame(run_sql("SELECT * FROM params_wide", tables=Tables(root, runs=runs)))
    return out


def answers(root) -> dict[str, pd.DataFrame]:
    """Every table as ``tunetrack query`` reads it (DuckDB over the files), and ``metrics`` also as
    ``Tables.table`` reads it (pyarrow)."""
    out = {name: frame(run_sql(f"SELECT * FROM {name}", root)) for name in TABLES}
    out["metrics (arrow)"] = frame(Tables(root).table("metrics"))
    return out


def same(got: dict[str, pd.DataFrame], want: dict[str, pd.DataFrame]) -> None:
    for name, frame_ in got.items():
        expected = want[name.split()[0]]
        assert len(frame_) == len(expected), name
        pd.testing.assert_frame_equal(frame_, expected, check_dtype=False, obj=name)


def read_from(root) -> tuple[int, int, int]:
    """Where ``metrics`` comes from: (runs' own copies, compacted files, runs built from records)."""
    source = Tables(root).source("metrics")
    return len(source.files), len(source.parts), len(set(source.built.column("run").to_pylist()))
