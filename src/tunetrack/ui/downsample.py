"""Downsampling near the data that never hides a spike.

M4 (Jugel et al., VLDB 2014): split the visible x range into ``width`` buckets (about one per pixel)
and keep, per bucket, the first, last, minimum and maximum point. Any line drawn at that width looks
the same as with every point, and a single-step spike is always kept.
"""

from __future__ import annotations

import numpy as np


def m4(
    x: np.ndarray, y: np.ndarray, width: int, lo: float | None = None, hi: float | None = None
) -> np.ndarray:
    """Indices (ascending) of the points to draw for ``x`` in ``[lo, hi]``; ``x`` must be sorted."""
    keep = np.ones(len(x), dtype=bool)
    if lo is not None:
        keep &= x >= lo
    if hi is not None:
        keep &= x <= hi
    idx = np.flatnonzero(keep)
    width = max(int(width), 1)
    if len(idx) <= 4 * width:
        return idx
    xs = x[idx].astype(np.float64)
    ys = y[idx].astype(np.float64)
    span = xs[-1] - xs[0]
    buckets = (
        np.minimum(((xs - xs[0]) / span * width).astype(np.int64), width - 1)
        if span > 0
        else np.zeros(len(xs), np.int64)
    )
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    counts = np.diff(np.r_[starts, len(xs)])
    finite = np.isfinite(ys)
    # Extremes are taken over the finite values; a bucket of NaNs keeps its first and last point.
    low = np.where(finite, ys, np.inf)
    high = np.where(finite, ys, -np.inf)
    owner = np.repeat(np.arange(len(starts)), counts)
    pos = np.arange(len(xs))
    at_min = np.minimum.reduceat(
        np.where(low == np.minimum.reduceat(low, starts)[owner], pos, len(xs)), starts
    )
    at_max = np.minimum.reduceat(
        np.where(high == np.maximum.reduceat(high, starts)[owner], pos, len(xs)), starts
    )
    chosen = np.r_[starts, starts + counts - 1, at_min, at_max]
    return idx[np.unique(chosen[chosen < len(xs)])]
