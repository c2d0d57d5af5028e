"""The events tab: the checkpoints of the run under the cursor and what else happened to it, in time
order (evaluations, health warnings, rewinds, stop requests, rule firings).

A checkpoint is one line however many events recorded it (its save, its files, its removal:
``reader.checkpoints``, as ``tunetrack checkpoints`` reads them), with the metrics logged at its step
and rotation's removals marked; the other events are worded as ``tunetrack show`` words them
(``as_text.event_rows``). A live run is followed: the tables are written again only when the run has
more events than when they were last written.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from ...reader import Run
from ...reader.as_text import checkpoint_keys, event_rows, human_bytes, number, short
from ...reader.checkpoints import RECORDS, Checkpoint
from ...reader.samples import TEXT_EVENT, visible
from ..model import Model
from . import Pane

#: metrics of a checkpoint's step shown (losses and rewards first, as ``tunetrack checkpoints``)
METRICS = 3
#: characters of an event's details shown (the table scrolls sideways for the rest of the line)
DETAILS = 200
#: the colour of an event's kind, for those worth noticing in a long list
STYLES = {"health": "yellow", "stop": "bold", "rewind": "cyan", "checkpoint_evaluation": "green"}


class Events(Pane):
    """The events tab."""

    DEFAULT_CSS = """
    Events .title { height: 1; text-style: bold; }
    Events DataTable { height: 1fr; }
    """

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(palette, **kwargs)
        self._drawn: tuple[str | None, int] | None = None  # the run and how many events it had

    def compose(self) -> ComposeResult:
        yield Static("checkpoints", id="checkpoints-title", classes="title")
        yield DataTable(id="checkpoints-table", cursor_type="row", zebra_stripes=True)
        yield Static("events", id="events-title", classes="title")
        yield DataTable(id="events-table", cursor_type="row", zebra_stripes=True)

    def show(self, model: Model) -> None:
        run = model.run(model.current) if model.current else None
        events = run.events() if run is not None else []
        drawn = (run.id if run is not None else None, len(events))
        if drawn == self._drawn:
            return
        self._drawn = drawn
        self._checkpoints(run.checkpoints() if run is not None else [])
        self._events([e for e in events if e["kind"] not in (*RECORDS, TEXT_EVENT)], run)

    def _checkpoints(self, found: list[Checkpoint]) -> None:
        table = self.query_one("#checkpoints-table", DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        keys = checkpoint_keys(k for c in found for k in c.metrics)[:METRICS]
        for name in ("step", "kind", *keys, "size", "state", "where"):
            right = name in ("step", "size", *keys)
            table.add_column(Text(visible(name), justify="right" if right else "left"), key=name)
        for c in found:
            style = "dim strike" if c.deleted else ""
            table.add_row(
                Text(number(c.step), justify="right"),
                Text(c.kind or "—"),
                *(Text(number(c.metrics.get(k)), justify="right") for k in keys),
                Text("…" if c.bytes is None else human_bytes(c.bytes), justify="right"),
                Text("deleted" if c.deleted else "kept", style="dim" if c.deleted else "green"),
                Text(visible(c.path), style=style),
            )
        if found:
            table.move_cursor(row=min(cursor, len(found) - 1))
        deleted = sum(c.deleted for c in found)
        title = f"checkpoints ({len(found)}{f', {deleted} deleted by rotation' if deleted else ''})"
        self.query_one("#checkpoints-title", Static).update(title if found else "no checkpoints")

    def _events(self, events: list[dict[str, Any]], run: Run | None) -> None:
        table = self.query_one("#events-table", DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        for name in ("step", "kind", "time", "details"):
            table.add_column(name, key=name)
        for e, row in zip(events, event_rows(events), strict=True):
            table.add_row(
                Text(row["step"], justify="right"),
                Text(visible(row["kind"]), style=STYLES.get(e["kind"], "")),
                Text(row["time"]),
                Text(visible(short(row["details"], DETAILS))),
            )
        if events:
            table.move_cursor(row=min(cursor, len(events) - 1))
        title = f"events ({len(events)})" if events else "no events" if run is not None else "no run"
        self.query_one("#events-title", Static).update(title)
