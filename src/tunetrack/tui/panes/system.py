"""The system tab: the GPUs and the host of the run under the cursor, over the run's time.

A heatmap per GPU metric (utilization, memory used), a row per GPU of each node (``node0 gpu3``) and a
column per time bucket: the span the run was sampled over, cut into as many equal buckets as the pane
has columns, or as the row with the most samples has samples if that is fewer (a short run is not
stretched over empty buckets: it grows a column a sample until it fills the pane). A utilization bucket is the **mean** of the samples
in it (how busy the GPU was over that time: a max would paint a GPU that idles between bursts as busy);
a memory bucket is their **max** (the peak is what runs out of memory). Below them the host, per node:
CPU, memory, the training processes' share, disk and network, each a sparkline of its means per bucket
and its last value. Every row shares the time axis, so nodes and GPUs can be compared down a column.

A live run is drawn again only when a node recorded more samples (``Run.system_samples``); until then
no series is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from ...reader import Run
from ...reader.as_text import elapsed, human_bytes, number
from ...reader.series import Series, numeric_values
from ..model import Model
from ..palette import heat_colour, hex_colour
from . import Pane

#: how a bucket's samples make its value
Reduce = Literal["mean", "max"]
#: the heatmaps: title, the key after ``gpu.<i>.``, how a bucket's samples make its value
GAUGES: tuple[tuple[str, str, Reduce], ...] = (
    ("GPU utilization", "util", "mean"),
    ("GPU memory used", "memory.percent", "max"),
)
#: the host's lines: key, label, unit (``%``: drawn from 0 to at least 100)
HOST: tuple[tuple[str, str, str], ...] = (
    ("cpu.percent", "CPU", "%"),
    ("mem.percent", "RAM", "%"),
    ("proc.cpu_percent", "process CPU", "%"),
    ("proc.rss_bytes", "process RAM", "B"),
    ("disk.read_bytes_per_s", "disk read", "B/s"),
    ("disk.write_bytes_per_s", "disk write", "B/s"),
    ("net.recv_bytes_per_s", "net in", "B/s"),
    ("net.sent_bytes_per_s", "net out", "B/s"),
)
GPU_KEY = re.compile(r"gpu\.(\d+)\.(.+)")
#: a sparkline's levels, from none to the most (a space is a bucket with no sample)
LEVELS = "▁▂▃▄▅▆▇█"
#: columns of the legend's colour scale
LEGEND = 20
#: the columns a host line's last value takes
VALUE_WIDTH = 13
#: the columns drawn before the pane has a size
FALLBACK_WIDTH = 60


def buckets(s: Series, start: float, end: float, columns: int, how: Reduce) -> np.ndarray:
    """``s``'s values gathered into ``columns`` equal spans of time from ``start`` to ``end`` (a
    sample at ``end`` falls in the last): each the mean, or with ``how="max"`` the max, of the samples
    in it that hold a number; NaN where none does."""
    values = numeric_values(s)
    keep = np.isfinite(values)
    values, times = values[keep], s.times[keep]
    at = ((times - start) / max(end - start, 1e-9) * columns).astype(np.int64)
    at = np.clip(at, 0, columns - 1)
    if how == "max":
        out = np.full(columns, -np.inf)
        np.maximum.at(out, at, values)
        out[np.isneginf(out)] = np.nan
        return out
    counts = np.bincount(at, minlength=columns)
    sums = np.bincount(at, weights=values, minlength=columns)
    return np.divide(sums, counts, out=np.full(columns, np.nan), where=counts > 0)


def gpus(keys: list[str], suffix: str) -> list[tuple[int, str]]:
    """Every GPU's number and its key of ``suffix`` (``(0, "gpu.0.util")``, ...), by number."""
    return sorted((int(m[1]), k) for k in keys if (m := GPU_KEY.fullmatch(k)) and m[2] == suffix)


def node_labels(nodes: list[str]) -> dict[str, str]:
    """What a node's rows are labelled: ``node0`` (its rank among the nodes), or the whole
    ``node0:host`` where two nodes share a rank (a run resumed on another machine)."""
    short = {node: node.split(":", 1)[0] for node in nodes}
    unique = len(set(short.values())) == len(nodes)
    return short if unique else {node: node for node in nodes}


@dataclass
class Frame:
    """The time axis every row shares: ``columns`` buckets from ``start`` to ``end`` (unix times)."""

    start: float
    end: float
    columns: int

    def of(self, s: Series, how: Reduce) -> np.ndarray:
        """``s``'s value in each bucket (``buckets``)."""
        return buckets(s, self.start, self.end, self.columns, how)


def frame(series: list[Series], width: int) -> Frame | None:
    """The frame of ``series`` (each with a sample, as ``Run.system_series`` gives them) in ``width``
    columns, fewer when no series has as many samples; None without a series."""
    if not series:
        return None
    start = min(float(s.times[0]) for s in series)
    end = max(float(s.times[-1]) for s in series)
    return Frame(start, end, max(1, min(width, max(len(s) for s in series))))


def value_text(value: float, unit: str) -> str:
    """A host metric's value with its unit: ``43.2 %``, ``1.2 GB``, ``3.0 MB/s``."""
    if unit == "%":
        return f"{number(value)} %"
    return human_bytes(int(value)) + ("/s" if unit == "B/s" else "")


class System(Pane):
    """The system tab."""

    DEFAULT_CSS = """
    System VerticalScroll { height: 1fr; }
    System #system-view { width: 1fr; height: auto; }
    """

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(palette, **kwargs)
        self._model: Model | None = None
        self._drawn: Any = None  # what is on screen: the run, its samples per node, width, background

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("", id="system-view")

    def show(self, model: Model) -> None:
        self._model = model
        run = model.run(model.current) if model.current else None
        width = self.query_one(VerticalScroll).scrollable_content_region.width or FALLBACK_WIDTH
        dark = self.app.current_theme.dark
        samples = tuple(sorted(run.system_samples().items())) if run is not None else ()
        drawn = (run.id if run is not None else None, samples, width, dark)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        view = self.query_one("#system-view", Static)
        view.update(Text("no run under the cursor") if run is None else draw(run, width, dark))

    def on_resize(self, event: events.Resize) -> None:
        if self._model is not None:
            self.show(self._model)


def draw(run: Run, width: int, dark: bool) -> Text:
    """The system tab of ``run`` in ``width`` columns, on a dark background or a light one."""
    if not run.nodes:
        return Text("no system metrics recorded (Tracker(system=False), or none sampled yet)")
    keys = run.system_keys()
    labels = node_labels(run.nodes)
    maps = [(title, how, gpu_rows(run, gpus(keys, suffix), labels)) for title, suffix, how in GAUGES]
    host = {key: run.system_series(key) for key, _, _ in HOST if key in keys}
    every = [s for _, _, rows in maps for _, s in rows] + [s for per in host.values() for s in per.values()]
    row_labels = [*(label for _, _, rows in maps for label, _ in rows), *(label for _, label, _ in HOST)]
    label_width = 2 + max(len(label) for label in row_labels)
    span = frame(every, width - label_width - VALUE_WIDTH)
    if span is None:  # other metrics alone (GPU temperatures, a CPU count)
        return Text("none of the system metrics this tab draws was recorded (tunetrack show lists them)")
    out = Text(no_wrap=True, overflow="crop")
    if not any(rows for _, _, rows in maps):
        out.append("no GPU metrics recorded\n", style="italic")
    for title, how, rows in maps:
        if rows:
            heatmap(out, title, how, rows, span, label_width, dark)
    for node in run.nodes:
        lines = [(label, per[node], unit) for key, label, unit in HOST if node in (per := host.get(key, {}))]
        if lines:
            out.append(f"{node}\n", style="bold")
            for label, s, unit in lines:
                sparkline(out, label, s, unit, span, label_width)
            axis(out, span, label_width)
    return out


def gpu_rows(run: Run, keys: list[tuple[int, str]], labels: dict[str, str]) -> list[tuple[str, Series]]:
    """A heatmap's rows: ``node0 gpu3`` and its series, for each GPU of each node, node by node."""
    rows = [(labels[node], gpu, s) for gpu, key in keys for node, s in run.system_series(key).items()]
    return [(f"{node} gpu{gpu}", s) for node, gpu, s in sorted(rows, key=lambda r: r[:2])]


def heatmap(
    out: Text,
    title: str,
    how: Reduce,
    rows: list[tuple[str, Series]],
    span: Frame,
    label_width: int,
    dark: bool,
) -> None:
    """One GPU metric's heatmap: its title and the legend of its scale, a row per GPU, the time axis."""
    bucket = (span.end - span.start) / span.columns
    out.append(title, style="bold")
    out.append(f"  {how} of each {number(bucket)} s   0 % ")
    for i in range(LEGEND):
        out.append("█", style=hex_colour(heat_colour(i / (LEGEND - 1), dark)))
    out.append(" 100 %\n")
    for label, s in rows:
        out.append(label.ljust(label_width))
        cells(out, span.of(s, how), lambda v: ("█", hex_colour(heat_colour(v / 100, dark))))
        out.append("\n")
    axis(out, span, label_width)


def sparkline(out: Text, label: str, s: Series, unit: str, span: Frame, label_width: int) -> None:
    """One host metric of one node: its means per bucket as block heights, from 0 to the most it
    reached (to at least 100 for a percentage), then its last value."""
    means = span.of(s, "mean")
    sampled = means[np.isfinite(means)]
    top = max(float(sampled.max(initial=0.0)), 100.0 if unit == "%" else 0.0) or 1.0
    out.append(label.ljust(label_width))
    cells(out, means, lambda v: (LEVELS[round(min(max(v / top, 0.0), 1.0) * (len(LEVELS) - 1))], ""))
    values = numeric_values(s)
    last = values[np.isfinite(values)]
    out.append("  " + (value_text(float(last[-1]), unit) if last.size else number(None)) + "\n")


def cells(out: Text, values: np.ndarray, cell: Callable[[float], tuple[str, str]]) -> None:
    """A row of buckets: ``cell(value)``'s character and style each, a space where none was sampled."""
    for value in values.tolist():
        char, style = cell(value) if value == value else (" ", "")
        out.append(char, style=style)


def axis(out: Text, span: Frame, label_width: int) -> None:
    """The time axis under rows: the time since the first sample at the first and the last column."""
    end = elapsed(span.end - span.start)
    out.append(" " * label_width + "0m00s".ljust(max(span.columns - len(end), 6)) + end + "\n\n", style="dim")
