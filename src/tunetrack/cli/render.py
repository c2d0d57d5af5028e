"""Terminal rendering for the CLI: rich tables and a small plotext chart. Run names, tags and config
values are user data: they are printed as text (``markup=False``), never interpreted as markup."""

from __future__ import annotations

import time
from typing import Any

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
MAIN_METRICS = ("loss", "eval_loss")  # one y-axis: the learning rate would flatten them


def console() -> Console:
    """Wide enough for the tables when the output is a pipe or a file (rich would assume 80 columns)."""
    plain = Console(highlight=False)
    return plain if plain.is_terminal else Console(highlight=False, width=max(plain.width, 160))


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "—"


def duration(run: Run) -> str:
    end = run.ended or (time.time() if run.state == "running" else None)
    if end is None or not run.created:
        return "—"
    seconds = int(max(end - run.created, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def short(value: Any, width: int = 60) -> str:
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return short(value, 24)


def run_record(run: Run) -> dict[str, Any]:
    """The JSON shape of a run in ``ls --json`` (and the head of ``show --json``)."""
    return {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "state": run.state,
        "tags": run.tags,
        "created": run.created,
        "ended": run.ended,
        "hosts": run.hosts,
        "last_step": run.last_step,
    }


def state_text(state: str) -> Text:
    return Text(state, style=STATE_STYLE.get(state, ""))


def runs_table(runs: list[Run]) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for col in ("id", "name", "project", "state", "tags", "hosts", "created", "duration", "step", "loss"):
        table.add_column(col, no_wrap=col in ("id", "created"))
    for run in runs:
        loss = run.summary().get("loss", {}).get("last")
        table.add_row(
            Text(run.id),
            Text(run.name),
            Text(run.project or "—"),
            state_text(run.state),
            Text(", ".join(run.tags)),
            Text(", ".join(run.hosts)),
            when(run.created),
            duration(run),
            str(run.last_step if run.last_step is not None else "—"),
            number(loss) if loss is not None else "—",
        )
    return table


def show(run: Run) -> None:
    out = console()
    meta = run.meta
    primary = next(
        (p for p in meta["processes"] if p.get("role") == "primary"),
        meta["processes"][0] if meta["processes"] else {},
    )
    git = primary.get("git") or {}
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
        ("tags", Text(", ".join(run.tags) or "—")),
        (
            "git",
            Text(f"{git.get('commit', '')[:12]}{' (dirty)' if git.get('dirty') else ''}" if git else "—"),
        ),
        ("command", Text(short(" ".join(primary.get("argv") or []), 100) or "—")),
        ("versions", Text(", ".join(f"{k} {v}" for k, v in (primary.get("versions") or {}).items()) or "—")),
        ("path", Text(str(run.path))),
    ]:
        head.add_row(label, value)
    out.print(head)
    if run.error:
        out.print(Text("\nerror:", style="bold red"))
        out.print(Text(run.error.rstrip()))
    summary = run.summary()
    if summary:
        table = Table(title="summary", show_edge=False, title_justify="left", header_style="bold")
        for col in ("key", "last", "min", "max", "step", "count"):
            table.add_column(col, justify="left" if col == "key" else "right")
        for key, s in summary.items():
            table.add_row(
                Text(key),
                number(s["last"]),
                number(s["min"]) if s["min"] is not None else "—",
                number(s["max"]) if s["max"] is not None else "—",
                str(s["step"]),
                str(s["count"]),
            )
        out.print(table)
    events = run.events()
    if events:
        table = Table(title="events", show_edge=False, title_justify="left", header_style="bold")
        for col in ("step", "kind", "time", "details"):
            table.add_column(col)
        for e in events:
            details = ", ".join(
                f"{k}={short(v, 40)}" for k, v in e.items() if k not in ("kind", "step", "time")
            )
            table.add_row(str(e["step"]), Text(e["kind"]), when(e["time"]), Text(details))
        out.print(table)
    system = run.system_summary()
    if system:
        table = Table(title="system", show_edge=False, title_justify="left", header_style="bold")
        table.add_column("last value of")
        for node in system:
            table.add_column(node, justify="right")
        for key in sorted({k for values in system.values() for k in values}):
            table.add_row(Text(key), *(number(values.get(key, "—")) for values in system.values()))
        out.print(table)
    chart = plot(run)
    if chart:
        out.print(Text.from_ansi(chart))
    flat = run.flat_config
    if flat:
        table = Table(title="config", show_edge=False, title_justify="left", header_style="bold")
        table.add_column("key")
        table.add_column("value")
        for key, value in flat.items():
            table.add_row(Text(key), Text(short(value)))
        out.print(table)


def plot(run: Run, width: int = 80, height: int = 15) -> str:
    """A small text chart of the main metrics against step ('' when there is nothing numeric)."""
    import plotext as plt

    logged = run.keys()
    keys = [k for k in MAIN_METRICS if k in logged] or logged[:2]
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    drawn = False
    for key in keys:
        s = run.series(key)
        if s.values.dtype.kind in "fi" and len(s):
            plt.plot(s.steps.tolist(), s.values.astype(float).tolist(), label=key)
            drawn = True
    if not drawn:
        return ""
    plt.xlabel("step")
    return str(plt.build())


def diff_table(a: Run, b: Run, rows: list[tuple[str, Any, Any]]) -> Table:
    table = Table(show_edge=False, header_style="bold")
    table.add_column("key")
    table.add_column(f"{a.name} ({a.id})")
    table.add_column(f"{b.name} ({b.id})")
    for key, va, vb in rows:
        table.add_row(
            Text(key),
            Text(short(repr(va) if not isinstance(va, str) else va)),
            Text(short(repr(vb) if not isinstance(vb, str) else vb)),
        )
    return table
