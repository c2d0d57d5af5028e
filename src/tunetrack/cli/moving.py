"""The commands that move runs between stores and trackers: ``sync`` (store to store),
``sync-backend`` (a store's runs into a backend such as MLflow) and ``import`` (another tracker's
runs into a store)."""

from __future__ import annotations

import sys
from typing import Any

import click

from .errors import Group, friendly
from .options import DIR_HELP, combine, dir_option, project_option, runs_argument


@click.command("sync")
@click.option(
    "--to", "destination", required=True, help="The store to copy to: an object-store URL or a folder."
)
@dir_option(
    "The store to copy from (default: $TUNETRACK_DIR or ./tunetrack_runs, and this machine's spool "
    "of runs whose processes died before uploading everything to --to).",
    path=False,
)
@click.argument("runs", nargs=-1)
@friendly
def sync_command(destination: str, dir: str | None, runs: tuple[str, ...]) -> None:
    """Copy runs (all, or the RUNS named) to another store; only what the destination lacks is sent.

    Call it again at any time: a run still being written is copied up to its last whole record and
    completed by a later call; nothing is sent twice.
    """
    from ..manage.sync import count_runs, sources_for, sync
    from . import printing

    sources = [s for s in sources_for(destination, dir) if str(s) != destination.rstrip("/")]
    if not sources:
        raise click.ClickException(f"nothing to copy to {destination}: no local store here (use --dir)")
    failed = False
    for source in sources:
        with printing.progress(f"{source} -> {destination}", count_runs(source, runs)) as advance:
            report = sync(source, destination, runs, on_run=advance, lenient=len(sources) > 1)
        click.echo(f"{source} -> {destination}: {report}")
        failed = failed or bool(report.errors)
    if failed:
        sys.exit(1)


@click.command("sync-backend")
@runs_argument()
@click.option(
    "--to",
    "backend",
    required=True,
    help="A backend's name (mlflow, tensorboard, wandb, trackio, comet, or one a package registers); it takes "
    "its settings from its own environment variables (MLFLOW_TRACKING_URI, ...).",
)
@dir_option(path=False)
@friendly
def sync_backend_command(runs: list[str], backend: str, dir: str | None) -> None:
    """Send recorded RUNS into a backend: what a live mirror missed, or runs recorded offline.

    The backend continues the same remote run; where it can say what it holds (MLflow, TensorBoard,
    trackio, Comet), only the missing points are sent, so a second call sends nothing.
    """
    from ..bridges.replay import replay
    from ..reader import open_run
    from . import printing

    for ref in runs:
        run = open_run(ref, dir=dir)
        total = sum(1 for _ in run.rows()) + sum(1 for _ in run.system_rows())
        with printing.progress(f"{run.id} -> {backend}", total) as advance:
            done = replay(run, backend, on_rows=lambda n: advance(by=n))
        click.echo(f"{run.id} -> {backend}: {done}")


@click.group("import", cls=Group)
def import_group() -> None:
    """Bring runs recorded by another tracker into a tunetrack store.

    One tunetrack run per source run, with its config, metrics (steps and wall times as recorded),
    tags, name and state. Importing the same source again creates nothing new.
    """


#: the options every ``import`` command takes: the store to import into and the project
import_options = combine(
    dir_option("The store to import into. " + DIR_HELP, path=False),
    project_option("Put the runs in this project (default: the source's)."),
)


def _import(source: str, runs: Any, dir: str | None, project: str | None) -> None:
    """Import ``runs`` (a source's ``SourceRun`` iterator), one line per run, then a count."""
    from ..bridges.importers import import_runs
    from ..reader import store_name
    from . import printing

    counts: dict[str, int] = {}
    with printing.progress(f"import {source}", None) as advance:
        for done in import_runs(runs, dir, project):
            advance()
            outcome = done.outcome.split(":")[0]
            counts[outcome] = counts.get(outcome, 0) + 1
            plural = "" if done.points == 1 else "s"
            points = f" ({done.points:,} point{plural})" if done.outcome == "imported" else ""
            click.echo(f"{done.run_id or '-':8}  {done.name}: {done.outcome}{points}")
    summary = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    click.echo(f"{source} -> {store_name(dir)}: {summary}")


@import_group.command("tensorboard")
@click.argument("logdir")
@import_options
@friendly
def import_tensorboard(logdir: str, dir: str | None, project: str | None) -> None:
    """TensorBoard event files: each folder under LOGDIR that holds some is a run."""
    from ..bridges.importers import tensorboard

    _import("tensorboard", tensorboard.runs(logdir), dir, project)


@import_group.command("mlflow")
@click.option("--tracking-uri", default=None, help="The MLflow tracking URI (default: $MLFLOW_TRACKING_URI).")
@click.option("--experiment", default=None, help="Only this experiment's runs (default: every experiment).")
@import_options
@friendly
def import_mlflow(
    tracking_uri: str | None, experiment: str | None, dir: str | None, project: str | None
) -> None:
    """An MLflow tracking server or store: each MLflow run, in a project named after its experiment."""
    from ..bridges.importers import mlflow

    _import("mlflow", mlflow.runs(tracking_uri, experiment), dir, project)


@import_group.command("wandb")
@click.argument("path")
@import_options
@friendly
def import_wandb(path: str, dir: str | None, project: str | None) -> None:
    """W&B run folders on disk: a wandb/ folder, an offline-run-* or run-* folder, or a .wandb file."""
    from ..bridges.importers import wandb

    _import("wandb", wandb.runs(path), dir, project)


@import_group.command("trackio")
@click.argument("trackio_project", required=False)
@import_options
@friendly
def import_trackio(trackio_project: str | None, dir: str | None, project: str | None) -> None:
    """trackio's local store (TRACKIO_DIR): TRACKIO_PROJECT's runs, or every project's."""
    from ..bridges.importers import trackio

    _import("trackio", trackio.runs(trackio_project), dir, project)


@import_group.command("comet")
@click.argument("archives", nargs=-1, required=True)
@import_options
@friendly
def import_comet(archives: tuple[str, ...], dir: str | None, project: str | None) -> None:
    """Comet offline experiment archives (the .zip files comet_ml writes offline, or folders of them)."""
    from ..bridges.importers import comet

    _import("comet", comet.runs(archives), dir, project)
