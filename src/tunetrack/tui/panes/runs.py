"""The runs pane: a table of the runs the filter keeps, live, drawn a line at a time.

Built on Textual's line API rather than its ``DataTable``: a ``DataTable`` draws every visible cell
again after any one changes, so a live run's new step cost a full redraw of the pane (50 ms at 30
rows on two cores) and a store of 1,000 runs a third of a second to lay out. Here each row's line
is kept (``_lines``, keyed by what it shows), a look that changed one run's step draws that line
alone, and only the rows on screen are ever drawn. A click on a column's header sorts by it (again:
the other way).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..model import Model
from ..palette import hex_colour, line_colour, state_colour

#: the columns written flush left (words); the others are numbers
LEFT = ("state", "name", "project")
#: the space between two columns
GAP = 2
#: a column is never wider than this many cells (a long name is cut with an ellipsis)
WIDEST = 32


class RunsTable(ScrollView):
    """The runs pane's table; its first column marks the picked runs in their chart colour."""

    can_focus = True

    COMPONENT_CLASSES: ClassVar[set[str]] = {"runs--header", "runs--cursor", "runs--odd"}
    DEFAULT_CSS = """
    RunsTable { background: $surface; }
    RunsTable > .runs--header { text-style: bold; background: $panel; }
    RunsTable > .runs--odd { background: $surface-lighten-1; }
    RunsTable > .runs--cursor { background: $block-cursor-blurred-background; }
    RunsTable:focus > .runs--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False),
        Binding("down", "move(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "move(-1_000_000)", show=False),
        Binding("end", "move(1_000_000)", show=False),
    ]

    class Highlighted(Message):
        """The cursor moved to another run (``run_id``; None: no run)."""

        def __init__(self, run_id: str | None) -> None:
            super().__init__()
            self.run_id = run_id

    class Sort(Message):
        """A column's header was clicked."""

        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.palette = palette
        self.cursor_row = 0
        self._header: tuple[str, ...] = ()
        self._labels: list[str] = []
        self._ids: list[str] = []
        self._seen: dict[str, tuple[tuple[str, ...], int, bool]] = {}
        self._widths: list[int] = []
        self._lines: dict[Any, tuple[Strip, Style]] = {}  # a row's line and its background, by what it shows

    # -- what is shown -------------------------------------------------------------------------------
    def show(self, model: Model) -> None:
        """Show ``model.rows``; only the lines of rows that changed are drawn again."""
        dark = self.app.current_theme.dark
        header = ("", *model.header)
        seen = {
            row.id: (row.cells, model.picked.index(row.id) if row.id in model.picked else -1, dark)
            for row in model.rows
        }
        labels = [  # a config column by its key alone (learning_rate, lora.r): headers set the widths
            name.removeprefix("config.")
            + (" ▼" if model.descending else " ▲") * (name == model.sort and bool(name))
            for name in header
        ]
        widths = [
            min(max([cell_len(label), *(cell_len(s[0][i - 1]) for s in seen.values())]), WIDEST) if i else 1
            for i, label in enumerate(labels)
        ]
        current = self.current()
        same = (header, widths, labels) == (self._header, self._widths, self._labels)
        changed = [i for i, rid in enumerate(seen) if self._seen.get(rid) != seen[rid]]
        moved = list(seen) != self._ids
        self._header, self._widths, self._labels = header, widths, labels
        self._ids, self._seen = list(seen), seen
        if not same:
            self._lines.clear()
        self.virtual_size = Size(sum(widths) + GAP * (len(widths) - 1), len(seen) + 1)
        if current in seen:
            self.cursor_row = self._ids.index(current)  # the cursor stays on its run
        self.cursor_row = max(0, min(self.cursor_row, len(self._ids) - 1))
        if not same or moved:
            self.refresh()
        else:
            top = self.scroll_offset.y
            for i in changed:
                self.refresh_line(i + 1 - top)
        if self.current() != current:
            self.post_message(self.Highlighted(self.current()))

    @property
    def row_count(self) -> int:
        return len(self._ids)

    def current(self) -> str | None:
        """The id of the run under the cursor."""
        return self._ids[self.cursor_row] if self._ids else None

    def cells_at(self, row: int) -> list[str]:
        """The text of a row's cells, as shown (the picked mark first)."""
        cells, picked, _ = self._seen[self._ids[row]]
        return ["●" if picked >= 0 else " ", *cells]

    @property
    def labels(self) -> list[str]:
        """The columns' headers, as shown (the sorted one with its arrow)."""
        return list(self._labels)

    def move_cursor(self, row: int) -> None:
        """Put the cursor on ``row`` (kept in the table and in view)."""
        before = self.current()
        self.cursor_row = max(0, min(row, len(self._ids) - 1))
        top, height = self.scroll_offset.y, max(self.size.height - 1, 1)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False)
        self.refresh()
        if self.current() != before:
            self.post_message(self.Highlighted(self.current()))

    # -- drawing -------------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width, left = self.size.width, self.scroll_offset.x
        if y == 0:
            style = self.get_component_rich_style("runs--header")
            return self._strip(self._labels, ["left"] * len(self._labels), style).crop_extend(
                left, left + width, style
            )
        at = y - 1 + self.scroll_offset.y
        if at >= len(self._ids):
            return Strip.blank(width, self.rich_style)
        rid = self._ids[at]
        cursor = at == self.cursor_row
        key = (rid, self._seen[rid], at % 2, cursor, cursor and self.has_focus)
        if key not in self._lines:
            if len(self._lines) > 4 * len(self._ids) + 256:
                self._lines.clear()  # lines of rows long gone, or of a cursor long moved
            base = (
                self.get_component_rich_style("runs--cursor")
                if cursor
                else self.get_component_rich_style("runs--odd")
                if at % 2
                else self.rich_style
            )
            self._lines[key] = (self._strip(self._cells(rid), self._justify(), base), base)
        strip, base = self._lines[key]
        return strip.crop_extend(left, left + width, base)

    def _justify(self) -> list[str]:
        return ["left", *("left" if name in LEFT else "right" for name in self._header[1:])]

    def _cells(self, rid: str) -> list[Text]:
        cells, picked, dark = self._seen[rid]
        mark = Text("●", style=hex_colour(line_colour(self.palette, picked))) if picked >= 0 else Text(" ")
        return [mark, Text(cells[0], style=state_colour(cells[0], dark)), *(Text(c) for c in cells[1:])]

    def _strip(self, cells: list[Any], justify: list[str], style: Style) -> Strip:
        """One line: each cell cut or padded to its column's width, the columns ``GAP`` apart."""
        line = Text(style=style, end="")
        for i, (cell, width, how) in enumerate(zip(cells, self._widths, justify, strict=True)):
            text = cell if isinstance(cell, Text) else Text(cell)
            text.truncate(width, overflow="ellipsis")
            pad = " " * (width - text.cell_len)
            line.append_text(Text(pad) + text if how == "right" else text + Text(pad))
            if i < len(cells) - 1:
                line.append(" " * GAP)
        return Strip(list(line.render(self.app.console)), line.cell_len)

    # -- keys and the mouse --------------------------------------------------------------------------
    def action_move(self, rows: int) -> None:
        self.move_cursor(self.cursor_row + rows)

    def action_page(self, pages: int) -> None:
        self.move_cursor(self.cursor_row + pages * max(self.size.height - 1, 1))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x, start = offset.x + self.scroll_offset.x, 0
            for name, width in zip(self._header, self._widths, strict=True):
                if start <= x < start + width + GAP and name:
                    self.post_message(self.Sort(name))
                    return
                start += width + GAP
            return
        self.move_cursor(offset.y - 1 + self.scroll_offset.y)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
