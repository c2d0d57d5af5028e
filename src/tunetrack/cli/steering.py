"""The commands that steer runs rather than read them: ``run`` (record any command as a run, with no
change to its code: ``tunetrack.launch``) and ``stop`` (ask a live run to stop, from anywhere that
reaches its store: ``manage.stop_run``)."""

from __future__ import annotations

import click

from .errors import friendly
from .options import dir_option, run_argument


@click.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--project", default=None, help="The run's project.")
@click.option("--name", default=None, help="The run's name.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option(
    "--stop-grace",
    type=click.FloatRange(min=0),
    default=600,
    show_default=True,
    help="Seconds a command whose adapter was asked to stop has to stop by itself before it is sent "
    "SIGTERM (a command with no adapter gets it at once).",
)
@click.option(
    "--rules",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A rules file (docs/alerts.md#rules) for the training the command runs: $TUNETRACK_RULES there.",
)
@dir_option()
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@friendly
def run_command(
    project: str | None,
    name: str | None,
    tags: tuple[str, ...],
    stop_grace: float,
    rules: str | None,
    dir: str | None,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND and record it as one run, with no change to its code.

    tunetrack run --project sft -- python train.py --lr 3e-4

    Records the command line, everything it and the processes it starts print, the machine's system
    metrics, the exit code and the duration. Where it trains with the Transformers Trainer (TRL, LLaMA
    Factory, ms-swift), Accelerate or torchtune, the adapter attaches itself, so metrics, config,
    checkpoints and samples land in the same run; a launcher's workers (torchrun, accelerate launch)
    join it too. The run ends as the command did (finished, failed, killed, or stopped by
    `tunetrack stop`), and the exit code is passed through.
    """
    import os
    import sys

    from ..attach.command import run_command as run

    if rules is not None:
        from ..monitoring.rules import load_rules

        load_rules(rules)  # a bad file stops here, in one line, before anything runs
        os.environ["TUNETRACK_RULES"] = os.path.abspath(rules)  # the processes the command starts
    sys.exit(run(list(command), project=project, name=name, tags=tags, dir=dir, stop_grace=stop_grace))


@click.command("stop")
@run_argument()
@click.option("--reason", default="", help="Why (one line): shown with the run's state and in its events.")
@click.option(
    "--wait",
    "wait",
    type=click.FloatRange(min=0),
    default=None,
    help="Wait up to this many seconds for the run to end, then print how it ended.",
)
@dir_option()
@friendly
def stop_command(run: str, reason: str, wait: float | None, dir: str | None) -> None:
    """Ask a live run to stop, on this machine or any other that writes to the same store.

    The run's process finds the request within a few seconds ($TUNETRACK_CONTROL_INTERVAL); its
    adapter then stops training the way the framework stops cleanly (the Trainer saves a checkpoint
    and ends), and the run ends ``stopped``, with who asked and why. A loop of your own reads
    ``Tracker.should_stop``.
    """
    import time

    from ..manage import stop_run
    from ..reader.as_text import state
    from ..states import State

    r = stop_run(run, reason, dir=dir)
    click.echo(f"{r.id} ({r.name}): asked to stop; it stops at its next step")
    if wait is None:
        return
    deadline = time.monotonic() + wait
    while r.state == State.RUNNING and time.monotonic() < deadline:
        time.sleep(0.5)
        r.refresh()
    if r.state == State.RUNNING:
        raise click.ClickException(f"run {r.id} is still running after {wait:g} s")
    click.echo(f"{r.id} ({r.name}): {state(r)}")
