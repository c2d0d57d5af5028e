"""Downsampling near the data that never hides a spike.

M4 (Jugel et al., VLDB 2014): split the visible x range into ``width`` buckets (about one per pixel)
and keep, per bucket, the first, last, minimum and maximum point. Any line drawn at that width looks
the same as with every point, and a single-step spike is always kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def m4(
    x: np.ndarray, y: np.ndarray, width: int, lo: float | None = None, hi: float | None = None
) -> np.ndarray:
    """Indices (ascending) of the points to draw for ``x`` in ``[lo, hi]``; ``x`` must be sorted."""
    import numpy as np

    first = 0 if lo is None else int(np.searchsorted(x, lo, side="left"))
    stop = len(x) if hi is None else int(np.searchsorted(x, hi, side="right"))
    width = max(int(width), 1)
    if stop - first <= 4 * width:
        return np.arange(first, max(stop, first))
    xs, ys = x[first:stop], y[first:stop]
    # Bucket b holds the points with x in [x0 + b * span / width, x0 + (b + 1) * span / width).
    edges = xs[0] + (xs[-1] - xs[0]) * (np.arange(1, width) / width)
    starts = np.unique(np.searchsorted(xs, edges, side="left"))
    starts = np.r_[0, starts[(starts > 0) & (starts < len(xs))]]
    ends = np.r_[starts[1:], len(xs)] - 1
    chosen = [starts, ends]
    finite = np.isfinite(ys)
    counts = ends - starts + 1
    for reduce, fill in ((np.minimum, np.inf), (np.maximum, -np.inf)):
        # Extremes are taken over the finite values; a bucket of NaNs keeps its first and last point.
        values = ys if finite.all() else np.where(finite, ys, fill)
        extreme = reduce.reduceat(values, starts)
        hits = np.flatnonzero(values == np.repeat(extreme, counts))
        at = hits[np.searchsorted(hits, starts)]  # the first point of each bucket that is its extreme
        chosen.append(at[np.isfinite(extreme)])
    return first + np.unique(np.concatenate(chosen))


def thin(
    xs: np.ndarray, values: np.ndarray, width: int, lo: float | None = None, hi: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``xs`` and ``values`` in x order (a series' steps go back after a rewind, its times after a
    resume), thinned by ``m4`` to what a chart ``width`` pixels wide draws of ``[lo, hi]``."""
    import numpy as np

    if len(xs) > 1 and np.any(np.diff(xs) < 0):
        order = np.argsort(xs, kind="stable")
        xs, values = xs[order], values[order]
    idx = m4(xs, values, width, lo, hi)
    return xs[idx], values[idx]


def chart_points(xs: np.ndarray, values: np.ndarray, width: int) -> tuple[list[Any], list[float | None]]:
    """``thin``'s points as JSON lists, NaN and ±Inf as None (JSON has no spelling for them: a gap)."""
    import numpy as np

    xs, values = thin(xs, values.astype(np.float64, copy=False), width)
    return xs.tolist(), [float(v) if np.isfinite(v) else None for v in values]
