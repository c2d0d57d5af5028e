"""The runs pane: a table of the runs the filter keeps, live. Only the cells that changed are drawn
again while the rows stay the same runs in the same order (a live run's step and loss); a click on a
column's header (or ``s``) sorts by it, again for the other way."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from ..model import BASE_COLUMNS, Model
from ..palette import hex_colour, line_colour, state_colour

#: the columns written flush right (numbers)
RIGHT = ("step", "loss")


class RunsTable(DataTable[Text]):
    """The runs pane's table; its first column marks the picked runs in their chart colour."""

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.palette = palette
        self._shown: dict[str, tuple[tuple[str, ...], int, bool]] = {}
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
        # what a row shows: its cells, its place among the picked (its colour), the theme
        seen = {
            row.id: (row.cells, model.picked.index(row.id) if row.id in model.picked else -1, dark)
            for row in model.rows
        }
        if list(self._shown) == list(seen) and seen:
            for row in model.rows:
                if self._shown[row.id] == seen[row.id]:
                    continue
                old = self.cells_of(self._shown[row.id], row.cells[0])
                for at, (was, now) in enumerate(
                    zip(old, self.cells_of(seen[row.id], row.cells[0]), strict=True)
                ):
                    if (was.plain, was.style) != (now.plain, now.style):
                        self.update_cell(row.id, self.ordered_columns[at].key, now)
        else:
            cursor = self.cursor_row
            self.clear()
            for row in model.rows:
                self.add_row(*self.cells_of(seen[row.id], row.cells[0]), key=row.id)
            if seen:
                self.move_cursor(row=min(cursor, len(seen) - 1))
        self._shown = seen

    def cells_of(self, seen: tuple[tuple[str, ...], int, bool], state: str) -> list[Text]:
        """A row's cells as drawn, from what it shows (``show``'s ``seen``)."""
        cells, picked, dark = seen
        colour = hex_colour(line_colour(self.palette, picked)) if picked >= 0 else ""
        out = [
            Text("●" if picked >= 0 else " ", style=colour),
            Text(cells[0], style=state_colour(state, dark)),
        ]
        for name, cell in zip(self._header[2:], cells[1:], strict=True):
            out.append(Text(cell, justify="right" if name in RIGHT or name not in BASE_COLUMNS else "left"))
        return out

    def current(self) -> str | None:
        """The id of the run under the cursor."""
        if not self.row_count:
            return None
        return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
