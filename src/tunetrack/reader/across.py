"""Views across many keys of one run: the keys a pattern names (a mixture-of-experts run's load per
layer per expert, ``moe/layer*/expert*/load``: 10,240 keys) as one matrix of key × step, and the
band of their percentiles at each step (p5, p50, p95 and the max, as torchtitan and Megatron users
ask of a layer's gradient norms), instead of one chart per key.

The matrix is read block by block: a block's float matrix (the writer's encoding of an all-float row,
``store.codec.rows``) gives every matching key's column in one slice, so 10,000 keys cost what their
points do, not 10,000 look-ups. A screen's view of it (``fit``: the band thinned to a chart's width,
the heatmap fitted to its cells) is reduced as it is read, a slice of steps at a time
(``SLICE_CELLS``), so 10,240 keys × 100,000 steps never stand in memory at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import TunetrackError
from ..jsonfile import finite_list
from ..store import codec
from .downsample import m4
from .names import unknown
from .series import numeric_values, series

if TYPE_CHECKING:
    import numpy as np

#: the band's lines: a name and its percentile (the max is the 100th)
BAND: tuple[tuple[str, float], ...] = (("p5", 5.0), ("p50", 50.0), ("p95", 95.0), ("max", 100.0))
#: the cells of key × step ``fit`` holds at once (a float64 matrix: 16 MB; twice that where steps come
#: again): 195 steps of 10,240 keys a slice
SLICE_CELLS = 2_000_000


def natural(key: str) -> list[object]:
    """``key`` as people order it: the numbers in it as numbers (``layer2`` before ``layer10``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def matching(keys: list[str], pattern: str) -> list[str]:
    """The keys ``pattern`` names, in natural order: a glob (``moe/layer*/expert*/load``, ``*``
    matching any run of characters, ``/`` included), or the exact key."""
    return sorted((k for k in keys if fnmatchcase(k, pattern)), key=natural)


def percentiles(values: np.ndarray, axis: int) -> np.ndarray:
    """``BAND``'s percentiles of ``values`` along ``axis``, over the numbers only (linear interpolation,
    NumPy's default); NaN where there is none. NumPy's NaN-aware percentile works one line at a time:
    it is used only where a NaN is."""
    import warnings

    import numpy as np

    qs = [q for _, q in BAND]
    if not np.isnan(values).any():
        return np.percentile(values, qs, axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a step where every key is NaN
        return np.nanpercentile(values, qs, axis=axis)


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
        that hold a number there; NaN where none does."""
        import numpy as np

        if not self.values.size:
            return {name: np.full(len(self.steps), np.nan) for name, _ in BAND}
        found = percentiles(self.values, axis=0)
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


class _HeatRows:
    """A heatmap made as slices of steps come (``add``): neighbouring steps share a column (about
    ``columns``, by their place among the ``n`` steps), their mean per key; neighbouring keys a row,
    the max of their means. A column is folded into its cells as soon as its last step has come (one
    that a slice cuts is carried to the next), so no key × column matrix is ever held."""

    def __init__(self, keys: int, n: int, columns: int, lines: int) -> None:
        import numpy as np

        self.n = n
        self.starts = np.unique(np.linspace(0, n, max(min(columns, n), 1), endpoint=False).astype(int))
        self.row_starts = np.arange(0, keys, max(-(-keys // max(lines, 1)), 1))
        self.grid = np.full((len(self.row_starts), len(self.starts) if n else 0), np.nan)
        self.carried: tuple[int, np.ndarray, np.ndarray] | None = None  # column, sums, counts

    def add(self, values: np.ndarray, first: int) -> None:
        """``values``: steps × keys, the steps from the ``first``-th of the ``n`` on."""
        import numpy as np

        if not len(values):
            return
        begin, end = first, first + len(values)
        column = int(np.searchsorted(self.starts, begin, side="right")) - 1
        cuts = np.r_[0, self.starts[(self.starts > begin) & (self.starts < end)] - begin]
        finite = np.isfinite(values)
        if finite.all():  # what a training loop logs: no cell to leave out
            sums = np.add.reduceat(values, cuts, axis=0)
            counts = np.broadcast_to(np.diff(np.r_[cuts, len(values)])[:, None], sums.shape).astype(float)
        else:
            sums = np.add.reduceat(np.where(finite, values, 0.0), cuts, axis=0)
            counts = np.add.reduceat(finite, cuts, axis=0).astype(float)
        if self.carried is not None and self.carried[0] == column:
            sums[0] += self.carried[1]
            counts[0] += self.carried[2]
        self.carried = None
        closed = end == self.n or end in self.starts
        if not closed:  # its last column goes on in the next slice
            self.carried = (column + len(cuts) - 1, sums[-1], counts[-1])
            sums, counts = sums[:-1], counts[:-1]
        if len(sums):
            with np.errstate(invalid="ignore", divide="ignore"):
                means = sums / counts  # NaN where a cell has no number (0 / 0)
            self.grid[:, column : column + len(sums)] = np.fmax.reduceat(means, self.row_starts, axis=1).T

    def heat(self, keys: list[str], steps: np.ndarray) -> Heat:
        import numpy as np

        shown = self.grid[np.isfinite(self.grid)]
        low, high = (float(shown.min()), float(shown.max())) if shown.size else (0.0, 0.0)
        per_row = int(self.row_starts[1]) if len(self.row_starts) > 1 else len(keys)
        rows = [(keys[i], int(min(per_row, len(keys) - i))) for i in self.row_starts.tolist()]
        return Heat(rows, steps[self.starts] if len(steps) else steps, self.grid, low, high)


def heat(view: Across, columns: int, lines: int, window: tuple[float, float] | None = None) -> Heat:
    """``view`` in at most ``columns`` × ``lines`` cells (the terminal's heatmap; the dashboard's is
    ``fit``'s): neighbouring keys (in natural order) share a row, their max shown (the hottest expert
    of the run stands out); neighbouring steps share a column, their mean shown. ``window``: the steps
    shown."""
    values, steps = view.values, view.steps
    if window is not None:
        keep = (steps >= window[0]) & (steps <= window[1])
        values, steps = values[:, keep], steps[keep]
    cells = _HeatRows(len(view.keys), len(steps), columns, lines)
    cells.add(values.T, 0)
    return cells.heat(view.keys, steps)


@dataclass
class Fitted:
    """What a screen draws of many keys (``fit``): ``band`` (``BAND``'s lines) at ``steps``, thinned to
    a chart's width, and the ``heat``map."""

    keys: list[str]
    steps: np.ndarray
    band: dict[str, np.ndarray]
    heat: Heat


@dataclass
class _Source:
    """What one block holds of the keys asked for: the matrix's columns of them (``rows``: their places
    among the keys; ``columns``: in the block's matrix), or its other columns' keys; the visible steps
    (each step's last row only) and their times."""

    block: codec.Block
    rows: np.ndarray
    columns: np.ndarray | slice
    others: list[tuple[int, str]]
    picked: np.ndarray  # the block's rows kept, ascending
    steps: np.ndarray
    times: np.ndarray


def _names(keys: list[str], pattern: str | list[str]) -> tuple[list[str], str]:
    """The keys asked for and the view's name: a glob's (``matching``: one no key matches is an
    ``UnknownName`` naming the closest keys), or the listed keys the run holds."""
    if isinstance(pattern, str):
        names = matching(keys, pattern)
        if not names:
            raise unknown("metric pattern", pattern, keys)
        return names, pattern
    known = set(keys)
    names = [k for k in dict.fromkeys(pattern) if k in known]
    return names, f"{len(names)} keys"


def _sources(blocks: list[codec.Block], names: list[str]) -> list[_Source]:
    import numpy as np

    row_of = {k: i for i, k in enumerate(names)}
    found = []
    seen: tuple[list[str], tuple[np.ndarray, np.ndarray | slice]] | None = None
    for block in blocks:
        if seen is None or (
            block.matrix_keys is not seen[0] and block.matrix_keys != seen[0]
        ):  # a process's blocks share their keys: once
            seen = (block.matrix_keys, _matrix_places(block.matrix_keys, row_of))
        rows, columns = seen[1]
        others = [(row_of[k], k) for k in block.cols if k in row_of]
        if not len(rows) and not others:
            continue
        picked = np.arange(len(block.steps)) if block.visible is None else np.flatnonzero(block.visible)
        picked = picked[_last_of_each(block.steps[picked])]
        found.append(_Source(block, rows, columns, others, picked, block.steps[picked], block.times[picked]))
    return found


def _matrix_places(matrix_keys: list[str], row_of: dict[str, int]) -> tuple[np.ndarray, np.ndarray | slice]:
    """Of the keys asked for that a block's matrix holds: their places among the keys, and their
    columns in the matrix (a slice where they are side by side: a view, no copy)."""
    import numpy as np

    pairs = [(row_of[k], j) for j, k in enumerate(matrix_keys) if k in row_of]
    if not pairs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    rows, columns = (np.array(x, dtype=np.int64) for x in zip(*pairs, strict=True))
    if np.all(np.diff(columns) == 1):
        return rows, slice(int(columns[0]), int(columns[-1]) + 1)
    return rows, columns


def _last_of_each(steps: np.ndarray) -> np.ndarray:
    """The places in ``steps`` (one block's, in logging order) of each step's last row, ascending."""
    import numpy as np

    if len(steps) < 2 or np.all(np.diff(steps) > 0):
        return np.arange(len(steps))
    _, from_end = np.unique(steps[::-1], return_index=True)  # a step logged twice: its last row
    return np.sort(len(steps) - 1 - from_end)


def _fill(sources: list[_Source], n: int, steps: np.ndarray) -> np.ndarray:
    """The matrix of step × key over ``steps`` (ascending: every step the sources hold from the first
    to the last of them): a key's value at a step is the one logged last (by time; on a tie, the later
    block's), NaN where none is a number."""
    import numpy as np

    cells = _Cells(len(steps), n)
    lo, hi = steps[0], steps[-1]
    for src in sources:
        inside = (src.steps >= lo) & (src.steps <= hi)
        if not inside.any():
            continue
        at, times = np.searchsorted(steps, src.steps[inside]), src.times[inside]
        if len(src.rows):
            width = len(src.block.matrix_keys)
            matrix = np.frombuffer(src.block.matrix, dtype=np.float64).reshape(-1, width)
            cells.place(at, src.rows, matrix[src.picked[inside]][:, src.columns], times)
        for row, key in src.others:
            column = series([src.block], key)
            keep = _last_of_each(column.steps)
            keep = keep[(column.steps[keep] >= lo) & (column.steps[keep] <= hi)]
            at = np.searchsorted(steps, column.steps[keep])
            cells.place(at, np.array([row]), numeric_values(column)[keep][:, None], column.times[keep])
    return cells.out


def _as_slice(idx: np.ndarray) -> np.ndarray | slice:
    """``idx`` as a slice where it is one run of consecutive places (a view, no copy), else itself."""
    import numpy as np

    if len(idx) and idx[-1] - idx[0] == len(idx) - 1 and np.all(np.diff(idx) == 1):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


class _Cells:
    """A matrix of step × key filled block by block, each cell with the value logged last. While each
    step comes from one block (a training loop's run) no cell's time is kept; once a step comes again
    (two processes, a step logged again in a later block) the times of every cell written so far are
    made (``when``) and compared from then on."""

    def __init__(self, steps: int, keys: int) -> None:
        import numpy as np

        self.out = np.full((steps, keys), np.nan)
        self.when: np.ndarray | None = None
        self.written = np.zeros(steps, dtype=bool)
        self.placed: list[tuple[Any, np.ndarray]] = []  # cells and times, until ``when`` is made

    def place(self, at: np.ndarray, rows: np.ndarray, values: np.ndarray, times: np.ndarray) -> None:
        """``values`` (``len(at)`` × ``len(rows)``, logged at ``times``) into the cells at steps ``at``
        and keys ``rows``, where logged no earlier than what is there."""
        import numpy as np

        places = (_as_slice(at), _as_slice(rows))
        cells: Any = places if all(isinstance(p, slice) for p in places) else np.ix_(at, rows)
        if self.when is None and self.written[at].any():  # a step comes again: times kept from now on
            self.when = np.full(self.out.shape, -np.inf)
            for earlier, when in self.placed:
                self.when[earlier] = when[:, None]
        self.written[at] = True
        if self.when is None:
            self.placed.append((cells, times))
            self.out[cells] = values
            return
        held = self.when[cells]
        newer = times[:, None] >= held
        self.out[cells] = values if newer.all() else np.where(newer, values, self.out[cells])
        self.when[cells] = np.where(newer, times[:, None], held)


def _all_steps(sources: list[_Source]) -> np.ndarray:
    import numpy as np

    parts = [s.steps for s in sources] + [series([s.block], k).steps for s in sources for _, k in s.others]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)


def as_json(found: Fitted, pattern: str) -> dict[str, Any]:
    """What a family card draws (the run page's, from GET /api/runs/{id}/across; the report's, from its
    data; the notebook panel's), of the keys of ``pattern`` that ``found`` (``fit``) holds:
    ``keys`` (how many), ``first`` and ``last`` (in natural order), ``steps``, ``band`` (a list per
    line, null where no key has a number), ``heat``: ``rows`` ([first key, how many keys] each),
    ``starts`` (each column's first step), ``values`` (a list per row, null for no number), ``low``
    and ``high``."""
    return {
        "pattern": pattern,
        "keys": len(found.keys),
        "first": found.keys[0],
        "last": found.keys[-1],
        "steps": found.steps.tolist(),
        "band": {name: finite_list(line) for name, line in found.band.items()},
        "heat": {
            "rows": [[first, count] for first, count in found.heat.rows],
            "starts": found.heat.starts.tolist(),
            "values": [finite_list(row) for row in found.heat.grid],
            "low": found.heat.low,
            "high": found.heat.high,
        },
    }


class Fits(Protocol):
    """What ``family_json`` needs of a run (``Run``, which imports this module)."""

    def across_fitted(self, pattern: str | list[str], width: int, lines: int) -> Fitted: ...


def family_json(run: Fits, glob: str, width: int, rows: int) -> dict[str, Any] | None:
    """``as_json`` of the keys of ``run`` that ``glob`` names, fitted to ``width`` × ``rows``
    (``Run.across_fitted``); None where the run has none of them (a report or panel of several runs
    draws a card per run that has the family)."""
    try:
        return as_json(run.across_fitted(glob, width, rows), glob)
    except TunetrackError:
        return None


def across(blocks: list[codec.Block], keys: list[str], pattern: str | list[str]) -> Across:
    """The matrix of the keys of ``keys`` that ``pattern`` names (a glob: ``matching``; or a list of
    the keys themselves, as a view that chose them does), from ``blocks`` (a run's visible blocks, in
    logging order). A glob no key matches is an ``UnknownName`` naming the closest keys."""
    import numpy as np

    names, name = _names(keys, pattern)
    sources = _sources(blocks, names)
    steps = _all_steps(sources)
    if not len(steps):
        return Across(name, names, np.empty(0, np.int64), np.empty((len(names), 0)))
    return Across(name, names, steps, _fill(sources, len(names), steps).T)


def fit(
    blocks: list[codec.Block],
    keys: list[str],
    pattern: str | list[str],
    width: int,
    lines: int,
    cells: int = SLICE_CELLS,
) -> Fitted:
    """What a chart ``width`` pixels wide draws of the keys ``pattern`` names (as ``across``): the band
    at every step, thinned (``band_points``: the highest max and lowest p5 kept), and the heatmap in
    ``width`` × ``lines`` cells (``heat``'s). Read and reduced ``cells`` of key × step at a time: the
    band of a step is over all its keys (exact), a heat cell sums its steps as they come."""
    import numpy as np

    names, _ = _names(keys, pattern)
    sources = _sources(blocks, names)
    steps = _all_steps(sources)
    band = np.full((len(BAND), len(steps)), np.nan)
    heat_rows = _HeatRows(len(names), len(steps), width, lines)
    per_slice = max(cells // max(len(names), 1), 1)
    for first in range(0, len(steps), per_slice):
        values = _fill(sources, len(names), steps[first : first + per_slice])
        band[:, first : first + len(values)] = percentiles(values, axis=1)
        heat_rows.add(values, first)
    lines_of = {name: band[i] for i, (name, _) in enumerate(BAND)}
    at = band_points(steps, lines_of, width)
    return Fitted(names, steps[at], {k: v[at] for k, v in lines_of.items()}, heat_rows.heat(names, steps))
