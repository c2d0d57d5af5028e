"""Read-only SQL over a store, in DuckDB (in process).

A statement is checked with DuckDB's own parser before anything is read: one query (SELECT, WITH,
VALUES, FROM, DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one), nothing else. It then runs on a fresh
in-memory database whose configuration is locked with external access off: no file is read or written
(``read_csv``, ``COPY ... TO``, ``ATTACH``), no extension installed or loaded, and no Python variable
scanned. DuckDB cannot open an in-memory database read-only, so the statement check is what keeps
writes out, and the database, which holds only the tables built for this statement, is dropped after it.

Only the tables the statement names are built (``metrics`` is the big one); the others are there
without rows, so ``SHOW TABLES`` and ``DESCRIBE`` see every table.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import TunetrackError
from ..reader import Run, list_runs
from .tables import BUILDERS, TABLES, empty, params_wide_table

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
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
        raise QueryError(f"refused {kind.name}: {ALLOWED}")


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


def connect() -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB, locked down (``SETTINGS``)."""
    duckdb = _duckdb()
    return duckdb.connect(":memory:", config=dict(SETTINGS))


def named_tables(con: duckdb.DuckDBPyConnection, sql: str) -> set[str]:
    """Which of our tables ``sql`` names (DuckDB's binder, on the locked connection: a file function
    in ``sql`` is refused here already)."""
    duckdb = _duckdb()
    try:
        names = {name.lower() for name in con.get_table_names(sql)}
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None
    return names & set(TABLES)


class Tables:
    """The tables of one store, built on first use from one listing of its runs."""

    def __init__(self, dir: Dir = None, runs: Sequence[Run] | None = None) -> None:
        self.dir = dir
        self._runs = list(runs) if runs is not None else None
        self._built: dict[str, pa.Table] = {}

    @property
    def runs(self) -> list[Run]:
        if self._runs is None:
            self._runs = list_runs(self.dir)
        return self._runs

    def table(self, name: str) -> pa.Table:
        if name not in self._built:
            if name == "params_wide":
                self._built[name] = params_wide_table(self.table("params"))
            else:
                self._built[name] = BUILDERS[name](self.runs)
        return self._built[name]


def run_sql(sql: str, dir: Dir = None, *, tables: Tables | None = None) -> pa.Table:
    """The result of the read-only query ``sql`` over the store at ``dir`` (or ``tables``), as Arrow.
    Raises ``QueryError`` (one line) for a refused statement or a failed query."""
    duckdb = _duckdb()
    check(sql)
    tables = tables if tables is not None else Tables(dir)
    con = connect()
    try:
        wanted = named_tables(con, sql)
        for name in TABLES:
            con.register(name, tables.table(name) if name in wanted else empty(name))
        relation = con.sql(sql)
        # ``to_arrow_table`` from DuckDB 1.4 on; older releases (1.1 on, the extra's floor) spell it so
        fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
        result: pa.Table = fetch()
        return result
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None
    finally:
        con.close()


def query(sql: str, dir: Dir = None) -> pd.DataFrame:
    """The result of the read-only SQL ``sql`` over the runs in ``dir`` as a pandas DataFrame.

    Tables: ``runs``, ``params``, ``params_wide``, ``metrics``, ``system``, ``events``, ``summary``
    (their columns: ``tunetrack.sql.TABLES``, or docs/query.md)::

        tunetrack.query("SELECT run, min(value) FROM metrics WHERE key = 'loss' GROUP BY run")
    """
    frame: pd.DataFrame = run_sql(sql, dir).to_pandas()
    return frame
