"""The tables SQL sees: defined once in ``reader.sql_tables`` (each run's Parquet copy is built by the same
builders), named here for SQL's callers."""

from ..reader.sql_tables import BUILDERS, TABLES, empty, json_safe, markdown, params_wide_table

__all__ = ["BUILDERS", "TABLES", "empty", "json_safe", "markdown", "params_wide_table"]
