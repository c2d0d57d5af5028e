"""The commands that change runs in their store: ``tag``, ``rename``, ``note`` and ``rm`` (the read
API does the work: ``tag_run``, ``rename_run``, ``note_run``, ``delete_runs``), and those that write
derived data beside them: ``parquet`` (each run's copy), ``compact`` (many runs' copies merged) and
``reindex`` (the store's index, rebuilt from the runs)."""

from __future__ import annotations

import time
from typing import Any

import click

from .errors import friendly
from .options import SignedArgs, dir_option, run_argument, run_refs, runs_argument


@click.command("tag", cls=SignedArgs)
@run_argument()
@click.argument("changes", nargs=-1, required=True)
@dir_option()
@friendly
def tag_command(run: str, changes: tuple[str, ...], dir: str | None) -> None:
    """Add (+TAG) and remove (-TAG) tags of a run: tunetrack tag RUN +best -draft."""
    from ..edits import tag_changes
    from ..manage import tag_run

    add, remove = tag_changes(changes)
    r = tag_run(run, add, remove, dir=dir)
    click.echo(f"{r.id} ({r.name}): tags {', '.join(r.tags) or '(none)'}")


@click.command("rename")
@run_argument()
@click.argument("new_name")
@dir_option()
@friendly
def rename_command(run: str, new_name: str, dir: str | None) -> None:
    """Rename a run; it is found by its new name (which no other run may have) from then on."""
    from ..manage import rename_run
    from ..reader import open_run

    old = open_run(run, dir=dir).name
    r = rename_run(run, new_name, dir=dir)
    click.echo(f"{r.id}: renamed {old!r} to {r.name!r}")


@click.command("note")
@run_argument()
@click.argument("text")
@dir_option()
@friendly
def note_command(run: str, text: str, dir: str | None) -> None:
    """Add a note to a run (shown by show and the dashboard's API; notes accumulate)."""
    from ..manage import note_run

    r = note_run(run, text, dir=dir)
    click.echo(f"{r.id} ({r.name}): {len(r.notes)} note{'s' if len(r.notes) != 1 else ''}")


@click.command("rm")
@runs_argument()
@dir_option()
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@click.option(
    "--force",
    is_flag=True,
    help="Delete runs that are still running too (what their processes write afterwards is lost).",
)
@friendly
def rm_command(runs: list[str], dir: str | None, yes: bool, force: bool) -> None:
    """Delete runs and everything of them (in an object store: their objects and index entries).

    Asks first, unless --yes. Every RUN is looked up before anything is deleted, and a run that is
    still running is refused unless --force.
    """
    from ..manage import delete_runs

    for r in delete_runs(runs, dir=dir, force=force, confirm=None if yes else _confirm_delete):
        click.echo(f"deleted {r.id} ({r.name})")


def _confirm_delete(found: list[Any]) -> bool:
    """Ask on stderr before ``rm`` deletes ``found`` (the runs, listed); no aborts the command."""
    listed = "".join(f"\n  {r.id}  {r.name}  ({r.state})" for r in found)
    return click.confirm(
        f"Delete {len(found)} run{'s' if len(found) != 1 else ''}?{listed}\n", err=True, abort=True
    )


@click.command("parquet")
@click.argument("runs", nargs=-1, callback=run_refs)
@dir_option()
@click.option("--force", is_flag=True, help="Rewrite the copies that are current too.")
@friendly
def parquet_command(runs: list[str], dir: str | None, force: bool) -> None:
    """Write the Parquet copy of runs (every run if none is named): metrics.parquet, system.parquet and
    params.parquet in each run's folder or prefix, for DuckDB, Polars, pandas or Spark to read
    directly (docs/query.md). A run's last process writes them when it ends where pyarrow is
    installed; this writes those that are missing or stale (a run synced, resumed, or recorded
    without pyarrow). Needs pyarrow."""
    from ..manage.parquet import write_parquet

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "tunetrack parquet needs pyarrow: pip install 'tunetrack[query]'"
        ) from None
    for w in write_parquet(runs, dir=dir, force=force):
        what = f"wrote {w.bytes:,} bytes" if w.bytes else "current"
        click.echo(f"{w.run.id} ({w.run.name}): {what}")


@click.command("compact")
@dir_option(path=False)
@click.option(
    "--iceberg/--no-iceberg",
    default=None,
    help="Update the Apache Iceberg tables over the compacted files (default: when pyiceberg is "
    "installed and the store is a folder).",
)
@friendly
def compact_command(dir: str | None, iceberg: bool | None) -> None:
    """Merge ended runs' data into large Parquet files, by project and month, that tunetrack query
    reads instead of each run's own copy, and commit them to Iceberg tables that Spark, Trino, DuckDB
    and Polars read by name (docs/compact.md). Safe from cron or any machine while jobs write; a
    second run compacts nothing new; a run's own records are never removed. Needs pyarrow."""
    from ..manage.compact import compact

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "tunetrack compact needs pyarrow: pip install 'tunetrack[query]'"
        ) from None
    done = compact(dir, iceberg=iceberg)
    if done.number is None:
        click.echo("nothing new to compact")
    else:
        gone = f"; {done.deleted} deleted runs' rows dropped" if done.deleted else ""
        click.echo(
            f"commit {done.number}: {done.runs} runs, {done.rows:,} rows in {done.files} files "
            f"({done.bytes:,} bytes){gone} in {done.seconds:.1f} s"
        )
    if done.removed:
        click.echo(f"removed {done.removed} files left by a compaction that did not commit")
    if done.purged.kept:
        click.echo(
            f"kept {done.purged.kept} superseded files: the Iceberg tables were not updated "
            "(tunetrack compact without --no-iceberg, with pyiceberg installed, purges them)"
        )
    elif done.purged.files or done.purged.iceberg_files:
        click.echo(
            f"purged {done.purged.files} superseded files ({done.purged.bytes:,} bytes) and "
            f"{done.purged.iceberg_files} files of older Iceberg snapshots"
        )
    if done.iceberg is not None and done.iceberg.applied:
        click.echo(
            f"iceberg: {done.iceberg.applied} commits applied to the tables, "
            f"{done.iceberg.snapshots} snapshots"
        )
    elif done.iceberg_skipped:
        click.echo(f"iceberg tables not updated: {done.iceberg_skipped}")


@click.command("reindex")
@dir_option(path=False)
@friendly
def reindex_command(dir: str | None) -> None:
    """Rebuild the store's index (what ls, the dashboard, query, the terminal view and the MCP server
    list runs from) from the runs' own files: after it was lost, or when runs were copied in by other
    means than tunetrack. Safe while jobs write."""
    from ..manage.runs import reindex
    from ..reader import store_name

    started = time.monotonic()
    n = reindex(dir)
    click.echo(f"indexed {n:,} runs in {store_name(dir)} ({time.monotonic() - started:.1f} s)")
