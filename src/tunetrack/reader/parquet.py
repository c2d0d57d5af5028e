"""A run's Parquet copy: its ``metrics``, ``system`` and ``params`` tables (``tables.TABLES``, built by the
same builders as SQL's, so the copy holds what ``open_run`` shows: rewinds applied, ``None`` no point)
as one Parquet file each beside its records (``layout.parquet_name``), for any columnar tool.

The records stay the source of truth; the copy is derived from them, and says what it was derived
from: each writing process's data size, in the file's metadata (``tunetrack`` key). It is *current*
while those sizes are the run's, so a reader trusts it only then (a process still writing, a resumed
attempt, a ``tunetrack sync`` that brought more records make it stale). Nothing here writes a store:
``manage.parquet`` puts what ``parquet_bytes`` gives.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store import layout
from .run import Run
from .sql_tables import BUILDERS

if TYPE_CHECKING:
    import pyarrow as pa

#: the tables a run keeps as Parquet (``metrics``, ``system``, ``params``)
PARQUET_TABLES = layout.PARQUET_TABLES

#: the copy's own version (in its metadata): a reader ignores a copy of another version
FORMAT = 1
#: the metadata key holding what the copy was derived from
META_KEY = b"tunetrack"
#: rows per row group: a key's points sit together (rows are sorted by key), so an engine that filters
#: on ``key`` skips the other keys' row groups by their statistics
ROW_GROUP = 1 << 16
#: how each table's rows are sorted (the run is the same in a whole file)
SORT = {
    "metrics": ["key", "process", "step", "time"],
    "system": ["key", "node", "time"],
    "params": ["key"],
}


def sources(run: Run) -> dict[str, int]:
    """``{process: bytes of its records}``: what a copy made now is made from."""
    return {proc: run.folder.data_size(proc) for proc in run.folder.processes()}


def _stamp(run: Run, made_from: dict[str, int]) -> dict[str, Any]:
    return {"format": FORMAT, "run": run.id, "sources": made_from}


def parquet_bytes(run: Run, table: str, made_from: dict[str, int] | None = None) -> bytes:
    """``table`` of ``run`` as a Parquet file (``writer_options``), its rows sorted by ``SORT``.
    ``made_from``: ``sources(run)`` taken *before* the run's data was read (data appended meanwhile
    then makes the copy stale rather than wrongly current)."""
    import pyarrow.parquet as pq

    made_from = sources(run) if made_from is None else made_from
    data = BUILDERS[table]([run])
    data = data.sort_by([(col, "ascending") for col in SORT[table]])
    data = data.replace_schema_metadata({META_KEY: json.dumps(_stamp(run, made_from)).encode()})
    out = io.BytesIO()
    pq.write_table(data, out, row_group_size=ROW_GROUP, **writer_options(data.schema))
    return out.getvalue()


def writer_options(schema: pa.Schema) -> dict[str, Any]:
    """How tunetrack writes Parquet (a run's copy, a compacted file): zstd, dictionary-encoded text,
    floats split by byte stream, and no min/max for columns that may hold NaN (``value``, ``number``):
    Parquet's statistics leave NaN out, and DuckDB (2.0) then skips a row group for ``isnan(value)``
    that holds one."""
    import pyarrow as pa

    floats = [f.name for f in schema if pa.types.is_floating(f.type)]
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema if pa.types.is_string(f.type)],
        "use_byte_stream_split": floats or False,
        "write_statistics": [f.name for f in schema if f.name not in ("value", "number")],
    }


def stamped_sources(schema: pa.Schema, run_id: str) -> dict[str, int] | None:
    """What a copy of ``run_id`` with this schema says it was derived from (``sources``), or None for
    a copy of another format or run (or no copy of ours)."""
    try:
        stamp = json.loads((schema.metadata or {}).get(META_KEY, b"{}"))
    except (ValueError, TypeError):
        return None
    if not isinstance(stamp, dict) or stamp.get("format") != FORMAT or stamp.get("run") != run_id:
        return None
    found = stamp.get("sources")
    return found if isinstance(found, dict) else None


def current_file(run: Run, table: str) -> Path | None:
    """The run's Parquet copy of ``table`` when it is current (made from the records the run has now,
    by this format), else None. Reads the file's footer, not its rows."""
    import pyarrow.parquet as pq

    path = run.folder.parquet_file(table)
    if path is None:
        return None
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError, TypeError):  # torn or foreign: not ours to trust
        return None
    return path if stamped_sources(schema, run.id) == sources(run) else None


def split(runs: Sequence[Run], table: str) -> tuple[list[Path], list[Run]]:
    """The current Parquet copies of ``table`` among ``runs``, and the runs without one."""
    files, rest = [], []
    for run in runs:
        path = current_file(run, table)
        if path is None:
            rest.append(run)
        else:
            files.append(path)
    return files, rest
