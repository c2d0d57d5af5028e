"""The runs pane: a table of the runs the filter keeps, live. Only the cells that changed are drawn
again while the rows stay the same runs in the same order (a live run's step and loss); a click on a
column's header (or ``s``) sorts by it, again for the other way."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from ..model import BASE_COLUMNS, Model, Row
from ..palette import hex_colour, line_colour, state_colour

#: the columns written flush right (numbers)
RIGHT = ("step", "loss")


class RunsTable(DataTable[Text]):
    """The runs pane's table; its first column marks the picked runs in their chart colour."""

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.palette = palette
        self._shown: dict[str, list[Text]] = {}
        self._header: tuple[str, ...] = ()

    def show(self, model: Model) -> None:
        """Draw ``model.rows``: the changed cells only, when the rows are the same runs in the same order."""
        header = ("", *model.header)
        if header != self._header:
            self.clear(columns=True)
            for name in header:
                label = name + (" ▼" if model.descending else " ▲") * (name == model.sort and bool(name))
                self.add_column(label, key=name or "picked")
            self._header, self._shown = header, {}
        dark = self.app.current_theme.dark
        cells = {row.id: self.cells(row, model, dark) for row in model.rows}
        if list(self._shown) == list(cells) and cells:
            for rid, new in cells.items():
                old = self._shown[rid]
                for at, (was, now) in enumerate(zip(old, new, strict=True)):
                    if (was.plain, was.style) != (now.plain, now.style):
                        self.update_cell(rid, self.ordered_columns[at].key, now)
        else:
            cursor = self.cursor_row
            self.clear()
            for rid, row_cells in cells.items():
                self.add_row(*row_cells, key=rid)
            if cells:
                self.move_cursor(row=min(cursor, len(cells) - 1))
        self._shown = cells

    def cells(self, row: Row, model: Model, dark: bool) -> list[Text]:
        picked = row.id in model.picked
        mark = (
            Text("●", style=hex_colour(line_colour(self.palette, model.picked.index(row.id))))
            if picked
            else Text(" ")
        )
        out = [mark, Text(row.cells[0], style=state_colour(row.shown_state, dark))]
        for name, cell in zip(model.header[1:], row.cells[1:], strict=True):
            out.append(Text(cell, justify="right" if name in RIGHT or name not in BASE_COLUMNS else "left"))
        return out

    def current(self) -> str | None:
        """The id of the run under the cursor."""
        if not self.row_count:
            return None
        return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
