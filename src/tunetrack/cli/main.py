"""The ``tunetrack`` command: a click group whose commands parse arguments and call the read API.

Every user error (an unknown run, an ambiguous prefix, a bad flag, a missing optional dependency)
ends in one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from ..errors import TunetrackError

DIR_HELP = "Store root (default: $TUNETRACK_DIR, else ./tunetrack_runs)."


def _friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn expected failures into one-line errors."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.ClickException:
            raise
        except (TunetrackError, OSError, ValueError, ImportError) as exc:
            raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        except Exception as exc:  # a bug of ours: still one line, with the way to see more
            if os.environ.get("TUNETRACK_DEBUG"):
                raise
            raise click.ClickException(
                f"internal error: {exc!r} (set TUNETRACK_DEBUG=1 for the traceback)"
            ) from None

    return wrapper


def _json_default(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def _dump(data: Any) -> str:
    """JSON with NaN and Infinity written as JavaScript/Python's json accept them (``NaN``)."""
    return json.dumps(data, allow_nan=True, default=_json_default)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tunetrack")
def cli() -> None:
    """tunetrack: look at the runs your fine-tuning jobs recorded."""


@cli.command("ls")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option("--project", default=None, help="Only runs of this project.")
@click.option(
    "--state", type=click.Choice(["running", "finished", "failed", "killed", "crashed"]), default=None
)
@click.option("--tag", "tags", multiple=True, help="Only runs with this tag (repeatable: all must match).")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most this many runs (newest first)."
)
@click.option("--json", "as_json", is_flag=True, help="An array of runs as JSON.")
@_friendly
def ls_command(
    root: str | None,
    project: str | None,
    state: str | None,
    tags: tuple[str, ...],
    limit: int | None,
    as_json: bool,
) -> None:
    """List runs, newest first."""
    from ..reader import list_runs
    from ..store.layout import resolve_root
    from . import render

    runs = list_runs(root, project=project, state=state, tags=list(tags))[:limit]
    if as_json:
        click.echo(_dump([render.run_record(r) for r in runs]))
    elif not runs:
        click.echo(f"no runs in {resolve_root(root)}")
    else:
        render.console().print(render.runs_table(runs))


@cli.command("show")
@click.argument("run")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option(
    "--json", "as_json", is_flag=True, help="Metadata, config, summary, events and system metrics as JSON."
)
@_friendly
def show_command(run: str, root: str | None, as_json: bool) -> None:
    """Show one run: metadata, config, summary, events, system metrics and a plot of the main metrics."""
    from ..reader import open_run
    from . import render

    r = open_run(run, dir=root)
    if as_json:
        click.echo(
            _dump(
                {
                    **render.run_record(r),
                    "meta": r.meta,
                    "config": r.config,
                    "summary": r.summary(),
                    "events": r.events(),
                    "system": r.system_summary(),
                }
            )
        )
        return
    render.show(r)


@cli.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@_friendly
def diff_command(run_a: str, run_b: str, root: str | None) -> None:
    """Config differences between two runs (only the keys that differ)."""
    from ..reader import open_run
    from . import render

    a, b = open_run(run_a, dir=root), open_run(run_b, dir=root)
    rows = config_diff(a.flat_config, b.flat_config)
    if not rows:
        click.echo(f"{a.id} and {b.id} have the same config")
        return
    render.console().print(render.diff_table(a, b, rows))


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, value in a, value in b) for every key that differs; a missing side is ``MISSING``."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, MISSING), b.get(key, MISSING)
        same = va == vb or (
            isinstance(va, float) and isinstance(vb, float) and math.isnan(va) and math.isnan(vb)
        )
        if not same:
            out.append((key, va, vb))
    return out


class _Missing:
    def __repr__(self) -> str:
        return "—"


MISSING = _Missing()


@cli.command("export")
@click.argument("run")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file (default: stdout; parquet: <run id>.parquet).",
)
@click.option(
    "--system", is_flag=True, help="Export the system metrics (one row per node and sample) instead."
)
@_friendly
def export_command(run: str, root: str | None, fmt: str, output: str | None, system: bool) -> None:
    """Export a run's logged rows (step, time and values). NaN/±Inf are written as NaN/Infinity."""
    from ..reader import open_run

    r = open_run(run, dir=root)
    rows = list(r.system_rows() if system else r.rows())
    if fmt == "parquet":
        try:
            import pandas as pd
        except ImportError:
            raise click.ClickException(
                "parquet export needs pandas and pyarrow: pip install 'tunetrack[parquet]'"
            ) from None
        path = output or f"{r.id}{'-system' if system else ''}.parquet"
        pd.DataFrame.from_records(rows).to_parquet(path)
        click.echo(f"wrote {len(rows)} rows to {path}", err=True)
        return
    stream = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout  # noqa: SIM115
    try:
        if fmt == "jsonl":
            for row in rows:
                stream.write(_dump(row) + "\n")
        else:
            import csv

            fields = list(dict.fromkeys(k for row in rows for k in row))
            writer = csv.DictWriter(stream, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
    finally:
        if output:
            stream.close()


@cli.command("ui")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. 127.0.0.1 keeps the dashboard on this machine; any other address "
    "(0.0.0.0 for every interface) exposes it and requires a token.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8477, show_default=True)
@click.option("--token", default=None, help="Token for non-loopback access (default: generated and printed).")
def ui_command(root: str | None, host: str, port: int, token: str | None) -> None:
    """Start the live local dashboard and print its address; Ctrl-C stops it."""
    try:
        import uvicorn

        from ..ui.app import create_app
    except ImportError:
        raise click.ClickException("the dashboard needs its extra: pip install 'tunetrack[ui]'") from None
    import secrets

    loopback = host in ("localhost", "::1") or host.startswith("127.")
    if token is None and not loopback:
        token = secrets.token_urlsafe(18)
    shown = "127.0.0.1" if host == "0.0.0.0" else host
    click.echo(
        f"tunetrack dashboard: http://{shown}:{port}/"
        + (f"?token={token}" if token else "")
        + "  (Ctrl-C stops)"
    )
    uvicorn.run(create_app(root, token), host=host, port=port, log_level="warning")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="tunetrack")
