"""The commands that compare runs: ``diff`` (two runs' configs) and ``compare`` (a sweep's
configurations, their seeds folded, by one metric or by a pattern of keys folded across)."""

from __future__ import annotations

import click

from .errors import friendly
from .options import (
    best_option,
    dir_option,
    json_option,
    project_option,
    run_argument,
    run_refs,
    where_option,
)


@click.command("diff")
@run_argument("run_a")
@run_argument("run_b")
@dir_option()
@friendly
def diff_command(run_a: str, run_b: str, dir: str | None) -> None:
    """Config differences between two runs: keys only in A, only in B, and changed values."""
    from ..config import diff
    from ..reader import open_run
    from . import printing

    a, b = open_run(run_a, dir=dir), open_run(run_b, dir=dir)
    rows = diff([a.flat_config, b.flat_config])
    if not rows:
        click.echo(f"{a.id} and {b.id} have the same config")
        return
    printing.console().print(printing.diff_table(a, b, rows))


@click.command("compare")
@click.argument("runs", nargs=-1, callback=run_refs)
@dir_option()
@project_option("The runs of this project (instead of naming RUNS).")
@where_option()
@click.option(
    "--group-by",
    "group_by",
    required=True,
    metavar="KEYS",
    help="Comma-separated config keys (lr,lora.r; config. may lead), or all-but-seed.",
)
@click.option(
    "--metric",
    required=True,
    metavar="KEY[:AGG]",
    help="A metric and its aggregate (eval/loss:min; last by default), or a pattern of keys "
    "(moe/layer*/expert*/load:max) with --across.",
)
@click.option(
    "--across",
    metavar="mean|min|p5|median|p95|max",
    help="Fold the keys a --metric pattern names into one value a run: their mean, min, max or a "
    "percentile (p5, median, p95) of each key's aggregate.",
)
@best_option()
@json_option("The groups as JSON: key, runs, n, mean, std, min, max.")
@friendly
def compare_command(
    runs: list[str],
    dir: str | None,
    project: str | None,
    where: str | None,
    group_by: str,
    metric: str,
    across: str | None,
    best: dict[str, bool],
    as_json: bool,
) -> None:
    """One row per configuration of RUNS (or of a project's runs): how many runs, the mean ± std, min
    and max of a metric's aggregate over them (the seeds of a sweep, folded). A metric may be a pattern
    of keys, each run's keys folded by --across (the max of its experts' peak loads)."""
    from ..reader import list_runs, no_project, open_run, store_name
    from ..reader.groups import group_runs
    from ..reader.where import select
    from . import export, printing

    if runs and project:
        raise click.UsageError("give RUNS or --project, not both")
    if runs:
        chosen = list({r.id: r for r in (open_run(ref, dir=dir) for ref in runs)}.values())
    else:
        chosen = list_runs(dir, project=project)
        if not chosen:
            missing = no_project(dir, project) if project else None
            raise click.ClickException(missing or f"no runs in {store_name(dir)}")
    picked = select(chosen, where, None, best)
    if not picked:
        raise click.ClickException(f"no runs match --where {where!r} ({len(chosen)} runs looked at)")
    keys, groups = group_runs(picked, group_by, metric, best, across)
    if as_json:
        folded = {"across": across} if across else {}
        click.echo(
            export.dumps({"keys": keys, "metric": metric, **folded, "groups": [g.as_json() for g in groups]})
        )
    else:
        caption = f"{metric}, {across} across its keys" if across else metric
        printing.console().print(printing.groups_table(keys, caption, groups))
