"""``tunetrack tui``: the terminal view, on Textual.

The runs on the left (a filter in ``--where``'s language above them, more columns on request, sorted
by any column; space picks a run for the chart); tabs on the right (``panes``): the chart of the picked
runs, and the console, system metrics, samples, checkpoints and events of the run under the cursor.
The store is looked at every ``interval`` seconds on a thread of its own (a bucket's answers never
freeze the keys); what changed is drawn, nothing else. Narrower than ``NARROW`` columns (an 80×24
terminal), the runs go above the tabs. ``?`` lists the keys.
"""

from __future__ import annotations

import os
import time
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Input, Markdown, Static, TabbedContent, TabPane
from textual.worker import Worker

from .model import Model
from .palette import PALETTES
from .panes import Pane
from .panes.chart import Chart
from .panes.console import Console
from .panes.events import Events
from .panes.runs import RunsTable
from .panes.samples import Samples
from .panes.system import System

#: below this many columns the runs pane goes above the tabs
NARROW = 110
#: a look at the store that has taken this many seconds is said under the runs
SLOW = 5.0

#: the tabs, in the order of their keys (1, 2, ...)
TABS = (
    ("chart", "Chart", Chart),
    ("console", "Console", Console),
    ("system", "System", System),
    ("samples", "Samples", Samples),
    ("events", "Events", Events),
)

KEYS = """\
| key | does |
|---|---|
| `/` | filter the runs (the `--where` language: `state = 'running' and loss:min < 2`) |
| `c` | more columns (`loss:min, eval/accuracy:max, config.lora.r`) |
| `s` / `S` | sort by the next column / the other way (or click a column's header) |
| `space` | pick the run under the cursor for the chart, or drop it |
| `a` / `x` | pick every run shown (up to ten) / drop every pick |
| `1` … `5` | the chart, console, system, samples, events tab |
| `m` | search the chart's keys (a regular expression) |
| `←` `→` | move the chart's crosshair (shift: ten columns); a click puts it there |
| `+` `-` `0` | zoom in and out around the crosshair (or the mouse wheel); the whole run |
| `l` / `k` | the chart's log scale / hide its key list |
| `b` / `h` | the band (p5, p50, p95, max) / the heatmap across the keys listed; again: one key |
| `g` / `[` `]` | grep the console / show one rank's lines |
| `,` `.` / `<` `>` | the samples' previous / next step; their first / last step |
| `o` / `O` | sort the samples by the next column / the other way (or click a column's header) |
| `p` | the prompt of the sample under the cursor at every step; again: back to one step |
| `n` | the run's next table of samples |
| `f` | the pane with the cursor fills the screen (again: back) |
| `t` | light or dark |
| `r` | look at the store now |
| `q` | quit |
"""


def pane_keys() -> list[Binding]:
    """The tabs' own keys (``Pane.KEYS``) bound on the app, each running its action on the tab in view."""
    out = []
    for tab, _, pane in TABS:
        for b in pane.KEYS:
            out.append(Binding(b.key, f"in_pane({tab!r}, {b.action!r})", b.description, show=b.show))
    keys = [b.key for b in out]
    assert len(keys) == len(set(keys)), "two tabs share a key"
    return out


class Keys(ModalScreen[None]):
    """``?``: every key."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    Keys { align: center middle; }
    Keys > VerticalScroll { width: 90%; max-width: 100; height: 90%; border: round $accent; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(KEYS)


class Side(Vertical):
    """The runs pane with its filter: ``f`` makes it fill the screen."""

    ALLOW_MAXIMIZE = True


class Tabs(TabbedContent):
    """The tabs: ``f`` makes them fill the screen."""

    ALLOW_MAXIMIZE = True


class TunetrackApp(App[None]):
    """The terminal view of a store."""

    TITLE = "tunetrack"
    CSS = """
    #main { height: 1fr; }
    #left { width: auto; max-width: 55%; min-width: 40; padding-right: 1; }
    #runs { width: auto; }
    #tabs { width: 1fr; height: 1fr; }
    #main.narrow { layout: vertical; }
    #main.narrow #left { width: 1fr; max-width: 100%; height: 2fr; padding-right: 0; }
    #main.narrow Input { margin: 0; }
    #main.narrow #tabs { width: 1fr; height: 3fr; }
    #runs { height: 1fr; }
    #problem { color: $error; height: auto; }
    #detail { height: auto; max-height: 3; color: $text-muted; }
    #columns.hidden { display: none; }
    Input { margin: 0 0 1 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus('filter')", "filter"),
        Binding("c", "focus('columns')", "columns", show=False),
        Binding("s", "sort(1)", "sort"),
        Binding("S", "sort(-1)", show=False),
        Binding("space", "pick", "pick"),
        Binding("a", "pick_all", show=False),
        Binding("x", "drop_all", show=False),
        Binding("m", "keys", "keys"),
        *(Binding(str(i + 1), f"tab('{tab}')", show=False) for i, (tab, _, _) in enumerate(TABS)),
        *pane_keys(),
        Binding("f", "fill", show=False),
        Binding("t", "light", show=False),
        Binding("r", "look", "refresh"),
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
        columns: list[str] | None = None,
        sort: str | None = None,
        palette: str = "tableau",
    ) -> None:
        super().__init__()
        self.model = Model(dir, project, where, list(columns or []))
        if sort:
            self.model.sort_text(sort)
        self.interval = interval
        self.palette = palette if palette in PALETTES else "tableau"
        self._wanted = list(runs or [])
        self._started = False  # whether the runs pane was drawn with runs in it
        self._looking: Worker[None] | None = None  # the look under way
        self._look_began = 0.0
        self._unread = False  # whether the last look could not read the store

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Side(id="left"):
                yield Input(
                    self.model.where,
                    placeholder="filter: state = 'running' and loss:min < 2",
                    id="filter",
                    compact=True,
                )
                yield Input(
                    ", ".join(self.model.columns),
                    placeholder="columns: loss:min, config.lora.r",
                    id="columns",
                    classes="" if self.model.columns else "hidden",
                    compact=True,
                )
                yield RunsTable(self.palette, id="runs")
                yield Static("", id="detail")
                yield Static("", id="problem")
            with Tabs(id="tabs"):
                for i, (tab, title, pane) in enumerate(TABS):
                    with TabPane(f"{title} {i + 1}", id=f"tab-{tab}"):
                        yield pane(self.palette, id=tab)
        yield Footer(show_command_palette=False)  # ctrl+p still opens it: the keys need the room

    def on_mount(self) -> None:
        self.action_look()
        self.set_interval(self.interval, self.action_look)
        self.query_one(RunsTable).focus()

    def on_resize(self) -> None:
        narrow = self.size.width < NARROW
        self.query_one("#main").set_class(narrow, "narrow")
        self.query_one(Header).display = not narrow  # a line more for the runs

    # -- looking at the store ------------------------------------------------------------------------
    def action_look(self) -> None:
        """Look at the store now, unless a look is under way (a slow bucket's): looks never pile up; one
        that has waited ``SLOW`` seconds is said under the runs (a bucket out of reach is retried by its
        client for minutes before it fails)."""
        if self._looking is None or self._looking.is_finished:
            self._look_began = time.monotonic()
            self._looking = self._look()
        elif (waited := time.monotonic() - self._look_began) >= SLOW:
            self._unread = True
            self.query_one("#problem", Static).update(f"the store has not answered for {waited:.0f} s")

    @work(thread=True, group="look", exit_on_error=False)
    def _look(self) -> None:
        """One look at the store, off the screen's thread; the panes are drawn with what it found. A
        store that cannot be read (a bucket out of reach) is said under the runs, and looked at again
        at the next look; what was shown stays."""
        try:
            changed = self.model.poll()
        except Exception as exc:  # noqa: BLE001 - any failure to read is the same news to a user
            self.call_from_thread(self._unreadable, exc)
            return
        self.call_from_thread(self.draw, changed)

    def _unreadable(self, exc: Exception) -> None:
        self._unread = True
        self.query_one("#problem", Static).update(f"could not read the store: {type(exc).__name__}: {exc}")

    def draw(self, changed: bool = True) -> None:
        """Draw what the last look found (``changed``: that it found anything new)."""
        model = self.model
        for ref in list(self._wanted):  # runs named on the command line: picked once they are found
            found = next((r for r in model.rows if ref in (r.id, r.name) or r.id.startswith(ref)), None)
            if found is not None:
                model.pick(found.id)
                self._wanted.remove(ref)
                changed = True
        if not self._started and model.rows and not self._wanted:
            self._started = True
            if not model.picked:
                model.pick(model.rows[0].id)  # the newest run: the chart starts with something on it
                changed = True
        if not changed and not self._unread:
            return
        self._unread = False  # a look that read the store: the problem line says the model's again
        table = self.query_one(RunsTable)
        table.show(model)
        model.current = table.current()
        self.query_one("#problem", Static).update(model.problem or "")
        self._detail()
        self.pane().show(model)

    def pane(self) -> Pane:
        """The pane of the tab in view."""
        active = self.query_one(TabbedContent).active or "tab-chart"
        return self.query_one(f"#{active.removeprefix('tab-')}", Pane)

    # -- events --------------------------------------------------------------------------------------
    def on_runs_table_highlighted(self, event: RunsTable.Highlighted) -> None:
        if event.run_id != self.model.current:
            self.model.current = event.run_id
            self._detail()
            self.pane().show(self.model)

    def _detail(self) -> None:
        """The run under the cursor in words, under the runs: its id and its state as ``ls`` words it
        (the failure and where, who stopped it and why)."""
        row = next((r for r in self.model.rows if r.id == self.model.current), None)
        self.query_one("#detail", Static).update(
            "" if row is None else Text.assemble((row.name, "bold"), f" {row.id} · {row.state}")
        )

    def on_runs_table_sort(self, event: RunsTable.Sort) -> None:
        self.model.sort_by(event.column)
        self.action_look()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.pane().show(self.model)
        self.refresh_bindings()  # the footer shows the keys of the tab in view

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A tab's keys work (and show) only while it is in view."""
        if action == "in_pane":
            return parameters[0] == self.pane().id
        return True

    async def action_in_pane(self, tab: str, action: str) -> None:
        await self.run_action(action, self.pane())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.model.where = event.value.strip()
        elif event.input.id == "columns":
            self.model.columns = [c.strip() for c in event.value.split(",") if c.strip()]
        else:
            return
        self.action_look()
        self.query_one(RunsTable).focus()

    # -- actions -------------------------------------------------------------------------------------
    def action_focus(self, input_id: str) -> None:
        field = self.query_one(f"#{input_id}", Input)
        field.remove_class("hidden")
        field.focus()

    def action_sort(self, step: int) -> None:
        """``s``: sort by the next column (newest first after the last); ``S``: the other way."""
        model = self.model
        if step < 0:
            model.descending = not model.descending
        else:
            names = [None, *model.header]
            at = names.index(model.sort) if model.sort in names else 0
            model.sort, model.descending = names[(at + 1) % len(names)], False
        self.action_look()

    def action_pick(self) -> None:
        current = self.query_one(RunsTable).current()
        if current is not None:
            self.model.pick(current)
            self.draw()

    def action_pick_all(self) -> None:
        for row in self.model.rows[:10]:
            if row.id not in self.model.picked:
                self.model.pick(row.id)
        self.draw()

    def action_drop_all(self) -> None:
        self.model.picked.clear()
        self.draw()

    def action_keys(self) -> None:
        self.query_one(TabbedContent).active = "tab-chart"
        self.query_one(Chart).search_keys()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = f"tab-{tab}"

    def action_fill(self) -> None:
        """The runs, or the tabs, fill the screen; again, back to both."""
        if self.screen.maximized is not None:
            self.screen.minimize()
            return
        focused = self.focused
        inside_tabs = focused is not None and self.query_one("#tabs") in focused.ancestors_with_self
        self.screen.maximize(self.query_one("#tabs" if inside_tabs else "#left"), container=False)

    def action_light(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"
        self.draw()

    def action_help(self) -> None:
        self.push_screen(Keys())
