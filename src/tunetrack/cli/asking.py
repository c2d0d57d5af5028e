"""The commands that ask across runs: ``query`` (read-only SQL over the store, ``tunetrack.sql``) and
``mcp`` (the same questions for an AI agent, over the Model Context Protocol: ``tunetrack.agents``)."""

from __future__ import annotations

import click

from .errors import friendly
from .options import dir_option, output_option


@click.command("query")
@click.argument("sql")
@dir_option()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json", "parquet"]),
    default="table",
    show_default=True,
    help="table: for reading; csv, json (an array of objects), parquet (to -o FILE): for programs.",
)
@output_option("Output file (default: stdout; parquet needs one).")
@friendly
def query_command(sql: str, dir: str | None, fmt: str, output: str | None) -> None:
    """Run read-only SQL (DuckDB) over the runs: tables runs, params, params_wide, metrics, system,
    events, samples, console, summary (docs/query.md lists their columns).

    \b
    tunetrack query "SELECT run, min(value) FROM metrics WHERE key = 'loss' GROUP BY run"
    tunetrack query "DESCRIBE summary"

    Only one query is run (SELECT, WITH, DESCRIBE, SHOW, EXPLAIN); it reads no file and writes nothing.
    """
    from ..sql import run_sql
    from . import export, printing

    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet writes a file: give -o FILE")
    result = run_sql(sql, dir)
    if fmt == "table":
        if output is not None:
            raise click.UsageError("-o is for csv, json and parquet")
        printing.console().print(printing.result_table(result))
        return
    count = export.write_result(result, fmt, output)
    if output is not None:
        click.echo(f"wrote {count} rows to {output}", err=True)


@click.command("mcp")
@dir_option()
@click.option(
    "--allow-edits",
    is_flag=True,
    help="Also serve tag_run and note_run (an agent may then tag and annotate runs; nothing is deleted).",
)
@friendly
def mcp_command(dir: str | None, allow_edits: bool) -> None:
    """Serve the store to an AI agent over MCP (stdio): list, read, compare and query runs.

    Agent clients start it as a command; docs/agents.md has the configuration for Claude Code,
    Claude Desktop, Cursor and VS Code. Read-only unless --allow-edits.
    """
    from ..agents import serve

    serve(dir, allow_edits=allow_edits)
