"""The samples tab: the tables of samples the run under the cursor logged (TRL's GRPO completions:
prompt, completion, rewards, advantage), one step at a time.

A step slider goes through the steps that have samples (``,`` ``.`` the previous and next, ``<`` ``>``
the first and last); ``o`` sorts by the next column (``O`` the other way, or a click on a header);
``p`` pins the prompt of the row under the cursor and shows its rows at every step (how the answers to
one prompt changed over training), ``p`` again unpins; ``n`` goes to the run's next table. The rows
are chosen and ordered by the reader's one selection (``reader.samples.select``), as ``tunetrack
samples`` and the dashboard's Samples view choose them. A live run's new steps join the slider; the
step shown stays unless it was the last one, then the newest is followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from ...reader import Run
from ...reader.as_text import COMPLETIONS_OFF, number, sample_cell, sample_columns, short
from ...reader.samples import (
    IMAGE,
    NUMBER,
    cell_text,
    merge_columns,
    prompt_of,
    select,
    steps_of,
    visible,
)
from ...reader.tokens import Tokens, tokens_of
from ..model import Model
from ..palette import heat_colour, hex_colour
from . import Pane

#: how a run with no samples is told to log them
HOW_TO_LOG = f"log them with tracker.log_table('completions', rows); {COMPLETIONS_OFF}"
#: the narrowest a text column is cut to
MIN_TEXT = 12
#: the key of the step column a pinned prompt's rows have (apart from the table's own columns)
STEP_COLUMN = "\0step"
#: characters of the slider's track
TRACK = 24


@dataclass
class Shown:
    """What the table holds: the rows (samples) and their columns (name: type)."""

    samples: list[dict[str, Any]]
    columns: dict[str, str]


class Samples(Pane):
    """The samples tab."""

    DEFAULT_CSS = """
    Samples #samples-bar { height: auto; }
    Samples #samples-table { height: 2fr; }
    Samples #samples-detail { height: 1fr; border-top: solid $accent; }
    """
    KEYS: ClassVar[list[Binding]] = [
        Binding("comma", "step(-1)", "step"),
        Binding("full_stop", "step(1)", show=False),
        Binding("less_than_sign", "end(0)", "first/last", show=False),
        Binding("greater_than_sign", "end(-1)", show=False),
        Binding("o", "sort(1)", "sort"),
        Binding("O", "sort(-1)", show=False),
        Binding("p", "pin", "pin prompt"),
        Binding("n", "next_key", "table", show=False),
        Binding("v", "by", "colour by", show=False),
    ]

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(palette, **kwargs)
        self.run_id: str | None = None
        self.key: str | None = None  # the table of samples shown
        self.by: str | None = None  # the value per token the tokens are coloured by
        self.steps: list[int] = []  # its steps with samples
        self.step: int | None = None  # the step shown (None: follow the last)
        self.sort: str | None = None  # a column, as ``select`` takes it
        self.descending = False
        self.pinned: str | None = None  # a prompt shown at every step
        self.shown = Shown([], {})
        self._model: Model | None = None
        self._drawn: tuple[Any, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="samples-bar")
        yield DataTable(id="samples-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="samples-detail"):
            yield Static("", id="samples-text")

    # -- what is drawn -------------------------------------------------------------------------------
    def show(self, model: Model) -> None:
        self._model = model
        run = model.run(model.current) if model.current else None
        if run is None or run.id != self.run_id:  # another run: at its last step, nothing pinned
            self.run_id = run.id if run is not None else None
            self.step, self.pinned = None, None
        index = run.sample_index() if run is not None else {}
        if self.key not in index:  # a table of the same name if the run has one, else its first
            self.key = next(iter(index), None)
            self.step, self.pinned = None, None
        # step None follows the newest step; a step of its own stays while new ones are logged
        self.steps = steps_of(index, self.key) if self.key is not None else []
        if self.step is not None and self.step not in self.steps:
            self.step = None
        rows = index.get(self.key or "", {})
        counts = tuple(rows.items()) if self.pinned is not None else rows.get(self.at() or 0)
        drawn = (
            self.run_id,
            self.key,
            self.at(),
            counts,
            self.sort,
            self.descending,
            self.pinned,
            self.size.width,
        )
        if drawn != self._drawn:
            self._drawn = drawn
            self.shown = self._select(run) if run is not None and self.key is not None else Shown([], {})
            self._fill()
        self._bar(run, index)

    def at(self) -> int | None:
        """The step shown."""
        if not self.steps:
            return None
        return self.steps[-1] if self.step is None else self.step

    def _select(self, run: Run) -> Shown:
        """The rows of the step shown, or of the pinned prompt at every step (in step order unless
        sorted), and the columns worth showing."""
        assert self.key is not None
        tables = run.sample_tables(self.key, None if self.pinned else self.at())
        every = [s for t in tables for s in t.samples()]
        columns = sample_columns(every, merge_columns(tables))
        if self.sort is not None and self.sort not in columns:
            self.sort = None  # a column this table has not
        order = f"{self.sort}:{'desc' if self.descending else 'asc'}" if self.sort else None
        if self.pinned is not None:
            return Shown(select(every, same_prompt=self.pinned, sort=order or "step"), columns)
        return Shown(select(every, sort=order), columns)

    def _fill(self) -> None:
        """Write the rows in the table, each text cut to a share of the width."""
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        columns = self.shown.columns
        if not columns:
            self._detail()
            return
        numeric = [c for c, kind in columns.items() if kind == NUMBER]
        texts = len(columns) - len(numeric)
        spare = max(self.size.width, 60) - 10 * (len(numeric) + 1)
        width = max(spare // max(texts, 1) - 3, MIN_TEXT)
        if self.pinned is not None:
            table.add_column("step", key=STEP_COLUMN)
        for name, kind in columns.items():
            arrow = (" ▼" if self.descending else " ▲") if name == self.sort else ""
            table.add_column(
                Text(visible(name) + arrow, justify="right" if kind == NUMBER else "left"), key=name
            )
        for i, sample in enumerate(self.shown.samples):
            row = sample["row"]
            cells = [
                Text(
                    short(visible(sample_cell(row.get(name), kind, width)), width),
                    justify="right" if kind == NUMBER else "left",
                )
                for name, kind in columns.items()
            ]
            table.add_row(
                *([Text(str(sample["step"]))] if self.pinned is not None else []), *cells, key=str(i)
            )
        if self.shown.samples:
            table.move_cursor(row=min(cursor, len(self.shown.samples) - 1))
        self._detail()

    def _bar(self, run: Run | None, index: dict[str, dict[int, int]]) -> None:
        """The line above the table: the table, where the slider is, the sort and the pinned prompt."""
        bar = self.query_one("#samples-bar", Static)
        if run is None:
            bar.update("no run under the cursor")
            return
        if self.key is None:
            bar.update(Text(f"{run.name} has no samples: {HOW_TO_LOG}", style="italic"))
            return
        text = Text()
        text.append(visible(self.key), style="bold")
        if len(index) > 1:
            text.append(f" ({list(index).index(self.key) + 1} of {len(index)} tables: n)")
        if self.pinned is not None:
            steps = len({s["step"] for s in self.shown.samples})
            text.append(f"  prompt at {steps} step{'s' if steps != 1 else ''} (p unpins): ")
            text.append(short(visible(self.pinned), 60), style="italic")
        else:
            step = self.at()
            at = self.steps.index(step) if step is not None else 0
            place = round(at / max(len(self.steps) - 1, 1) * (TRACK - 1))
            text.append(f"  step {step} ({at + 1} of {len(self.steps)})  ")
            text.append("─" * place + "●" + "─" * (TRACK - 1 - place), style="dim")
            text.append("  , . < >", style="dim")
        if self.sort is not None:
            text.append(f"  sorted by {visible(self.sort)}{' desc' if self.descending else ''}")
        bar.update(text)

    def _detail(self) -> None:
        """The row under the cursor, whole: each column's full text, wrapped."""
        detail = self.query_one("#samples-text", Static)
        sample = self.current()
        if sample is None:
            detail.update("")
            return
        text = Text()
        text.append(f"step {sample['step']}, row {sample['index']}\n", style="dim")
        found = tokens_of(sample["row"])
        if found is not None:
            text.append_text(self._coloured(found))
        for name, kind in self.shown.columns.items():
            value = sample["row"].get(name)
            text.append(f"{visible(name)}: ", style="bold")
            text.append(visible(sample_cell(value, kind) if kind == IMAGE else cell_text(value)) + "\n")
        detail.update(text)

    def _coloured(self, found: Tokens) -> Text:
        """The tokens as one text, each coloured by its value of the chosen column (``v`` goes through
        them) on the heat scale from the row's lowest to its highest, with the scale's ends."""
        names = list(found.values)
        name = self.by if self.by in names else names[0]
        values = found.values[name]
        finite = [v for v in values if v == v and abs(v) != float("inf")]
        low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
        span = (high - low) or 1.0
        dark = self.app.current_theme.dark
        out = Text()
        out.append(f"{visible(found.column)} by {visible(name)}", style="bold")
        out.append(f"  {number(low)} ")
        for i in range(12):
            out.append("█", style=hex_colour(heat_colour(i / 11, dark)))
        out.append(f" {number(high)}" + ("  (v: another)" if len(names) > 1 else "") + "\n")
        for token, value in zip(found.tokens, values, strict=True):
            if value != value:  # NaN: no value for this token
                out.append(visible(token))
                continue
            r, g, b = heat_colour((value - low) / span, dark)
            ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "white"  # readable on its cell
            out.append(visible(token), style=f"{ink} on {hex_colour((r, g, b))}")
        out.append("\n")
        return out

    def action_by(self) -> None:
        """``v``: colour the tokens by the next of the row's values per token."""
        sample = self.current()
        found = tokens_of(sample["row"]) if sample is not None else None
        if found is None:
            return
        names = list(found.values)
        self.by = (
            names[(names.index(self.by) + 1) % len(names)]
            if self.by in names
            else names[min(1, len(names) - 1)]
        )
        self._detail()

    def current(self) -> dict[str, Any] | None:
        """The sample under the table's cursor."""
        table = self.query_one(DataTable)
        if not table.row_count or not 0 <= table.cursor_row < len(self.shown.samples):
            return None
        return self.shown.samples[table.cursor_row]

    def _again(self) -> None:
        if self._model is not None:
            self.show(self._model)

    def on_resize(self) -> None:
        self._again()

    # -- keys and the mouse --------------------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()  # the runs pane's cursor is the app's, not this table's
        self._detail()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a header sorts by its column; again, the other way."""
        event.stop()  # not the runs pane's sort
        column = str(event.column_key.value)
        if column in self.shown.columns:
            self.descending = self.sort == column and not self.descending
            self.sort = column
            self._again()

    def action_step(self, by: int) -> None:
        """The previous or the next step with samples (unpins a pinned prompt)."""
        at = self.at()
        if at is None:
            return
        self.pinned = None
        self._go(self.steps[min(max(self.steps.index(at) + by, 0), len(self.steps) - 1)])

    def action_end(self, which: int) -> None:
        """The first (0) or the last (-1) step."""
        if self.steps:
            self.pinned = None
            self._go(self.steps[which])

    def _go(self, step: int) -> None:
        self.step = None if step == self.steps[-1] else step
        self._again()

    def action_sort(self, by: int) -> None:
        """``o``: sort by the next column (the logging order after the last); ``O``: the other way."""
        if by < 0:
            self.descending = not self.descending
        else:
            names = [None, *self.shown.columns]
            at = names.index(self.sort) if self.sort in names else 0
            self.sort, self.descending = names[(at + 1) % len(names)], False
        self._again()

    def action_pin(self) -> None:
        """Pin the prompt of the row under the cursor (its rows at every step), or unpin it."""
        if self.pinned is not None:
            self.pinned = None
        else:
            sample = self.current()
            if sample is None:
                return
            try:
                self.pinned = prompt_of([sample], sample["index"])
            except LookupError:
                self.notify("these rows have no prompt column", severity="warning")
                return
            self.step = sample["step"] if sample["step"] != self.steps[-1] else None
        self._again()

    def action_next_key(self) -> None:
        """The run's next table of samples."""
        model = self._model
        run = model.run(model.current) if model is not None and model.current else None
        keys = list(run.sample_index()) if run is not None else []
        if len(keys) > 1 and self.key in keys:
            self.key = keys[(keys.index(self.key) + 1) % len(keys)]
            self.step, self.pinned = None, None
            self._again()
