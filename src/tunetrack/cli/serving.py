"""The commands that keep running until Ctrl-C: ``ui`` (the live dashboard, ``tunetrack.ui``),
``tui`` (the terminal view, ``tunetrack.tui``) and ``watch`` (alerts for crashed and stalled runs;
the watcher itself is ``watch.Watcher``)."""

from __future__ import annotations

import click

from .errors import friendly
from .options import dir_option


@click.command("watch")
@dir_option(path=False)
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
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A TOML file of [[rule]] tables to check every run against (default: $TUNETRACK_RULES): "
    "thresholds, z-scores, stalled steps, states; a rule with stop = true asks a running run to stop.",
)
@friendly
def watch_command(
    dir: str | None, urls: tuple[str, ...], stall: float, interval: float, rules_file: str | None
) -> None:
    """Watch a store and alert when a run crashes (SIGKILL, OOM, a lost machine) or stalls, or one of
    the --rules fires; Ctrl-C stops.

    A run's own alerts (failed, killed, NaN loss, its own rules) come from its process; this covers
    what a dead process cannot send.
    """
    import time

    from .. import settings
    from ..monitoring.alerts import Alerter
    from ..monitoring.rules import load_rules
    from ..reader import list_runs, store_name
    from .watch import Watcher

    path = rules_file or settings.rules_file()
    try:
        rules = load_rules(path) if path else []
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    alerter = Alerter(settings.alert_urls(list(urls) or None), interval=0)
    if not alerter.urls and not any(rule.stop for rule in rules):  # with none, stopping runs is the point
        raise click.ClickException("give a webhook: --alert URL, or set TUNETRACK_ALERT_URL")
    watcher = Watcher(stall, rules=rules, dir=dir)
    checked = f", {len(rules)} rule{'s' * (len(rules) != 1)}" if rules else ""
    click.echo(f"watching {store_name(dir)} (every {interval:g} s{checked}; Ctrl-C stops)")
    try:
        while True:
            for alert in watcher.poll(list_runs(dir)):
                click.echo(alert.line() + (f": {alert.text}" if alert.text else ""))
                alerter.send(alert)
            time.sleep(interval)
    except KeyboardInterrupt:
        alerter.close()


@click.command("ui")
@dir_option()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. 127.0.0.1 keeps the dashboard on this machine; any other address "
    "(0.0.0.0 for every interface) exposes it and requires a token.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8477, show_default=True)
@click.option("--token", default=None, help="Token for non-loopback access (default: generated and printed).")
@click.option(
    "--read-only",
    is_flag=True,
    help="Change nothing: no Stop button, and every request that would change the store is refused.",
)
@click.option(
    "--team",
    "team_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Serve a team: a TOML file of who may read, edit and delete which projects, and how people "
    "sign in (personal tokens: tunetrack token; OpenID Connect; a trusted proxy's header). See docs/team.md. "
    "Agents connect to /mcp (MCP over Streamable HTTP) with a personal token and see and change what its "
    "person may: see docs/agents.md.",
)
@friendly
def ui_command(
    dir: str | None, host: str, port: int, token: str | None, read_only: bool, team_file: str | None
) -> None:
    """Start the live local dashboard and print its address; Ctrl-C stops it.

    Its changes to the store are the run page's Stop button (a live run asked to stop, as `tunetrack
    stop` asks) and its name, tags and notes; --read-only turns them off. With --team, each person
    signs in and sees and changes only what the team file lets them; every change is recorded
    (tunetrack audit). Agents come in at /mcp with a personal token (Authorization: Bearer): the MCP
    tools of tunetrack mcp, answered as that person.
    """
    try:
        import uvicorn

        from ..ui.app import create_app, warm
    except ImportError:
        raise click.ClickException("the dashboard needs its extra: pip install 'tunetrack[ui]'") from None
    import secrets

    team = None
    if team_file is not None:
        if token is not None:
            raise click.BadParameter(
                "a team signs in with personal tokens: drop --token", param_hint="--token"
            )
        from ..team.file import load_team

        team = load_team(team_file)
    loopback = host in ("localhost", "::1") or host.startswith("127.")
    if token is None and not loopback and team is None:
        token = secrets.token_urlsafe(18)
    shown = "127.0.0.1" if host == "0.0.0.0" else host
    click.echo(
        f"tunetrack dashboard: http://{shown}:{port}/"
        + (f"?token={token}" if token else "")
        + "  (Ctrl-C stops)"
    )
    app = create_app(dir, token, read_only, team)
    warm(app)  # the runs table is built while the server starts and the browser opens
    # a team's: the peer's own address, never one a header claims (the proxy is trusted by address)
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=team is None)


@click.command("tui")
@click.argument("runs", nargs=-1)
@dir_option(path=False)
@click.option("--project", default=None, help="Only this project's runs.")
@click.option(
    "--where", default="", help="Only the runs this expression keeps (as ls --where); / changes it."
)
@click.option(
    "--columns",
    default="",
    help="More columns, comma-separated fields of --where's language (loss:min, config.lora.r); c changes them.",
)
@click.option(
    "--sort", default=None, help="FIELD[:desc]: the column sorted by (one added if not shown); s changes it."
)
@click.option(
    "--palette",
    type=click.Choice(["tableau", "colorblind"]),
    default="tableau",
    show_default=True,
    help="The runs' colours: the dashboard's, or one told apart with any colour-vision deficiency.",
)
@click.option(
    "--theme",
    default=None,
    help="A Textual theme (textual-light for a light terminal; t switches light and dark).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.2),
    default=2.0,
    show_default=True,
    help="Seconds between looks.",
)
@friendly
def tui_command(
    runs: tuple[str, ...],
    dir: str | None,
    project: str | None,
    where: str,
    columns: str,
    sort: str | None,
    palette: str,
    theme: str | None,
    interval: float,
) -> None:
    """The runs in this terminal: a runs pane, and tabs with a chart of the picked runs and the console,
    system metrics, samples, checkpoints and events of the run under the cursor, all following live
    runs; over SSH, with no browser and no port. RUN...: picked for the chart at the start. ? lists
    the keys. Needs pip install 'tunetrack[tui]'."""
    try:
        from ..tui.app import TunetrackApp
    except ImportError as exc:
        raise click.ClickException(
            f"tunetrack tui needs textual: pip install 'tunetrack[tui]' ({exc})"
        ) from None
    app = TunetrackApp(
        dir,
        project,
        list(runs),
        where,
        interval,
        columns=[c.strip() for c in columns.split(",") if c.strip()],
        sort=sort,
        palette=palette,
    )
    if theme is not None:
        if theme not in app.available_themes:
            raise click.BadParameter(
                f"no theme {theme!r}; one of {', '.join(sorted(app.available_themes))}", param_hint="--theme"
            )
        app.theme = theme
    app.run()
