"""The commands about what runs produced and used: ``artifacts`` (list, show versions, move an alias,
download) and ``lineage`` (what a run, checkpoint or artifact was made from and what was made from
it), with their tables. ``checkpoints`` lives with the other readers of one run (``reading``)."""

from __future__ import annotations

import time
from typing import Any

import click

from .errors import friendly
from .options import dir_option, json_option


@click.command("artifacts")
@click.argument("spec", required=False, metavar="[NAME[:VERSION|ALIAS]]")
@dir_option()
@click.option("--kind", default=None, help="Only artifacts of this kind (dataset, model, tokenizer, ...).")
@click.option(
    "--alias",
    "add_alias",
    default=None,
    metavar="ALIAS",
    help="Point ALIAS (best, production, ...) at the version SPEC names: a promotion. It leaves the "
    "version that had it.",
)
@click.option("--remove-alias", default=None, metavar="ALIAS", help="Take ALIAS off the artifact NAME.")
@click.option(
    "--download",
    default=None,
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write the files of the version SPEC names into DIR.",
)
@json_option(
    "As JSON: each version's name, version, kind, digest, files, bytes, reference, run, aliases, used_by."
)
@friendly
def artifacts_command(
    spec: str | None,
    dir: str | None,
    kind: str | None,
    add_alias: str | None,
    remove_alias: str | None,
    download: str | None,
    as_json: bool,
) -> None:
    """The store's artifacts (data sets, models, evaluation outputs, the inputs the adapters
    recorded): each one's latest version, aliases and size; with NAME, its versions and the runs that
    made and used each; with NAME:VERSION or NAME:ALIAS, that version's files."""
    from .. import settings
    from ..manage.artifacts import move_alias
    from ..manage.artifacts import remove_alias as take_off
    from ..reader.artifacts import latest_versions, open_artifacts
    from . import export, printing

    if (add_alias or remove_alias or download) and spec is None:
        raise click.UsageError("--alias, --remove-alias and --download need NAME[:VERSION|ALIAS]")
    if spec is None:
        latest = latest_versions(dir, kind)
        if not latest:
            where = settings.store_dir(dir)
            raise click.ClickException(f"no artifact in {where}" + (f" of kind {kind!r}" if kind else ""))
        if as_json:
            click.echo(export.dumps([{**v.as_dict(), "versions": v.version} for v in latest]))
        else:
            printing.console().print(_table(latest, by_name=True))
        return
    if remove_alias:
        click.echo(f"{take_off(spec, remove_alias, dir)}: alias {remove_alias!r} removed")
        return
    if add_alias:
        moved = move_alias(spec, add_alias, dir)
        click.echo(f"{moved.spec} is now {moved.name}:{add_alias}")
        return
    store = open_artifacts(dir)
    chosen = store.resolve(spec)
    if download:
        out = chosen.download(download)
        click.echo(f"{chosen.spec}: {len(chosen.files)} files in {out}")
        return
    versions = [chosen] if ":" in spec else store.versions(chosen.name)
    if as_json:
        click.echo(export.dumps([v.as_dict() for v in versions]))
    elif ":" in spec:
        _print_version(chosen)
    else:
        printing.console().print(_table(versions, by_name=False))


def _table(versions: list[Any], by_name: bool) -> Any:
    from rich.table import Table
    from rich.text import Text

    from .printing import human_bytes, visible

    table = Table(show_edge=False, header_style="bold")
    for col in (
        "name" if by_name else "version",
        "kind",
        "aliases",
        "size",
        "files",
        "made by",
        "used by",
        "created",
    ):
        table.add_column(
            col, justify="right" if col in ("size", "files", "used by") else "left", no_wrap=True
        )
    for v in versions:
        table.add_row(
            Text(visible(v.name if by_name else f"v{v.version}")),
            Text(v.kind or "—"),
            Text(", ".join(v.aliases)),
            Text("reference" if v.reference else human_bytes(v.bytes)),
            Text(str(len(v.files))),
            Text(v.run or "—"),
            Text(str(len(v.used_by))),
            Text(time.strftime("%Y-%m-%d %H:%M", time.localtime(v.created))),
        )
    return table


def _print_version(v: Any) -> None:
    from .printing import human_bytes

    click.echo(f"{v.spec}  {v.kind or ''}  aliases: {', '.join(v.aliases) or 'none'}")
    click.echo(f"digest {v.digest}")
    if v.reference:
        click.echo(f"reference {v.reference}")
    click.echo(f"made by run {v.run or '—'}; used by {', '.join(v.used_by) or 'no run'}")
    for f in v.files:
        click.echo(f"  {human_bytes(f.size):>10}  {f.sha256[:12]}  {f.name}")


@click.command("lineage")
@click.argument("ref", metavar="RUN | RUN@STEP | NAME[:VERSION|ALIAS]")
@dir_option()
@json_option("As JSON: the root, and the nodes and edges it reaches both ways.")
@friendly
def lineage_command(ref: str, dir: str | None, as_json: bool) -> None:
    """What a run, a checkpoint (RUN@STEP) or an artifact was made from (upstream: data sets, base
    models, tokenizers, the checkpoint it started from) and what was made from it (downstream: the
    runs that used it, their checkpoints and artifacts), from what the runs recorded."""
    from ..reader.lineage import WORDS, detail_text, lineage
    from . import export

    graph, root = lineage(ref, dir=dir)
    if as_json:
        click.echo(export.dumps(graph.around(root)))
        return
    from rich.text import Text
    from rich.tree import Tree

    from .printing import console, visible

    node = graph.nodes[root]
    click.echo(f"{node.type} {visible(node.label)}")
    for title, down in (("made from", False), ("made into", True)):
        walked = graph.walk(root, down)
        tree = Tree(Text(title + ("" if walked else ": nothing recorded"), style="bold"))
        branches = {root: tree}
        for _, e in walked:
            parent, child = (e.source, e.target) if down else (e.target, e.source)
            n = graph.nodes[child]
            label = Text(f"{WORDS[e.relation][down]} {n.type} {visible(n.label)}{detail_text(n.detail)}")
            branches[child] = branches.get(parent, tree).add(label)
        console().print(tree)
