"""The chart tab: one metric of the picked runs overlaid, with the keys they logged beside it.

The key list is searched by a regular expression (``m``); the highlighted key is drawn. Each run's
line is its points thinned to the chart's width with every spike kept (``reader.downsample.m4``, as the
dashboard thins them), within the zoomed step range when zoomed. A crosshair (``←``/``→``, or a click)
reads every run's value at a step below the chart. ``l`` log scale, ``+``/``-`` zoom around the
crosshair (or the mouse wheel), ``0`` the whole run again, ``k`` hides the key list.

Across keys (a mixture-of-experts run's load per layer per expert, a layer's gradient norms): ``b``
draws, for the first picked run, the band of every listed key's values at each step (p5, p50, p95 and
the max: ``reader.across``) as four lines, which the crosshair, zoom and log scale work on as on any;
``h`` draws the listed keys as a heatmap of key × step (a row for each key, or for each run of
neighbouring keys, their max, when there are more keys than lines; a column for each span of steps,
their mean). Either key again: back to the one key's line. What is drawn is worked out with no
terminal involved, in ``plotting`` (the lines) and ``across`` (the band and the heatmap).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual_plotext import PlotextPlot

from ...reader import Run
from ...reader.across import Across, heat
from ...reader.as_text import number
from ..model import Model
from ..palette import hex_colour
from . import Pane
from .across import band_lines, distribution_view, heat_text
from .plotting import Line, histogram_keys_of, keys_of, lines, step_label, step_ticks, thinned

#: a zoom step: the span shown is halved (or doubled)
ZOOM = 2.0
#: a chart tab narrower than this many columns hides its key list until asked for (``m``, ``k``)
NARROW = 90


class Plot(PlotextPlot):
    """The plot, focusable (the crosshair's keys), that knows where its plotting area lies on screen
    (a click's column is a step)."""

    can_focus = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.canvas: tuple[int, int] | None = None  # the first and last column inside the frame

    def render(self) -> Any:
        rendered = super().render()
        top = next((row for row in str(rendered).splitlines() if "┌" in row), "")
        self.canvas = (top.index("┌") + 1, top.index("┐") - 1) if "┐" in top else None
        return rendered


class Chart(Pane):
    """The chart tab."""

    DEFAULT_CSS = """
    Chart #keys { width: 22; }
    Chart #keys.hidden { display: none; }
    Chart.narrow #keys { display: none; }
    Chart.narrow #keys.shown { display: block; }
    Chart #key-list { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    Chart #plot { height: 1fr; }
    Chart #heat { height: 1fr; display: none; }
    Chart.heat #heat { display: block; }
    Chart.heat #plot { display: none; }
    Chart #readout { height: auto; max-height: 3; }
    """
    KEYS: ClassVar[list[Binding]] = [
        Binding("l", "log", "log"),
        Binding("plus", "zoom(0.5)", "zoom"),
        Binding("equals_sign", "zoom(0.5)", show=False),
        Binding("minus", "zoom(2)", show=False),
        Binding("0", "unzoom", show=False),
        Binding("k", "toggle_keys", show=False),
        Binding("b", "across('band')", "band", show=False),
        Binding("h", "across('heat')", "heatmap", show=False),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "cross(-1)", "crosshair", show=False),
        Binding("right", "cross(1)", show=False),
        Binding("shift+left", "cross(-10)", show=False),
        Binding("shift+right", "cross(10)", show=False),
    ]

    def __init__(self, palette: str = "tableau", metric: str = "", **kwargs: Any) -> None:
        super().__init__(palette, **kwargs)
        self.pattern = metric  # the key list's regular expression
        self.key: str | None = None  # the key drawn (the highlighted one)
        self.log_scale = False
        self.window: tuple[float, float] | None = None  # the step range zoomed to
        self.cross: float | None = None  # the crosshair's step
        self.problem: str | None = None
        #: ``line`` (the highlighted key), or across the listed keys: ``band`` or ``heat``
        self.mode = "line"
        self.listed: list[str] = []  # the keys the search lists
        self._view: Across | None = None  # the matrix a heatmap draws
        self._histogram_keys: list[str] = []  # the picked runs' keys of histograms
        self._model: Model | None = None
        self._keys: list[str] = []
        self._lines: list[Line] = []
        self._drawn: Any = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="keys"):
                yield Input(
                    self.pattern, placeholder="keys: a regular expression", id="key-filter", compact=True
                )
                yield OptionList(id="key-list")
            with Vertical():
                yield Plot(id="plot")
                yield Static("", id="heat")
                yield Static("", id="readout")

    # -- what is drawn -------------------------------------------------------------------------------
    def show(self, model: Model) -> None:
        self._model = model
        runs = model.picked_runs()
        self._histogram_keys = histogram_keys_of(runs)
        metric_keys = keys_of(runs)
        known = set(metric_keys)
        keys = [*metric_keys, *(k for k in self._histogram_keys if k not in known)]
        if keys != self._keys:
            self._keys = keys
            self._list_keys()
        stamp = tuple((r.id, r.last_step, r.rewinds) for r in runs)
        plot = self.query_one(Plot)
        drawn = (
            stamp,
            self.key if self.mode == "line" else (self.mode, tuple(self.listed)),
            self.log_scale,
            self.window,
            self.cross,
            plot.size,
            self.palette,
            self.app.theme,
        )
        if drawn == self._drawn:
            return
        if drawn[:2] != (self._drawn or (None, None))[:2]:
            self._lines, self._view = self._read(runs)
        self._drawn = drawn
        self._draw()

    def _read(self, runs: list[Run]) -> tuple[list[Line], Across | None]:
        """What the mode draws: the picked runs' key (a histogram key: the first picked run's
        distribution over the steps, drawn as a heatmap), or the first picked run's listed keys."""
        if self.mode == "line" and self.key in self._histogram_keys:
            run = next((r for r in runs if self.key in r.histogram_keys()), None)
            return [], (distribution_view(run, self.key, self._heat_lines()) if run is not None else None)
        if self.mode == "line" or not runs or not self.listed:
            return lines(self._model, self.key, self.palette) if self._model else [], None
        if self.mode == "band":
            return band_lines(runs[0], self.listed, self.palette), None
        return [], runs[0].across(self.listed)

    def _list_keys(self) -> None:
        """Fill the key list with the keys the pattern matches, keeping the highlighted key."""
        options = self.query_one("#key-list", OptionList)
        try:
            pattern = re.compile(self.pattern) if self.pattern else None
            self.problem = None
        except re.error as exc:
            pattern, self.problem = None, f"keys: {exc}"
        shown = self.listed = [k for k in self._keys if pattern is None or pattern.search(k)]
        if self.pattern and not shown and self._keys:
            self.problem = f"keys: no key of the picked runs matches {self.pattern!r}"
        if self.key not in shown:
            self.key = shown[0] if shown else None
        options.clear_options()
        options.add_options([Option(k, id=k) for k in shown])
        if self.key is not None:
            options.highlighted = shown.index(self.key)

    def _draw(self) -> None:
        heat_map = self.mode == "heat" or (self.mode == "line" and self.key in self._histogram_keys)
        self.set_class(heat_map, "heat")
        if heat_map:
            self._draw_heat()
            return
        plot = self.query_one(Plot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title())
        width = max(plot.size.width, 20)
        for line in self._lines:
            steps, values = thinned(line, width, self.window, self.log_scale)
            if steps:
                plt.plot(steps, values, label=line.label, marker="braille", color=line.colour)
        if self.log_scale:
            plt.yscale("log")
        if self.window is not None:
            plt.xlim(*self.window)
        if (span := self.span()) is not None:
            ticks = step_ticks(*span, most=max(width // 8, 2))
            plt.xticks(ticks, [step_label(t) for t in ticks])
        if self.cross is not None:
            plt.vline(self.cross, "gray")
        plt.xlabel("step")
        plot.refresh()
        self.query_one("#readout", Static).update(self.readout())

    def title(self) -> str:
        if self.mode == "line":
            return self.key or ("pick a run with space" if not self._lines else "")
        runs = self._model.picked_runs() if self._model else []
        who = f" of {runs[0].name}" if runs else ""
        return f"{len(self.listed):,} keys{who}: p5, p50, p95, max at each step"

    def _draw_heat(self) -> None:
        box = self.query_one("#heat", Static)
        if self._view is None:
            box.update("pick a run with space, and list keys with m")
            return
        width = max(self._heat_area().width, 40)
        label_width = min(max(len(k) for k in self._view.keys) + 4, 28, width // 3)
        found = heat(self._view, width - label_width - 1, self._heat_lines(), self.window)
        runs = self._model.picked_runs() if self._model else []
        who = runs[0].name if runs else ""
        title = (
            Text(f"the distribution of {self.key} of {who} over the steps (rows: values)\n", style="bold")
            if self.mode == "line"
            else Text(f"{len(self._view.keys):,} keys of {who}\n", style="bold")
        )
        box.update(title + heat_text(found, label_width, self.app.current_theme.dark))
        self.query_one("#readout", Static).update("")

    def _heat_area(self) -> Any:
        """The space a heatmap has: the plot's (laid out before the heatmap's box is shown)."""
        box = self.query_one("#heat", Static)
        return box.parent.size if isinstance(box.parent, Widget) else box.size

    def _heat_lines(self) -> int:
        """The rows of cells a heatmap has room for (its title, the steps and the legend below)."""
        return max(self._heat_area().height - 5, 2)

    def readout(self) -> Text:
        """What the crosshair reads (each run's value at its step), else each run's last value."""
        text = Text(f"step {number(self.cross)}  " if self.cross is not None else "last  ")
        for line in self._lines:
            point = line.at(self.cross) if self.cross is not None else None
            if point is None and len(line.steps):
                point = (float(line.steps[-1]), float(line.values[-1]))
            if point is None:
                continue
            text.append("● ", style=hex_colour(line.colour))
            text.append(f"{line.label} {number(point[1])}")
            if self.cross is not None and point[0] != self.cross:
                text.append(f" (step {number(point[0])})", style="dim")
            text.append("  ")
        if self.log_scale:
            text.append("log scale", style="italic")
        if self.problem:
            text.append(f"  {self.problem}", style="bold red")
        return text

    def span(self) -> tuple[float, float] | None:
        """The step range on screen."""
        if self.window is not None:
            return self.window
        ends = [(float(line.steps[0]), float(line.steps[-1])) for line in self._lines if len(line.steps)]
        if not ends:
            return None
        return min(lo for lo, _ in ends), max(hi for _, hi in ends)

    def _again(self) -> None:
        if self._model is not None:
            self.show(self._model)

    # -- keys and the mouse --------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "key-filter":
            self.pattern = event.value.strip()
            self._list_keys()
            self._again()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "key-filter":
            event.stop()
            self.query_one("#key-list", OptionList).focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.key = event.option.id
        self._again()

    def action_across(self, mode: str) -> None:
        """``b`` and ``h``: the band or the heatmap across the listed keys; again, the one key's line."""
        self.mode = "line" if self.mode == mode else mode
        self._again()

    def action_log(self) -> None:
        self.log_scale = not self.log_scale
        self._again()

    def action_zoom(self, factor: float, at: float | None = None) -> None:
        span = self.span()
        if span is None:
            return
        lo, hi = span
        centre = at if at is not None else self.cross if self.cross is not None else (lo + hi) / 2
        half = max((hi - lo) * factor / 2, 1.0)
        whole = self._whole()
        if whole is not None and 2 * half >= whole[1] - whole[0]:
            self.window = None  # zoomed out past the whole run
        else:
            self.window = (centre - half, centre + half)
        self._again()

    def _whole(self) -> tuple[float, float] | None:
        window, self.window = self.window, None
        try:
            return self.span()
        finally:
            self.window = window

    def action_unzoom(self) -> None:
        self.window = None
        self._again()

    def action_cross(self, columns: int) -> None:
        span = self.span()
        if span is None:
            return
        lo, hi = span
        per_column = (hi - lo) / max(self.query_one(Plot).size.width, 1)
        start = self.cross if self.cross is not None else (hi if columns < 0 else lo)
        self.cross = float(round(min(max(start + columns * max(per_column, 1.0), lo), hi)))
        self._again()

    def step_at(self, x: int) -> float | None:
        """The step under column ``x`` of the plot, if it is inside the plotting area."""
        plot, span = self.query_one(Plot), self.span()
        if plot.canvas is None or span is None:
            return None
        first, last = plot.canvas
        if not first <= x <= last or last <= first:
            return None
        return float(round(span[0] + (x - first) / (last - first) * (span[1] - span[0])))

    def _mouse_step(self, event: events.MouseEvent) -> float | None:
        offset = event.get_content_offset(self.query_one(Plot))
        return None if offset is None else self.step_at(offset.x)

    def on_click(self, event: events.Click) -> None:
        step = self._mouse_step(event)
        if step is not None:
            self.cross = step
            self._again()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if event.get_content_offset(self.query_one(Plot)) is not None:
            self.action_zoom(1 / ZOOM, self._mouse_step(event))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if event.get_content_offset(self.query_one(Plot)) is not None:
            self.action_zoom(ZOOM, self._mouse_step(event))

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "narrow")

    def search_keys(self) -> None:
        """Show the key list if hidden, and type in its search."""
        self.query_one("#keys").set_classes("shown")
        self.query_one("#key-filter", Input).focus()

    def action_toggle_keys(self) -> None:
        """Hide the key list (shown by default), or show it (hidden by default in a narrow terminal)."""
        keys = self.query_one("#keys")
        keys.toggle_class("shown" if self.has_class("narrow") else "hidden")
