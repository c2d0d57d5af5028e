"""Output for the CLI: rich tables, a small plotext chart, the config diff and the export writers.

Run names, tags and config values are user data: they are printed as ``Text`` (never interpreted as
rich markup). Everything here takes ``Run`` objects from the read API and never reads the store.
"""

from __future__ import annotations

import csv
import json
import math
import shlex
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..reader import Run

STATE_STYLE = {
    "running": "cyan",
    "finished": "green",
    "failed": "red",
    "killed": "yellow",
    "crashed": "magenta",
}
#: Metrics the listing shows (last value) and the plot draws on its left axis, when logged.
MAIN_METRICS = ("loss", "eval_loss")
#: Drawn on the plot's right axis: on the left its scale would flatten the losses.
LR_METRICS = ("learning_rate", "lr")
#: (marker, color) per plotted series: told apart by the marker when the output has no colors.
STYLES = (("braille", "blue"), ("x", "red"), ("•", "magenta"))
LR_STYLE = ("·", "green")
SCATTER = {"braille": "•", "·": "+"}  # a lone braille dot is hard to see


# -- small formatters ----------------------------------------------------------------------------
def console() -> Console:
    """Wide enough for the tables when the output is a pipe or a file (rich would assume 80 columns)."""
    plain = Console(highlight=False)
    return plain if plain.is_terminal else Console(highlight=False, width=max(plain.width, 160))


def when(ts: float | None) -> str:
    """A unix time as local time, ``—`` when unknown."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "—"


def duration(run: Run) -> str:
    end = run.ended or (time.time() if run.state == "running" else None)
    if end is None or not run.created:
        return "—"
    seconds = int(max(end - run.created, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def short(value: Any, width: int = 60) -> str:
    """``str(value)`` on one line, cut to ``width`` characters with an ellipsis."""
    text = str(value)
    if "\n" in text:
        text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "—" if value is None else short(value, 24)


def state_text(state: str) -> Text:
    return Text(state, style=STATE_STYLE.get(state, ""))


# -- ls ------------------------------------------------------------------------------------------
def run_record(run: Run, latest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON shape of a run in ``ls --json`` (and the head of ``show --json``).

    With ``latest`` (``Run.latest()``, what listings use: no data read for an ended run) the last
    step and the ``last`` values come from it; without, from the data.
    """
    record = {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "state": run.state,
        "tags": run.tags,
        "created": run.created,
        "ended": run.ended,
        "hosts": run.hosts,
        "last_step": latest["step"] if latest is not None else run.last_step,
    }
    if latest is not None:
        record["last"] = latest["values"]
    return record


def runs_table(runs: list[Run], latest: list[dict[str, Any]]) -> Table:
    """The ``ls`` table; ``latest[i]`` is ``runs[i].latest()``."""
    metrics = [k for k in MAIN_METRICS if any(k in last["values"] for last in latest)]
    table = Table(show_edge=False, header_style="bold")
    for col in ("id", "name", "project", "state", "tags", "hosts", "created", "duration", "step", *metrics):
        numeric = col == "step" or col in metrics
        table.add_column(col, no_wrap=col in ("id", "created"), justify="right" if numeric else "left")
    for run, last in zip(runs, latest):
        table.add_row(
            Text(run.id),
            Text(run.name),
            Text(run.project or "—"),
            state_text(run.state),
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


def head_table(run: Run) -> Table:
    """Metadata: identity, state, times, hosts, git, command line, versions."""
    processes = run.meta.get("processes") or []
    primary = next((p for p in processes if p.get("role") == "primary"), processes[0] if processes else {})
    git = primary.get("git") or {}
    flags = ", ".join(x for x in (git.get("branch"), "dirty" if git.get("dirty") else None) if x)
    versions = {"python": primary.get("python"), **(primary.get("versions") or {})}
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for label, value in [
        ("run", Text(f"{run.name} ({run.id})")),
        ("project", Text(run.project or "—")),
        ("state", state_text(run.state)),
        ("created", Text(when(run.created))),
        ("ended", Text(when(run.ended))),
        ("duration", Text(duration(run))),
        ("hosts", Text(", ".join(run.hosts) or "—")),
        ("processes", Text(str(len(processes)))),
        ("user", Text(str(primary.get("user") or "—"))),
        ("tags", Text(", ".join(run.tags) or "—")),
        ("git", Text(f"{str(git.get('commit', ''))[:12]}{f' ({flags})' if flags else ''}" if git else "—")),
        ("command", Text(short(shlex.join(map(str, primary.get("argv") or [])), 120) or "—")),
        ("versions", Text(", ".join(f"{k} {v}" for k, v in versions.items() if v) or "—")),
        ("path", Text(str(run.path))),
    ]:
        head.add_row(label, value)
    return head


def config_table(run: Run) -> Table | None:
    flat = run.flat_config
    if not flat:
        return None
    table = _section("config", "key", "value")
    for key, value in flat.items():
        table.add_row(Text(key), Text(short(value)))
    return table


def summary_table(summary: dict[str, dict[str, Any]]) -> Table | None:
    if not summary:
        return None
    table = _section("summary", "key")
    for col in ("last", "min", "max", "step", "count"):
        table.add_column(col, justify="right")
    for key, s in summary.items():
        table.add_row(
            Text(key),
            number(s["last"]),
            number(s["min"]),
            number(s["max"]),
            number(s["step"]),
            str(s["count"]),
        )
    return table


def events_table(events: list[dict[str, Any]]) -> Table | None:
    if not events:
        return None
    table = _section("events", "step", "kind", "time", "details")
    for e in events:
        details = ", ".join(f"{k}={short(v, 40)}" for k, v in e.items() if k not in ("kind", "step", "time"))
        table.add_row(number(e["step"]), Text(e["kind"]), when(e["time"]), Text(details))
    return table


def system_table(system: dict[str, dict[str, Any]]) -> Table | None:
    if not system:
        return None
    table = _section("system", "last value of")
    for node in system:
        table.add_column(node, justify="right")
    for key in sorted({k for values in system.values() for k in values}):
        table.add_row(Text(key), *(number(values.get(key)) for values in system.values()))
    return table


def show(run: Run) -> None:
    """``tunetrack show``: metadata, config, summary, events, system metrics, the error, a plot."""
    out = console()
    out.print(head_table(run))
    parts = [
        config_table(run),
        summary_table(run.summary()),
        events_table(run.events()),
        system_table(run.system_summary()),
    ]
    for part in parts:
        if part is not None:
            out.print()
            out.print(part)
    if run.error:
        out.print()
        out.print(Text("error", style="bold red"))
        out.print(Text(run.error.rstrip()))
    chart = plot(run, width=min(80, out.width))
    if chart:
        out.print()
        out.print(Text.from_ansi(chart))


# -- the plot ------------------------------------------------------------------------------------
def plot_keys(run: Run) -> tuple[list[str], list[str]]:
    """(left-axis keys, right-axis keys): the losses left and the learning rate right when logged,
    otherwise the first two numeric keys, one per axis (their scales are unrelated)."""
    logged = run.keys()
    left = [k for k in MAIN_METRICS if k in logged]
    right = [k for k in LR_METRICS if k in logged][:1]
    if left or right:
        return (left, right) if left else (right, [])
    numeric = [k for k in logged if run.series(k).values.dtype.kind in "fiu"][:2]
    return numeric[:1], numeric[1:]


def _points(run: Run, key: str, width: int) -> tuple[list[float], list[float]] | None:
    """A key's finite points ordered by step, thinned (M4) to what ``width`` columns can show."""
    import numpy as np

    from ..ui.downsample import m4

    s = run.series(key)
    if s.values.dtype.kind not in "fiu" or not len(s):
        return None
    x, y = s.steps.astype(np.float64), s.values.astype(np.float64)
    finite = np.isfinite(y)
    x, y = x[finite], y[finite]
    if not len(x):
        return None
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    keep = m4(x, y, 2 * width)  # braille: two dots per column
    return x[keep].tolist(), y[keep].tolist()


def plot(run: Run, width: int = 80, height: int = 16) -> str:
    """A small text chart of the main metrics against step, with ANSI colors ('' when nothing numeric
    was logged). The losses share the left axis, the learning rate has the right one."""
    import plotext as plt

    left, right = plot_keys(run)
    series = [(k, "left", pts) for k in left if (pts := _points(run, k, width))]
    series += [(k, "right", pts) for k in right if (pts := _points(run, k, width))]
    if not series:
        return ""
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    for i, (key, side, (x, y)) in enumerate(series):
        marker, color = STYLES[i % len(STYLES)] if side == "left" else LR_STYLE
        label = key if side == "left" else f"{key} (right axis)"
        if len(x) < width // 4:  # a few points (evaluations): no joining lines, and visible dots
            plt.scatter(x, y, label=label, marker=SCATTER.get(marker, marker), color=color, yside=side)
        else:
            plt.plot(x, y, label=label, marker=marker, color=color, yside=side)
    ticks = step_ticks(min(x[0] for *_, (x, _) in series), max(x[-1] for *_, (x, _) in series))
    plt.xticks(ticks, [str(t) for t in ticks])
    plt.xlabel("step")
    return str(plt.build())


def step_ticks(lo: float, hi: float, count: int = 5) -> list[int]:
    """About ``count`` round integer ticks (1, 2, 2.5 or 5 times a power of ten) in [lo, hi]."""
    if hi <= lo:
        return [round(lo)]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = max(1, next(int(m * mag) for m in (1, 2, 2.5, 5, 10) if m * mag >= raw))
    first = math.ceil(lo / step) * step
    return list(range(first, math.floor(hi) + 1, step))


# -- diff ----------------------------------------------------------------------------------------
class _Missing:
    def __repr__(self) -> str:
        return "(not set)"


MISSING: Any = _Missing()


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, value in a, value in b) for every flat key that differs; a missing side is ``MISSING``."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, MISSING), b.get(key, MISSING)
        if not _same(va, vb):
            out.append((key, va, vb))
    return out


def _same(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING or isinstance(a, bool) != isinstance(b, bool):
        return False  # True == 1 in Python, not in a config
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def diff_table(a: Run, b: Run, rows: list[tuple[str, Any, Any]]) -> Table:
    only_a = sum(vb is MISSING for _, _, vb in rows)
    only_b = sum(va is MISSING for _, va, _ in rows)
    changed = len(rows) - only_a - only_b
    caption = f"{len(rows)} keys differ: {only_a} only in A, {only_b} only in B, {changed} changed"
    table = Table(show_edge=False, header_style="bold", caption=caption, caption_justify="left")
    table.add_column("key")
    table.add_column(f"A: {a.name} ({a.id})")
    table.add_column(f"B: {b.name} ({b.id})")
    for key, va, vb in rows:
        # Strings print bare unless that would hide the difference ("1" against 1).
        literal = str(va) == str(vb)
        table.add_row(Text(key), _cell(va, literal), _cell(vb, literal))
    return table


def _cell(value: Any, literal: bool) -> Text:
    if value is MISSING:
        return Text(repr(value), style="dim italic")
    return Text(short(repr(value) if literal or not isinstance(value, str) else value))


# -- export --------------------------------------------------------------------------------------
def _json_default(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def dumps(data: Any) -> str:
    """JSON with NaN and ±Inf written as ``NaN``/``Infinity`` (Python's ``json`` and pandas read them)."""
    return json.dumps(data, allow_nan=True, default=_json_default)


def write_jsonl(rows: Iterable[dict[str, Any]], stream: IO[str]) -> int:
    count = 0
    for row in rows:
        stream.write(dumps(row) + "\n")
        count += 1
    return count


def write_csv(rows: Iterable[dict[str, Any]], fields: list[str], stream: IO[str]) -> int:
    """A header (``fields``) and one line per row; None is an empty cell, NaN/±Inf ``nan``/``inf``."""
    writer = csv.DictWriter(stream, fieldnames=fields, restval="")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


def require_parquet() -> None:
    """Raise ImportError (one line, with the pip command) unless pandas and pyarrow import."""
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        raise ImportError(
            "parquet export needs pandas and pyarrow: pip install 'tunetrack[parquet]'"
        ) from None


def write_parquet(rows: Iterator[dict[str, Any]], fields: list[str], path: str) -> int:
    """One row per logged row. A column that mixes types (a key logged as a number and as text)
    is stored as text, since a parquet column has one type."""
    import pandas as pd

    frame = pd.DataFrame.from_records(list(rows), columns=fields)
    for col in [c for c in frame.columns if frame[c].dtype.kind == "O"]:
        kinds = {type(v) for v in frame[col] if v is not None and v == v}  # v != v: NaN, a missing cell
        if len(kinds) > 1:
            frame[col] = [None if v is None or v != v else str(v) for v in frame[col]]
    frame.to_parquet(path, index=False)
    return len(frame)
