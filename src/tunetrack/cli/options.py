"""The options and arguments that several commands share, each defined once as a decorator:
``--dir`` (the store), ``--json``, ``--project``, ``-o/--output``, and the RUN arguments (which refuse
an empty reference), plus ``SignedArgs`` for commands whose arguments may start with ``-``."""

from __future__ import annotations

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
