"""The commands that read runs and print or write them: ``ls``, ``show``, ``checkpoints``, ``logs``, ``export``,
``samples`` and ``report``. The tables are ``printing``'s, the formats ``export``, the HTML report ``tunetrack.ui.report``."""

from __future__ import annotations

import os

import click

from ..states import STATES
from .errors import friendly
from .options import (
    best_option,
    dir_option,
    json_option,
    limit_option,
    output_option,
    project_option,
    run_argument,
    runs_argument,
    since_option,
    sort_option,
    step_options,
    where_option,
)

#: seconds between two looks at a followed run (``tunetrack logs --follow``)
FOLLOW_POLL = 0.5


@click.command("ls")
@dir_option()
@project_option("Only runs of this project.")
@click.option(
    "--state",
    type=click.Choice(STATES),
    default=None,
    help="Only runs in this state.",
)
@click.option("--tag", "tags", multiple=True, help="Only runs with this tag (repeatable: all must match).")
@limit_option("At most this many runs (newest first).")
@where_option()
@sort_option()
@best_option()
@json_option("An array of runs as JSON, each with its summary (last, min, max, best and its step per key).")
@friendly
def ls_command(
    dir: str | None,
    project: str | None,
    state: str | None,
    tags: tuple[str, ...],
    limit: int | None,
    where: str | None,
    sort: str | None,
    best: dict[str, bool],
    as_json: bool,
) -> None:
    """List runs, newest first (or by --sort), with their state, last step and last loss."""
    from ..reader import list_runs, no_project, run_json, store_name
    from ..reader.where import select
    from . import export, printing

    newest = limit if where is None and sort is None else None  # the newest few: only those opened
    listed = list_runs(dir, project=project, state=state, tags=list(tags), limit=newest)
    if project is not None and not listed and (missing := no_project(dir, project)):
        raise click.ClickException(missing)
    runs = select(listed, where, sort, best)[:limit]
    latest = [r.latest() for r in runs]
    if as_json:
        click.echo(
            export.dumps([run_json(r, last, summary=r.summary(best)) for r, last in zip(runs, latest)])
        )
    elif not runs:
        filtered = " matching the filters" if (project or state or tags or where) else ""
        click.echo(f"no runs{filtered} in {store_name(dir)}")
    else:
        printing.console().print(printing.runs_table(runs, latest))


@click.command("show")
@run_argument()
@dir_option()
@click.option("--full", is_flag=True, help="Every config key, event and system metric.")
@json_option("Metadata, config, summary, events and system metrics as JSON.")
@friendly
def show_command(run: str, dir: str | None, full: bool, as_json: bool) -> None:
    """Show one run: metadata and its samples, the config keys that matter, summary, the last events,
    the main system metrics, the error and the console lines before it, a plot of the main metrics."""
    from ..reader import open_run, run_json
    from . import export, printing

    r = open_run(run, dir=dir)
    if not as_json:
        printing.show(r, full)
        return
    record = {**run_json(r, detail=True), "summary": r.summary(), "system": r.system_summary()}
    click.echo(export.dumps(record))


@click.command("checkpoints")
@click.argument("run", required=False)
@dir_option()
@project_option("Every checkpoint of this project's runs (instead of naming RUN).")
@click.option(
    "--best",
    "best_key",
    metavar="KEY[:min|max]",
    help="Mark the best checkpoint by this metric (default direction: min for losses, else max); "
    "with --project, the best of the whole project.",
)
@click.option(
    "--suite",
    metavar="SUITE",
    help="Compare the checkpoints on one evaluation suite (tunetrack.log_evaluation: lm-eval, ...): a "
    "column per metric of its latest evaluation; --best may then name the suite's metrics alone.",
)
@json_option(
    "The checkpoints as JSON: run, step, path, kind, time, metrics, files, bytes, deleted, evaluations, best."
)
@friendly
def checkpoints_command(
    run: str | None,
    dir: str | None,
    project: str | None,
    best_key: str | None,
    suite: str | None,
    as_json: bool,
) -> None:
    """The checkpoints a run saved (or every run of a project): step, kind, the metrics logged at that
    step, size and files with their hashes, and whether rotation removed them; the best one by a
    metric. With --suite, the scores of the evaluations made of them afterwards. Answered from what
    the run recorded: no checkpoint file is opened."""
    from ..aggregates import directions
    from ..reader import list_runs, open_run
    from ..reader.checkpoints import best, check_suite, in_suite, metric_names
    from . import export, printing

    if (run is None) == (project is None):
        raise click.UsageError("name a RUN, or --project P (not both)")
    runs = [open_run(run, dir=dir)] if run is not None else list_runs(dir=dir, project=project)
    found = [c for r in runs for c in r.checkpoints()]
    if not found:
        where = f"run {runs[0].name}" if run is not None else f"project {project!r}"
        raise click.ClickException(f"{where} recorded no checkpoint")
    if suite is not None:
        check_suite(found, suite)
    chosen = None
    if best_key is not None:
        key, _, way = best_key.partition(":")
        try:
            lower = directions([best_key])[key] if way else None
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--best") from None
        chosen = best(found, key := in_suite(found, key, suite), lower)
        if chosen is None:
            raise click.ClickException(
                f"no checkpoint has {key!r}; their metrics: {', '.join(metric_names(found)) or 'none'}"
            )
    if as_json:
        click.echo(export.dumps([{**c.as_dict(), "best": c is chosen} for c in found]))
        return
    names = {r.id: r.name for r in runs}
    shown = best_key.partition(":")[0] if best_key else None
    printing.console().print(printing.checkpoints_table(found, names, chosen, shown, suite))
    if chosen is not None:
        click.echo(f"best by {best_key}: {names[chosen.run]} step {chosen.step} ({chosen.path})")


@click.command("logs")
@run_argument()
@dir_option()
@click.option("--rank", type=click.IntRange(min=0), default=None, help="Only this global rank's lines.")
@click.option(
    "-f", "--follow", is_flag=True, help="Keep printing lines as they are recorded, until the run ends."
)
@click.option("-n", "--tail", type=click.IntRange(min=0), default=None, help="Only the last N lines.")
@click.option("--grep", default=None, help="Only lines matching this regular expression (Python's re).")
@since_option("Only lines printed since TIME: 10m, 2h (ago), 14:30 (today), 2025-05-01 14:30, a unix time.")
@json_option("One JSON object a line: time, stream, text, host, rank.")
@friendly
def logs_command(
    run: str,
    dir: str | None,
    rank: int | None,
    follow: bool,
    tail: int | None,
    grep: str | None,
    since: float | None,
    as_json: bool,
) -> None:
    """Print what RUN's processes printed (fds 1 and 2: print, logging, warnings, C libraries, child
    processes), in time order: time, rank when the run has several, and the line; ``!`` after the
    time marks stderr, ``#`` a note of tunetrack's (a cut)."""
    import json
    import re
    import time

    from ..reader import open_run
    from ..reader.as_text import line_text
    from ..reader.console_log import select
    from ..reader.where import grep_error
    from ..states import State

    try:
        re.compile(grep or "")
    except re.error as exc:
        raise click.BadParameter(grep_error(grep, exc), param_hint="--grep") from None
    r = open_run(run, dir=dir)
    known = r.ranks
    if rank is not None and rank not in known:
        raise click.ClickException(f"run {r.id} has no rank {rank} (ranks: {', '.join(map(str, known))})")
    ranks = len(known) > 1

    def emit(lines: list) -> None:
        for line in lines:
            click.echo(json.dumps(line.as_json()) if as_json else line_text(line, ranks))

    if not follow:
        emit(r.console(rank, since, grep, tail))
        return
    lines, marks = r.console_after({})
    emit(select(lines, rank, since, grep, tail))
    while r.state == State.RUNNING or lines:
        time.sleep(FOLLOW_POLL)
        r.refresh()
        lines, marks = r.console_after(marks)
        emit(select(lines, rank, since, grep))


@click.command("export")
@run_argument()
@dir_option()
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True
)
@output_option("Output file (default: stdout; parquet: ./<run id>.parquet).")
@click.option(
    "--system", is_flag=True, help="Export the system metrics (one row per node and sample) instead."
)
@friendly
def export_command(run: str, dir: str | None, fmt: str, output: str | None, system: bool) -> None:
    """Export a run's logged rows: step, time and the values, one row per log() call.

    jsonl writes NaN and +-Inf as NaN/Infinity and None as null; csv writes them as nan/inf and an
    empty cell.
    """
    from ..reader import open_run
    from . import export, printing

    if fmt == "parquet":
        export.require_parquet()  # before reading the run: fail fast, with the pip command
    r = open_run(run, dir=dir)
    if system:
        rows, fields = list(r.system_rows()), ["node", "step", "time", *r.system_keys()]
    else:
        rows, fields = list(r.rows()), ["step", "time", *r.keys()]
    if fmt == "parquet":
        output = output or f"{r.id}{'-system' if system else ''}.parquet"
    with printing.progress(f"exporting {r.id}", len(rows)) as advance:
        count = export.write(printing.counted(rows, advance), fields, fmt, output)
    if output is not None:  # on stdout the rows are the answer; into a file, say what was written
        click.echo(f"wrote {count} rows to {output}", err=True)


#: rows a terminal shows when no --limit is given (JSON has no default limit)
SAMPLES_SHOWN = 50


@click.command("samples")
@run_argument()
@click.argument("key", required=False)
@dir_option()
@step_options()
@click.option("--prompt", default=None, help="Only rows whose prompt contains this text.")
@click.option("--sort", default=None, metavar="COL[:desc]", help="Sort by a column (or step, index).")
@click.option("--grep", default=None, metavar="REGEX", help="Only rows with a cell this regex matches.")
@limit_option(f"At most this many rows (default on a terminal: {SAMPLES_SHOWN}; --json: all).")
@json_option("An array of samples as JSON: key, step, time, index and the row's columns as row.")
@friendly
def samples_command(
    run: str,
    key: str | None,
    dir: str | None,
    step: int | None,
    last: bool,
    prompt: str | None,
    sort: str | None,
    grep: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Show the samples a run logged (log_table, log_text, TRL's and ms-swift's completions): the rows
    of KEY's tables (every key's without it), at a step or all of them, filtered and sorted."""
    import re

    from ..reader import open_run
    from ..reader.as_text import samples_listed
    from ..reader.samples import select, step_of, steps_of
    from ..reader.where import grep_error
    from . import export, printing

    if step is not None and last:
        raise click.UsageError("give --step or --last, not both")
    r = open_run(run, dir=dir)
    index = r.sample_index()
    if not index:
        raise click.ClickException(f"run {r.id} has no samples: {samples_listed(r).removeprefix('none: ')}")
    if key is not None and key not in index:
        known = ", ".join(sorted(index))
        raise click.ClickException(f"run {r.id} has no samples under {key!r} (keys: {known})")
    steps = steps_of(index, key)
    step = step_of(steps, "last" if last else step)
    try:
        chosen = select(r.samples(key, step), prompt=prompt, grep=grep, sort=sort)
    except re.error as exc:
        raise click.BadParameter(grep_error(grep, exc), param_hint="--grep") from None
    if as_json:
        click.echo(export.dumps(chosen[:limit]))
        return
    if not chosen:
        asked = " and ".join(f"{n} {v!r}" for n, v in (("--prompt", prompt), ("--grep", grep)) if v)
        where = f"at step {step}" if step is not None else f"at {len(steps)} steps"
        click.echo(f"no rows match {asked} ({len(r.samples(key, step)):,} rows {where})")
        return
    shown = chosen[: limit or SAMPLES_SHOWN]
    out = printing.console()
    out.print(printing.samples_table(shown, several_keys=key is None and len(index) > 1))
    if len(shown) < len(chosen):
        click.echo(f"{len(shown)} of {len(chosen)} rows shown (--limit N for more)")


@click.command("report")
@runs_argument()
@dir_option()
@output_option("The HTML file to write (default: ./tunetrack-report-<run ids>.html).")
@click.option(
    "--samples-key", default=None, metavar="KEY", help="The table of samples shown (default: the first)."
)
@click.option("--samples-step", type=int, default=None, metavar="N", help="Its step (default: the last).")
@friendly
def report_command(
    runs: list[str], dir: str | None, output: str | None, samples_key: str | None, samples_step: int | None
) -> None:
    """Write one HTML file that shows RUNS: overview, summary, a chart of every metric (the runs
    overlaid), config and its differences, events, and each run's samples at one step (its first
    rows, long texts cut with a marker).

    The file holds everything it needs (data, scripts, styles): it opens offline in any browser and
    can be mailed or attached to an issue. Long series are thinned with every spike kept, so a run of
    a million points makes a file of a few hundred kB.
    """
    from ..reader import open_run
    from ..ui import report
    from . import printing

    opened = list({r.id: r for r in (open_run(ref, dir=dir) for ref in runs)}.values())
    path = output or report.filename(opened)
    try:  # before the work: an unwritable path fails at once
        out = open(path, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None
    with out:
        try:
            with printing.progress("report", report.chart_count(opened)) as advance:
                html = report.render(opened, advance, samples_key, samples_step)
        except BaseException:
            out.close()
            os.unlink(path)  # no empty file left behind
            raise
        out.write(html)
    size = len(html.encode())
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
    click.echo(f"wrote {path} ({len(opened)} run{'s' if len(opened) > 1 else ''}, {shown})")
