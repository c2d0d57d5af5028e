"""The ``tunetrack`` command: the click group, its commands registered from the modules by topic, and
the console-script entry point.

The commands parse arguments and call the read API (``tunetrack.reader``, which also renames, tags,
notes and deletes runs) and the output helpers (``printing``, ``plot``, ``export``):

- ``reading``: ``ls``, ``show``, ``checkpoints``, ``logs``, ``export``, ``samples``, ``report``
- ``comparing``: ``diff``, ``compare``
- ``producing``: ``artifacts``, ``lineage``
- ``managing``: ``tag``, ``rename``, ``note``, ``rm``, ``parquet``, ``compact``, ``reindex``
- ``moving``: ``sync``, ``sync-backend``, ``import``
- ``steering``: ``run``, ``stop``
- ``serving``: ``ui``, ``tui``, ``watch``
- ``asking``: ``query``, ``mcp``
- ``skills``: ``skills`` (add, show: the skill file that teaches coding agents this CLI)
- ``team``: ``token`` (create, list, revoke: a team dashboard's personal tokens), ``audit``

Their shared options are ``options``; every user error ends in one line and a non-zero exit, never a
traceback (``errors``). Heavy modules (rich, plotext, numpy through the reader) are imported inside
the commands, so ``tunetrack --help`` imports only click.
"""

from __future__ import annotations

import gc
import sys

import click

from .asking import mcp_command, query_command
from .comparing import compare_command, diff_command
from .errors import Group
from .managing import (
    compact_command,
    note_command,
    parquet_command,
    reindex_command,
    rename_command,
    rm_command,
    tag_command,
)
from .moving import import_group, sync_backend_command, sync_command
from .producing import artifacts_command, lineage_command
from .reading import (
    checkpoints_command,
    export_command,
    logs_command,
    ls_command,
    report_command,
    samples_command,
    show_command,
)
from .serving import tui_command, ui_command, watch_command
from .skills import skills_group
from .steering import run_command, stop_command
from .team import audit_command, token_group


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tunetrack")
def cli() -> None:
    """tunetrack: look at the runs your fine-tuning jobs recorded.

    A RUN is named by its id, its unique name, or a unique prefix of its id (in that order).
    """


for _command in (
    ls_command,
    show_command,
    checkpoints_command,
    artifacts_command,
    lineage_command,
    logs_command,
    diff_command,
    compare_command,
    export_command,
    samples_command,
    report_command,
    query_command,
    mcp_command,
    skills_group,
    tag_command,
    rename_command,
    note_command,
    rm_command,
    parquet_command,
    compact_command,
    reindex_command,
    sync_command,
    sync_backend_command,
    import_group,
    run_command,
    stop_command,
    watch_command,
    ui_command,
    tui_command,
    token_group,
    audit_command,
):
    cli.add_command(_command)


#: Commands that read the store, print and exit. Their process runs without the cyclic garbage
#: collector: what they read (10,000 runs' listings, rows and summaries) lives until they exit, so
#: each collection would only scan it again (a third of `ls --sort` at 10,000 runs), and at exit a
#: process whose collector is off skips the final collection too. Memory is freed by reference
#: counting as before; only cycles wait for the exit. Long-running commands (ui, watch, mcp,
#: logs --follow) keep it.
ONE_SHOT = ("ls", "show", "diff", "compare", "export", "samples", "report")


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:2] and sys.argv[1] in ONE_SHOT:
        gc.disable()
    cli(prog_name="tunetrack")
