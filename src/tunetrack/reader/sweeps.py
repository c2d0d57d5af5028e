"""A sweep read as one experiment, as the dashboard shows it: the runs table's rows (``Catalog.rows``)
picked by a ``--where`` expression and brushed ranges, folded into groups by configuration, the
hyperparameters read against a metric (the axes of parallel coordinates, and each numeric
hyperparameter's Spearman rank correlation with the metric), and a group's curves folded into one
mean with a band, step by step.

Everything here reuses the one implementation of each idea: ``where`` reads fields and expressions,
``groups`` partitions and folds, ``aggregates`` (through the catalog's rows) says what last, min, max
and best are. The browser only draws what this module computes.

A run's config is not in the runs table's rows: an ended run's is in its processes' end records
(``Run.config``: two small files a process; a live run's, or one written by an older version, in its
data). ``Configs`` reads each run's once and keeps it while the run's row is unchanged, and only a
view that needs configs (an expression naming one, a group, the hyperparameters) asks for them.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import setting
from ..config.names import bookkeeping
from ..metric_keys import spellings
from ..states import State
from ..values import is_finite_number, is_number
from .find import load
from .groups import Group, metric_field, partition, values_of
from .names import CONFIGS_SUGGESTED, short_names
from .series import numeric_values, present
from .where import MISSING, Field, Known, Lookup, WhereError, lookup_from, parse, require
from .where import field as parse_field

if TYPE_CHECKING:
    import numpy as np

    from .catalog import Catalog


class Configs:
    """Each run's flat config, read once (``Run.config``) and kept while its row in the runs table shows
    the same state, end and last step (a resumed run, the one way an ended run gains a config record,
    changes all three; a live run's is read again when it logs a new step). One per dashboard."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def of(self, catalog: Catalog, row: Mapping[str, Any]) -> dict[str, Any]:
        stamp = (row.get("state"), row.get("ended"), row.get("last_step"))
        with self._lock:
            hit = self._kept.get(row["id"])
        if hit is not None and hit[0] == stamp:
            return hit[1]
        if row.get("state") == State.RUNNING:
            run = catalog.open(row["id"])  # the cached run, read incrementally
        else:
            loaded = load(
                catalog.store, row["id"]
            )  # not kept in the catalog: a sweep would evict the charts' runs
            if loaded is None:
                return {}
            run = loaded
        flat = run.flat_config
        with self._lock:
            self._kept[row["id"]] = (stamp, flat)
        return flat


@dataclass(frozen=True)
class Brush:
    """A range brushed on one axis: numbers from ``low`` to ``high``, or one of ``among`` (a
    categorical axis: its values as text)."""

    field: Field
    low: float | None = None
    high: float | None = None
    among: tuple[str, ...] | None = None

    def holds(self, value: Any) -> bool:
        if value is MISSING or value is None:
            return False
        if self.among is not None:
            return _text(value) in self.among
        if not is_number(value) or self.low is None or self.high is None:
            return False
        return bool(self.low <= value <= self.high)


def brush(text: str) -> Brush:
    """A brush as the dashboard's URL keeps it: JSON, ``["config.lr", 1e-4, 3e-4]`` (a range) or
    ``["config.model", ["a", "b"]]`` (values); a ``WhereError`` if it is neither."""
    try:
        spec = json.loads(text)
    except ValueError:
        raise WhereError(f"brush: not JSON: {text!r}") from None
    if not (isinstance(spec, list) and spec and isinstance(spec[0], str)):
        raise WhereError(f'brush: give ["FIELD", LOW, HIGH] or ["FIELD", [VALUES]], not {text!r}')
    what = parse_field(spec[0])
    if len(spec) == 2 and isinstance(spec[1], list):
        return Brush(what, among=tuple(_text(v) for v in spec[1]))
    if len(spec) == 3 and all(is_number(v) for v in spec[1:]):
        low, high = sorted((float(spec[1]), float(spec[2])))
        return Brush(what, low, high)
    raise WhereError(f'brush: give ["FIELD", LOW, HIGH] or ["FIELD", [VALUES]], not {text!r}')


@dataclass
class Selection:
    """The runs table's rows an expression and brushes pick, each with its ``Lookup``."""

    rows: list[dict[str, Any]]
    lookups: dict[str, Lookup]
    configs: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: the metric keys whose summaries the rows hold
    keys: list[str]

    def holding(self, what: Field) -> Field:
        """``what``, a metric the rows must hold the summary of (``select(fields=...)`` names it)."""
        if what.kind == "metric" and what.key not in self.keys:
            raise ValueError(f"{what}: select the runs with fields=[{str(what)!r}] to read it")
        return what

    def lookup(self, row: Mapping[str, Any]) -> Lookup:
        return self.lookups[row["id"]]

    def flats(self) -> list[dict[str, Any]]:
        return [self.configs(r) for r in self.rows]


def select(
    catalog: Catalog,
    configs: Configs,
    where: str | None = None,
    brushes: Sequence[str] = (),
    fields: Sequence[str] = (),
    project: str | None = None,
    state: str | None = None,
    best: Mapping[str, bool] | None = None,
    refresh: bool = True,
    also: Sequence[str] = (),
) -> Selection:
    """The rows of ``project`` (and ``state``) that ``where`` and every brush pick, newest first,
    holding the summaries of the metrics that ``where``, the brushes and ``fields`` (column specs,
    ``KEY[:AGG]``) name, "best" as ``best`` overrides it per key (``--best``). A bad expression or
    brush is a ``WhereError`` (one line, with its column). ``refresh=False``: the runs table as the
    caller's own ``catalog.refresh()`` just left it. ``also``: keys the rows hold too, that no run need
    have (a view's loss column)."""
    test = parse(where) if where and where.strip() else None
    picked = [brush(b) for b in brushes]
    named = [*(test.fields if test else []), *(b.field for b in picked), *(parse_field(f) for f in fields)]
    keys = list(dict.fromkeys([*also, *(k for f in named if f.kind == "metric" for k in spellings(f.key))]))
    rows = catalog.rows(project=project, state=state, keys=keys, best=best, refresh=refresh)

    def config(row: Mapping[str, Any]) -> dict[str, Any]:
        return configs.of(catalog, row)

    lookups = {row["id"]: row_lookup(row, config) for row in rows}

    def known() -> Known:
        first = [config(row) for row in rows[:CONFIGS_SUGGESTED]]
        flats = dict.fromkeys([*short_names(first), *(k for flat in first for k in flat)])
        tags = {t for row in rows for t in row.get("tags") or []}
        return Known(catalog.keys(), list(flats), sorted(tags))

    require(named, rows, lambda row: lookups[row["id"]], known)
    kept = [
        r
        for r in rows
        if (test is None or test(lookups[r["id"]]))
        and all(b.holds(lookups[r["id"]](b.field)) for b in picked)
    ]
    return Selection(kept, lookups, config, keys)


def row_lookup(row: Mapping[str, Any], config: Callable[[Mapping[str, Any]], dict[str, Any]]) -> Lookup:
    """A ``where.Lookup`` over a row of the runs table: its config read only when a field names it,
    a metric's aggregates from the row's summary (its last value alone for a run that ended without
    stored aggregates, as the table shows it)."""

    def summary(key: str) -> Mapping[str, Any] | None:
        found = row.get("summary", {}).get(key)
        if found is None and key in row.get("last", {}):
            return {"last": row["last"][key]}
        return found

    return lookup_from(lambda: config(row), row.get, lambda: row.get("tags") or [], summary)


# -- groups -------------------------------------------------------------------------------------------
def group_table(selection: Selection, by: str | Sequence[str], columns: Sequence[str]) -> dict[str, Any]:
    """The runs table folded by configuration: ``keys`` grouped by, ``columns`` (specs ``KEY[:AGG]``),
    and per group its ``key`` values, ``runs`` (ids), and per column ``n``, ``mean``, ``std``, ``min``
    and ``max`` (``groups.Group``), in the order of each group's newest run."""
    fields = {spec: selection.holding(metric_field(spec)) for spec in columns}
    keys, groups = partition(selection.rows, selection.flats(), by)
    out = []
    for group in groups:
        stats = {}
        for spec, what in fields.items():
            folded = Group(group.key, group.runs, values_of(group.runs, selection.lookup, what))
            stats[spec] = {k: v for k, v in folded.as_json().items() if k not in ("key", "runs")}
        out.append({"key": group.key, "runs": [r["id"] for r in group.runs], "stats": stats})
    return {"keys": keys, "columns": list(columns), "groups": out}


def label(key: Mapping[str, Any]) -> str:
    """A group's name as its rows and legends show it: ``lr=0.0001 · lora.r=4``."""
    return " · ".join(f"{k}={_text(v)}" for k, v in key.items()) or "all runs"


# -- hyperparameters against the result ---------------------------------------------------------------
def parameters(selection: Selection, metric: str) -> dict[str, Any]:
    """What parallel coordinates, the scatter and the importance table draw: ``axes``, one per config
    key whose value varies among the runs (``numeric``, or ``categorical`` with its ``values`` in
    order), then the metric (``KEY:AGG``); ``runs``, each with its ``id``, ``name`` and ``values`` (one
    per axis, None where it has none); and ``importance``: each numeric axis's Spearman rank
    correlation with the metric (``spearman``), strongest first."""
    what = selection.holding(metric_field(metric))
    flats = selection.flats()
    axes: list[dict[str, Any]] = []
    for key in _varying(flats):
        present_values = [f[key] for f in flats if _scalar(f.get(key)) and f.get(key) is not None]
        if all(is_number(v) for v in present_values):
            axes.append({"key": f"config.{key}", "name": key, "kind": "numeric"})
        else:
            order = sorted({_text(v) for v in present_values}, key=_natural)
            axes.append({"key": f"config.{key}", "name": key, "kind": "categorical", "values": order})
    runs = []
    for row, flat in zip(selection.rows, flats):
        values: list[Any] = []
        for axis in axes:
            v = flat.get(axis["name"])
            values.append(
                None if not _scalar(v) or v is None else (v if axis["kind"] == "numeric" else _text(v))
            )
        result = selection.lookup(row)(what)
        values.append(float(result) if is_finite_number(result) else None)
        runs.append({"id": row["id"], "name": row["name"], "values": values})
    importance: list[dict[str, Any]] = []
    for i, axis in enumerate(axes):
        if axis["kind"] != "numeric":
            continue
        pairs = [(r["values"][i], r["values"][-1]) for r in runs]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None and math.isfinite(x)]
        rho = spearman([x for x, _ in pairs], [y for _, y in pairs])
        importance.append({"key": axis["name"], "rho": rho, "n": len(pairs)})
    importance.sort(key=lambda e: -1.0 if e["rho"] is None else abs(e["rho"]), reverse=True)
    metric_axis = {"key": str(what), "name": str(what), "kind": "numeric"}
    return {"axes": [*axes, metric_axis], "runs": runs, "metric": str(what), "importance": importance}


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation: the Pearson correlation of the ranks (ties get their average
    rank, as ``scipy.stats.spearmanr`` and pandas' ``rank()`` give them). None for fewer than three
    pairs, or where either side is constant (no order to correlate)."""
    import numpy as np

    if len(xs) != len(ys) or len(xs) < 3:
        return None
    rx, ry = ranks(np.asarray(xs, float)), ranks(np.asarray(ys, float))
    dx, dy = rx - rx.mean(), ry - ry.mean()
    norm = math.sqrt(float(dx @ dx) * float(dy @ dy))
    return None if norm == 0 else float(dx @ dy) / norm


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties averaged: a value's rank is the mean of the positions its equals take."""
    import numpy as np

    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # the last position (from 1) each distinct value takes
    return (ends - (counts - 1) / 2.0)[inverse]


def _varying(flats: Sequence[Mapping[str, Any]]) -> list[str]:
    """The config keys whose scalar values are not all the same (a key some runs lack varies too),
    but those that only keep books (each run's output folder and name: ``config.names.bookkeeping``),
    seeds excepted (a seed's axis shows the noise)."""
    seen: dict[str, set[Any]] = {}
    for flat in flats:
        for key, value in flat.items():
            if _scalar(value) and (not bookkeeping(key) or "seed" in key.lower()):
                seen.setdefault(key, set()).add(setting(value))
    return [k for k, values in seen.items() if len(values) > 1 or any(k not in f for f in flats)]


# -- a group's curves as one ----------------------------------------------------------------------------
def group_curves(
    catalog: Catalog,
    runs: Sequence[str],
    by: str | Sequence[str],
    key: str,
    band: str = "minmax",
    width: int = 1500,
) -> dict[str, Any]:
    """One metric of ``runs`` folded per group (``by``): for each group its ``label``, ``runs`` and,
    aligned by step, the ``mean`` over the runs that reach that step, ``n`` of them, and a band from
    ``low`` to ``high``: the min and max (``band="minmax"``) or the mean ± the sample standard
    deviation (``"std"``; none where one run does). More steps than ``width`` are thinned to
    ``width`` buckets: the mean of the means, the lowest low and the highest high of each.

    Aligned by step: at every step some run of the group logged, each run's value there, joined
    linearly between its own points (never past its first or last): where the runs log at the same
    steps (a training loss, an eval every N steps) these are exactly their values; where they do not
    (evaluations at different steps, a run logged more sparsely), the runs still share a mean and a
    band instead of one run per step. A NaN or ±Inf is no point here (the chart of one run shows it
    as a gap; a mean over seeds passes it by), and a run that stopped early leaves the group's
    ``n`` from its last step on."""
    import numpy as np

    if band not in ("minmax", "std"):
        raise ValueError(f"band: minmax or std, not {band!r}")
    opened = [catalog.open(r) for r in runs]
    keys, groups = partition(opened, [r.flat_config for r in opened], by)
    out = []
    for group in groups:
        curves = [present(r.series(key, strict=False)) for r in group.runs]
        curves = [c for c in curves if len(c)]
        entry: dict[str, Any] = {
            "key": group.key,
            "label": label(group.key),
            "runs": [r.id for r in group.runs],
        }
        if not curves:
            out.append({**entry, "x": [], "mean": [], "low": [], "high": [], "n": []})
            continue
        steps = np.unique(np.concatenate([c.steps for c in curves]))
        grid = np.full((len(curves), len(steps)), np.nan)
        for i, c in enumerate(curves):
            values = numeric_values(c)
            finite = np.isfinite(values)
            xs, ys = c.steps[finite], values[finite]
            if not len(xs):
                continue
            order = np.argsort(xs, kind="stable")
            xs, ys = xs[order], ys[order]
            last = np.r_[xs[1:] != xs[:-1], True]  # a step logged twice (a rewind): the later value
            xs, ys = xs[last], ys[last]
            inside = (steps >= xs[0]) & (steps <= xs[-1])
            grid[i, inside] = np.interp(steps[inside], xs, ys)
        have = np.isfinite(grid)
        n = have.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = np.where(have, grid, 0.0).sum(axis=0)
            mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            if band == "minmax":
                low = np.where(n > 0, np.where(have, grid, np.inf).min(axis=0), np.nan)
                high = np.where(n > 0, np.where(have, grid, -np.inf).max(axis=0), np.nan)
            else:
                dev = np.where(have, grid - mean, 0.0)
                std = np.where(n > 1, np.sqrt((dev**2).sum(axis=0) / np.maximum(n - 1, 1)), np.nan)
                low, high = mean - std, mean + std
        x, mean, low, high, n = _thin(steps, mean, low, high, n, width)
        out.append(
            {
                **entry,
                "x": x.tolist(),
                "mean": _floats(mean),
                "low": _floats(low),
                "high": _floats(high),
                "n": n.tolist(),
            }
        )
    return {"keys": keys, "key": key, "band": band, "groups": out}


def _thin(steps: Any, mean: Any, low: Any, high: Any, n: Any, width: int) -> tuple[Any, ...]:
    import numpy as np

    if len(steps) <= max(width, 2):
        return steps, mean, low, high, n
    edges = np.linspace(0, len(steps), width + 1).astype(int)
    starts = edges[:-1][np.diff(edges) > 0]
    with np.errstate(invalid="ignore"):
        return (
            steps[starts],
            _nanmean_at(mean, starts),
            np.fmin.reduceat(low, starts),
            np.fmax.reduceat(high, starts),
            np.maximum.reduceat(n, starts),
        )


def _nanmean_at(values: Any, starts: Any) -> Any:
    import numpy as np

    finite = np.isfinite(values)
    sums = np.add.reduceat(np.where(finite, values, 0.0), starts)
    counts = np.add.reduceat(finite.astype(int), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _floats(values: Any) -> list[float | None]:
    return [float(v) if math.isfinite(v) else None for v in values.tolist()]


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (int, float, str, bool))


def _text(value: Any) -> str:
    """A config value as text: ``1e-4`` as ``0.0001``, ``True`` as ``true``, None as ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _natural(text: str) -> tuple[int, Any]:
    """Numbers among text in numeric order, before the rest."""
    try:
        return 0, float(text)
    except ValueError:
        return 1, text


__all__ = [
    "Brush",
    "Configs",
    "Selection",
    "brush",
    "group_curves",
    "group_table",
    "label",
    "parameters",
    "ranks",
    "row_lookup",
    "select",
    "spearman",
]
