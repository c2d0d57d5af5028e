"""The CLI's machine-readable output: JSON (``--json``) and the exporters (JSON Lines, CSV, Parquet)."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any


def _json_default(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def dumps(data: Any) -> str:
    """JSON with NaN and ±Inf written as ``NaN``/``Infinity`` (Python's ``json`` and pandas read them)."""
    return json.dumps(data, allow_nan=True, default=_json_default)


def write(rows: Iterable[dict[str, Any]], fields: list[str], fmt: str, path: str | None) -> int:
    """``rows`` as ``fmt`` (``jsonl``, ``csv``, ``parquet``) into the file at ``path``, or onto stdout
    (not parquet); returns how many."""
    if fmt == "parquet":
        if path is None:
            raise ValueError("parquet is written to a file: give -o PATH")
        return write_parquet(iter(rows), fields, path)
    stream = open(path, "w", encoding="utf-8", newline="") if path else sys.stdout  # noqa: SIM115
    try:
        return write_jsonl(rows, stream) if fmt == "jsonl" else write_csv(rows, fields, stream)
    finally:
        if path:
            stream.close()


def write_jsonl(rows: Iterable[dict[str, Any]], stream: IO[str]) -> int:
    count = 0
    for row in rows:
        stream.write(dumps(row) + "\n")
        count += 1
    return count


def write_csv(rows: Iterable[dict[str, Any]], fields: list[str], stream: IO[str]) -> int:
    """A header (``fields``) and one line per row; None is an empty cell, NaN/±Inf ``nan``/``inf``."""
    writer = csv.DictWriter(stream, fieldnames=fields, restval="")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


def require_parquet() -> None:
    """Raise ImportError (one line, with the pip command) unless pandas and pyarrow import."""
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        raise ImportError(
            "parquet export needs pandas and pyarrow: pip install 'tunetrack[parquet]'"
        ) from None


def write_parquet(rows: Iterator[dict[str, Any]], fields: list[str], path: str) -> int:
    """One row per logged row. A column that mixes types (a key logged as a number and as text)
    is stored as text, since a parquet column has one type."""
    import pandas as pd

    frame = pd.DataFrame.from_records(list(rows), columns=fields)
    for col in [c for c in frame.columns if frame[c].dtype.kind == "O"]:
        kinds = {type(v) for v in frame[col] if v is not None and v == v}  # v != v: NaN, a missing cell
        if len(kinds) > 1:
            frame[col] = [None if v is None or v != v else str(v) for v in frame[col]]
    frame.to_parquet(path, index=False)
    return len(frame)


def write_result(table: Any, fmt: str, path: str | None) -> int:
    """A query's result (an Arrow table) as ``fmt`` (``csv``, ``json``: an array of objects,
    ``parquet``: to a file) into the file at ``path``, or onto stdout (not parquet); returns how many
    rows. Parquet keeps the column types as DuckDB gave them (lists stay lists)."""
    if fmt == "parquet":
        if path is None:
            raise ValueError("parquet is written to a file: give -o PATH")
        import pyarrow.parquet as pq

        pq.write_table(table, path)
        return int(table.num_rows)
    stream = open(path, "w", encoding="utf-8", newline="") if path else sys.stdout  # noqa: SIM115
    try:
        rows = table.to_pylist()
        if fmt == "json":
            stream.write(dumps(rows) + "\n")
            return len(rows)
        return write_csv(rows, list(table.column_names), stream)
    finally:
        if path:
            stream.close()
