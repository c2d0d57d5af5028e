"""A team's commands: personal tokens (``token create``, ``list``, ``revoke``: ``team.tokens``) for
``tunetrack ui --team FILE``, and the store's audit trail (``audit``: ``reader.audit``)."""

from __future__ import annotations

import click

from .errors import Group, friendly
from .options import dir_option, json_option, project_option, since_option

TEAM_HELP = "The team file (TOML) whose tokens file this changes (tunetrack ui --team FILE)."


def _tokens(team_file: str):  # noqa: ANN202 - team.tokens is imported here only
    from ..team.file import load_team
    from ..team.tokens import Tokens

    return Tokens(load_team(team_file).tokens)


@click.group("token", cls=Group)
def token_group() -> None:
    """Personal tokens of a team's dashboard: create one for a person (shown once), list them, revoke."""


@token_group.command("create")
@click.option(
    "--team", "team_file", required=True, type=click.Path(dir_okay=False, exists=True), help=TEAM_HELP
)
@click.option("--person", required=True, help="Who signs in with it: the address the team file names.")
@click.option(
    "--days",
    type=click.FloatRange(min=0, min_open=True),
    default=90,
    show_default=True,
    help="Valid for this many days.",
)
@click.option("--name", default="", help="What it is for (laptop, ci, agent): shown by token list.")
@friendly
def token_create(team_file: str, person: str, days: float, name: str) -> None:
    """Make a token for PERSON and print it: it is shown this once (only its hash is kept)."""
    from ..reader.as_text import when

    entry, text = _tokens(team_file).create(person, days, name)
    click.echo(text)
    click.echo(f"token {entry.id} for {entry.person}, valid until {when(entry.expires)}", err=True)


@token_group.command("list")
@click.option(
    "--team", "team_file", required=True, type=click.Path(dir_okay=False, exists=True), help=TEAM_HELP
)
@json_option("Print JSON: each token's entry (never the token).")
@friendly
def token_list(team_file: str, as_json: bool) -> None:
    """Every token: id, person, name, created, expires, and whether it is revoked or expired."""
    import json
    import time
    from dataclasses import asdict

    from ..reader.as_text import when

    entries = sorted(_tokens(team_file).entries().values(), key=lambda t: t.created)
    if as_json:
        click.echo(json.dumps([{k: v for k, v in asdict(t).items() if k != "digest"} for t in entries]))
        return
    now = time.time()
    for t in entries:
        status = "revoked" if t.revoked else ("expired" if t.expires <= now else "valid")
        click.echo(
            f"{t.id}  {t.person}  {t.name or '-'}  created {when(t.created)}  until {when(t.expires)}  {status}"
        )
    if not entries:
        click.echo("no tokens yet: tunetrack token create --team FILE --person ADDRESS", err=True)


@token_group.command("revoke")
@click.argument("ref")
@click.option(
    "--team", "team_file", required=True, type=click.Path(dir_okay=False, exists=True), help=TEAM_HELP
)
@friendly
def token_revoke(ref: str, team_file: str) -> None:
    """Revoke the token with id REF, or every token of the person REF: at once, and the dashboard
    sessions they began with it."""
    for t in _tokens(team_file).revoke(ref):
        click.echo(f"revoked {t.id} ({t.person}{', ' + t.name if t.name else ''})")


@click.command("audit")
@click.argument("run", required=False)
@dir_option(path=False)
@project_option("Only the changes to this project's runs.")
@click.option("--by", default=None, help="Only the changes this person (or user@host) made.")
@since_option("Only the changes made since this time (2026-11-01, 3d, 12h).")
@json_option("Print JSON lines: time, by, origin, action, run, name, project, what.")
@friendly
def audit_command(
    run: str | None, dir: str | None, project: str | None, by: str | None, since: float | None, as_json: bool
) -> None:
    """Who renamed, tagged, noted, stopped and deleted which runs, when, from where, and what changed,
    oldest first (RUN: that run's alone; a deleted run by its id)."""
    import json

    from ..reader.as_text import when
    from ..reader.audit import trail

    entries = trail(dir, project)
    if run is not None:
        entries = [e for e in entries if e.run == run or e.run.startswith(run) or e.name == run]
        if not entries:
            raise click.ClickException(f"no change recorded of a run named {run!r} (id, prefix or name)")
    entries = [
        e
        for e in entries
        if (by is None or e.by.lower() == by.lower()) and (since is None or e.time >= since)
    ]
    for e in entries:
        if as_json:
            click.echo(json.dumps(e.as_dict()))
        else:
            where = f" from {e.origin}" if e.origin else ""
            click.echo(f"{when(e.time)}  {e.by}{where}  {e.action}  {e.run} ({e.name})  {e.what}")
    if not entries and not as_json:
        click.echo("no changes recorded", err=True)
