"""The commands that steer runs rather than read them: ``run`` (record any command as a run, with no
change to its code: ``tunetrack.launch``) and ``stop`` (ask a live run to stop, from anywhere that
reaches its store: ``manage.stop_run``)."""

from __future__ import annotations

import click

from .errors import friendly
from .options import dir_option, run_argument


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

    r = stop_run(run, reason, dir=dir)
    click.echo(f"{r.id} ({r.name}): asked to stop; it stops at its next step")
    if wait is None:
        return
    deadline = time.monotonic() + wait
    while r.state == "running" and time.monotonic() < deadline:
        time.sleep(0.5)
        r.refresh()
    if r.state == "running":
        raise click.ClickException(f"run {r.id} is still running after {wait:g} s")
    click.echo(f"{r.id} ({r.name}): {state(r)}")
