"""The terminal plot of ``tunetrack show``: the losses on the left axis, the learning rate on the
right, against step, thinned to what the terminal's columns can show."""

from __future__ import annotations

import math

from .. import metric_keys
from ..reader import Run, m4

#: (marker, color) per plotted series: told apart by the marker when the output has no colors.
STYLES = (("braille", "blue"), ("x", "red"), ("•", "magenta"))
LR_STYLE = ("·", "green")
SCATTER = {"braille": "•", "·": "+"}  # a lone braille dot is hard to see


def plot_keys(run: Run) -> tuple[list[str], list[str]]:
    """(left-axis keys, right-axis keys): the losses left and the learning rate right when logged,
    otherwise the first two numeric keys, one per axis (their scales are unrelated)."""
    logged = run.keys()
    left = [k for k in metric_keys.LOSS_LIKE if k in logged]
    right = [k for k in metric_keys.LEARNING_RATE if k in logged][:1]
    if left or right:
        return (left, right) if left else (right, [])
    numeric = [k for k in logged if run.series(k).values.dtype.kind in "fiu"][:2]
    return numeric[:1], numeric[1:]


def _points(run: Run, key: str, width: int) -> tuple[list[float], list[float]] | None:
    """A key's finite points ordered by step, thinned (M4) to what ``width`` columns can show."""
    import numpy as np

    s = run.series(key)
    if s.values.dtype.kind not in "fiu" or not len(s):
        return None
    x, y = s.steps.astype(np.float64), s.values.astype(np.float64)
    finite = np.isfinite(y)
    x, y = x[finite], y[finite]
    if not len(x):
        return None
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    keep = m4(x, y, 2 * width)  # braille: two dots per column
    return x[keep].tolist(), y[keep].tolist()


def plot(run: Run, width: int = 80, height: int = 16) -> str:
    """A small text chart of the main metrics against step, with ANSI colors ('' when nothing numeric
    was logged). The losses share the left axis, the learning rate has the right one."""
    import plotext as plt

    left, right = plot_keys(run)
    series = [(k, "left", pts) for k in left if (pts := _points(run, k, width))]
    series += [(k, "right", pts) for k in right if (pts := _points(run, k, width))]
    if not series:
        return ""
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    for i, (key, side, (x, y)) in enumerate(series):
        marker, color = STYLES[i % len(STYLES)] if side == "left" else LR_STYLE
        label = key if side == "left" else f"{key} (right axis)"
        if len(x) < width // 4:  # a few points (evaluations): no joining lines, and visible dots
            plt.scatter(x, y, label=label, marker=SCATTER.get(marker, marker), color=color, yside=side)
        else:
            plt.plot(x, y, label=label, marker=marker, color=color, yside=side)
    ticks = step_ticks(min(x[0] for *_, (x, _) in series), max(x[-1] for *_, (x, _) in series))
    plt.xticks(ticks, [str(t) for t in ticks])
    plt.xlabel("step")
    return str(plt.build())


def step_ticks(lo: float, hi: float, count: int = 5) -> list[int]:
    """About ``count`` round integer ticks (1, 2, 2.5 or 5 times a power of ten) in [lo, hi]."""
    if hi <= lo:
        return [round(lo)]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = max(1, next(int(m * mag) for m in (1, 2, 2.5, 5, 10) if m * mag >= raw))
    first = math.ceil(lo / step) * step
    return list(range(first, math.floor(hi) + 1, step))
