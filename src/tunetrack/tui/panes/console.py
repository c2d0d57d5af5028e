"""The console tab: what the run under the cursor printed, following it as it prints.

Only what a process printed since the last look is read and written to the screen
(``Run.console_after``). The lines can be narrowed to one rank (``[`` and ``]`` go through the
run's ranks) and to those a regular expression matches (``g``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Input, RichLog, Static

from ...reader.as_text import line_text
from ...reader.console_log import Line
from ..model import Model
from . import Pane

#: the lines shown when a run comes into view (then every line it prints after)
TAIL = 500


class Console(Pane):
    """The console tab."""

    DEFAULT_CSS = """
    Console #console-bar { height: 1; }
    Console #grep { width: 1fr; }
    Console #rank { width: auto; padding: 0 1; }
    Console RichLog { height: 1fr; }
    """
    KEYS: ClassVar[list[Binding]] = [
        Binding("g", "grep", "grep"),
        Binding("left_square_bracket", "rank(-1)", "rank"),
        Binding("right_square_bracket", "rank(1)", show=False),
    ]

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(palette, **kwargs)
        self.rank: int | None = None  # the one rank shown, or None: all
        self.grep: re.Pattern[str] | None = None
        self._model: Model | None = None
        self._shown: tuple[Any, ...] | None = None  # the run, rank and grep on screen
        self._marks: dict[str, int] = {}  # how many lines of each process were read

    def compose(self) -> ComposeResult:
        with Horizontal(id="console-bar"):
            yield Input(placeholder="grep: a regular expression (g)", id="grep", compact=True)
            yield Static("all ranks", id="rank")
        yield RichLog(id="console-log", max_lines=5000, wrap=False, markup=False)

    def show(self, model: Model) -> None:
        self._model = model
        log = self.query_one(RichLog)
        run = model.run(model.current) if model.current else None
        shown = (model.current, self.rank, self.grep)
        if shown != self._shown:  # another run, rank or pattern: its last lines, then follow
            self._shown, self._marks = shown, {}
            log.clear()
            if run is None:
                return
            lines, self._marks = run.console_after({})
            self._write(self._kept(lines)[-TAIL:], run.ranks)
            return
        if run is not None:
            lines, self._marks = run.console_after(self._marks)
            self._write(self._kept(lines), run.ranks)

    def _kept(self, lines: list[Line]) -> list[Line]:
        return [
            line
            for line in lines
            if (self.rank is None or line.rank == self.rank)
            and (self.grep is None or self.grep.search(line.text))
        ]

    def _write(self, lines: list[Line], ranks: list[int]) -> None:
        log = self.query_one(RichLog)
        several = len(ranks) > 1 and self.rank is None
        for line in lines:
            log.write(Text(line_text(line, several)))

    def _again(self) -> None:
        if self._model is not None:
            self.show(self._model)

    def action_grep(self) -> None:
        self.query_one("#grep", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        try:
            self.grep = re.compile(text) if text else None
        except re.error as exc:
            self.notify(f"grep: {exc}", severity="error")
            return
        self._again()
        self.query_one(RichLog).focus()

    def action_rank(self, step: int) -> None:
        """Go through ``all ranks``, then each rank the run printed from."""
        model = self._model
        run = model.run(model.current) if model is not None and model.current else None
        choices: list[int | None] = [None, *(run.ranks if run is not None else [])]
        at = choices.index(self.rank) if self.rank in choices else 0
        self.rank = choices[(at + step) % len(choices)]
        self.query_one("#rank", Static).update("all ranks" if self.rank is None else f"rank {self.rank}")
        self._again()
