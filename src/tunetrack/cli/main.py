"""The ``tunetrack`` command: a click group whose commands parse arguments and call the read API
(``tunetrack.reader``, which also renames, tags, notes and deletes runs) and the output helpers
(``tables``, ``plot``, ``export``).

Every user error (an unknown run, an ambiguous prefix, a bad flag, a missing optional dependency)
ends in one line on stderr and a non-zero exit (1, or 2 for a usage error), never a traceback.
Heavy modules (rich, plotext, numpy through the reader) are imported inside the commands, so
``tunetrack --help`` imports only click.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import IO, Any

import click

from ..errors import TunetrackError
from ..states import STATES

DIR_HELP = "Store: a folder or an object-store URL such as s3://bucket/prefix (default: $TUNETRACK_DIR, else ./tunetrack_runs)."


def _friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn expected failures into one-line errors (click prints ``Error: ...`` and exits 1)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Abort, BrokenPipeError):
            raise  # click exits quietly when a pipe reader (``| head``) went away, or a prompt said no
        except (TunetrackError, OSError, ValueError, ImportError) as exc:
            raise click.ClickException(_one_line(exc)) from None
        except Exception as exc:  # a bug of ours: still one line, with the way to see more
            if os.environ.get("TUNETRACK_DEBUG"):
                raise
            raise click.ClickException(
                f"internal error: {_one_line(exc)} (set TUNETRACK_DEBUG=1 for the traceback)"
            ) from None

    return wrapper


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _run_ref(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A RUN argument: an empty string would be a prefix of every run id."""
    if not value.strip():
        raise click.BadParameter("give a run id, a unique id prefix or a unique name")
    return value


class _OneLineUsageError(click.UsageError):
    """A usage error shown as one line (click prints the usage block and a hint before it)."""

    def show(self, file: IO[Any] | None = None) -> None:
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"Error: {self.format_message()}{hint}", file=file, err=True)


class _SignedArgs(click.Command):
    """A command whose arguments may start with ``-`` (``tunetrack tag RUN +best -draft``): an
    argument that is none of its options is passed on as an argument, after a ``--``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = {o for p in self.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}
        head, signed = list(args), []
        end = head.index("--") if "--" in head else len(head)
        for arg in list(head[:end]):
            if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1 and arg not in options:
                head.remove(arg)
                signed.append(arg)
        if signed and "--" not in head:
            head.append("--")
        return super().parse_args(ctx, head + signed)


class _Group(click.Group):
    """A click group whose bad flags, missing arguments and unknown commands give one line."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            raise  # ``tunetrack`` alone prints the help
        except click.UsageError as exc:
            raise _OneLineUsageError(exc.format_message(), exc.ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.NoArgsIsHelpError, _OneLineUsageError):
            raise
        except click.UsageError as exc:
            raise _OneLineUsageError(exc.format_message(), exc.ctx) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tunetrack")
def cli() -> None:
    """tunetrack: look at the runs your fine-tuning jobs recorded.

    A RUN is named by its id, its unique name, or a unique prefix of its id (in that order).
    """


@cli.command("ls")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option("--project", default=None, help="Only runs of this project.")
@click.option(
    "--state",
    type=click.Choice(STATES),
    default=None,
    help="Only runs in this state.",
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
    """List runs, newest first, with their state, last step and last loss."""
    from ..reader import list_runs, run_json, store_at
    from . import export, tables

    runs = list_runs(root, project=project, state=state, tags=list(tags))[:limit]
    latest = [r.latest() for r in runs]
    if as_json:
        click.echo(export.dumps([run_json(r, last) for r, last in zip(runs, latest)]))
    elif not runs:
        filtered = " matching the filters" if (project or state or tags) else ""
        click.echo(f"no runs{filtered} in {store_at(root)}")
    else:
        tables.console().print(tables.runs_table(runs, latest))


@cli.command("show")
@click.argument("run", callback=_run_ref)
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option(
    "--json", "as_json", is_flag=True, help="Metadata, config, summary, events and system metrics as JSON."
)
@_friendly
def show_command(run: str, root: str | None, as_json: bool) -> None:
    """Show one run: metadata, config, summary, events, system metrics and a plot of the main metrics."""
    from ..reader import open_run, run_json
    from . import export, tables

    r = open_run(run, dir=root)
    if not as_json:
        tables.show(r)
        return
    record = {**run_json(r, detail=True), "summary": r.summary(), "system": r.system_summary()}
    click.echo(export.dumps(record))


@cli.command("diff")
@click.argument("run_a", callback=_run_ref)
@click.argument("run_b", callback=_run_ref)
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@_friendly
def diff_command(run_a: str, run_b: str, root: str | None) -> None:
    """Config differences between two runs: keys only in A, only in B, and changed values."""
    from ..config import diff
    from ..reader import open_run
    from . import tables

    a, b = open_run(run_a, dir=root), open_run(run_b, dir=root)
    rows = diff([a.flat_config, b.flat_config])
    if not rows:
        click.echo(f"{a.id} and {b.id} have the same config")
        return
    tables.console().print(tables.diff_table(a, b, rows))


@cli.command("export")
@click.argument("run", callback=_run_ref)
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file (default: stdout; parquet: ./<run id>.parquet).",
)
@click.option(
    "--system", is_flag=True, help="Export the system metrics (one row per node and sample) instead."
)
@_friendly
def export_command(run: str, root: str | None, fmt: str, output: str | None, system: bool) -> None:
    """Export a run's logged rows: step, time and the values, one row per log() call.

    jsonl writes NaN and +-Inf as NaN/Infinity and None as null; csv writes them as nan/inf and an
    empty cell.
    """
    from ..reader import open_run
    from . import export, tables

    if fmt == "parquet":
        export.require_parquet()  # before reading the run: fail fast, with the pip command
    r = open_run(run, dir=root)
    if system:
        rows, fields = list(r.system_rows()), ["node", "step", "time", *r.system_keys()]
    else:
        rows, fields = list(r.rows()), ["step", "time", *r.keys()]
    if fmt == "parquet":
        output = output or f"{r.id}{'-system' if system else ''}.parquet"
    with tables.progress(f"exporting {r.id}", len(rows)) as advance:
        count = export.write(tables.counted(rows, advance), fields, fmt, output)
    if fmt == "parquet":
        click.echo(f"wrote {count} rows to {output}", err=True)


@cli.command("tag", cls=_SignedArgs)
@click.argument("run", callback=_run_ref)
@click.argument("changes", nargs=-1, required=True)
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@_friendly
def tag_command(run: str, changes: tuple[str, ...], root: str | None) -> None:
    """Add (+TAG) and remove (-TAG) tags of a run: tunetrack tag RUN +best -draft."""
    from ..edits import tag_changes
    from ..reader import tag_run

    add, remove = tag_changes(changes)
    r = tag_run(run, add, remove, dir=root)
    click.echo(f"{r.id} ({r.name}): tags {', '.join(r.tags) or '(none)'}")


@cli.command("rename")
@click.argument("run", callback=_run_ref)
@click.argument("new_name")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@_friendly
def rename_command(run: str, new_name: str, root: str | None) -> None:
    """Rename a run; it is found by its new name (which no other run may have) from then on."""
    from ..reader import open_run, rename_run

    old = open_run(run, dir=root).name
    r = rename_run(run, new_name, dir=root)
    click.echo(f"{r.id}: renamed {old!r} to {r.name!r}")


@cli.command("note")
@click.argument("run", callback=_run_ref)
@click.argument("text")
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@_friendly
def note_command(run: str, text: str, root: str | None) -> None:
    """Add a note to a run (shown by show and the dashboard's API; notes accumulate)."""
    from ..reader import note_run

    r = note_run(run, text, dir=root)
    click.echo(f"{r.id} ({r.name}): {len(r.notes)} note{'s' if len(r.notes) != 1 else ''}")


@cli.command("rm")
@click.argument(
    "runs", nargs=-1, required=True, callback=lambda ctx, param, v: [_run_ref(ctx, param, r) for r in v]
)
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@click.option(
    "--force",
    is_flag=True,
    help="Delete runs that are still running too (what their processes write afterwards is lost).",
)
@_friendly
def rm_command(runs: list[str], root: str | None, yes: bool, force: bool) -> None:
    """Delete runs and everything of them (in an object store: their objects and index entries).

    Asks first, unless --yes. Every RUN is looked up before anything is deleted, and a run that is
    still running is refused unless --force.
    """
    from ..reader import delete_runs

    def confirm(found: list[Any]) -> bool:
        listed = "".join(f"\n  {r.id}  {r.name}  ({r.state})" for r in found)
        return click.confirm(
            f"Delete {len(found)} run{'s' if len(found) != 1 else ''}?{listed}\n", err=True, abort=True
        )

    for r in delete_runs(runs, dir=root, force=force, confirm=None if yes else confirm):
        click.echo(f"deleted {r.id} ({r.name})")


@cli.command("report")
@click.argument(
    "runs", nargs=-1, required=True, callback=lambda ctx, param, v: [_run_ref(ctx, param, r) for r in v]
)
@click.option("--dir", "root", type=click.Path(file_okay=False), default=None, help=DIR_HELP)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The HTML file to write (default: ./tunetrack-report-<run ids>.html).",
)
@_friendly
def report_command(runs: list[str], root: str | None, output: str | None) -> None:
    """Write one HTML file that shows RUNS: overview, summary, a chart of every metric (the runs
    overlaid), config and its differences, events.

    The file holds everything it needs (data, scripts, styles): it opens offline in any browser and
    can be mailed or attached to an issue. Long series are thinned with every spike kept, so a run of
    a million points makes a file of a few hundred kB.
    """
    from ..reader import open_run
    from ..ui import report
    from . import tables

    opened = list({r.id: r for r in (open_run(ref, dir=root) for ref in runs)}.values())
    path = output or report.filename(opened)
    try:  # before the work: an unwritable path fails at once
        out = open(path, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None
    with out:
        try:
            with tables.progress("report", report.chart_count(opened)) as advance:
                html = report.render(opened, on_chart=advance)
        except BaseException:
            out.close()
            os.unlink(path)  # no empty file left behind
            raise
        out.write(html)
    size = len(html.encode())
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
    click.echo(f"wrote {path} ({len(opened)} run{'s' if len(opened) > 1 else ''}, {shown})")


@cli.command("sync")
@click.option(
    "--to", "destination", required=True, help="The store to copy to: an object-store URL or a folder."
)
@click.option(
    "--dir",
    "root",
    default=None,
    help="The store to copy from (default: $TUNETRACK_DIR or ./tunetrack_runs, and this machine's spool "
    "of runs whose processes died before uploading everything to --to).",
)
@click.argument("runs", nargs=-1)
@_friendly
def sync_command(destination: str, root: str | None, runs: tuple[str, ...]) -> None:
    """Copy runs (all, or the RUNS named) to another store; only what the destination lacks is sent.

    Call it again at any time: a run still being written is copied up to its last whole record and
    completed by a later call; nothing is sent twice.
    """
    from ..reader.sync import count_runs, sources_for, sync
    from . import tables

    sources = [s for s in sources_for(destination, root) if str(s) != destination.rstrip("/")]
    if not sources:
        raise click.ClickException(f"nothing to copy to {destination}: no local store here (use --dir)")
    failed = False
    for source in sources:
        with tables.progress(f"{source} -> {destination}", count_runs(source, runs)) as advance:
            report = sync(source, destination, runs, on_run=advance, lenient=len(sources) > 1)
        click.echo(f"{source} -> {destination}: {report}")
        failed = failed or bool(report.errors)
    if failed:
        sys.exit(1)


@cli.command("sync-backend")
@click.argument(
    "runs", nargs=-1, required=True, callback=lambda ctx, param, v: [_run_ref(ctx, param, r) for r in v]
)
@click.option(
    "--to",
    "backend",
    required=True,
    help="A backend's name (mlflow, tensorboard, wandb, trackio, or one a package registers); it takes "
    "its settings from its own environment variables (MLFLOW_TRACKING_URI, ...).",
)
@click.option("--dir", "root", default=None, help=DIR_HELP)
@_friendly
def sync_backend_command(runs: list[str], backend: str, root: str | None) -> None:
    """Send recorded RUNS into a backend: what a live mirror missed, or runs recorded offline.

    The backend continues the same remote run; where it can say what it holds (MLflow, TensorBoard),
    only the missing points are sent, so a second call sends nothing.
    """
    from ..bridges.replay import replay
    from ..reader import open_run
    from . import tables

    for ref in runs:
        run = open_run(ref, dir=root)
        total = sum(1 for _ in run.rows()) + sum(1 for _ in run.system_rows())
        with tables.progress(f"{run.id} -> {backend}", total) as advance:
            done = replay(run, backend, on_rows=lambda n: advance(by=n))
        click.echo(f"{run.id} -> {backend}: {done}")


@cli.group("import", cls=_Group)
def import_group() -> None:
    """Bring runs recorded by another tracker into a tunetrack store.

    One tunetrack run per source run, with its config, metrics (steps and wall times as recorded),
    tags, name and state. Importing the same source again creates nothing new.
    """


def _import_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--project", default=None, help="Put the runs in this project (default: the source's)."
    )(fn)
    return click.option("--dir", "root", default=None, help="The store to import into. " + DIR_HELP)(fn)


def _import(source: str, runs: Any, root: str | None, project: str | None) -> None:
    """Import ``runs`` (a source's ``SourceRun`` iterator), one line per run, then a count."""
    from ..bridges.importers import import_runs
    from ..reader import store_at
    from . import tables

    counts: dict[str, int] = {}
    with tables.progress(f"import {source}", None) as advance:
        for done in import_runs(runs, root, project):
            advance()
            outcome = done.outcome.split(":")[0]
            counts[outcome] = counts.get(outcome, 0) + 1
            plural = "" if done.points == 1 else "s"
            points = f" ({done.points:,} point{plural})" if done.outcome == "imported" else ""
            click.echo(f"{done.run_id or '-':8}  {done.name}: {done.outcome}{points}")
    summary = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    click.echo(f"{source} -> {store_at(root)}: {summary}")


@import_group.command("tensorboard")
@click.argument("logdir")
@_import_options
@_friendly
def import_tensorboard(logdir: str, root: str | None, project: str | None) -> None:
    """TensorBoard event files: each folder under LOGDIR that holds some is a run."""
    from ..bridges.importers import tensorboard

    _import("tensorboard", tensorboard.runs(logdir), root, project)


@import_group.command("mlflow")
@click.option("--tracking-uri", default=None, help="The MLflow tracking URI (default: $MLFLOW_TRACKING_URI).")
@click.option("--experiment", default=None, help="Only this experiment's runs (default: every experiment).")
@_import_options
@_friendly
def import_mlflow(
    tracking_uri: str | None, experiment: str | None, root: str | None, project: str | None
) -> None:
    """An MLflow tracking server or store: each MLflow run, in a project named after its experiment."""
    from ..bridges.importers import mlflow

    _import("mlflow", mlflow.runs(tracking_uri, experiment), root, project)


@import_group.command("wandb")
@click.argument("path")
@_import_options
@_friendly
def import_wandb(path: str, root: str | None, project: str | None) -> None:
    """W&B run folders on disk: a wandb/ folder, an offline-run-* or run-* folder, or a .wandb file."""
    from ..bridges.importers import wandb

    _import("wandb", wandb.runs(path), root, project)


@import_group.command("trackio")
@click.argument("trackio_project", required=False)
@_import_options
@_friendly
def import_trackio(trackio_project: str | None, root: str | None, project: str | None) -> None:
    """trackio's local store (TRACKIO_DIR): TRACKIO_PROJECT's runs, or every project's."""
    from ..bridges.importers import trackio

    _import("trackio", trackio.runs(trackio_project), root, project)


@cli.command("watch")
@click.option("--dir", "root", default=None, help=DIR_HELP)
@click.option(
    "--alert",
    "urls",
    multiple=True,
    help="A webhook URL to alert (repeatable; default: $TUNETRACK_ALERT_URL). Slack and Discord "
    "webhooks get their own format, any other URL a JSON POST.",
)
@click.option(
    "--stall",
    type=click.FloatRange(min=0),
    default=1800,
    show_default=True,
    help="Alert when a running run logs no new step for this many seconds (0: never).",
)
@click.option(
    "--interval", type=click.FloatRange(min=0.1), default=30, show_default=True, help="Seconds between polls."
)
@_friendly
def watch_command(root: str | None, urls: tuple[str, ...], stall: float, interval: float) -> None:
    """Watch a store and alert when a run crashes (SIGKILL, OOM, a lost machine) or stalls; Ctrl-C stops.

    A run's own alerts (failed, killed, NaN loss) come from its process; this covers what a dead
    process cannot send.
    """
    import time

    from .. import settings
    from ..monitoring.alerts import Alerter
    from ..reader import list_runs, store_at
    from .watch import Watcher

    alerter = Alerter(settings.alert_urls(list(urls) or None), interval=0)
    if not alerter.urls:
        raise click.ClickException("give a webhook: --alert URL, or set TUNETRACK_ALERT_URL")
    watcher = Watcher(stall)
    click.echo(f"watching {store_at(root)} (every {interval:g} s; Ctrl-C stops)")
    try:
        while True:
            for alert in watcher.poll(list_runs(root)):
                click.echo(alert.line() + (f": {alert.text}" if alert.text else ""))
                alerter.send(alert)
            time.sleep(interval)
    except KeyboardInterrupt:
        alerter.close()


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
