"""``tunetrack tui``: the terminal view, on Textual.

Three panes: the runs (a filter in ``--where``'s language above them; space picks a run for the
chart), a chart of the picked runs' metric overlaid (a key or a regular expression; the loss by
default), and the console of the run under the cursor, following it. It polls the store every
``interval`` seconds; everything is read by ``model.Model``, incrementally. Keys: ``/`` filter,
``m`` metric, ``space`` pick, ``r`` refresh now, ``?`` help, ``q`` quit.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header, Input, RichLog, Static
from textual_plotext import PlotextPlot

from ..reader.as_text import line_text
from ..states import COLOURS
from .model import Model, Row, shown_state

HELP = (
    "/ filter (the --where language: state = 'running', config.lr < 1e-3, loss:min < 2)   "
    "space pick for the chart   m metric (a key or a regular expression)   r refresh   q quit"
)


class TunetrackApp(App[None]):
    """The terminal view of a store."""

    TITLE = "tunetrack"
    CSS = """
    #runs { height: 1fr; }
    #right { width: 2fr; }
    #left { width: 1fr; min-width: 50; }
    #chart { height: 2fr; }
    #console { height: 1fr; border-top: solid $accent; }
    #problem { color: $error; height: auto; }
    Input { height: 3; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "filter"),
        Binding("m", "focus_metric", "metric"),
        Binding("space", "pick", "pick"),
        Binding("r", "refresh", "refresh"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        dir: str | os.PathLike[str] | None = None,
        project: str | None = None,
        runs: list[str] | None = None,
        where: str = "",
        interval: float = 2.0,
    ) -> None:
        super().__init__()
        self.model = Model(dir, project, where)
        self.interval = interval
        self._wanted = list(runs or [])
        self._rows: list[Row] = []
        self._shown: dict[str, list[Text]] = {}  # the cells on screen, per run
        self._columns: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="left"):
                yield Input(
                    self.model.where, placeholder="filter: state = 'running' and loss:min < 2", id="filter"
                )
                yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
                yield Static("", id="problem")
            with Vertical(id="right"):
                yield Input(
                    placeholder="metric: a key or a regular expression (default: the loss)", id="metric"
                )
                yield PlotextPlot(id="chart")
                yield RichLog(id="console", max_lines=2000, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        self._columns = table.add_columns("", "state", "name", "project", "step", "loss")
        self.refresh_runs()
        self.set_interval(self.interval, self.refresh_runs)
        table.focus()

    # -- polling -------------------------------------------------------------------------------------
    def refresh_runs(self, force: bool = False) -> None:
        """One look at the store; the panes are drawn again only when what they show changed."""
        changed = self.model.poll()
        rows = self.model.rows
        for ref in self._wanted:  # runs named on the command line: picked once they are found
            found = next((r for r in rows if r.id == ref or r.name == ref or r.id.startswith(ref)), None)
            if found is not None:
                self.model.pick(found.id)
        self._wanted = [ref for ref in self._wanted if not any(ref in (r.id, r.name) for r in rows)]
        if not self.model.picked and rows:
            self.model.pick(rows[0].id)  # the newest run, so the chart is never empty for no reason
            changed = True
        if not (changed or force):
            return
        self._rows = rows
        self._draw_table()
        self._draw_chart()
        self._draw_console()

    def _draw_table(self) -> None:
        """The runs pane: its changed cells only while the runs are the same ones in the same order
        (a live run's step and loss), else built again (a run came, went, or the filter changed)."""
        table = self.query_one("#runs", DataTable)
        cells = {row.id: self._cells(row) for row in self._rows}
        if [str(k.value) for k in table.rows] == list(cells):
            for rid, new in cells.items():
                old = self._shown.get(rid)
                for column, value in zip(self._columns, new, strict=True):
                    if old is None or str(value) != str(old[self._columns.index(column)]):
                        table.update_cell(rid, column, value)
        else:
            cursor = table.cursor_row
            table.clear()
            for rid, row_cells in cells.items():
                table.add_row(*row_cells, key=rid)
            if cells:
                table.move_cursor(row=min(cursor, len(cells) - 1))
        self._shown = cells
        self.query_one("#problem", Static).update(self.model.problem or "")

    def _cells(self, row: Row) -> list[Text]:
        mark = "●" if row.id in self.model.picked else " "
        return [
            Text(mark),
            Text(row.state, style=COLOURS.get(shown_state(row), "")),
            Text(row.name),
            Text(row.project),
            Text(row.step, justify="right"),
            Text(row.loss, justify="right"),
        ]

    def _draw_chart(self) -> None:
        chart = self.query_one("#chart", PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        plt.clear_figure()
        key = self.model.key()
        plt.title(key or "pick a run with space")
        for label, steps, values in self.model.points(max(chart.size.width, 20)):
            plt.plot(steps, values, label=label, marker="braille")
        plt.xlabel("step")
        chart.refresh()
        self.query_one("#problem", Static).update(self.model.problem or "")

    def _draw_console(self) -> None:
        log = self.query_one("#console", RichLog)
        log.clear()
        current = self._current()
        lines = self.model.console(current)
        ranks = len({line.rank for line in lines}) > 1
        for line in lines:
            log.write(Text(line_text(line, ranks)))

    def _current(self) -> str | None:
        table = self.query_one("#runs", DataTable)
        if not self._rows:
            return None
        return self._rows[min(table.cursor_row, len(self._rows) - 1)].id

    # -- actions -------------------------------------------------------------------------------------
    def on_data_table_row_highlighted(self, event: Any) -> None:
        self._draw_console()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.model.where = event.value.strip()
        else:
            self.model.metric = event.value.strip()
        self.refresh_runs(force=True)
        self.query_one("#runs", DataTable).focus()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_focus_metric(self) -> None:
        self.query_one("#metric", Input).focus()

    def action_pick(self) -> None:
        current = self._current()
        if current is not None:
            self.model.pick(current)
            self._draw_table()
            self._draw_chart()

    def action_refresh(self) -> None:
        self.refresh_runs(force=True)

    def action_help(self) -> None:
        self.notify(HELP, title="keys", timeout=10)
