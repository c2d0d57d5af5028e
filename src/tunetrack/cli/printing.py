"""The CLI's tables: the run listing (``ls``), one run (``show``) and a config diff (``diff``).

Run names, tags and config values are user data: they are printed as ``Text`` (never interpreted as
rich markup). Everything here takes ``Run`` objects from the read API and never reads the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import metric_keys
from ..config import MISSING
from ..reader import Run
from ..reader.as_text import (
    checkpoint_keys,
    config_text,
    config_texts,
    duration,
    event_text,
    facts,
    folded_summary,
    human_bytes,
    key_config,
    last_lines,
    notes,
    number,
    sample_columns,
    short,
    state,
    when,
)
from ..reader.checkpoints import Checkpoint, suite_keys
from ..reader.families import SUMMARY_SHOWN, fold
from ..reader.samples import cell_text, visible
from ..states import COLOURS
from ..values import is_number
from .plot import plot

T = TypeVar("T")


# -- small formatters ----------------------------------------------------------------------------
def console() -> Console:
    """Wide enough for the tables when the output is a pipe or a file (rich would assume 80 columns)."""
    plain = Console(highlight=False)
    return plain if plain.is_terminal else Console(highlight=False, width=max(plain.width, 160))


def state_text(state: str) -> Text:
    """A state (``as_text.state``: with the failure it ended in), coloured by the state."""
    return Text(state, style=COLOURS.get(state.split(":")[0], ""))


@contextlib.contextmanager
def progress(description: str, total: int | None) -> Iterator[Callable[..., None]]:
    """A progress bar on a terminal (stderr; a spinner and a count when ``total`` is unknown);
    nothing when the output is piped. Yields ``advance`` (``advance()`` for one item,
    ``advance(by=n)`` for n)."""
    from rich.progress import Progress

    err = Console(stderr=True)
    if not err.is_terminal:
        yield lambda *_, by=1: None
        return
    # rich would send what the command prints meanwhile (an export's rows) to the bar's terminal
    with Progress(console=err, transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda *_, by=1: bar.advance(task, by)


def counted(items: Iterable[T], advance: Callable[..., None], every: int = 1024) -> Iterator[T]:
    """``items``, advancing a ``progress`` bar by ``every`` at a time (a call per item would cost
    more than exporting the item)."""
    n = 0
    for item in items:
        yield item
        n += 1
        if n == every:
            advance(by=n)
            n = 0
    if n:
        advance(by=n)


# -- ls ------------------------------------------------------------------------------------------
def runs_table(runs: list[Run], latest: list[dict[str, Any]]) -> Table:
    """The ``ls`` table; ``latest[i]`` is ``runs[i].latest()``. Its metric columns are the loss-like
    keys the runs logged."""
    metrics = metric_keys.loss_columns(k for last in latest for k in last["values"])
    table = Table(show_edge=False, header_style="bold")
    for col in ("id", "name", "project", "state", "tags", "hosts", "created", "duration", "step", *metrics):
        numeric = col == "step" or col in metrics
        table.add_column(col, no_wrap=col in ("id", "created"), justify="right" if numeric else "left")
    for run, last in zip(runs, latest):
        table.add_row(
            Text(run.id),
            Text(run.name),
            Text(run.project or "—"),
            state_text(state(run)),
            Text(", ".join(run.tags)),
            Text(", ".join(run.hosts)),
            when(run.created),
            duration(run),
            number(last["step"]),
            *(number(last["values"].get(k)) for k in metrics),
        )
    return table


# -- show ----------------------------------------------------------------------------------------
def _section(title: str, *columns: str) -> Table:
    table = Table(title=title, show_edge=False, title_justify="left", header_style="bold")
    for col in columns:
        table.add_column(col)
    return table


def _caption(table: Table, text: str) -> None:
    """A note under ``table``, on one line (the table is made at least as wide)."""
    table.caption, table.caption_justify = text, "left"
    table.min_width = len(text)


def head_table(run: Run) -> Table:
    """Metadata: identity, state, times, hosts, git, command line, versions, what was not kept."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for label, value in facts(run):
        if label == "command":
            value = short(value, 120)  # one line, however long the command
        head.add_row(label, state_text(value) if label == "state" else Text(value))
    return head


def notes_table(run: Run) -> Table | None:
    rows = notes(run)
    if not rows:
        return None
    table = _section("notes", "time", "by", "note")
    for at, by, text in rows:
        table.add_row(at, Text(by), Text(text))
    return table


def config_table(run: Run, full: bool = True) -> Table | None:
    """The config: every key, or (``full=False``) the keys that matter (``as_text.key_config``) and
    how many more there are."""
    flat = run.flat_config
    if not flat:
        return None
    rows, more = (list(flat.items()), 0) if full else key_config(run)
    table = _section("config", "key", "value")
    if more:
        _caption(table, f"{more} more keys with --full")
    for key, value in rows:
        table.add_row(Text(key), Text(short(config_text(value))))
    return table


def summary_table(summary: dict[str, dict[str, Any]], full: bool = True) -> Table | None:
    """The summary, a row per key; without ``full``, a run of more than ``SUMMARY_SHOWN`` keys (a
    mixture-of-experts run's 10,000) gets a row per family of keys instead of one per key: its glob,
    the median of the keys' last values, the least of their minima and the most of their maxima
    (``reader.as_text.folded_summary``)."""
    if not summary:
        return None
    table = _section("summary", "key")
    for col in ("last", "min", "max", "step", "count"):
        table.add_column(col, justify="right")
    most = len(summary) if full else SUMMARY_SHOWN
    groups = [len(keys) for name, keys in fold(summary, most) if keys != [name]]
    if groups:
        named = "1 family" if len(groups) == 1 else f"{len(groups)} families"
        _caption(table, f"{sum(groups):,} keys as {named}, their numbers as * (--full: each)")
    rows = folded_summary(summary, most)
    for (key, *cells), is_family in rows:
        table.add_row(Text(key, style="italic" if is_family else ""), *cells)
    return table


def events_table(events: list[dict[str, Any]], last: int | None = None) -> Table | None:
    """The events, or their ``last`` few and how many came before."""
    if not events:
        return None
    shown = events[-last:] if last else events
    table = _section("events", "step", "kind", "time", "details")
    if len(shown) < len(events):
        _caption(table, f"the last {len(shown)} of {len(events)} events (--full: all)")
    for e in shown:
        table.add_row(number(e["step"]), Text(e["kind"]), when(e["time"]), Text(event_text(e, 40)))
    return table


#: the system metrics ``tunetrack show`` prints without ``--full``: the GPUs, the host, the process
SYSTEM_SHOWN = ("gpu.*.util", "gpu.*.memory.used_bytes", "cpu.percent", "mem.used_bytes", "proc.rss_bytes")


def system_table(system: dict[str, dict[str, Any]], full: bool = True) -> Table | None:
    if not system:
        return None
    table = _section("system", "last value of")
    for node in system:
        table.add_column(node, justify="right")
    every = sorted({k for values in system.values() for k in values})
    keys = every if full else [k for k in every if any(fnmatchcase(k, p) for p in SYSTEM_SHOWN)]
    if len(keys) < len(every):
        _caption(table, f"{len(every) - len(keys)} more with --full")
    for key in keys:
        table.add_row(Text(key), *(number(values.get(key)) for values in system.values()))
    return table


#: events ``tunetrack show`` prints without ``--full``
EVENTS_SHOWN = 10


def show(run: Run, full: bool = False) -> None:
    """``tunetrack show``: metadata (with the samples the run holds), notes, config, summary, events,
    system metrics, the error, the console lines before it, a plot. A Trainer run fits in about two
    screens: without ``full``, the config's keys that matter, the last events, the main system
    metrics."""
    out = console()
    out.print(head_table(run))
    parts = [
        notes_table(run),
        config_table(run, full),
        summary_table(run.summary(), full),
        events_table(run.events(), None if full else EVENTS_SHOWN),
        system_table(run.system_summary(), full),
    ]
    for part in parts:
        if part is not None:
            out.print()
            out.print(part)
    if run.error:
        out.print()
        out.print(Text("error", style="bold red"))
        out.print(Text(run.error.rstrip()))
    lines = last_lines(run)
    if lines:
        before = " before the traceback" if run.error else ""
        out.print()
        out.print(Text(f"last {len(lines)} console lines{before} (tunetrack logs {run.id})", style="bold"))
        for line in lines:
            out.print(Text(line), soft_wrap=True)
    chart = plot(run, width=min(80, out.width))
    if chart:
        out.print()
        out.print(Text.from_ansi(chart))


# -- samples -------------------------------------------------------------------------------------
#: characters of a text cell a terminal shows
CELL_WIDTH = 300


def samples_table(samples: list[dict[str, Any]], several_keys: bool = False) -> Table:
    """``tunetrack samples``: one line per row (its step, its key when there are several, its
    columns); text cut to ``CELL_WIDTH`` characters, conversations as ``role: content`` lines."""

    named: dict[str, str] = {}
    for sample in samples:
        named.update(dict.fromkeys(sample["row"], ""))
    columns = sample_columns(samples, named)  # TRL's own step column says the step again: left out
    table = Table(show_edge=False, header_style="bold", show_lines=True)
    table.add_column("step", justify="right", no_wrap=True)
    if several_keys:
        table.add_column("key")
    numeric = {
        c for c in columns if all(s["row"].get(c) is None or is_number(s["row"].get(c)) for s in samples)
    }
    for col in columns:
        table.add_column(visible(col), justify="right" if col in numeric else "left", overflow="fold")
    for sample in samples:
        row = sample["row"]
        cells = [
            number(row.get(c)) if c in numeric else Text(visible(short(cell_text(row.get(c)), CELL_WIDTH)))
            for c in columns
        ]
        table.add_row(str(sample["step"]), *([Text(visible(sample["key"]))] if several_keys else []), *cells)
    return table


# -- checkpoints ---------------------------------------------------------------------------------
def checkpoints_table(
    found: list[Checkpoint],
    names: dict[str, str],
    best: Checkpoint | None,
    key: str | None,
    suite: str | None = None,
) -> Table:
    """``tunetrack checkpoints``: one line per checkpoint (its run where several runs are listed),
    three of the metrics logged at its step (``key`` first, then losses and rewards), or with
    ``suite`` every metric of that suite's latest evaluation of it, its size and files, and whether
    rotation removed it; the best one marked."""
    several = len({c.run for c in found}) > 1
    if suite is not None:
        keys = suite_keys(found, suite)
        values = [c.results(suite) for c in found]
    else:
        keys = checkpoint_keys((k for c in found for k in c.metrics), key)[:3]
        values = [c.metrics for c in found]
    table = Table(show_edge=False, header_style="bold")
    if several:
        table.add_column("run", no_wrap=True)
    for col in ("step", "kind", *keys, "size", "files", "state"):
        table.add_column(
            col, justify="right" if col in ("step", "size", "files", *keys) else "left", no_wrap=True
        )
    table.add_column("path", overflow="fold")
    for c, shown in zip(found, values, strict=True):
        state = "deleted" if c.deleted else "kept"
        size = "…" if c.bytes is None else human_bytes(c.bytes)
        row: list[Text | str] = [
            number(c.step),
            Text(c.kind or "—"),
            *(number(shown.get(k)) for k in keys),
            Text(size),
            Text("…" if c.files is None else str(len(c.files))),
            Text(f"{state}, best" if c is best else state, style="bold" if c is best else ""),
            Text(visible(c.path)),
        ]
        table.add_row(*([Text(visible(names.get(c.run, c.run)))] if several else []), *row)
    return table


# -- diff ----------------------------------------------------------------------------------------
def diff_table(a: Run, b: Run, rows: list[tuple[str, list[Any]]]) -> Table:
    """``rows``: ``config.diff([a.flat_config, b.flat_config])``."""
    only_a = sum(vb is MISSING for _, (_, vb) in rows)
    only_b = sum(va is MISSING for _, (va, _) in rows)
    changed = len(rows) - only_a - only_b
    caption = f"{len(rows)} keys differ: {only_a} only in A, {only_b} only in B, {changed} changed"
    table = Table(show_edge=False, header_style="bold", caption=caption, caption_justify="left")
    table.add_column("key")
    table.add_column(f"A: {a.name} ({a.id})")
    table.add_column(f"B: {b.name} ({b.id})")
    for key, values in rows:
        table.add_row(Text(key), *(_cell(text) for text in config_texts(values)))
    return table


def _cell(text: str | None) -> Text:
    if text is None:
        return Text(repr(MISSING), style="dim italic")
    return Text(short(text))


def groups_table(keys: list[str], metric: str, groups: list[Any]) -> Table:
    """``compare --group-by``: one row per configuration (``reader.groups.Group``)."""
    table = Table(show_edge=False, header_style="bold", caption=metric, caption_justify="left")
    for key in keys:
        table.add_column(key)
    for col in ("n", "mean ± std", "min", "max"):
        table.add_column(col, justify="right")
    for g in groups:
        spread = f"{number(g.mean)} ± {number(g.std)}" if g.std is not None else number(g.mean)
        table.add_row(
            *(Text(config_text(g.key[k])) for k in keys),
            number(g.n),
            spread,
            number(g.min),
            number(g.max),
        )
    return table


def result_table(table: Any) -> Table:
    """A query's result (an Arrow table): one column per result column, NULL as an empty cell and
    numbers as ``number`` words them."""
    out = Table()
    for name in table.column_names:
        out.add_column(Text(name))
    for row in table.to_pylist():
        out.add_row(*(Text(_result_cell(v)) for v in row.values()))
    return out


def _result_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(map(_result_cell, value))
    return number(value) if isinstance(value, float) else visible(str(value))
