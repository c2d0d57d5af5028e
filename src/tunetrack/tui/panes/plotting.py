"""What the chart tab draws, with no terminal involved: each picked run's line of a key (sorted by
step; a resumed run's series is in logging order), the points of it to draw at a width (every spike
kept: ``reader.downsample.m4``), the whole steps of its axis, and the keys to list."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...metric_keys import LOSS_LIKE
from ...reader import Run
from ...reader.across import natural
from ...reader.downsample import m4
from ..model import Model
from ..palette import line_colour


@dataclass
class Line:
    """One run's metric, whole (``steps`` sorted)."""

    run_id: str
    label: str
    colour: tuple[int, int, int]
    steps: np.ndarray
    values: np.ndarray

    def at(self, step: float) -> tuple[float, float] | None:
        """The point nearest ``step``."""
        if not len(self.steps):
            return None
        i = int(np.searchsorted(self.steps, step))
        near = min(
            (j for j in (i - 1, i) if 0 <= j < len(self.steps)), key=lambda j: abs(self.steps[j] - step)
        )
        return float(self.steps[near]), float(self.values[near])


def lines(model: Model, key: str | None, palette: str) -> list[Line]:
    """The picked runs' ``key``, each run coloured by its place among the picked."""
    out: list[Line] = []
    if key is None:
        return out
    for i, run in enumerate(model.picked_runs()):
        if key not in run.keys():
            continue
        series = run.series(key, strict=False)
        steps = np.asarray(series.steps, dtype=float)
        values = np.asarray(series.values, dtype=float)
        order = np.argsort(steps, kind="stable")  # a resumed run's series is in logging order
        out.append(Line(run.id, run.name, line_colour(palette, i), steps[order], values[order]))
    return out


def thinned(
    line: Line, width: int, window: tuple[float, float] | None, log: bool
) -> tuple[list[float], list[float]]:
    """The points of ``line`` to draw in ``width`` columns, within ``window``, every extreme kept; on a
    log scale its values above zero alone."""
    steps, values = line.steps, line.values
    if log:
        keep = values > 0
        steps, values = steps[keep], values[keep]
    lo, hi = window if window is not None else (None, None)
    chosen = m4(steps, values, width, lo, hi)
    return steps[chosen].tolist(), values[chosen].tolist()


def step_ticks(lo: float, hi: float, most: int) -> list[int]:
    """At most ``most`` whole steps between ``lo`` and ``hi``, 1, 2, 2.5 or 5 times a power of ten apart
    (as the dashboard's step axis: never 48.8 or 96.5)."""
    span = max(hi - lo, 1.0)
    power = 10 ** max(int(np.floor(np.log10(span / max(most, 1)))), 0)
    gap = next(
        (m * power for m in (1, 2, 2.5, 5, 10) if span / (m * power) <= most and m * power >= 1), 10 * power
    )
    gap = max(int(gap), 1)
    first = int(np.ceil(lo / gap) * gap)
    return list(range(first, int(hi) + 1, gap))


def step_label(step: int) -> str:
    """A step as an axis writes it: 950, 12k, 1.5M."""
    if step >= 1_000_000:
        return f"{step / 1e6:g}M"
    return f"{step / 1e3:g}k" if step >= 10_000 else str(step)


def histogram_keys_of(runs: list[Run]) -> list[str]:
    """Every key the runs logged histograms under (``tunetrack.Histogram``), in natural order."""
    return sorted({k for run in runs for k in run.histogram_keys()}, key=natural)


def keys_of(runs: list[Run]) -> list[str]:
    """Every key the runs logged, the losses first."""
    seen = dict.fromkeys(k for run in runs for k in run.keys())
    return [
        *(k for k in LOSS_LIKE if k in seen),
        *sorted((k for k in seen if k not in LOSS_LIKE), key=natural),
    ]
