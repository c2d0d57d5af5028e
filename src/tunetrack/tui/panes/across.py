"""The chart tab's views across many keys (``b`` and ``h``): the band of the listed keys' values at
each step as lines the chart draws like any, and the heatmap of key × step fitted to the screen.

A mixture-of-experts run logs a load per layer per expert (10,240 keys); one line per key would be
unreadable and a chart per key unusable. The band says how spread the keys are at each step, and its
max line shows the one expert that runs hot; the heatmap shows which one, and when. The heatmap's
cells are ``reader.across.heat``'s, which the dashboard's heatmap fits to its canvas too.
"""

from __future__ import annotations

from rich.text import Text

from ...reader import Run
from ...reader.across import BAND, Across, Heat
from ...reader.as_text import number
from ..palette import heat_colour, hex_colour, line_colour
from .plotting import Line, step_label


def distribution_view(run: Run, key: str, bins: int) -> Across:
    """``run``'s histograms of ``key`` over the steps as a matrix a heatmap draws: a row per bin (the
    highest values on top, each labelled by its bin's middle), a column per step, the counts."""
    found = run.distribution(key, bins=max(bins, 2))
    middles = (found.edges[:-1] + found.edges[1:]) / 2
    labels = [number(float(m)) for m in middles[::-1]]
    return Across(key, labels, found.steps, found.counts.T[::-1])


def band_lines(run: Run, keys: list[str], palette: str) -> list[Line]:
    """The band across ``keys`` of ``run``: a line per percentile (``reader.across.BAND``)."""
    view = run.across(keys)
    band = view.band()
    steps = view.steps.astype(float)
    return [
        Line(run.id, name, line_colour(palette, i), steps, band[name]) for i, (name, _) in enumerate(BAND)
    ]


def heat_text(found: Heat, label_width: int, dark: bool) -> Text:
    """``found`` drawn: a label and a line of coloured cells per row, the legend and the steps below."""
    out = Text()
    span = (found.high - found.low) or 1.0
    for (first, count), row in zip(found.rows, found.grid, strict=True):
        more = "" if count == 1 else f" +{count - 1}"
        label = first[: label_width - len(more)] + more
        out.append(label.ljust(label_width) + " ", style="dim" if count > 1 else "")
        for value in row.tolist():
            colour = hex_colour(heat_colour((value - found.low) / span, dark)) if value == value else ""
            out.append("█" if value == value else " ", style=colour)
        out.append("\n")
    if len(found.starts):
        first, last = step_label(int(found.starts[0])), step_label(int(found.starts[-1]))
        gap = max(found.grid.shape[1] - len(first) - len(last), 1)
        out.append(" " * (label_width + 1) + first + " " * gap + last + "\n", style="dim")
    out.append(f"{number(found.low)} ")
    for i in range(20):
        out.append("█", style=hex_colour(heat_colour(i / 19, dark)))
    most = max(count for _, count in found.rows) if found.rows else 1
    note = f"   a row: the max of {most} keys" if most > 1 else ""
    out.append(f" {number(found.high)}{note}; a cell: the mean over its steps")
    return out
