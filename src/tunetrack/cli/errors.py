"""How the ``tunetrack`` command fails: every user error (an unknown run, an ambiguous prefix, a bad
flag, a missing optional dependency) ends in one line on stderr and a non-zero exit (1, or 2 for a
usage error), never a traceback.

``friendly`` does it for what a command raises, ``Group`` for what click's parsing raises.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import IO, Any

import click

from ..errors import TunetrackError, one_line


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn expected failures into one-line errors (click prints ``Error: ...`` and exits 1)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Abort, BrokenPipeError):
            raise  # click exits quietly when a pipe reader (``| head``) went away, or a prompt said no
        except (TunetrackError, OSError, ValueError, ImportError) as exc:
            raise click.ClickException(one_line(exc)) from None
        except Exception as exc:  # a bug of ours: still one line, with the way to see more
            if os.environ.get("TUNETRACK_DEBUG"):
                raise
            raise click.ClickException(
                f"internal error: {one_line(exc)} (set TUNETRACK_DEBUG=1 for the traceback)"
            ) from None

    return wrapper


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line (click prints the usage block and a hint before it)."""

    def show(self, file: IO[Any] | None = None) -> None:
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"Error: {self.format_message()}{hint}", file=file, err=True)


class Group(click.Group):
    """A click group whose bad flags, missing arguments and unknown commands give one line."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            raise  # ``tunetrack`` alone prints the help
        except click.UsageError as exc:
            raise OneLineUsageError(exc.format_message(), exc.ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.NoArgsIsHelpError, OneLineUsageError):
            raise
        except click.UsageError as exc:
            raise OneLineUsageError(exc.format_message(), exc.ctx) from None
