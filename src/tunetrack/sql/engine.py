"""Read-only SQL over a store, in DuckDB (in process).

A statement is checked with DuckDB's own parser before anything is read: one query (SELECT, WITH,
VALUES, FROM, DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one), nothing else. It then runs on a fresh
in-memory database whose configuration is locked with external access off: no file is read or written
(``read_csv``, ``COPY ... TO``, ``ATTACH``), no extension installed or loaded, and no Python variable
scanned. DuckDB cannot open an in-memory database read-only, so the statement check is what keeps
writes out, and the database, which holds only the tables built for this statement, is dropped after it.

Only the tables the statement names are built (``metrics`` is the big one); the others are there
without rows, so ``SHOW TABLES`` and ``DESCRIBE`` see every table. ``metrics``, ``system`` and
``params`` read each run's Parquet copy where it is current (DuckDB scans those files itself, the only
files the connection may read: ``allowed_paths``), and the records of the other runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import TunetrackError, one_line
from ..reader import Run, list_runs
from ..reader.compacted import Compacted, Part, read_compacted
from ..reader.parquet import PARQUET_TABLES, split
from .schema import BUILDERS, TABLES, empty, params_wide_table

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

Dir = str | os.PathLike[str] | None

#: what a refused statement is told
ALLOWED = "only one read-only query (SELECT, WITH, DESCRIBE, SHOW, EXPLAIN) is allowed"
INSTALL = "tunetrack query needs duckdb, pandas and pyarrow: pip install 'tunetrack[query]'"
#: the connection's settings: no files, no extensions, no Python variables, and no changing that
SETTINGS = {"enable_external_access": False, "python_enable_replacements": False, "lock_configuration": True}


class QueryError(TunetrackError):
    """A statement refused, or one that DuckDB could not run (the message is one line)."""


def _duckdb() -> Any:
    try:
        import duckdb
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        raise ImportError(INSTALL) from None
    return duckdb


def _one_line(exc: BaseException) -> str:
    """DuckDB's message on one line, its hint kept (``Did you mean "summary"?``, ``Candidate
    bindings: "run"``) and the quoted statement with its caret left out (``LINE 1: ...``)."""
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    kept = [
        line
        for line in (lines[: next((i for i, x in enumerate(lines) if x.startswith("LINE ")), None)])
        if line
    ]
    return "; ".join(kept) if kept else one_line(exc)


def check(sql: str) -> None:
    """Raise ``QueryError`` unless ``sql`` is one read-only query, as DuckDB's parser reads it."""
    duckdb = _duckdb()
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None
    if len(statements) != 1:
        raise QueryError(f"{len(statements)} statements given: {ALLOWED}")
    kind = statements[0].type
    if kind == duckdb.StatementType.EXPLAIN:
        check(_explained(sql))  # EXPLAIN ANALYZE runs the statement it explains
    elif kind != duckdb.StatementType.SELECT:  # DESCRIBE, SHOW and SUMMARIZE parse as SELECT
        raise QueryError(f"refused {_first_word(sql) or kind.name}: {ALLOWED}")


def _first_word(sql: str) -> str:
    """The statement's first keyword as DuckDB reads it (``INSTALL``, which its parser types as LOAD)."""
    duckdb = _duckdb()
    tokens = duckdb.tokenize(sql)
    for i, (start, kind) in enumerate(tokens):
        if kind != duckdb.token_type.comment:
            end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
            return sql[start:end].strip().upper()
    return ""


def _explained(sql: str) -> str:
    """The statement an EXPLAIN [ANALYZE] explains: what follows its leading keywords (DuckDB's
    tokens, so comments and spacing are read as DuckDB reads them)."""
    duckdb = _duckdb()
    tokens = duckdb.tokenize(sql)
    for i, (start, _) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
        word = sql[start:end].strip().lower()
        if word not in ("explain", "analyze", "analyse", "(", ")", ","):
            return sql[start:]
    return ""


def connect(files: Sequence[str] = ()) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB, locked down (``SETTINGS``): the only files it may read are ``files``
    (runs' Parquet copies, which ``Source`` views read; DuckDB's ``allowed_paths``)."""
    duckdb = _duckdb()
    if not files:
        return duckdb.connect(":memory:", config=dict(SETTINGS))
    con = duckdb.connect(":memory:", config={"python_enable_replacements": False})
    try:
        con.execute(f"SET allowed_paths = {_list(files)}")
        for name, value in SETTINGS.items():
            con.execute(f"SET {name} = {str(value).lower()}")
    except BaseException:
        con.close()
        raise
    return con


def _list(texts: Sequence[str]) -> str:
    """``texts`` as a DuckDB list literal."""
    return "[" + ", ".join("'" + t.replace("'", "''") + "'" for t in texts) + "]"


def named_tables(con: duckdb.DuckDBPyConnection, sql: str) -> set[str]:
    """Which of our tables ``sql`` names (DuckDB's binder, on the locked connection: a file function
    in ``sql`` is refused here already)."""
    duckdb = _duckdb()
    try:
        names = {name.lower() for name in con.get_table_names(sql)}
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None
    return names & set(TABLES)


@dataclass
class Source:
    """One table of a store: the runs' current Parquet copies (``files``, read by DuckDB itself, with
    projection and filter pushdown), the compacted files holding the rows of the runs compacted
    (``parts``, each perhaps read only for some of its runs), and the rows built from the records of
    the runs with neither."""

    files: list[str]
    built: pa.Table
    parts: list[Part] = field(default_factory=list)

    def paths(self) -> list[str]:
        """Every file the table reads (what the connection may read)."""
        return [*self.files, *(p.path for p in self.parts)]

    def arrow(self) -> pa.Table:
        """The whole table as Arrow (its files read)."""
        if not self.paths():
            return self.built
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        tables = [pq.read_table(f, schema=self.built.schema) for f in self.files]
        for part in self.parts:
            data = pq.read_table(part.path, schema=self.built.schema)
            tables.append(
                data if part.runs is None else data.filter(pc.is_in(data["run"], pa.array(part.runs)))
            )
        return pa.concat_tables([*tables, self.built])


class Tables:
    """The tables of one store, built on first use from one listing of its runs. ``metrics``,
    ``system`` and ``params`` come from each run's Parquet copy where it is current, else from its
    records (``reader.parquet``: the copy holds what the records give)."""

    def __init__(self, dir: Dir = None, runs: Sequence[Run] | None = None) -> None:
        self.dir = dir
        self._runs = list(runs) if runs is not None else None
        self._built: dict[str, Source] = {}
        self._compacted: Compacted | None = None

    @property
    def compacted(self) -> Compacted:
        """The runs read from ``tunetrack compact``'s files, and those files (``reader.compacted``)."""
        if self._compacted is None:
            self._compacted = read_compacted(self.runs)
        return self._compacted

    @property
    def runs(self) -> list[Run]:
        if self._runs is None:
            self._runs = list_runs(self.dir)
        return self._runs

    def source(self, name: str) -> Source:
        if name not in self._built:
            if name == "params_wide":
                self._built[name] = Source([], params_wide_table(self.source("params").arrow()))
            elif name in PARQUET_TABLES:
                compacted = self.compacted
                files, rest = split([r for r in self.runs if r.id not in compacted.runs], name)
                self._built[name] = Source(
                    [str(f) for f in files], BUILDERS[name](rest), compacted.parts[name]
                )
            else:
                self._built[name] = Source([], BUILDERS[name](self.runs))
        return self._built[name]

    def table(self, name: str) -> pa.Table:
        """The whole table as Arrow (its Parquet files read)."""
        return self.source(name).arrow()


def _register(con: duckdb.DuckDBPyConnection, name: str, source: Source) -> None:
    """``name`` as the statement sees it: the built rows, plus a view over the Parquet files (a
    compacted file that also holds rows that do not count read with a filter on ``run``; its
    ``project=``/``month=`` folders are not taken for columns)."""
    if not source.paths():
        con.register(name, source.built)
        return
    con.register(f"_built_{name}", source.built)
    columns = ", ".join(f'"{f.name}"' for f in source.built.schema)
    selects = [f"SELECT {columns} FROM _built_{name}"]
    if source.files:
        selects.append(f"SELECT {columns} FROM read_parquet({_list(source.files)})")
    whole = [p.path for p in source.parts if p.runs is None]
    if whole:
        selects.append(f"SELECT {columns} FROM read_parquet({_list(whole)}, hive_partitioning = false)")
    for part in source.parts:
        if part.runs is not None:
            selects.append(
                f"SELECT {columns} FROM read_parquet({_list([part.path])}, hive_partitioning = false) "
                f"WHERE run IN ({_list(part.runs)[1:-1]})"
            )
    con.execute(f"CREATE TEMP VIEW {name} AS {' UNION ALL '.join(reversed(selects))}")


def run_sql(sql: str, dir: Dir = None, *, tables: Tables | None = None) -> pa.Table:
    """The result of the read-only query ``sql`` over the store at ``dir`` (or ``tables``), as Arrow.
    Raises ``QueryError`` (one line) for a refused statement or a failed query."""
    duckdb = _duckdb()
    check(sql)
    tables = tables if tables is not None else Tables(dir)
    probe = connect()
    try:
        wanted = named_tables(probe, sql)
    finally:
        probe.close()
    sources = {name: tables.source(name) if name in wanted else Source([], empty(name)) for name in TABLES}
    con = connect([f for s in sources.values() for f in s.paths()])
    try:
        for name, source in sources.items():
            _register(con, name, source)
        relation = con.sql(sql)
        # ``to_arrow_table`` from DuckDB 1.4 on; older releases (1.2 on, the extra's floor) spell it so
        fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
        result: pa.Table = fetch()
        return result
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None
    finally:
        con.close()


def query(sql: str, dir: Dir = None) -> pd.DataFrame:
    """The result of the read-only SQL ``sql`` over the runs in ``dir`` as a pandas DataFrame.

    Tables: ``runs``, ``params``, ``params_wide``, ``metrics``, ``system``, ``events``, ``samples``,
    ``console``, ``summary`` (their columns: ``tunetrack.sql.TABLES``, or docs/query.md)::

        tunetrack.query("SELECT run, min(value) FROM metrics WHERE key = 'loss' GROUP BY run")
    """
    frame: pd.DataFrame = run_sql(sql, dir).to_pandas()
    return frame
