"""Ask across runs: read-only SQL over a store, run by DuckDB in process.

The tables (``TABLES``: ``runs``, ``params``, ``params_wide``, ``metrics``, ``system``, ``events``,
``summary``) are built from the read API (``tunetrack.reader``) as Arrow tables, only those a statement
names. ``query`` returns a pandas DataFrame, ``run_sql`` an Arrow table; ``tunetrack query`` and the MCP
server's ``query`` tool call ``run_sql``. duckdb, pandas and pyarrow are imported on first use
(``pip install 'tunetrack[query]'``).
"""

from .engine import QueryError, Tables, check, query, run_sql
from .schema import TABLES

__all__ = ["TABLES", "QueryError", "Tables", "check", "query", "run_sql"]
