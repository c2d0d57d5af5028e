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
