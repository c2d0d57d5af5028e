"""Views across many keys of one run: the keys a pattern names (a mixture-of-experts run's load per
layer per expert, ``moe/layer*/expert*/load``: 10,240 keys) as one matrix of key × step, and the
band of their percentiles at each step (p5, p50, p95 and the max, as torchtitan and Megatron users
ask of a layer's gradient norms), instead of one chart per key.

The matrix is read block by block: a block's float matrix (the writer's encoding of an all-float row,
``store.codec.rows``) gives every matching key's column in one slice, so 10,000 keys cost what their
points do, not 10,000 look-ups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from ..jsonfile import finite_list
from ..store import codec
from .downsample import m4
from .names import unknown
from .series import numeric_values, series

if TYPE_CHECKING:
    import numpy as np

#: the band's lines: a name and its percentile (the max is the 100th)
BAND: tuple[tuple[str, float], ...] = (("p5", 5.0), ("p50", 50.0), ("p95", 95.0), ("max", 100.0))


def natural(key: str) -> list[object]:
    """``key`` as people order it: the numbers in it as numbers (``layer2`` before ``layer10``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def matching(keys: list[str], pattern: str) -> list[str]:
    """The keys ``pattern`` names, in natural order: a glob (``moe/layer*/expert*/load``, ``*``
    matching any run of characters, ``/`` included), or the exact key."""
    return sorted((k for k in keys if fnmatchcase(k, pattern)), key=natural)


@dataclass
class Across:
    """Keys × steps: ``values[i, j]`` is ``keys[i]`` at ``steps[j]`` (NaN where it has no number there;
    where a step was logged twice, its last value)."""

    pattern: str
    keys: list[str]
    steps: np.ndarray
    values: np.ndarray

    def band(self) -> dict[str, np.ndarray]:
        """At each step, the percentiles of the keys' values (``BAND``: p5, p50, p95, max), over the keys
        that hold a number there (linear interpolation, NumPy's default); NaN where none does."""
        import warnings

        import numpy as np

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a step where every key is NaN
            found = np.nanpercentile(self.values, [q for _, q in BAND], axis=0) if self.values.size else None
        if found is None:
            return {name: np.full(len(self.steps), np.nan) for name, _ in BAND}
        return {name: found[i] for i, (name, _) in enumerate(BAND)}


def band_points(steps: np.ndarray, band: dict[str, np.ndarray], width: int) -> np.ndarray:
    """Indices (ascending) of the steps a band chart ``width`` pixels wide draws: all of them up to
    about ``width``; past that, ``m4``'s of the max line and of the p5 line over ``width // 6`` buckets
    each (a bucket's first and last step, and the steps of each line's least and most value): about
    ``width`` steps, with the run's highest max and lowest p5 among them."""
    import numpy as np

    if len(steps) <= width:
        return np.arange(len(steps))
    buckets = max(width // 6, 1)
    return np.union1d(m4(steps, band["max"], buckets), m4(steps, band["p5"], buckets))


@dataclass
class Heat:
    """A heatmap of key × step fitted to a screen: ``grid[r, c]`` is the max over the keys of row ``r``
    (``rows[r]``: their first and how many) of their mean over the steps of column ``c``."""

    rows: list[tuple[str, int]]
    starts: np.ndarray  # each column's first step
    grid: np.ndarray
    low: float
    high: float


def heat(view: Across, columns: int, lines: int, window: tuple[float, float] | None = None) -> Heat:
    """``view`` in at most ``columns`` × ``lines`` cells (the terminal's heatmap, the dashboard's):
    neighbouring keys (in natural order) share a row, their max shown (the hottest expert of the run
    stands out); neighbouring steps share a column, their mean shown. ``window``: the steps shown."""
    import numpy as np

    values, steps = view.values, view.steps
    if window is not None:
        keep = (steps >= window[0]) & (steps <= window[1])
        values, steps = values[:, keep], steps[keep]
    per_row = -(-len(view.keys) // max(lines, 1))
    row_starts = np.arange(0, len(view.keys), per_row)
    col_starts = np.unique(
        np.linspace(0, len(steps), max(min(columns, len(steps)), 1), endpoint=False).astype(int)
    )
    finite = np.isfinite(values)
    sums = np.add.reduceat(np.where(finite, values, 0.0), col_starts, axis=1) if len(steps) else values
    counts = np.add.reduceat(finite, col_starts, axis=1) if len(steps) else values
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    grid = np.fmax.reduceat(means, row_starts, axis=0) if means.size else means
    shown = grid[np.isfinite(grid)]
    low, high = (float(shown.min()), float(shown.max())) if shown.size else (0.0, 0.0)
    rows = [(view.keys[i], int(min(per_row, len(view.keys) - i))) for i in row_starts.tolist()]
    return Heat(rows, steps[col_starts] if len(steps) else steps, grid, low, high)


def as_json(view: Across, width: int, rows: int) -> dict[str, Any]:
    """What a family card draws (the run page's, from GET /api/runs/{id}/across; the report's, from its
    data; the notebook panel's): ``keys`` (how many), ``first`` and ``last`` (in natural order),
    ``steps``, ``band`` (a list per line, null where no key has a number: ``band_points`` of them for
    a chart ``width`` wide), ``heat``: ``rows`` ([first key, how many keys] each), ``starts`` (each
    column's first step), ``values`` (a list per row, null for no number), ``low`` and ``high``: the
    matrix fitted to ``rows`` x ``width`` cells (``heat``)."""
    band = view.band()
    at = band_points(view.steps, band, width)
    found = heat(view, width, rows)
    return {
        "pattern": view.pattern,
        "keys": len(view.keys),
        "first": view.keys[0],
        "last": view.keys[-1],
        "steps": view.steps[at].tolist(),
        "band": {name: finite_list(line[at]) for name, line in band.items()},
        "heat": {
            "rows": [[first, count] for first, count in found.rows],
            "starts": found.starts.tolist(),
            "values": [finite_list(row) for row in found.grid],
            "low": found.low,
            "high": found.high,
        },
    }


def across(blocks: list[codec.Block], keys: list[str], pattern: str | list[str]) -> Across:
    """The matrix of the keys of ``keys`` that ``pattern`` names (a glob: ``matching``; or a list of
    the keys themselves, as a view that chose them does), from ``blocks`` (a run's visible blocks, in
    logging order). A glob no key matches is an ``UnknownName`` naming the closest keys."""
    import numpy as np

    if isinstance(pattern, str):
        names = matching(keys, pattern)
        if not names:
            raise unknown("metric pattern", pattern, keys)
    else:
        known = set(keys)
        names = [k for k in dict.fromkeys(pattern) if k in known]
        pattern = f"{len(names)} keys"
    row_of = {k: i for i, k in enumerate(names)}
    parts: list[
        tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    ] = []  # rows of names, steps, times, values
    for block in blocks:
        in_matrix = [(row_of[k], j) for j, k in enumerate(block.matrix_keys) if k in row_of]
        if in_matrix:
            width = len(block.matrix_keys)
            matrix = np.frombuffer(block.matrix, dtype=np.float64).reshape(-1, width)
            steps, times = block.steps, block.times
            if block.visible is not None:
                matrix, steps, times = matrix[block.visible], steps[block.visible], times[block.visible]
            rows, columns = (np.array(x, dtype=np.int64) for x in zip(*in_matrix, strict=True))
            chosen = matrix[:, columns].T.reshape(-1)  # key by key
            n = len(rows)
            parts.append((np.repeat(rows, len(steps)), np.tile(steps, n), np.tile(times, n), chosen))
        for key in (k for k in block.cols if k in row_of):
            column = series([block], key)
            parts.append(
                (np.full(len(column), row_of[key]), column.steps, column.times, numeric_values(column))
            )
    if not parts:
        return Across(pattern, names, np.empty(0, np.int64), np.empty((len(names), 0)))
    rows, steps, times, values = (np.concatenate([p[i] for p in parts]) for i in range(4))
    unique, at = np.unique(steps, return_inverse=True)
    cell = rows * len(unique) + at
    order = np.argsort(times, kind="stable")  # logging order, across processes
    cell, values = cell[order], values[order]
    _, first_from_end = np.unique(cell[::-1], return_index=True)
    last = len(cell) - 1 - first_from_end  # a step logged again: its last value
    out = np.full((len(names), len(unique)), np.nan)
    out.flat[cell[last]] = values[last]
    return Across(pattern, names, unique, out)
