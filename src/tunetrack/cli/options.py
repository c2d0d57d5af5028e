"""The options and arguments that several commands share, each defined once as a decorator:
``--dir`` (the store), ``--json``, ``--project``, ``-o/--output``, ``--since``, and the RUN arguments
(which refuse an empty reference), plus ``SignedArgs`` for commands whose arguments may start with ``-``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

DIR_HELP = "Store: a folder or an object-store URL such as s3://bucket/prefix (default: $TUNETRACK_DIR, else ./tunetrack_runs)."


def combine(*decorators: Decorator) -> Decorator:
    """Several decorators as one, applied as if written in this order above the function (so click
    lists the options in this order too)."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            fn = decorator(fn)
        return fn

    return apply


def dir_option(help: str = DIR_HELP, *, path: bool = True) -> Decorator:
    """``--dir``, passed to the command as ``dir``: the store to use (None: the default store).

    ``path=False`` keeps it plain text (shown as TEXT rather than DIRECTORY, and not refused when it
    names an existing file), as the commands that move runs and ``watch`` have always taken it."""
    return click.option(
        "--dir", "dir", type=click.Path(file_okay=False) if path else None, default=None, help=help
    )


def json_option(help: str) -> Decorator:
    """``--json``, passed as ``as_json``: print JSON instead of tables."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def project_option(help: str) -> Decorator:
    return click.option("--project", default=None, help=help)


def output_option(help: str) -> Decorator:
    """``-o/--output``: a file to write (the default is the command's, told in ``help``)."""
    return click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help=help)


def best_option() -> Decorator:
    """``--best KEY:min|max`` (repeatable), passed as ``best``: what "best" means for a key, ``{key:
    lower}``, where the default (``metric_keys.minimized``: min for losses, perplexities and errors)
    is wrong for it. A reader option rather than something each run stores: a table compares runs,
    and one key must mean the same in every row of it."""

    def parse(ctx: click.Context, param: click.Parameter, values: Iterable[str]) -> dict[str, bool]:
        from ..aggregates import directions

        try:
            return directions(list(values))
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option(
        "--best",
        "best",
        multiple=True,
        callback=parse,
        metavar="KEY:min|max",
        help="Best is the min for this key, or the max (default: min for losses, perplexities and "
        "errors, else max). Repeatable.",
    )


class BadExpression(click.ClickException):
    """An option whose text does not parse: one line (``Error: --where: unexpected '>>' at column
    11``), exit code 2 like click's usage errors, without the usage block."""

    exit_code = 2


def where_option() -> Decorator:
    """``--where EXPR`` (``reader.where``), passed as ``where``: parsed as the command line is, so a bad
    expression fails before any run is read."""

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        from ..reader.where import WhereError, parse

        if value is not None:
            try:
                parse(value)
            except WhereError as exc:
                raise BadExpression(f"--where: {exc}") from None
        return value

    return click.option(
        "--where",
        callback=parse,
        metavar="EXPR",
        help='Only runs this matches: config values (config.lora.r >= 16), tags (tag = "best"), state, '
        "project, name and metric aggregates (eval/loss:min < 0.7), with and/or/not, =, !=, <, <=, >, >=, "
        "in, ~ (regex). See docs/sweeps.md.",
    )


def sort_option() -> Decorator:
    """``--sort KEY[:last|min|max|best][:desc]``, passed as ``sort``."""

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        from ..reader.where import WhereError, sort

        if value is not None:
            try:
                sort(value)
            except WhereError as exc:
                raise BadExpression(f"--sort: {exc}") from None
        return value

    return click.option(
        "--sort",
        callback=parse,
        metavar="KEY[:AGG][:desc]",
        help="Order by a field: config.lr, name, created order is the default; a metric with its "
        "aggregate (eval/loss:min, reward:best:desc). Runs without it come last.",
    )


def limit_option(help: str, default: int | None = None) -> Decorator:
    """``--limit N`` (at least 1), passed as ``limit``."""
    return click.option("--limit", type=click.IntRange(min=1), default=default, help=help)


def step_options() -> Decorator:
    """``--step N`` or ``--last`` (passed as ``step`` and ``last``): one step of a run."""
    return combine(
        click.option("--step", type=int, default=None, help="Only this step."),
        click.option("--last", is_flag=True, help="Only the last step that has any."),
    )


def run_ref(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A RUN argument: an empty string would be a prefix of every run id."""
    if not value.strip():
        raise click.BadParameter("give a run id, a unique id prefix or a unique name")
    return value


def run_refs(ctx: click.Context, param: click.Parameter, values: Iterable[str]) -> list[str]:
    return [run_ref(ctx, param, value) for value in values]


def run_argument(name: str = "run") -> Decorator:
    """One RUN: an id, a unique name or a unique id prefix (looked up by the command)."""
    return click.argument(name, callback=run_ref)


def runs_argument() -> Decorator:
    """RUNS...: one or more runs, passed as the list ``runs``."""
    return click.argument("runs", nargs=-1, required=True, callback=run_refs)


class When(click.ParamType):
    """A point in time: ``10m``, ``2h``, ``3d``, ``45s`` ago; a local date and time (``2025-05-01
    14:30``, ``2025-05-01T14:30:00``); a time of today (``14:30``, ``14:30:05``); or a unix time.
    Converted to a unix time."""

    name = "TIME"
    _AGO = {"s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        import datetime
        import time

        if isinstance(value, float):
            return value
        text = str(value).strip()
        if text[:-1].replace(".", "", 1).isdigit() and text[-1:] in self._AGO:
            return time.time() - float(text[:-1]) * self._AGO[text[-1]]
        try:
            return float(text)
        except ValueError:
            pass
        for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
            with contextlib.suppress(ValueError):
                return datetime.datetime.strptime(text, fmt).timestamp()
        for fmt in ("%H:%M:%S", "%H:%M"):
            with contextlib.suppress(ValueError):
                at = datetime.datetime.strptime(text, fmt).time()
                return datetime.datetime.combine(datetime.date.today(), at).timestamp()
        self.fail(f"{text!r} is no time: give 10m, 2h, 14:30, 2025-05-01 14:30 or a unix time", param, ctx)


def since_option(help: str) -> Decorator:
    """``--since TIME`` (``When``), passed as ``since``: a unix time, or None."""
    return click.option("--since", type=When(), default=None, help=help)


class SignedArgs(click.Command):
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
